#include "autodiff/optimizer.h"

#include <cmath>
#include <fmt/format.h>
#include <map>
#include <set>

#include "autodiff/adjoints.h"
#include "autodiff/grad.h"
#include "weft/error.h"

namespace weft::autodiff {

using namespace ir;

const char* const kAdamStep = "adam_step";

std::string updatedName(const std::string& name) {
  return "new_" + name;
}
std::string firstMomentName(const std::string& param) {
  return "m_" + param;
}
std::string secondMomentName(const std::string& param) {
  return "v_" + param;
}

namespace {

void checkPositive(const char* flag, double v) {
  if (!std::isfinite(v) || v <= 0)
    throw InputError(fmt::format("{} {}: must be a finite number greater than 0", flag, v));
}

void checkBeta(const char* flag, double v) {
  if (!std::isfinite(v) || v < 0 || v >= 1)
    throw InputError(fmt::format("{} {}: must be in [0, 1)", flag, v));
}

/// The step's state: the training graph with its forward outputs, each parameter's id and
/// gradient, and fresh names for the update's intermediate values ("<p>.update.<k>").
struct Step {
  Graph g;
  std::vector<NodeId> forwardOutputs, params, grads;
  std::set<std::string> added; // names the step adds: inputs and outputs

  /// A name the step adds, refused when the graph already has it.
  std::string claim(const std::string& name) {
    if (g.find(name) || !added.insert(name).second)
      throw InputError(fmt::format("\"{}\": the training step's name for it is already a value's "
                                   "name in the graph",
                                   name));
    return name;
  }
  std::string temp(NodeId param) {
    for (;;) {
      std::string n = fmt::format("{}.update.{}", g.node(param).name, counter++);
      if (!g.find(n)) return n;
    }
  }
  int counter = 0;
};

Step prepare(const Graph& training, const std::vector<std::string>& params) {
  Step s{training, {}, {}, {}, {}};
  std::set<NodeId> gradOutputs;
  for (const std::string& p : params) {
    std::optional<NodeId> id = training.find(p);
    if (!id || training.node(*id).kind != OpKind::Parameter)
      throw InputError(fmt::format("parameter \"{}\": not an input of the graph", p));
    std::optional<NodeId> grad = training.find(gradName(p));
    if (!grad || !training.isOutput(*grad))
      throw InputError(fmt::format("parameter \"{}\": the training graph has no output \"{}\"", p,
                                   gradName(p)));
    s.params.push_back(*id);
    s.grads.push_back(*grad);
    gradOutputs.insert(*grad);
  }
  for (NodeId o : training.outputs())
    if (!gradOutputs.count(o)) s.forwardOutputs.push_back(o);
  return s;
}

/// The dtype the step's scalars are computed in: f64 for f64 parameters, f32 otherwise.
DType scalarType(DType param) {
  return param == DType::f64 ? DType::f64 : DType::f32;
}

} // namespace

void checkOptions(const SgdOptions& o) {
  checkPositive("--sgd", o.lr);
}

void checkOptions(const AdamOptions& o) {
  checkPositive("--lr", o.lr);
  checkBeta("--beta1", o.beta1);
  checkBeta("--beta2", o.beta2);
  checkPositive("--eps", o.eps);
}

Graph sgdStep(const Graph& training, const std::vector<std::string>& params,
              const SgdOptions& options) {
  checkOptions(options);
  Step s = prepare(training, params);
  Graph& g = s.g;
  std::vector<NodeId> outputs = s.forwardOutputs;
  for (size_t i = 0; i < s.params.size(); ++i) {
    NodeId p = s.params[i];
    std::string out = s.claim(updatedName(g.node(p).name));
    const TensorType t = g.node(p).type;
    NodeId lr = g.constant(t.dtype, t.shape, {options.lr}, s.temp(p));
    NodeId step = g.binary(OpKind::Mul, lr, s.grads[i], s.temp(p));
    outputs.push_back(g.binary(OpKind::Sub, p, step, out));
  }
  g.setOutputs(outputs);
  verify(g);
  return g;
}

Graph adamStep(const Graph& training, const std::vector<std::string>& params,
               const AdamOptions& options) {
  checkOptions(options);
  Step s = prepare(training, params);
  Graph& g = s.g;
  size_t n = s.params.size();
  std::vector<NodeId> ms(n), vs(n);
  for (size_t i = 0; i < n; ++i) {
    const Node p = g.node(s.params[i]);
    ms[i] = g.parameter(s.claim(firstMomentName(p.name)), p.type);
  }
  for (size_t i = 0; i < n; ++i) {
    const Node p = g.node(s.params[i]);
    vs[i] = g.parameter(s.claim(secondMomentName(p.name)), p.type);
  }
  NodeId stepIn = g.parameter(s.claim(kAdamStep), TensorType{DType::i32, {}});

  // The bias corrections, scalars shared by every parameter of one scalar dtype:
  // lr / (1 - b1^t) and sqrt(1 - b2^t).
  struct Corrections {
    NodeId stepSize = -1, sqrtBc2 = -1;
  };
  std::map<DType, Corrections> corrections;
  auto correctionsFor = [&](DType dt) {
    Corrections& c = corrections[dt];
    if (c.stepSize >= 0) return c;
    std::string prefix = fmt::format("{}.{}", kAdamStep, dtypeName(dt));
    auto name = [&](const char* what) { return unusedName(g, fmt::format("{}.{}", prefix, what)); };
    NodeId t = g.convert(stepIn, dt, name("t"));
    NodeId one = g.scalar(dt, 1.0, name("one"));
    NodeId b1t = g.binary(OpKind::Pow, g.scalar(dt, options.beta1, name("beta1")), t, name("beta1_t"));
    NodeId b2t = g.binary(OpKind::Pow, g.scalar(dt, options.beta2, name("beta2")), t, name("beta2_t"));
    NodeId bc1 = g.binary(OpKind::Sub, one, b1t, name("bc1"));
    NodeId bc2 = g.binary(OpKind::Sub, one, b2t, name("bc2"));
    c.stepSize = g.binary(OpKind::Div, g.scalar(dt, options.lr, name("lr")), bc1, name("step_size"));
    c.sqrtBc2 = g.unary(OpKind::Sqrt, bc2, name("sqrt_bc2"));
    return c;
  };

  std::vector<NodeId> outputs = s.forwardOutputs, newM(n), newV(n), newP(n);
  for (size_t i = 0; i < n; ++i) {
    NodeId p = s.params[i], grad = s.grads[i];
    const Node pn = g.node(p);
    const TensorType t = pn.type;
    auto splat = [&](double v) { return g.constant(t.dtype, t.shape, {v}, s.temp(p)); };
    auto mul = [&](NodeId a, NodeId b) { return g.binary(OpKind::Mul, a, b, s.temp(p)); };
    auto add = [&](NodeId a, NodeId b, std::string name = "") {
      return g.binary(OpKind::Add, a, b, name.empty() ? s.temp(p) : std::move(name));
    };
    // A scalar correction in the parameter's dtype, over its shape.
    auto spread = [&](NodeId scalar) {
      if (g.node(scalar).type.dtype != t.dtype) scalar = g.convert(scalar, t.dtype, s.temp(p));
      return g.broadcastInDim(scalar, t.shape, {}, s.temp(p));
    };
    newM[i] = add(mul(splat(options.beta1), ms[i]), mul(splat(1 - options.beta1), grad),
                  s.claim(updatedName(firstMomentName(pn.name))));
    newV[i] = add(mul(splat(options.beta2), vs[i]), mul(splat(1 - options.beta2), mul(grad, grad)),
                  s.claim(updatedName(secondMomentName(pn.name))));
    Corrections c = correctionsFor(scalarType(t.dtype));
    NodeId root = g.unary(OpKind::Sqrt, newV[i], s.temp(p));
    NodeId denom = add(g.binary(OpKind::Div, root, spread(c.sqrtBc2), s.temp(p)), splat(options.eps));
    NodeId step = mul(spread(c.stepSize), g.binary(OpKind::Div, newM[i], denom, s.temp(p)));
    newP[i] = g.binary(OpKind::Sub, p, step, s.claim(updatedName(pn.name)));
  }
  outputs.insert(outputs.end(), newP.begin(), newP.end());
  outputs.insert(outputs.end(), newM.begin(), newM.end());
  outputs.insert(outputs.end(), newV.begin(), newV.end());
  NodeId one = g.scalar(DType::i32, 1.0, unusedName(g, fmt::format("{}.increment", kAdamStep)));
  outputs.push_back(g.binary(OpKind::Add, stepIn, one, s.claim(updatedName(kAdamStep))));
  g.setOutputs(outputs);
  verify(g);
  return g;
}

} // namespace weft::autodiff
