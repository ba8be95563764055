// The signal operators of ops_signal.cc (HannWindow, HammingWindow, BlackmanWindow,
// MelWeightMatrix, LRN,
// ReverseSequence, DFT, STFT): each model is imported, run on the reference interpreter and
// compared with values worked out by hand; bad attributes and operands give a clear error.
#include <catch2/catch.hpp>

#include <cmath>

#include "frontend/onnx/onnx_import.h"
#include "ir/interpreter.h"
#include "model_builder.h"
#include "tensor_checks.h"

using namespace weft;
using namespace weft::onnx;
using namespace weft::onnx::test;
using Catch::Matchers::Contains;

namespace {

HostTensor runModel(ModelBuilder& m, const std::vector<HostTensor>& inputs = {}) {
  ir::Graph g = importOnnxBytes(m.bytes());
  std::vector<HostTensor> out = ir::interpret(g, inputs);
  REQUIRE(out.size() == 1);
  return out[0];
}

/// A window operator of the given size (an int64 scalar initializer) and attributes.
ModelBuilder window(const std::string& op, int64_t size, const std::vector<Attr>& attrs = {},
                    std::vector<int64_t> sizeDims = {}) {
  ModelBuilder m(17);
  m.initializerInts("size", sizeDims, {size}).node(op, {"size"}, {"y"}, attrs, "w").output("y");
  return m;
}

/// A one-node model over the graph input x; `more` names initializers added by the caller.
ModelBuilder unary(int opset, const std::string& op, const std::vector<std::string>& dims,
                   const std::vector<Attr>& attrs = {}, std::vector<std::string> more = {},
                   int elem = kFloat) {
  ModelBuilder m(opset);
  more.insert(more.begin(), "x");
  m.input("x", elem, dims).node(op, more, {"y"}, attrs, "n").output("y");
  return m;
}

} // namespace

TEST_CASE("Hann, Hamming and Blackman windows are literals of the spec's cosine sums",
          "[onnx][signal]") {
  auto periodic = Attr::integer("periodic", 1), symmetric = Attr::integer("periodic", 0);
  {
    auto m = window("HannWindow", 4);
    checkClose(runModel(m), {0, 0.5, 1, 0.5});
  }
  {
    auto m = window("HannWindow", 3, {symmetric});
    checkClose(runModel(m), {0, 1, 0});
  }
  {
    auto m = window("HammingWindow", 3, {symmetric});
    checkClose(runModel(m), {4.0 / 46, 1, 4.0 / 46});
  }
  {
    auto m = window("BlackmanWindow", 4, {periodic, Attr::integer("output_datatype", 11)});
    HostTensor y = runModel(m);
    CHECK(y.dtype == DType::f64);
    checkClose(y, {0, 0.34, 1, 0.34}, 1e-12);
  }
  {
    auto m = window("HannWindow", 4, {Attr::integer("output_datatype", 6)});
    HostTensor y = runModel(m);
    CHECK(y.dtype == DType::i32);
    CHECK(valuesOf(y) == std::vector<double>{0, 0, 1, 0});
  }
  {
    auto m = window("HannWindow", 1, {symmetric}); // 0 / 0 in the spec's formula
    CHECK(std::isnan(valuesOf(runModel(m)).at(0)));
  }
  CHECK_THAT(errorOf(window("HannWindow", 0).bytes()), Contains("size is 0; it must be greater"));
  CHECK_THAT(errorOf(window("HannWindow", 4, {}, {1}).bytes()),
             Contains("has shape [1]; it must be a scalar"));
  CHECK_THAT(errorOf(window("HannWindow", 4, {Attr::integer("output_datatype", 9)}).bytes()),
             Contains("output_datatype 9 (BOOL) is not a numeric type"));
  CHECK_THAT(errorOf(window("HammingWindow", 4, {Attr::integer("periodic", 2)}).bytes()),
             Contains("periodic is 2; it must be 0 or 1"));
  CHECK_THAT(
      errorOf(window("HannWindow", 1, {symmetric, Attr::integer("output_datatype", 7)}).bytes()),
      Contains("0 / 0 (NaN), which output_datatype INT64 cannot hold"));
}

