#include "test_graphs.h"

namespace weft::fusion::testing {

using ir::DType;
using ir::OpKind;

namespace {

ir::NodeId bcastRows(ir::Graph& g, ir::NodeId v, int64_t rows, int64_t cols,
                     const std::string& name = "") {
  return g.broadcastInDim(v, {rows, cols}, {0}, name);
}
ir::NodeId bcastCols(ir::Graph& g, ir::NodeId v, int64_t rows, int64_t cols,
                     const std::string& name = "") {
  return g.broadcastInDim(v, {rows, cols}, {1}, name);
}
ir::NodeId splat(ir::Graph& g, std::initializer_list<int64_t> shape, double value,
                 const std::string& name = "") {
  ir::Shape s(shape.begin(), shape.end());
  return g.constant(DType::f32, s, {value}, name);
}

/// (x - mean) * rsqrt(var + eps), with the statistics over the rows of x.
ir::NodeId normalise(ir::Graph& g, ir::NodeId x, int64_t rows, int64_t hidden) {
  ir::NodeId sum = g.reduce(ir::ReduceKind::Sum, x, {1}, "sum");
  ir::NodeId mean = g.binary(OpKind::Div, sum, splat(g, {rows}, double(hidden)), "mean");
  ir::NodeId centered = g.binary(OpKind::Sub, x, bcastRows(g, mean, rows, hidden), "centered");
  ir::NodeId sq = g.binary(OpKind::Mul, centered, centered, "sq");
  ir::NodeId sqsum = g.reduce(ir::ReduceKind::Sum, sq, {1}, "sqsum");
  ir::NodeId var = g.binary(OpKind::Div, sqsum, splat(g, {rows}, double(hidden)), "var");
  ir::NodeId rstd =
      g.unary(OpKind::Rsqrt, g.binary(OpKind::Add, var, splat(g, {rows}, 1e-5)), "rstd");
  return g.binary(OpKind::Mul, centered, bcastRows(g, rstd, rows, hidden), "normed");
}

ir::NodeId affine(ir::Graph& g, ir::NodeId normed, int64_t rows, int64_t hidden) {
  ir::NodeId gamma = g.parameter("gamma", {DType::f32, {hidden}});
  ir::NodeId beta = g.parameter("beta", {DType::f32, {hidden}});
  ir::NodeId scaled = g.binary(OpKind::Mul, normed, bcastCols(g, gamma, rows, hidden), "scaled");
  return g.binary(OpKind::Add, scaled, bcastCols(g, beta, rows, hidden), "out");
}

} // namespace

ir::Graph astitchFig7(int64_t batch, int64_t columns) {
  const int64_t c = columns;
  ir::Graph g;
  ir::NodeId p1 = g.parameter("parameter.1", {DType::f32, {batch, c, 32}});
  ir::NodeId p2 = g.parameter("parameter.2", {DType::f32, {c}});
  ir::NodeId r1 = g.reduce(ir::ReduceKind::Sum, p1, {2}, "reduce.1");
  ir::NodeId b1 = bcastCols(g, p2, batch, c, "broadcast.1");
  ir::NodeId a1 = g.binary(OpKind::Add, r1, b1, "add.1");
  ir::NodeId d1 = g.binary(OpKind::Div, p2, g.constant(DType::f32, {c}, {32.0}, "constant.1"),
                           "divide.1");
  ir::NodeId pw = g.binary(OpKind::Pow, d1, g.constant(DType::f32, {c}, {2.0}, "constant.2"),
                           "power.1");
  ir::NodeId b2 = bcastCols(g, pw, batch, c, "broadcast.2");
  ir::NodeId a2 = g.binary(OpKind::Add, a1, b2, "add.2");
  ir::NodeId r2 = g.reduce(ir::ReduceKind::Sum, a2, {0}, "reduce.2");
  ir::NodeId b3 = bcastCols(g, r2, batch, c, "broadcast.3");
  g.addOutput(g.binary(OpKind::Mul, b3, b2, "multiply.1"));
  return g;
}

ir::Graph layerNorm(int64_t rows, int64_t hidden) {
  ir::Graph g;
  ir::NodeId x = g.parameter("x", {DType::f32, {rows, hidden}});
  g.addOutput(affine(g, normalise(g, x, rows, hidden), rows, hidden));
  return g;
}

ir::Graph softmax(int64_t rows, int64_t length) {
  ir::Graph g;
  ir::NodeId x = g.parameter("x", {DType::f32, {rows, length}});
  ir::NodeId mx = g.reduce(ir::ReduceKind::Max, x, {1}, "max");
  ir::NodeId shifted = g.binary(OpKind::Sub, x, bcastRows(g, mx, rows, length), "shifted");
  ir::NodeId e = g.unary(OpKind::Exp, shifted, "exp");
  ir::NodeId sum = g.reduce(ir::ReduceKind::Sum, e, {1}, "sum");
  ir::NodeId out = g.binary(OpKind::Div, e, bcastRows(g, sum, rows, length), "out");
  g.addOutput(out);
  return g;
}

ir::Graph residualLayerNorm(int64_t rows, int64_t hidden) {
  ir::Graph g;
  ir::NodeId x = g.parameter("x", {DType::f32, {rows, hidden}});
  ir::NodeId r = g.parameter("residual", {DType::f32, {rows, hidden}});
  ir::NodeId bias = g.parameter("bias", {DType::f32, {hidden}});
  ir::NodeId biased = g.binary(OpKind::Add, x, bcastCols(g, bias, rows, hidden), "biased");
  ir::NodeId sum = g.binary(OpKind::Add, biased, r, "residual_sum");
  g.addOutput(sum); // the residual stream goes on to the next layer
  g.addOutput(affine(g, normalise(g, sum, rows, hidden), rows, hidden));
  return g;
}

ir::Graph geluBias(int64_t rows, int64_t hidden) {
  ir::Graph g;
  ir::NodeId x = g.parameter("x", {DType::f32, {rows, hidden}});
  ir::NodeId bias = g.parameter("bias", {DType::f32, {hidden}});
  ir::NodeId h = g.binary(OpKind::Add, x, bcastCols(g, bias, rows, hidden), "h");
  ir::NodeId scaled =
      g.binary(OpKind::Mul, h, splat(g, {rows, hidden}, 0.7071067811865476), "scaled");
  ir::NodeId erf = g.unary(OpKind::Erf, scaled, "erf");
  ir::NodeId onePlus = g.binary(OpKind::Add, erf, splat(g, {rows, hidden}, 1.0), "one_plus");
  ir::NodeId half = g.binary(OpKind::Mul, h, splat(g, {rows, hidden}, 0.5), "half");
  g.addOutput(g.binary(OpKind::Mul, half, onePlus, "gelu"));
  return g;
}

ir::Graph rmsNorm(int64_t rows, int64_t hidden) {
  ir::Graph g;
  ir::NodeId x = g.parameter("x", {DType::f32, {rows, hidden}});
  ir::NodeId w = g.parameter("weight", {DType::f32, {hidden}});
  ir::NodeId sq = g.binary(OpKind::Mul, x, x, "sq");
  ir::NodeId ms = g.binary(OpKind::Div, g.reduce(ir::ReduceKind::Sum, sq, {1}, "sqsum"),
                           splat(g, {rows}, double(hidden)), "mean_square");
  ir::NodeId inv =
      g.unary(OpKind::Rsqrt, g.binary(OpKind::Add, ms, splat(g, {rows}, 1e-6)), "inv_rms");
  ir::NodeId normed = g.binary(OpKind::Mul, x, bcastRows(g, inv, rows, hidden), "normed");
  g.addOutput(g.binary(OpKind::Mul, normed, bcastCols(g, w, rows, hidden), "out"));
  return g;
}

ir::Graph columnReduce(int64_t rows, int64_t cols) {
  ir::Graph g;
  ir::NodeId x = g.parameter("x", {DType::f32, {rows, cols}});
  ir::NodeId y = g.binary(OpKind::Mul, x, x, "square");
  g.addOutput(g.reduce(ir::ReduceKind::Sum, y, {0}, "colsum"));
  return g;
}

ir::Graph layerNormBackward(int64_t rows, int64_t hidden) {
  ir::Graph g;
  ir::NodeId dy = g.parameter("dy", {DType::f32, {rows, hidden}});
  ir::NodeId x = g.parameter("x", {DType::f32, {rows, hidden}});
  ir::NodeId mean = g.parameter("mean", {DType::f32, {rows}});
  ir::NodeId rstd = g.parameter("rstd", {DType::f32, {rows}});
  ir::NodeId gamma = g.parameter("gamma", {DType::f32, {hidden}});
  ir::NodeId xhat =
      g.binary(OpKind::Mul, g.binary(OpKind::Sub, x, bcastRows(g, mean, rows, hidden)),
               bcastRows(g, rstd, rows, hidden), "xhat");
  ir::NodeId dxhat = g.binary(OpKind::Mul, dy, bcastCols(g, gamma, rows, hidden), "dxhat");
  ir::NodeId dgamma = g.reduce(ir::ReduceKind::Sum, g.binary(OpKind::Mul, dy, xhat), {0}, "dgamma");
  ir::NodeId dbeta = g.reduce(ir::ReduceKind::Sum, dy, {0}, "dbeta");
  ir::NodeId a = g.reduce(ir::ReduceKind::Sum, dxhat, {1}, "sum_dxhat");
  ir::NodeId b =
      g.reduce(ir::ReduceKind::Sum, g.binary(OpKind::Mul, dxhat, xhat), {1}, "sum_dxhat_xhat");
  ir::NodeId inner = g.binary(
      OpKind::Sub,
      g.binary(OpKind::Sub, g.binary(OpKind::Mul, dxhat, splat(g, {rows, hidden}, double(hidden))),
               bcastRows(g, a, rows, hidden)),
      g.binary(OpKind::Mul, xhat, bcastRows(g, b, rows, hidden)));
  ir::NodeId scale = g.binary(OpKind::Div, rstd, splat(g, {rows}, double(hidden)), "scale");
  ir::NodeId dx = g.binary(OpKind::Mul, inner, bcastRows(g, scale, rows, hidden), "dx");
  g.setOutputs({dx, dgamma, dbeta});
  return g;
}

ir::Graph rowReduce(int64_t rows, int64_t length) {
  ir::Graph g;
  ir::NodeId x = g.parameter("x", {DType::f32, {rows, length}});
  g.addOutput(g.reduce(ir::ReduceKind::Sum, x, {1}, "row_sum"));
  return g;
}

ir::Graph layerNormDotGelu(int64_t rows, int64_t hidden) {
  ir::Graph g;
  ir::NodeId x = g.parameter("x", {DType::f32, {rows, hidden}});
  ir::NodeId w = g.parameter("w", {DType::f32, {hidden, hidden}});
  ir::NodeId ln = affine(g, normalise(g, x, rows, hidden), rows, hidden);
  ir::NodeId mm = g.dot(ln, w, "matmul");
  ir::NodeId t = g.unary(OpKind::Tanh, mm, "tanh");
  g.addOutput(g.binary(OpKind::Mul, t, mm, "act"));
  return g;
}

ir::Graph dotGraph(DType t, const ir::Shape& batch, ir::Dim m, ir::Dim k, ir::Dim n) {
  ir::Graph g;
  ir::Shape as = batch, bs = batch;
  as.insert(as.end(), {m, k});
  bs.insert(bs.end(), {k, n});
  auto a = g.parameter("a", {t, as});
  auto b = g.parameter("b", {t, bs});
  g.setOutputs({g.dot(a, b, "c")});
  return g;
}

ir::Graph dotEpilogueGraph(DType t, const ir::Shape& batch, int64_t m, int64_t k, int64_t n,
                           DotConsumers consumers) {
  ir::Graph g;
  ir::Shape as = batch, bs = batch, os = batch;
  as.insert(as.end(), {m, k});
  bs.insert(bs.end(), {k, n});
  os.insert(os.end(), {m, n});
  auto a = g.parameter("a", {t, as});
  auto b = g.parameter("b", {t, bs});
  ir::NodeId c = g.dot(a, b, "c");
  auto scalar = [&](double v, const std::string& name) { return g.constant(t, os, {v}, name); };
  ir::NodeId last = c;
  if (consumers == DotConsumers::Residual) {
    auto r = g.parameter("residual", {t, os});
    last = g.binary(OpKind::Add, c, r, "sum");
  } else {
    auto bias = g.parameter("bias", {t, {n}});
    auto row = g.broadcastInDim(bias, os, {int64_t(os.size()) - 1}, "bias_rows");
    last = g.binary(OpKind::Add, c, row, "biased");
  }
  if (consumers == DotConsumers::BiasGelu) {
    // 0.5 x (1 + tanh(0.7978845608 (x + 0.044715 x^3)))
    ir::NodeId x = last;
    ir::NodeId x3 = g.binary(OpKind::Mul, g.binary(OpKind::Mul, x, x, "x2"), x, "x3");
    ir::NodeId inner = g.binary(OpKind::Add, x, g.binary(OpKind::Mul, scalar(0.044715, "k1"), x3));
    ir::NodeId th = g.unary(OpKind::Tanh, g.binary(OpKind::Mul, scalar(0.7978845608, "k2"), inner));
    ir::NodeId one = g.binary(OpKind::Add, th, scalar(1.0, "one"));
    last = g.binary(OpKind::Mul, g.binary(OpKind::Mul, scalar(0.5, "half"), x), one, "gelu");
  } else if (consumers == DotConsumers::BiasCast) {
    last = g.convert(last, DType::f16, "cast");
  } else if (consumers == DotConsumers::BiasLayerNorm) {
    int64_t rows = 1;
    for (const ir::Dim& d : batch)
      rows *= d.size();
    rows *= m;
    ir::NodeId flat = g.reshape(last, {rows, n}, "rows");
    last = normalise(g, flat, rows, n);
  }
  g.setOutputs({last});
  return g;
}

} // namespace weft::fusion::testing
