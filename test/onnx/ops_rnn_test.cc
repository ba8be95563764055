// RNN, GRU and LSTM: each direction, both layouts, the activations with their alpha and beta,
// clip, linear_before_reset, input_forget, peepholes, run-time sequence_lens, initial states,
// symbolic batch and the dtypes, checked on the reference interpreter against a direct loop over
// the ONNX equations (and one case worked out by hand); and the errors a bad node gives.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <functional>
#include <optional>

#include "frontend/onnx/onnx_import.h"
#include "ir/interpreter.h"
#include "model_builder.h"
#include "tensor_checks.h"

using namespace weft;
using namespace weft::onnx;
using namespace weft::onnx::test;
using Catch::Matchers::Contains;

namespace {

/// An activation as the reference loop computes it, with its alpha and beta resolved.
struct Fn {
  std::string name;
  double alpha = 0, beta = 0;
};

/// One recurrent node and what its attributes mean.
struct Layer {
  std::string op = "LSTM";
  int opset = 14;
  std::string direction = "forward";
  int layout = 0;
  std::vector<std::string> activations; // the attribute (empty: absent)
  std::vector<float> alpha, beta;       // activation_alpha, activation_beta (empty: absent)
  std::vector<Fn> fns;                  // what the activations are, per direction in turn
  std::optional<float> clip;
  int linearBeforeReset = 0, inputForget = 0;
  bool bias = false, initialH = false, initialC = false, peepholes = false;
  bool hiddenSizeAttr = true;
  std::vector<int> lengths; // sequence_lens at run time (empty: absent)
  bool symbolicBatch = false;
  std::vector<Attr> extra;
  int seq = 3, batch = 2, input = 3, hidden = 2;

  int dirs() const { return direction == "bidirectional" ? 2 : 1; }
  int gates() const { return op == "RNN" ? 1 : op == "GRU" ? 3 : 4; }
};

double activate(const Fn& f, double x) {
  const std::string& n = f.name;
  if (n == "Relu") return std::max(x, 0.0);
  if (n == "Tanh") return std::tanh(x);
  if (n == "Sigmoid") return 1 / (1 + std::exp(-x));
  if (n == "Affine") return f.alpha * x + f.beta;
  if (n == "LeakyRelu") return x >= 0 ? x : f.alpha * x;
  if (n == "ThresholdedRelu") return x >= f.alpha ? x : 0;
  if (n == "ScaledTanh") return f.alpha * std::tanh(f.beta * x);
  if (n == "HardSigmoid") return std::min(std::max(f.alpha * x + f.beta, 0.0), 1.0);
  if (n == "Elu") return x >= 0 ? x : f.alpha * (std::exp(x) - 1);
  if (n == "Softsign") return x / (1 + std::abs(x));
  if (n == "Softplus") return std::log(1 + std::exp(x));
  FAIL("no activation " << n);
  return 0;
}

/// Deterministic values in (-1, 1), different for each tensor (`seed`).
std::vector<double> values(size_t n, double seed) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = 0.9 * std::sin(1.7 * static_cast<double>(i) + seed);
  return v;
}

/// The layer's inputs in the ONNX layout 0 (X [seq, batch, input], states [dirs, batch, hidden]).
struct Inputs {
  std::vector<double> x, w, r, b, h0, c0, p;
};

Inputs inputsOf(const Layer& l) {
  size_t d = l.dirs(), g = l.gates(), s = l.seq, n = l.batch, i = l.input, h = l.hidden;
  return {values(s * n * i, 0.1),     values(d * g * h * i, 0.7), values(d * g * h * h, 1.3),
          values(d * 2 * g * h, 2.9), values(d * n * h, 3.1),     values(d * n * h, 4.3),
          values(d * 3 * h, 5.9)};
}

/// The outputs by the ONNX equations, in layout 0: Y [seq, dirs, batch, hidden], Y_h and Y_c
/// [dirs, batch, hidden].
struct Outputs {
  std::vector<double> y, yh, yc;
};