TEST_CASE("MelWeightMatrix is a literal of triangular filters between the reference's edges",
          "[onnx][signal]") {
  // num_mel_bins 2, dft_length 64 (33 bins), 8000 Hz, 0 to 4000 Hz: mel(4000) = 2146.06, the
  // reference's step a quarter of it; the points 0, 426.8, 1113.8 and 2219.8 Hz are the bins
  // floor(65 hz / 8000) = 0, 3, 9 and 18.
  auto mel = [](int64_t bins, float lower, float upper, std::vector<Attr> attrs) {
    ModelBuilder m(17);
    m.initializerInts("n", {}, {bins})
        .initializerInts("dft", {}, {64})
        .initializerInts("rate", {}, {8000})
        .initializer("lo", {}, {lower})
        .initializer("hi", {}, {upper})
        .node("MelWeightMatrix", {"n", "dft", "rate", "lo", "hi"}, {"w"}, attrs, "mel")
        .output("w");
    return m;
  };
  auto m = mel(2, 0, 4000, {Attr::integer("output_datatype", 11)});
  HostTensor w = runModel(m);
  CHECK(w.dtype == DType::f64);
  REQUIRE(w.shape == std::vector<int64_t>{33, 2});
  std::vector<double> want(66, 0.0);
  auto triangle = [&](int64_t band, int64_t left, int64_t center, int64_t right) {
    for (int64_t j = left; j <= center; ++j)
      want[static_cast<size_t>(j * 2 + band)] = double(j - left) / double(center - left);
    for (int64_t j = center; j < right; ++j)
      want[static_cast<size_t>(j * 2 + band)] = double(right - j) / double(right - center);
  };
  triangle(0, 0, 3, 9);
  triangle(1, 3, 9, 18);
  CHECK(valuesOf(w) == want);
  CHECK_THAT(errorOf(mel(2, 0, 9000, {}).bytes()),
             Contains("put mel band 1 over spectrogram bin 33, outside the 33 bins of a 64-point "
                      "DFT at 8000 Hz"));
  CHECK_THAT(errorOf(mel(-1, 0, 4000, {}).bytes()),
             Contains("num_mel_bins is -1; it must not be negative"));
  CHECK_THAT(errorOf(mel(2, 0, 4000, {Attr::integer("output_datatype", 9)}).bytes()),
             Contains("output_datatype 9 (BOOL) is not a numeric type"));
}

TEST_CASE("LRN sums squares over the clipped channel window", "[onnx][signal]") {
  // size 2: the window of channel c is c .. c + 1; alpha / size = 1, beta 1, bias 1
  auto m = unary(13, "LRN", {"1", "3", "1"},
                 {Attr::integer("size", 2), Attr::real("alpha", 2), Attr::real("beta", 1)});
  checkClose(runModel(m, {tensor({1, 3, 1}, {1, 2, 3})}), {1.0 / 6, 2.0 / 14, 3.0 / 10});
  // the defaults (alpha 1e-4, beta 0.75, bias 1), size 3 over 2 channels, in f16
  auto h = unary(1, "LRN", {"1", "2"}, {Attr::integer("size", 3)}, {}, kHalf);
  HostTensor y = runModel(h, {tensor({1, 2}, {100, 200}, DType::f16)});
  CHECK(y.dtype == DType::f16);
  double d = std::pow(1 + 1e-4 / 3 * 50000, 0.75);
  checkClose(y, {100 / d, 200 / d}, 0.05);
  auto error = [](std::vector<Attr> attrs, std::vector<std::string> dims = {"1", "3", "1"},
                  int elem = kFloat, int opset = 13) {
    return errorOf(unary(opset, "LRN", dims, attrs, {}, elem).bytes());
  };
  CHECK_THAT(error({Attr::integer("size", 0)}), Contains("size is 0; it must be 1 or more"));
  CHECK_THAT(error({}), Contains("size"));
  CHECK_THAT(error({Attr::integer("size", 3)}, {"3"}), Contains("needs rank 2 or more"));
  CHECK_THAT(error({Attr::integer("size", 3)}, {"1", "3"}, kInt64),
             Contains("X has dtype i64; LRN takes floating-point tensors"));
  CHECK_THAT(error({Attr::integer("size", 3)}, {"1", "3"}, kBfloat16, 1),
             Contains("bfloat16, which LRN takes from opset 13"));
  CHECK_THAT(error({Attr::integer("size", 3)}, {"1", "C"}), Contains("symbolic size C"));
}

