#pragma once
// A one-layer BERT-style Transformer encoder (post-LN) as an ONNX model, as an exporter writes
// it: MatMul + Add for every projection, Reshape/Transpose into heads, scaled Softmax
// attention, residual adds, LayerNormalization, an Erf GELU. Its weights are initializers with
// seeded values, so that two seeds give two models of one structure (issue 20's encoder:
// sequence 64, hidden 256, 4 heads, FFN 1024, 0.8 M weights).
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "model_builder.h"

namespace weft::onnx::test {

struct EncoderShape {
  int64_t seq = 64, hidden = 256, heads = 4, ffn = 1024;
};

inline std::string encoderModel(uint64_t seed, EncoderShape s = {}) {
  std::mt19937_64 rng(seed);
  auto values = [&](int64_t n, double centre, double spread) {
    std::uniform_real_distribution<double> u(-spread, spread);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v)
      x = static_cast<float>(centre + u(rng));
    return v;
  };
  const int64_t S = s.seq, H = s.hidden, NH = s.heads, D = H / NH, F = s.ffn;
  const std::string seqDim = std::to_string(S), hiddenDim = std::to_string(H);
  ModelBuilder m(17);
  m.input("x", kFloat, {seqDim, hiddenDim}).output("y");
  const double w = 1.0 / std::sqrt(double(H));
  auto linear = [&](const std::string& name, const std::string& in, int64_t k, int64_t n) {
    m.initializer(name + ".weight", {k, n}, values(k * n, 0, w));
    m.initializer(name + ".bias", {n}, values(n, 0, 0.1));
    m.node("MatMul", {in, name + ".weight"}, {name + ".mm"}, {}, name + "/MatMul");
    m.node("Add", {name + ".mm", name + ".bias"}, {name}, {}, name + "/Add");
  };
  m.initializerInts("heads_shape", {3}, {S, NH, D});
  m.initializerInts("model_shape", {2}, {S, H});
  m.initializer("scale", {}, {static_cast<float>(1.0 / std::sqrt(double(D)))});
  m.initializer("half", {}, {0.5f});
  m.initializer("one", {}, {1.0f});
  m.initializer("sqrt2", {}, {static_cast<float>(std::sqrt(2.0))});
  for (const char* p : {"q", "k", "v"}) {
    std::string n = p;
    linear(n, "x", H, H);
    m.node("Reshape", {n, "heads_shape"}, {n + ".heads"});
    m.node("Transpose", {n + ".heads"}, {n + ".t"},
           {Attr::list("perm", n == "k" ? std::vector<int64_t>{1, 2, 0}
                                        : std::vector<int64_t>{1, 0, 2})});
  }
  m.node("MatMul", {"q.t", "k.t"}, {"scores.raw"}, {}, "attention/scores");
  m.node("Mul", {"scores.raw", "scale"}, {"scores"});
  m.node("Softmax", {"scores"}, {"probs"}, {Attr::integer("axis", -1)});
  m.node("MatMul", {"probs", "v.t"}, {"context.heads"}, {}, "attention/context");
  m.node("Transpose", {"context.heads"}, {"context.t"}, {Attr::list("perm", {1, 0, 2})});
  m.node("Reshape", {"context.t", "model_shape"}, {"context"});
  linear("attn_out", "context", H, H);
  m.node("Add", {"x", "attn_out"}, {"residual1"});
  m.initializer("ln1.gamma", {H}, values(H, 1, 0.1));
  m.initializer("ln1.beta", {H}, values(H, 0, 0.1));
  m.node("LayerNormalization", {"residual1", "ln1.gamma", "ln1.beta"}, {"h1"},
         {Attr::integer("axis", -1), Attr::real("epsilon", 1e-12f)});
  linear("ffn1", "h1", H, F);
  m.node("Div", {"ffn1", "sqrt2"}, {"gelu.scaled"});
  m.node("Erf", {"gelu.scaled"}, {"gelu.erf"});
  m.node("Add", {"gelu.erf", "one"}, {"gelu.plus1"});
  m.node("Mul", {"ffn1", "gelu.plus1"}, {"gelu.x"});
  m.node("Mul", {"gelu.x", "half"}, {"gelu"});
  linear("ffn2", "gelu", F, H);
  m.node("Add", {"h1", "ffn2"}, {"residual2"});
  m.initializer("ln2.gamma", {H}, values(H, 1, 0.1));
  m.initializer("ln2.beta", {H}, values(H, 0, 0.1));
  m.node("LayerNormalization", {"residual2", "ln2.gamma", "ln2.beta"}, {"y"},
         {Attr::integer("axis", -1), Attr::real("epsilon", 1e-12f)});
  return m.bytes();
}

} // namespace weft::onnx::test