Outputs reference(const Layer& l, const Inputs& in) {
  const int S = l.seq, N = l.batch, I = l.input, H = l.hidden, G = l.gates(), D = l.dirs();
  const int per = l.op == "RNN" ? 1 : l.op == "GRU" ? 2 : 3;
  Outputs out{std::vector<double>(S * D * N * H, 0), std::vector<double>(D * N * H),
              std::vector<double>(D * N * H)};
  auto clip = [&](double v) {
    return l.clip ? std::clamp(v, -double(*l.clip), double(*l.clip)) : v;
  };
  for (int d = 0; d < D; ++d) {
    bool reversed = d == 1 || l.direction == "reverse";
    auto fn = [&](int k) { return l.fns[d * per + k]; };
    auto W = [&](int row, int col) { return in.w[(d * G * H + row) * I + col]; };
    auto R = [&](int row, int col) { return in.r[(d * G * H + row) * H + col]; };
    auto Wb = [&](int row) { return l.bias ? in.b[d * 2 * G * H + row] : 0.0; };
    auto Rb = [&](int row) { return l.bias ? in.b[d * 2 * G * H + G * H + row] : 0.0; };
    auto P = [&](int gate, int u) { return l.peepholes ? in.p[d * 3 * H + gate * H + u] : 0.0; };
    for (int b = 0; b < N; ++b) {
      std::vector<double> h(H, 0), c(H, 0);
      for (int u = 0; u < H; ++u) {
        if (l.initialH) h[u] = in.h0[(d * N + b) * H + u];
        if (l.initialC) c[u] = in.c0[(d * N + b) * H + u];
      }
      int length = l.lengths.empty() ? S : l.lengths[b];
      for (int k = 0; k < S; ++k) {
        int t = reversed ? S - 1 - k : k;
        if (t >= length) continue; // Y stays 0, the state as it was
        auto xw = [&](int row) {
          double v = Wb(row);
          for (int i = 0; i < I; ++i)
            v += in.x[(t * N + b) * I + i] * W(row, i);
          return v;
        };
        auto hr = [&](int row, const std::vector<double>& hv) {
          double v = 0;
          for (int j = 0; j < H; ++j)
            v += hv[j] * R(row, j);
          return v;
        };
        std::vector<double> nh(H), nc(H);
        if (l.op == "RNN") {
          for (int u = 0; u < H; ++u)
            nh[u] = activate(fn(0), clip(xw(u) + hr(u, h) + Rb(u)));
        } else if (l.op == "GRU") {
          std::vector<double> z(H), r(H), rh(H);
          for (int u = 0; u < H; ++u) {
            z[u] = activate(fn(0), clip(xw(u) + hr(u, h) + Rb(u)));
            r[u] = activate(fn(0), clip(xw(H + u) + hr(H + u, h) + Rb(H + u)));
            rh[u] = r[u] * h[u];
          }
          for (int u = 0; u < H; ++u) {
            int row = 2 * H + u;
            double pre = l.linearBeforeReset ? xw(row) + r[u] * (hr(row, h) + Rb(row))
                                             : xw(row) + hr(row, rh) + Rb(row);
            double cand = activate(fn(1), clip(pre));
            nh[u] = (1 - z[u]) * cand + z[u] * h[u];
          }
        } else {
          for (int u = 0; u < H; ++u) { // gates i, o, f, c
            auto pre = [&](int gate) {
              return xw(gate * H + u) + hr(gate * H + u, h) + Rb(gate * H + u);
            };
            double i = activate(fn(0), clip(pre(0) + P(0, u) * c[u]));
            double f = l.inputForget ? 1 - i : activate(fn(0), clip(pre(2) + P(2, u) * c[u]));
            double ct = activate(fn(1), clip(pre(3)));
            nc[u] = f * c[u] + i * ct;
            double o = activate(fn(0), clip(pre(1) + P(1, u) * nc[u]));
            nh[u] = o * activate(fn(2), clip(nc[u]));
          }
          c = nc;
        }
        h = nh;
        for (int u = 0; u < H; ++u)
          out.y[((t * D + d) * N + b) * H + u] = h[u];
      }
      for (int u = 0; u < H; ++u) {
        out.yh[(d * N + b) * H + u] = h[u];
        out.yc[(d * N + b) * H + u] = c[u];
      }
    }
  }
  return out;
}

/// `v` laid out as [a, b, rest] with its first two axes swapped ([b, a, rest]).
std::vector<double> swap01(const std::vector<double>& v, int a, int b) {
  size_t rest = v.size() / static_cast<size_t>(a * b);
  std::vector<double> out(v.size());
  for (int i = 0; i < a; ++i)
    for (int j = 0; j < b; ++j)
      for (size_t k = 0; k < rest; ++k)
        out[(j * a + i) * rest + k] = v[(i * b + j) * rest + k];
  return out;
}