TEST_CASE("ReverseSequence reverses each batch entry's first lengths, read at run time",
          "[onnx][signal]") {
  auto model = [](int64_t batch, int64_t time, std::vector<std::string> dims) {
    ModelBuilder m(10);
    m.input("x", kFloat, dims)
        .input("lens", kInt64,
               {static_cast<size_t>(batch) < dims.size() ? dims[size_t(batch)] : "2"})
        .node("ReverseSequence", {"x", "lens"}, {"y"},
              {Attr::integer("batch_axis", batch), Attr::integer("time_axis", time)}, "r")
        .output("y");
    return m;
  };
  auto byRow = model(0, 1, {"2", "3"});
  HostTensor x = tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  // a length past the time axis reverses all of it, as slicing clamps it
  checkClose(runModel(byRow, {x, tensor({2}, {2, 5}, DType::i64)}), {2, 1, 3, 6, 5, 4});
  checkClose(runModel(byRow, {x, tensor({2}, {0, 1}, DType::i64)}), {1, 2, 3, 4, 5, 6});
  auto byColumn = model(1, 0, {"3", "2"});
  checkClose(
      runModel(byColumn, {tensor({3, 2}, {1, 4, 2, 5, 3, 6}), tensor({2}, {2, 3}, DType::i64)}),
      {2, 6, 1, 5, 3, 4});
  auto error = [&](int64_t batch, int64_t time, std::vector<std::string> dims = {"2", "3"}) {
    return errorOf(model(batch, time, dims).bytes());
  };
  CHECK_THAT(error(1, 1), Contains("batch_axis and time_axis are both 1"));
  CHECK_THAT(error(2, 0), Contains("batch_axis 2 and time_axis 0 must each be 0 or 1"));
  CHECK_THAT(error(0, 1, {"3"}), Contains("needs rank 2 or more"));
  ModelBuilder known(10);
  known.input("x", kFloat, {"1", "3"})
      .initializerInts("lens", {1}, {4})
      .node("ReverseSequence", {"x", "lens"}, {"y"},
            {Attr::integer("batch_axis", 0), Attr::integer("time_axis", 1)})
      .output("y");
  CHECK_THAT(errorOf(known.bytes()), Contains("sequence_lens holds 4; each must be in [0, 3]"));
  ModelBuilder shape(10);
  shape.input("x", kFloat, {"2", "3"})
      .input("lens", kInt64, {"2"})
      .node("ReverseSequence", {"x", "lens"}, {"y"}) // batch_axis 1 by default
      .output("y");
  CHECK_THAT(errorOf(shape.bytes()), Contains("sequence_lens has shape [2] but needs [3]"));
}