/// Y [seq, dirs, batch, hidden] in layout 1: [batch, seq, dirs, hidden].
std::vector<double> batchFirstY(const std::vector<double>& y, const Layer& l) {
  std::vector<double> out(y.size());
  int S = l.seq, D = l.dirs(), N = l.batch, H = l.hidden;
  for (int t = 0; t < S; ++t)
    for (int d = 0; d < D; ++d)
      for (int b = 0; b < N; ++b)
        for (int u = 0; u < H; ++u)
          out[((b * S + t) * D + d) * H + u] = y[((t * D + d) * N + b) * H + u];
  return out;
}

/// The model of `l` (inputs x w r [b] [sequence_lens] [initial_h] [initial_c] [p], all graph
/// inputs), with outputs y, y_h (and y_c for LSTM).
std::string modelOf(const Layer& l, int elem = kFloat) {
  ModelBuilder m(l.opset);
  std::string n = l.symbolicBatch ? "N" : std::to_string(l.batch);
  auto s = [](int v) { return std::to_string(v); };
  std::string d = s(l.dirs()), gh = s(l.gates() * l.hidden), h = s(l.hidden);
  bool bf = l.layout == 1;
  m.input("x", elem,
          bf ? std::vector<std::string>{n, s(l.seq), s(l.input)}
             : std::vector<std::string>{s(l.seq), n, s(l.input)});
  m.input("w", elem, {d, gh, s(l.input)}).input("r", elem, {d, gh, h});
  std::vector<std::string> ins = {"x", "w", "r", "", "", "", "", ""};
  if (l.bias) m.input(ins[3] = "b", elem, {d, s(2 * l.gates() * l.hidden)});
  if (!l.lengths.empty()) m.input(ins[4] = "lens", kInt32, {n});
  std::vector<std::string> state =
      bf ? std::vector<std::string>{n, d, h} : std::vector<std::string>{d, n, h};
  if (l.initialH) m.input(ins[5] = "h0", elem, state);
  if (l.initialC) m.input(ins[6] = "c0", elem, state);
  if (l.peepholes) m.input(ins[7] = "p", elem, {d, s(3 * l.hidden)});
  while (!ins.empty() && ins.back().empty())
    ins.pop_back();
  std::vector<Attr> attrs = l.extra;
  if (l.hiddenSizeAttr) attrs.push_back(Attr::integer("hidden_size", l.hidden));
  if (l.direction != "forward") attrs.push_back(Attr::text("direction", l.direction));
  if (l.layout) attrs.push_back(Attr::integer("layout", l.layout));
  if (l.clip) attrs.push_back(Attr::real("clip", *l.clip));
  if (l.linearBeforeReset) attrs.push_back(Attr::integer("linear_before_reset", 1));
  if (l.inputForget) attrs.push_back(Attr::integer("input_forget", 1));
  std::vector<std::string> outs = {"y", "y_h"};
  if (l.op == "LSTM") outs.push_back("y_c");
  m.node(l.op, ins, outs, attrs, "rnn");
  auto* node = m.proto().mutable_graph()->mutable_node(0);
  if (!l.activations.empty()) {
    auto* a = node->add_attribute();
    a->set_name("activations");
    a->set_type(::onnx::AttributeProto::STRINGS);
    for (const auto& v : l.activations)
      a->add_strings(v);
  }
  auto floatList = [&](const char* name, const std::vector<float>& v) {
    if (v.empty()) return;
    auto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::FLOATS);
    for (float f : v)
      a->add_floats(f);
  };
  floatList("activation_alpha", l.alpha);
  floatList("activation_beta", l.beta);
  for (const auto& o : outs)
    m.output(o);
  return m.bytes();
}

/// Imports `l`'s model in `elem`, runs it on the interpreter and checks every output against
/// the reference loop within `tol`.
void checkAgainstLoop(const Layer& l, int elem = kFloat, DType t = DType::f32, double tol = 1e-5) {
  ir::Graph g = importOnnxBytes(modelOf(l, elem));
  Inputs in = inputsOf(l);
  bool bf = l.layout == 1;
  int S = l.seq, N = l.batch, D = l.dirs();
  std::vector<int64_t> state =
      bf ? std::vector<int64_t>{N, D, l.hidden} : std::vector<int64_t>{D, N, l.hidden};
  std::vector<HostTensor> args = {bf ? tensor({N, S, l.input}, swap01(in.x, S, N), t)
                                     : tensor({S, N, l.input}, in.x, t),
                                  tensor({D, l.gates() * l.hidden, l.input}, in.w, t),
                                  tensor({D, l.gates() * l.hidden, l.hidden}, in.r, t)};
  if (l.bias) args.push_back(tensor({D, 2 * l.gates() * l.hidden}, in.b, t));
  if (!l.lengths.empty())
    args.push_back(
        tensor({N}, std::vector<double>(l.lengths.begin(), l.lengths.end()), DType::i32));
  if (l.initialH) args.push_back(tensor(state, bf ? swap01(in.h0, D, N) : in.h0, t));
  if (l.initialC) args.push_back(tensor(state, bf ? swap01(in.c0, D, N) : in.c0, t));
  if (l.peepholes) args.push_back(tensor({D, 3 * l.hidden}, in.p, t));
  // inputs given as f16/bf16 are rounded: the reference starts from the rounded values
  for (auto* v : {&in.x, &in.w, &in.r, &in.b, &in.h0, &in.c0, &in.p})
    if (!v->empty() && t != DType::f32 && t != DType::f64)
      *v = valuesOf(tensor({static_cast<int64_t>(v->size())}, *v, t));
  Outputs want = reference(l, in);
  ir::Binding binding;
  if (l.symbolicBatch) binding["N"] = N;
  auto out = ir::interpret(g, args, binding);
  std::string dt(ir::dtypeName(t));
  std::string n = l.symbolicBatch ? "N" : std::to_string(N);
  std::string h = std::to_string(l.hidden), d = std::to_string(D), s = std::to_string(S);
  CHECK(g.node(g.outputs()[0]).type.str() ==
        (bf ? fmt::format("{}[{}, {}, {}, {}]", dt, n, s, d, h)
            : fmt::format("{}[{}, {}, {}, {}]", dt, s, d, n, h)));
  CHECK(g.node(g.outputs()[1]).type.str() == (bf ? fmt::format("{}[{}, {}, {}]", dt, n, d, h)
                                                 : fmt::format("{}[{}, {}, {}]", dt, d, n, h)));
  INFO("Y");
  checkClose(out[0], bf ? batchFirstY(want.y, l) : want.y, tol);
  INFO("Y_h");
  checkClose(out[1], bf ? swap01(want.yh, D, N) : want.yh, tol);
  if (l.op == "LSTM") {
    INFO("Y_c");
    checkClose(out[2], bf ? swap01(want.yc, D, N) : want.yc, tol);
  }
}

} // namespace

TEST_CASE("A bidirectional RNN worked out by hand: Relu, biases and run-time sequence_lens",
          "[onnx][rnn]") {
  // X [seq 2, batch 2, input 1]: t0 [1, 3], t1 [2, 4]; both directions W 2, R 0.5, Wb 1, Rb -0.5;
  // lengths [2, 1]. Forward: b0 relu(2 + 0.5) = 2.5 then relu(4 + 1.25 + 0.5) = 5.75; b1 6.5,
  // then past its length (Y 0, state kept). Reverse: b0 from t1: 4.5, then 2 + 2.25 + 0.5 =
  // 4.75; b1 skips t1 (Y 0, state 0), then 6.5.
  ModelBuilder m(14);
  m.input("x", kFloat, {"2", "2", "1"})
      .input("w", kFloat, {"2", "1", "1"})
      .input("r", kFloat, {"2", "1", "1"})
      .input("b", kFloat, {"2", "2"})
      .input("lens", kInt32, {"2"})
      .node("RNN", {"x", "w", "r", "b", "lens"}, {"y", "y_h"},
            {Attr::integer("hidden_size", 1), Attr::text("direction", "bidirectional")}, "rnn");
  auto* a = m.proto().mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("activations");
  a->set_type(::onnx::AttributeProto::STRINGS);
  a->add_strings("Relu");
  a->add_strings("Relu");
  m.output("y").output("y_h");
  ir::Graph g = importOnnxBytes(m.bytes());
  auto out = ir::interpret(g, {tensor({2, 2, 1}, {1, 3, 2, 4}), tensor({2, 1, 1}, {2, 2}),
                               tensor({2, 1, 1}, {0.5, 0.5}), tensor({2, 2}, {1, -0.5, 1, -0.5}),
                               tensor({2}, {2, 1}, DType::i32)});
  // Y [seq, dirs, batch, hidden]
  checkClose(out[0], {2.5, 6.5, 4.75, 6.5, 5.75, 0, 4.5, 0});
  checkClose(out[1], {5.75, 6.5, 4.75, 6.5});
}