TEST_CASE("DFT and STFT as one dot with a table of exact cosines", "[onnx][signal]") {
  HostTensor x = tensor({1, 4, 1}, {1, 2, 3, 4});
  // DFT of [1, 2, 3, 4]: 10, -2 + 2i, -2, -2 - 2i
  std::vector<double> spectrum = {10, 0, -2, 2, -2, 0, -2, -2};
  {
    auto m = unary(17, "DFT", {"1", "4", "1"});
    checkClose(runModel(m, {x}), spectrum, 1e-5);
  }
  {
    auto m = unary(17, "DFT", {"1", "4", "1"}, {Attr::integer("onesided", 1)});
    HostTensor y = runModel(m, {x});
    CHECK(y.shape == std::vector<int64_t>{1, 3, 2});
    checkClose(y, {10, 0, -2, 2, -2, 0}, 1e-5);
  }
  {
    auto m = unary(17, "DFT", {"1", "4", "2"}, {Attr::integer("inverse", 1)});
    checkClose(runModel(m, {tensor({1, 4, 2}, spectrum)}), {1, 0, 2, 0, 3, 0, 4, 0}, 1e-5);
  }
  {
    // IRFFT: the first 3 bins of the Hermitian spectrum give the real signal of length 4
    auto m = unary(20, "DFT", {"1", "3", "2"},
                   {Attr::integer("inverse", 1), Attr::integer("onesided", 1)});
    HostTensor y = runModel(m, {tensor({1, 3, 2}, {10, 0, -2, 2, -2, 0})});
    CHECK(y.shape == std::vector<int64_t>{1, 4, 1});
    checkClose(y, {1, 2, 3, 4}, 1e-5);
  }
  {
    // opset 20: axis 0 as an input; dft_length 2 keeps [1, 2]
    auto m = unary(20, "DFT", {"4", "1"}, {}, {"n", "axis"});
    m.initializerInts("n", {}, {2}).initializerInts("axis", {}, {0});
    checkClose(runModel(m, {tensor({4, 1}, {1, 2, 3, 4})}), {3, 0, -1, 0}, 1e-5);
  }
  {
    // STFT of 1..6 in frames of 2, 2 apart, onesided: bins a + b and a - b
    auto m = unary(17, "STFT", {"1", "6", "1"}, {}, {"step", "", "length"});
    m.initializerInts("step", {}, {2}).initializerInts("length", {}, {2});
    HostTensor y = runModel(m, {tensor({1, 6, 1}, {1, 2, 3, 4, 5, 6})});
    CHECK(y.shape == std::vector<int64_t>{1, 3, 2, 2});
    checkClose(y, {3, 0, -1, 0, 7, 0, -1, 0, 11, 0, -1, 0}, 1e-5);
    // weighted by the window [1, 0.5], its length the frame length
    auto w = unary(17, "STFT", {"1", "6", "1"}, {}, {"step", "window"});
    w.initializerInts("step", {}, {2}).initializer("window", {2}, {1, 0.5f});
    checkClose(runModel(w, {tensor({1, 6, 1}, {1, 2, 3, 4, 5, 6})}),
               {2, 0, 0, 0, 5, 0, 1, 0, 8, 0, 2, 0}, 1e-5);
  }
  auto dftError = [](std::vector<Attr> attrs, std::vector<std::string> dims = {"1", "4", "1"}) {
    return errorOf(unary(17, "DFT", dims, attrs).bytes());
  };
  CHECK_THAT(dftError({Attr::integer("axis", -1)}), Contains("axis -1 is out of range"));
  CHECK_THAT(dftError({Attr::integer("axis", 2)}), Contains("axis 2 is out of range"));
  CHECK_THAT(dftError({}, {"1", "4", "3"}), Contains("its last axis must be 1 (real) or 2"));
  CHECK_THAT(dftError({Attr::integer("onesided", 1)}, {"1", "4", "2"}),
             Contains("onesided forward DFT (RFFT) takes a real input"));
  CHECK_THAT(dftError({Attr::integer("onesided", 1), Attr::integer("inverse", 1)}),
             Contains("IRFFT) takes a complex input"));
  CHECK_THAT(dftError({}, {"1", "N", "1"}), Contains("symbolic size N is not supported"));
  auto mismatch = unary(17, "STFT", {"1", "6", "1"}, {}, {"step", "window", "length"});
  mismatch.initializerInts("step", {}, {2})
      .initializer("window", {3}, {1, 1, 1})
      .initializerInts("length", {}, {2});
  CHECK_THAT(errorOf(mismatch.bytes()),
             Contains("the window has 3 elements but frame_length is 2; they must match"));
  auto tooLong = unary(17, "STFT", {"1", "6", "1"}, {}, {"step", "", "length"});
  tooLong.initializerInts("step", {}, {1}).initializerInts("length", {}, {7});
  CHECK_THAT(errorOf(tooLong.bytes()), Contains("frame_length 7 is longer than the signal"));
}