TEST_CASE("RNN, GRU and LSTM match a direct loop over the ONNX equations for every attribute",
          "[onnx][rnn]") {
  std::vector<std::pair<std::string, Layer>> cases;
  auto add = [&](const std::string& name, Layer l) { cases.emplace_back(name, l); };
  Layer l;
  l = Layer{};
  l.op = "RNN", l.opset = 7, l.bias = l.initialH = true, l.hiddenSizeAttr = false;
  l.fns = {{"Tanh"}};
  add("RNN-7: default Tanh, B, initial_h, hidden_size from R", l);
  l = Layer{};
  l.op = "RNN", l.direction = "bidirectional", l.layout = 1, l.clip = 0.5f;
  l.bias = l.initialH = true;
  l.activations = {"Relu", "LeakyRelu"}, l.alpha = {0.2f};
  l.fns = {{"Relu"}, {"LeakyRelu", 0.2f}};
  add("RNN-14 bidirectional, batch first, clip, LeakyRelu's alpha", l);
  l = Layer{};
  l.op = "RNN", l.opset = 1, l.direction = "reverse", l.initialH = true, l.lengths = {2, 0};
  l.activations = {"softsign", "Tanh"}; // the schema's default pair: the first is used
  l.extra = {Attr::integer("output_sequence", 1)};
  l.fns = {{"Softsign"}};
  add("RNN-1 reverse, output_sequence, a length 0 keeps initial_h", l);
  l = Layer{};
  l.op = "GRU", l.opset = 7, l.bias = l.initialH = true;
  l.fns = {{"Sigmoid"}, {"Tanh"}};
  add("GRU-7: default activations, B, initial_h", l);
  l = Layer{};
  l.op = "GRU", l.direction = "bidirectional", l.layout = 1, l.linearBeforeReset = 1;
  l.bias = l.initialH = l.symbolicBatch = true, l.lengths = {3, 1};
  l.activations = {"HardSigmoid", "Elu", "Sigmoid", "ScaledTanh"};
  l.alpha = {0.3f, 0.8f, 1.5f}, l.beta = {0.4f, 0.7f}; // consumed by those that take them
  l.fns = {{"HardSigmoid", 0.3f, 0.4f}, {"Elu", 0.8f}, {"Sigmoid"}, {"ScaledTanh", 1.5f, 0.7f}};
  add("GRU-14 bidirectional, batch first, linear_before_reset, run-time lengths, symbolic "
      "batch, alpha and beta consumed in order",
      l);
  l = Layer{};
  l.op = "GRU", l.opset = 3, l.direction = "reverse", l.linearBeforeReset = 1, l.clip = 0.7f;
  l.initialH = true;
  l.activations = {"Softplus", "Affine"};
  l.alpha = {9, 0.5f}, l.beta = {7, 0.25f}; // one per activation
  l.fns = {{"Softplus"}, {"Affine", 0.5f, 0.25f}};
  add("GRU-3 reverse, linear_before_reset without B, clip, one alpha per activation", l);
  l = Layer{};
  l.op = "LSTM", l.opset = 7, l.bias = l.initialH = l.initialC = l.peepholes = true;
  l.fns = {{"Sigmoid"}, {"Tanh"}, {"Tanh"}};
  add("LSTM-7: default activations, B, initial states, peepholes", l);
  l = Layer{};
  l.direction = "bidirectional", l.layout = 1, l.inputForget = 1, l.clip = 0.6f;
  l.bias = l.initialH = l.initialC = l.peepholes = l.symbolicBatch = true, l.lengths = {2, 3};
  l.activations = {"Sigmoid", "Tanh", "Relu", "HardSigmoid", "Softsign", "ThresholdedRelu"};
  l.alpha = {0.25f, 0.1f};
  l.fns = {{"Sigmoid"},  {"Tanh"},
           {"Relu"},     {"HardSigmoid", 0.25f, 0.5f},
           {"Softsign"}, {"ThresholdedRelu", 0.1f}};
  add("LSTM-14 bidirectional, batch first, input_forget, clip (h(Ct) too), run-time lengths, "
      "symbolic batch, HardSigmoid's default beta",
      l);
  l = Layer{};
  l.opset = 1, l.direction = "reverse", l.initialC = true;
  l.extra = {Attr::integer("output_sequence", 0)};
  l.activations = {"Sigmoid", "Tanh", "LeakyRelu"};
  l.fns = {{"Sigmoid"}, {"Tanh"}, {"LeakyRelu", 0.01f}};
  add("LSTM-1 reverse, initial_c only, LeakyRelu's default alpha", l);
  for (const auto& [name, layer] : cases) {
    INFO(name);
    checkAgainstLoop(layer);
  }
}

TEST_CASE("Recurrent layers in f16, bf16 and f64: gates in f32 for the narrow types",
          "[onnx][rnn]") {
  Layer l;
  l.direction = "bidirectional", l.bias = l.initialH = l.initialC = l.peepholes = true;
  l.fns = {{"Sigmoid"}, {"Tanh"}, {"Tanh"}, {"Sigmoid"}, {"Tanh"}, {"Tanh"}};
  checkAgainstLoop(l, kDouble, DType::f64, 1e-12);
  checkAgainstLoop(l, kHalf, DType::f16, 4e-3);
  l.op = "GRU", l.linearBeforeReset = 0, l.fns = {{"Sigmoid"}, {"Tanh"}, {"Sigmoid"}, {"Tanh"}};
  l.initialC = l.peepholes = false; // LSTM's inputs: GRU has neither
  checkAgainstLoop(l, kBfloat16, DType::bf16, 3e-2);
}

TEST_CASE("Recurrent layers reject malformed nodes, naming what is wrong", "[onnx][rnn]") {
  auto error = [](const Layer& l, const std::function<void(::onnx::GraphProto&)>& edit = {}) {
    ::onnx::ModelProto m;
    REQUIRE(m.ParseFromString(modelOf(l)));
    if (edit) edit(*m.mutable_graph());
    return errorOf(m.SerializeAsString());
  };
  auto dim = [](::onnx::GraphProto& g, int input, int axis) {
    return g.mutable_input(input)
        ->mutable_type()
        ->mutable_tensor_type()
        ->mutable_shape()
        ->mutable_dim(axis);
  };
  Layer l;
  l.op = "GRU";
  CHECK_THAT(error(l, [&](auto& g) { dim(g, 0, 0)->set_dim_param("S"); }),
             Contains("X [S, 2, 3] has the symbolic sequence length S; weft unrolls"));
  CHECK_THAT(error(l, [&](auto& g) { dim(g, 1, 1)->set_dim_value(5); }),
             Contains("W has shape [1, 5, 3] but needs [1, 6, 3] (num_directions, "
                      "3*hidden_size, the zrh gates, input_size)"));
  CHECK_THAT(error(l,
                   [&](auto& g) {
                     g.mutable_input(1)->mutable_type()->mutable_tensor_type()->set_elem_type(
                         kDouble);
                   }),
             Contains("W has dtype f64 but X has dtype f32"));
  Layer bad = l;
  bad.direction = "sideways";
  CHECK_THAT(error(bad),
             Contains("direction \"sideways\" is not one of forward, reverse, bidirectional"));
  bad = l, bad.layout = 2;
  CHECK_THAT(error(bad), Contains("layout is 2; it must be 0 or 1"));
  bad = l, bad.clip = 0;
  CHECK_THAT(error(bad), Contains("clip is 0; it must be positive"));
  bad = l, bad.activations = {"Sigmoid"};
  CHECK_THAT(error(bad), Contains("activations has 1 entries; a one-direction GRU needs 2"));
  bad = l, bad.activations = {"Sigmoid", "Swish"};
  CHECK_THAT(error(bad), Contains("activation \"Swish\" is not one of Relu, Tanh, Sigmoid"));
  bad = l, bad.activations = {"Tanh", "LeakyRelu"}, bad.alpha = {0.1f, 0.2f, 0.3f};
  CHECK_THAT(error(bad), Contains("activation_alpha has 3 values, but 1 of the 2 activations "
                                  "take one"));
  bad = l, bad.activations = {"Sigmoid", "ScaledTanh"}, bad.alpha = {2};
  CHECK_THAT(error(bad), Contains("activation ScaledTanh has no default beta"));
  bad = l, bad.hidden = 3;
  CHECK_THAT(error(bad, [&](auto& g) { dim(g, 2, 2)->set_dim_value(2); }),
             Contains("R has shape [1, 9, 2] but needs [1, 9, 3]"));
  bad = l, bad.lengths = {3, 3};
  CHECK_THAT(error(bad,
                   [&](auto& g) {
                     g.mutable_input(3)->mutable_type()->mutable_tensor_type()->set_elem_type(
                         kFloat);
                   }),
             Contains("sequence_lens has dtype f32; it must be an integer tensor"));
  CHECK_THAT(error(l, [&](auto& g) { g.mutable_node(0)->add_output("y_c"); }),
             Contains("GRU has 2 outputs (Y, Y_h), but the node has 3"));
}
