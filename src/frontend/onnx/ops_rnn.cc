// The recurrent layers RNN (opsets 1, 7, 14), GRU (1, 3, 7, 14) and LSTM (1, 7, 14), unrolled at
// import: the sequence length must be static, and each time step becomes its own ops, one step
// after another.
//
// The input projection of every step does not depend on the recurrence, so it is hoisted out of
// the loop: one dot of X, flattened to [seq * batch, input_size], with W^T of every direction
// side by side ([input_size, num_directions * gates * hidden_size]), the large GEMM of the layer,
// with the biases Wb + Rb folded into it. Each step then slices its gates' rows out of it and adds
// the recurrence, the previous hidden state [batch, hidden] dotted with R^T, before the
// elementwise gates. For f16 and bf16 the dots run in the input dtype and everything after them
// (biases, gates, the hidden and cell states) in f32 (computeDType); the hidden state is rounded
// to the input dtype as the next step's dot operand, and the outputs once at the end.
//
// sequence_lens (known at import or only at run time) masks each step: where a batch element's
// sequence has ended (t >= its length), its state stays as it was and its Y rows are 0, so Y_h
// and Y_c are each element's state after its last step (the initial state for a length of 0).
// The reverse direction runs from the last step to the first over the same masks.
//
// What the spec leaves open is read as follows. activation_alpha and activation_beta are
// consumed in order by the activations that take the value (onnxruntime's LSTM and GRU); a list
// with exactly one value per activation is read position by position (onnxruntime's RNN); other
// lengths are refused as ambiguous. An activation the list does not reach takes its ONNX
// operator's default (LeakyRelu 0.01, ThresholdedRelu 1, HardSigmoid 0.2 and 0.5, Elu 1, Affine 1
// and 0); ScaledTanh has none, so it must be given both. Activation names match in any case.
// clip bounds the input of every activation, LSTM's h(Ct) included (the spec's wording;
// onnxruntime leaves Ct unclipped). LSTM's input_forget couples the gates as ft = 1 - it. RNN's
// schema default activations ["Tanh", "Tanh"] are accepted for one direction (the first is
// used). Opset 1's output_sequence only says whether Y may be omitted: outputs are positional;
// its equations' "Ht-1*R" is read as Ht-1 R^T, as from opset 7 on. Lengths past seq_length run
// every step; negative ones none.
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <optional>

#include "frontend/onnx/importer.h"

namespace weft::onnx {
namespace {

using ir::CompareDir;
using ir::Dim;
using ir::DType;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;

/// Time steps unrolled at most (per direction): each is a few dozen ops.
constexpr int64_t kMaxSteps = 4096;

enum class Cell { Rnn, Gru, Lstm };

struct CellInfo {
  int gates;       // blocks of hidden_size rows in W and R
  int activations; // per direction: RNN f; GRU f, g; LSTM f, g, h
  std::vector<std::string> defaults;
  const char* gateNames; // for messages: "zrh"
  int outputs;           // Y, Y_h (, Y_c)
};

CellInfo infoOf(Cell cell) {
  switch (cell) {
  case Cell::Rnn:
    return {1, 1, {"Tanh"}, "i", 2};
  case Cell::Gru:
    return {3, 2, {"Sigmoid", "Tanh"}, "zrh", 2};
  case Cell::Lstm:
    return {4, 3, {"Sigmoid", "Tanh", "Tanh"}, "iofc", 3};
  }
  return {};
}

// --- activations -------------------------------------------------------------------------

/// One of the activation functions the recurrent layers name, with the ONNX operator's default
/// alpha and beta (nullopt: it takes none; NaN: it takes one but has no default).
struct ActivationKind {
  const char* name;
  std::optional<double> alpha, beta;
};

constexpr double kNoDefault = std::numeric_limits<double>::quiet_NaN();

const std::vector<ActivationKind>& activationKinds() {
  static const std::vector<ActivationKind> kinds = {
      {"Relu", {}, {}},
      {"Tanh", {}, {}},
      {"Sigmoid", {}, {}},
      {"Affine", 1.0, 0.0},
      {"LeakyRelu", 0.01f, {}},
      {"ThresholdedRelu", 1.0, {}},
      {"ScaledTanh", kNoDefault, kNoDefault},
      {"HardSigmoid", 0.2f, 0.5f},
      {"Elu", 1.0, {}},
      {"Softsign", {}, {}},
      {"Softplus", {}, {}},
  };
  return kinds;
}

struct Activation {
  std::string name; // as activationKinds() spells it
  double alpha = 0, beta = 0;
};

/// The STRINGS attribute `name`, or nullopt when absent (NodeContext reads the other types).
std::optional<std::vector<std::string>> attrStrings(NodeContext& c, const std::string& name) {
  const ::onnx::AttributeProto* found = nullptr;
  for (const auto& a : c.node.attribute()) {
    if (a.name() != name) continue;
    if (found) c.fail(fmt::format("attribute \"{}\" is given twice", name));
    found = &a;
  }
  if (!found) return std::nullopt;
  bool strings = found->type() == ::onnx::AttributeProto::STRINGS ||
                 (found->type() == ::onnx::AttributeProto::UNDEFINED && found->strings_size() > 0);
  if (!strings)
    c.fail(fmt::format("attribute \"{}\" must be STRINGS, but it is {}", name,
                       ::onnx::AttributeProto::AttributeType_Name(found->type())));
  return std::vector<std::string>(found->strings().begin(), found->strings().end());
}

const ActivationKind& activationKind(NodeContext& c, const std::string& given) {
  auto lower = [](std::string s) {
    for (char& ch : s)
      ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
  };
  for (const ActivationKind& k : activationKinds())
    if (lower(k.name) == lower(given)) return k;
  std::vector<std::string> names;
  for (const ActivationKind& k : activationKinds())
    names.emplace_back(k.name);
  c.fail(fmt::format("activation \"{}\" is not one of {}", given, fmt::join(names, ", ")));
}

/// The alpha (or beta) values of `kinds` from the list `given` (activation_alpha or _beta):
/// consumed in order by the activations that take one, or one per activation; `param` picks
/// alpha or beta.
std::vector<std::optional<double>> parameterValues(NodeContext& c,
                                                   const std::vector<const ActivationKind*>& kinds,
                                                   const std::vector<float>& given,
                                                   std::optional<double> ActivationKind::*param,
                                                   const char* attr) {
  size_t takers = 0;
  for (const ActivationKind* k : kinds)
    takers += (k->*param).has_value();
  std::vector<std::optional<double>> values(kinds.size());
  if (given.size() <= takers) {
    size_t next = 0;
    for (size_t i = 0; i < kinds.size(); ++i)
      if ((kinds[i]->*param).has_value())
        values[i] = next < given.size() ? std::optional<double>(given[next++]) : std::nullopt;
  } else if (given.size() == kinds.size()) {
    for (size_t i = 0; i < kinds.size(); ++i)
      if ((kinds[i]->*param).has_value()) values[i] = given[i];
  } else {
    c.fail(fmt::format("{} has {} values, but {} of the {} activations take one: give one value "
                       "per activation that takes it, or one per activation",
                       attr, given.size(), takers, kinds.size()));
  }
  return values;
}

/// The activations with their alpha and beta: info.activations for each direction in turn
/// (forward's, then reverse's).
std::vector<Activation> readActivations(NodeContext& c, Cell cell, const CellInfo& info,
                                        int directions) {
  std::optional<std::vector<std::string>> names = attrStrings(c, "activations");
  size_t want = static_cast<size_t>(info.activations * directions);
  std::vector<std::string> given;
  if (names) {
    given = *names;
  } else {
    for (int d = 0; d < directions; ++d)
      given.insert(given.end(), info.defaults.begin(), info.defaults.end());
  }
  // RNN's schema default ["Tanh", "Tanh"] is written for two directions; one uses the first.
  bool dropSecond = cell == Cell::Rnn && directions == 1 && given.size() == 2;
  if (given.size() != want && !dropSecond)
    c.fail(fmt::format("activations has {} entries; {} {} needs {} ({} per direction)",
                       given.size(), directions == 2 ? "a bidirectional" : "a one-direction",
                       c.node.op_type(), want, info.activations));
  std::vector<const ActivationKind*> kinds;
  for (const std::string& n : given)
    kinds.push_back(&activationKind(c, n));
  std::vector<float> alphas = c.attrFloats("activation_alpha").value_or(std::vector<float>{});
  std::vector<float> betas = c.attrFloats("activation_beta").value_or(std::vector<float>{});
  auto a = parameterValues(c, kinds, alphas, &ActivationKind::alpha, "activation_alpha");
  auto b = parameterValues(c, kinds, betas, &ActivationKind::beta, "activation_beta");
  std::vector<Activation> acts;
  for (size_t i = 0; i < (dropSecond ? 1 : kinds.size()); ++i) {
    const ActivationKind& k = *kinds[i];
    Activation act{k.name};
    auto pick = [&](const std::optional<double>& value, const std::optional<double>& dflt,
                    const char* what) {
      if (!dflt) return 0.0;
      if (value) return *value;
      if (std::isnan(*dflt))
        c.fail(fmt::format("activation {} has no default {}: give it in activation_{}", k.name,
                           what, what));
      return *dflt;
    };
    act.alpha = pick(a[i], k.alpha, "alpha");
    act.beta = pick(b[i], k.beta, "beta");
    acts.push_back(act);
  }
  return acts;
}

// --- the layer ---------------------------------------------------------------------------

/// What every step of the layer shares.
struct Layer {
  Cell cell;
  CellInfo info;
  int64_t hidden = 0;
  int directions = 1;
  bool reverse = false;     // direction "reverse" (bidirectional: direction 1 is reverse)
  bool batchFirst = false;  // layout 1: X [batch, seq, input], Y [batch, seq, dirs, hidden]
  DType dtype = DType::f32; // X's
  DType compute = DType::f32;
  std::optional<double> clip;
  std::vector<Activation> activations; // info.activations per direction
  bool linearBeforeReset = false;      // GRU
  bool inputForget = false;            // LSTM
  int64_t steps = 0;

  int64_t rows() const { return info.gates * hidden; } // of W and R per direction
  bool reversed(int d) const { return d == 1 || reverse; }
  /// The axis of the time steps in X and Y, and of the directions in initial_h and Y_h.
  int64_t timeAxis() const { return batchFirst ? 1 : 0; }
};

/// Fails unless input i has the shape `want`, dim by dim (a symbolic dim matches anything: the
/// ops that use it unify it); `meaning` names the dims.
void requireShape(NodeContext& c, size_t i, const std::string& what, const Shape& want,
                  const std::string& meaning) {
  Shape got = c.type(i).shape;
  bool ok = got.size() == want.size();
  for (size_t k = 0; ok && k < got.size(); ++k)
    ok = got[k] == want[k] || !got[k].isStatic() || !want[k].isStatic();
  if (!ok)
    c.fail(fmt::format("{} has shape {} but needs {} ({})", what, ir::shapeStr(got),
                       ir::shapeStr(want), meaning));
}

void requireDType(NodeContext& c, size_t i, const std::string& what, DType t) {
  if (c.type(i).dtype != t)
    c.fail(fmt::format("{} has dtype {} but X has dtype {}", what, ir::dtypeName(c.type(i).dtype),
                       ir::dtypeName(t)));
}

/// Reads and checks the attributes and the shapes of the inputs.
Layer readLayer(NodeContext& c, Cell cell) {
  Layer l;
  l.cell = cell;
  l.info = infoOf(cell);
  if (c.numOutputs() > static_cast<size_t>(l.info.outputs))
    c.fail(fmt::format("{} has {} outputs ({}), but the node has {}", c.node.op_type(),
                       l.info.outputs, cell == Cell::Lstm ? "Y, Y_h, Y_c" : "Y, Y_h",
                       c.numOutputs()));
  for (size_t i : {size_t(0), size_t(1), size_t(2)})
    if (!c.has(i))
      c.fail(fmt::format("input {} ({}) is required", i, i == 0 ? "X" : i == 1 ? "W" : "R"));
  std::string direction = c.attrString("direction", "forward");
  if (direction == "bidirectional")
    l.directions = 2;
  else if (direction == "reverse")
    l.reverse = true;
  else if (direction != "forward")
    c.fail(
        fmt::format("direction \"{}\" is not one of forward, reverse, bidirectional", direction));
  int64_t layout = c.opset >= 14 ? c.attrInt("layout", 0) : 0;
  if (layout != 0 && layout != 1) c.fail(fmt::format("layout is {}; it must be 0 or 1", layout));
  l.batchFirst = layout == 1;
  if (c.hasAttr("clip")) {
    double clip = c.attrFloat("clip", 0);
    if (!(clip > 0)) c.fail(fmt::format("clip is {}; it must be positive", clip));
    l.clip = clip;
  }
  if (cell == Cell::Gru) l.linearBeforeReset = c.attrInt("linear_before_reset", 0) != 0;
  if (cell == Cell::Lstm) l.inputForget = c.attrInt("input_forget", 0) != 0;
  l.activations = readActivations(c, cell, l.info, l.directions);

  ir::TensorType x = c.type(0);
  l.dtype = x.dtype;
  if (!ir::isFloat(l.dtype))
    c.fail(fmt::format("X has dtype {}; {} takes floating-point tensors", ir::dtypeName(l.dtype),
                       c.node.op_type()));
  l.compute = computeDType(l.dtype);
  if (x.shape.size() != 3)
    c.fail(fmt::format("X has shape {}; it must have rank 3 ({})", ir::shapeStr(x.shape),
                       l.batchFirst ? "batch, seq_length, input_size"
                                    : "seq_length, batch, input_size"));
  const Dim& seq = x.shape[static_cast<size_t>(l.timeAxis())];
  if (!seq.isStatic())
    c.unsupported(fmt::format("X {} has the symbolic sequence length {}; weft unrolls the "
                              "recurrence at import and needs it static",
                              ir::shapeStr(x.shape), seq.str()));
  l.steps = seq.size();
  if (l.steps > kMaxSteps)
    c.unsupported(fmt::format("the sequence length {} is over the {} steps weft unrolls", l.steps,
                              kMaxSteps));

  // hidden_size: the attribute, or R's last dim (the attribute is optional in every opset).
  Shape r = c.type(2).shape;
  if (c.hasAttr("hidden_size")) {
    l.hidden = c.attrInt("hidden_size", 0);
    if (l.hidden <= 0) c.fail(fmt::format("hidden_size is {}; it must be positive", l.hidden));
  } else if (r.size() == 3 && r[2].isStatic() && r[2].size() > 0) {
    l.hidden = r[2].size();
  } else {
    c.fail(fmt::format("hidden_size is not given and R {} does not give it (a static last dim)",
                       ir::shapeStr(r)));
  }
  const Dim dirs = l.directions, rows = l.rows(), h = l.hidden;
  const Dim batch = x.shape[l.batchFirst ? 0 : 1], input = x.shape[2];
  std::string gates = fmt::format("{}*hidden_size, the {} gates", l.info.gates, l.info.gateNames);
  if (l.info.gates == 1) gates = "hidden_size";
  for (size_t i = 1; i < std::min<size_t>(c.numInputs(), 8); ++i)
    if (c.has(i) && i != 4)
      requireDType(c, i, std::array{"", "W", "R", "B", "", "initial_h", "initial_c", "P"}[i],
                   l.dtype);
  requireShape(c, 1, "W", {dirs, rows, input},
               fmt::format("num_directions, {}, input_size", gates));
  requireShape(c, 2, "R", {dirs, rows, h}, fmt::format("num_directions, {}, hidden_size", gates));
  if (c.has(3))
    requireShape(c, 3, "B", {dirs, Dim(2) * rows},
                 fmt::format("num_directions, 2*{} (Wb then Rb)",
                             l.info.gates == 1 ? "hidden_size" : gates));
  if (c.has(4)) {
    if (!ir::isInteger(c.type(4).dtype))
      c.fail(fmt::format("sequence_lens has dtype {}; it must be an integer tensor",
                         ir::dtypeName(c.type(4).dtype)));
    requireShape(c, 4, "sequence_lens", {batch}, "batch");
  }
  Shape state = l.batchFirst ? Shape{batch, dirs, h} : Shape{dirs, batch, h};
  const char* stateDims =
      l.batchFirst ? "batch, num_directions, hidden_size" : "num_directions, batch, hidden_size";
  if (c.has(5)) requireShape(c, 5, "initial_h", state, stateDims);
  if (cell == Cell::Lstm && c.has(6)) requireShape(c, 6, "initial_c", state, stateDims);
  if (cell == Cell::Lstm && c.has(7))
    requireShape(c, 7, "P", {dirs, Dim(3) * h}, "num_directions, 3*hidden_size, the iof gates");
  // The weights are sliced by direction and gate: their shapes must be static (W's input_size
  // aside, which X's may name).
  for (size_t i : {1, 2, 3, 7}) {
    if (!c.has(i) || (i == 7 && cell != Cell::Lstm)) continue;
    Shape s = c.type(i).shape;
    if (i == 1) s.pop_back();
    if (!ir::isStatic(s))
      c.unsupported(fmt::format("{} {} has a symbolic dim; weft needs the weights' shapes static",
                                i == 1   ? "W"
                                : i == 2 ? "R"
                                : i == 3 ? "B"
                                         : "P",
                                ir::shapeStr(c.type(i).shape)));
  }
  return l;
}

/// Builds the unrolled layer through the node's context.
class Unroller {
public:
  Unroller(NodeContext& c, const Layer& l) : c_(c), g_(c.g), l_(l) {}

  void lower() {
    project();
    readSequenceLengths();
    std::vector<std::vector<NodeId>> ys(static_cast<size_t>(l_.directions));
    std::vector<NodeId> lastH, lastC;
    for (int d = 0; d < l_.directions; ++d) {
      Direction dir = directionWeights(d);
      State s = initialState(d);
      std::vector<NodeId>& y = ys[static_cast<size_t>(d)];
      y.assign(static_cast<size_t>(l_.steps), -1);
      for (int64_t k = 0; k < l_.steps; ++k) {
        int64_t t = l_.reversed(d) ? l_.steps - 1 - k : k;
        State next = step(d, dir, s, t);
        y[static_cast<size_t>(t)] = masked(t, next.h, std::nullopt);
        s = State{masked(t, next.h, s.h), -1, masked(t, next.cell, s.cell)};
        s.hDot = toDtype(s.h);
      }
      lastH.push_back(s.h >= 0 ? s.h : zeros());
      if (l_.cell == Cell::Lstm) lastC.push_back(s.cell >= 0 ? s.cell : zeros());
    }
    if (c_.wantsOutput(0)) c_.setOutput(0, sequenceOutput(ys));
    if (c_.wantsOutput(1)) c_.setOutput(1, stateOutput(lastH, 1));
    if (c_.wantsOutput(2)) c_.setOutput(2, stateOutput(lastC, 2));
  }

private:
  /// The recurrent state of one direction between steps, in the compute dtype (-1: zero).
  struct State {
    NodeId h = -1;
    NodeId hDot = -1; // h in X's dtype, the recurrence dot's operand
    NodeId cell = -1; // LSTM
  };
  /// One direction's recurrence weights, transposed for the dot ([hidden, rows]), and the
  /// vectors its gates add inside the step.
  struct Direction {
    NodeId recurrence = -1;            // R^T (GRU without linear_before_reset: the z and r gates)
    NodeId hiddenRecurrence = -1;      // GRU without linear_before_reset: Rh^T
    NodeId hiddenBias = -1;            // GRU with linear_before_reset: Rbh [hidden], compute dtype
    NodeId peephole[3] = {-1, -1, -1}; // LSTM: P i, o, f [hidden], compute dtype
  };

  NodeContext& c_;
  ir::Graph& g_;
  const Layer& l_;
  /// X W^T + the biases, every step's input projection: [seq, batch, dirs * rows] (batch
  /// first: [batch, seq, dirs * rows]).
  NodeId projection_ = -1;
  NodeId lengths_ = -1;            // sequence_lens, when some sequence may end before the last step
  std::map<int64_t, NodeId> live_; // t < sequence_lens, per step t, as [batch, hidden]
  std::map<std::pair<std::string, double>, NodeId> constants_; // by type and value

  Dim batch() const {
    return c_.typeOf(projection_ >= 0 ? projection_ : c_.in(0)).shape[l_.batchFirst ? 0 : 1];
  }
  Shape stateShape() const { return {batch(), Dim(l_.hidden)}; }
  NodeId zeros() { return c_.splat(l_.compute, stateShape(), 0.0); }
  NodeId toCompute(NodeId x) { return c_.convertTo(x, l_.compute); }
  NodeId toDtype(NodeId x) { return x < 0 ? x : c_.convertTo(x, l_.dtype); }
  NodeId add(NodeId a, NodeId b) { return g_.binary(OpKind::Add, a, b); }
  NodeId mul(NodeId a, NodeId b) { return g_.binary(OpKind::Mul, a, b); }
  /// The constant v with `like`'s dtype and shape, made once per type and value.
  NodeId k(NodeId like, double v) {
    auto [it, fresh] = constants_.try_emplace({c_.typeOf(like).str(), v}, -1);
    if (fresh) it->second = c_.splatLike(like, v);
    return it->second;
  }

  /// Rows [lo, lo + n) of a [dirs, n'] input's direction d as a vector [n].
  NodeId vectorOf(NodeId v, int d, int64_t lo, int64_t n) {
    NodeId s = g_.slice(v, {d, lo}, {d + 1, lo + n}, {1, 1});
    return g_.reshape(s, {Dim(n)});
  }

  /// The hoisted input projection of every step and direction: X [seq*batch, input] dotted with
  /// W^T [input, dirs*rows] in X's dtype, then Wb + Rb added in the compute dtype (GRU with
  /// linear_before_reset leaves Rbh to the step, inside the reset gate's product).
  void project() {
    if (l_.steps == 0) return;
    NodeId x = c_.in(0), w = c_.in(1);
    Shape xs = c_.typeOf(x).shape;
    const int64_t all = l_.directions * l_.rows();
    NodeId flat = g_.reshape(x, {xs[0] * xs[1], xs[2]});
    NodeId wt = g_.transpose(g_.reshape(w, {Dim(all), c_.typeOf(w).shape[2]}), {1, 0});
    NodeId p = toCompute(g_.dot(flat, wt));
    if (c_.has(3)) {
      NodeId b = toCompute(c_.in(3));
      NodeId wb = g_.slice(b, {0, 0}, {l_.directions, l_.rows()}, {1, 1});
      NodeId rb = g_.slice(b, {0, l_.rows()}, {l_.directions, 2 * l_.rows()}, {1, 1});
      if (l_.cell == Cell::Gru && l_.linearBeforeReset) // Rbh is added inside r (.) (...)
        rb = g_.pad(g_.slice(rb, {0, 0}, {l_.directions, 2 * l_.hidden}, {1, 1}), {0, 0},
                    {0, l_.hidden}, 0.0);
      NodeId bias = g_.reshape(add(wb, rb), {Dim(all)});
      p = add(p, c_.broadcastTo(bias, c_.typeOf(p).shape));
    }
    xs = c_.typeOf(x).shape; // the dot may have unified a symbolic input_size
    projection_ = g_.reshape(p, {xs[0], xs[1], Dim(all)});
  }

  /// sequence_lens as a node, unless it is known at import time to let every sequence run to
  /// the last step (then no step is masked).
  void readSequenceLengths() {
    if (!c_.has(4)) return;
    if (const Literal* lit = c_.literal(4)) {
      std::vector<int64_t> v = lit->ints();
      if (std::all_of(v.begin(), v.end(), [&](int64_t n) { return n >= l_.steps; })) return;
    }
    lengths_ = c_.in(4);
  }

  Direction directionWeights(int d) {
    Direction dir;
    const int64_t h = l_.hidden, rows = l_.rows();
    NodeId r =
        g_.reshape(g_.slice(c_.in(2), {d, 0, 0}, {d + 1, rows, h}, {1, 1, 1}), {Dim(rows), Dim(h)});
    if (l_.cell == Cell::Gru && !l_.linearBeforeReset) {
      dir.recurrence = g_.transpose(g_.slice(r, {0, 0}, {2 * h, h}, {1, 1}), {1, 0});
      dir.hiddenRecurrence = g_.transpose(g_.slice(r, {2 * h, 0}, {3 * h, h}, {1, 1}), {1, 0});
    } else {
      dir.recurrence = g_.transpose(r, {1, 0});
    }
    if (l_.cell == Cell::Gru && l_.linearBeforeReset && c_.has(3))
      dir.hiddenBias = toCompute(vectorOf(c_.in(3), d, rows + 2 * h, h));
    if (l_.cell == Cell::Lstm && c_.has(7))
      for (int64_t p = 0; p < 3; ++p)
        dir.peephole[p] = toCompute(vectorOf(c_.in(7), d, p * h, h));
    return dir;
  }

  /// Direction d's slice [batch, hidden] of initial_h (input 5) or initial_c (6); -1 (zero)
  /// when absent.
  NodeId initial(size_t i, int d) {
    if (!c_.has(i)) return -1;
    NodeId v = c_.in(i);
    Shape s = c_.typeOf(v).shape;
    size_t axis = static_cast<size_t>(l_.timeAxis());
    std::vector<int64_t> starts(3, 0), limits = {-1, -1, -1};
    starts[axis] = d;
    limits[axis] = d + 1;
    s.erase(s.begin() + static_cast<std::ptrdiff_t>(axis));
    return g_.reshape(g_.slice(v, starts, limits, {1, 1, 1}), s);
  }

  State initialState(int d) {
    State s;
    NodeId h = initial(5, d);
    if (h >= 0) {
      s.hDot = h;
      s.h = toCompute(h);
    }
    if (l_.cell == Cell::Lstm) {
      NodeId cell = initial(6, d);
      if (cell >= 0) s.cell = toCompute(cell);
    }
    return s;
  }

  /// Gate `gate`'s block of direction d's projection at step t: [batch, hidden].
  NodeId projected(int d, int64_t t, int gate) {
    int64_t lo = d * l_.rows() + gate * l_.hidden;
    std::vector<int64_t> starts = {0, 0, lo}, limits = {-1, -1, lo + l_.hidden};
    size_t axis = static_cast<size_t>(l_.timeAxis());
    starts[axis] = t;
    limits[axis] = t + 1;
    return g_.reshape(g_.slice(projection_, starts, limits, {1, 1, 1}), stateShape());
  }

  /// Columns [gate * hidden, +hidden) of a [batch, n] value.
  NodeId columns(NodeId v, int gate) {
    int64_t lo = gate * l_.hidden;
    return g_.slice(v, {0, lo}, {-1, lo + l_.hidden}, {1, 1});
  }

  /// hDot [batch, hidden] x rt [hidden, n] in X's dtype, the result in the compute dtype; -1
  /// when hDot is zero.
  NodeId recur(NodeId hDot, NodeId rt) { return hDot < 0 ? -1 : toCompute(g_.dot(hDot, rt)); }

  /// The pre-activation of gate `gate`: its projection plus its recurrence (when any), plus
  /// `extra` terms.
  NodeId preactivation(int d, int64_t t, int gate, NodeId recurrence, int column,
                       std::initializer_list<NodeId> extra = {}) {
    NodeId v = projected(d, t, gate);
    if (recurrence >= 0) v = add(v, columns(recurrence, column));
    for (NodeId e : extra)
      if (e >= 0) v = add(v, e);
    return v;
  }

  /// `p` [hidden] broadcast to the state's shape times `v`; -1 when either is absent.
  NodeId perUnit(NodeId p, NodeId v) {
    if (p < 0 || v < 0) return -1;
    return mul(g_.broadcastInDim(p, c_.typeOf(v).shape, {1}), v);
  }

  /// Activation `a` of x, its input clipped to [-clip, clip] first when clip is given.
  NodeId activate(const Activation& a, NodeId x) {
    if (l_.clip) x = g_.clamp(k(x, -*l_.clip), x, k(x, *l_.clip));
    const std::string& n = a.name;
    auto nonNegative = [&] { return g_.compare(CompareDir::GE, x, k(x, 0.0)); };
    if (n == "Relu") return g_.binary(OpKind::Max, x, k(x, 0.0));
    if (n == "Tanh") return g_.unary(OpKind::Tanh, x);
    if (n == "Sigmoid") return g_.unary(OpKind::Sigmoid, x);
    if (n == "Affine") return add(mul(x, k(x, a.alpha)), k(x, a.beta));
    if (n == "LeakyRelu") return g_.select(nonNegative(), x, mul(x, k(x, a.alpha)));
    if (n == "ThresholdedRelu")
      return g_.select(g_.compare(CompareDir::GE, x, k(x, a.alpha)), x, k(x, 0.0));
    if (n == "ScaledTanh") return mul(k(x, a.alpha), g_.unary(OpKind::Tanh, mul(x, k(x, a.beta))));
    if (n == "HardSigmoid")
      return g_.clamp(k(x, 0.0), add(mul(x, k(x, a.alpha)), k(x, a.beta)), k(x, 1.0));
    if (n == "Elu") {
      NodeId em1 = g_.binary(OpKind::Sub, g_.unary(OpKind::Exp, x), k(x, 1.0));
      return g_.select(nonNegative(), x, mul(k(x, a.alpha), em1));
    }
    if (n == "Softsign") return g_.binary(OpKind::Div, x, add(k(x, 1.0), g_.unary(OpKind::Abs, x)));
    // Softplus log(1 + e^x), as max(x, 0) + log(1 + e^-|x|): no overflow for large x
    NodeId tail = g_.unary(OpKind::Exp, g_.unary(OpKind::Neg, g_.unary(OpKind::Abs, x)));
    return add(g_.binary(OpKind::Max, x, k(x, 0.0)), g_.unary(OpKind::Log, add(k(x, 1.0), tail)));
  }

  const Activation& act(int d, int which) const {
    return l_.activations[static_cast<size_t>(d * l_.info.activations + which)];
  }

  /// One step of direction d at time t from state s (unmasked).
  State step(int d, const Direction& dir, const State& s, int64_t t) {
    State next;
    NodeId rec = recur(s.hDot, dir.recurrence);
    switch (l_.cell) {
    case Cell::Rnn: // Ht = f(Xt Wi^T + Ht-1 Ri^T + Wbi + Rbi)
      next.h = activate(act(d, 0), preactivation(d, t, 0, rec, 0));
      break;
    case Cell::Gru: {
      NodeId z = activate(act(d, 0), preactivation(d, t, 0, rec, 0));
      NodeId r = activate(act(d, 0), preactivation(d, t, 1, rec, 1));
      NodeId candidate;
      if (l_.linearBeforeReset) {
        // ht = g(Xt Wh^T + rt (.) (Ht-1 Rh^T + Rbh) + Wbh)
        NodeId inner = rec >= 0 ? columns(rec, 2) : -1;
        if (dir.hiddenBias >= 0) {
          NodeId bias = g_.broadcastInDim(dir.hiddenBias, c_.typeOf(r).shape, {1});
          inner = inner >= 0 ? add(inner, bias) : bias;
        }
        candidate = preactivation(d, t, 2, -1, 0, {inner >= 0 ? mul(r, inner) : -1});
      } else {
        // ht = g(Xt Wh^T + (rt (.) Ht-1) Rh^T + Rbh + Wbh), the biases in the projection
        NodeId reset = s.h >= 0 ? recur(toDtype(mul(r, s.h)), dir.hiddenRecurrence) : -1;
        candidate = preactivation(d, t, 2, -1, 0, {reset});
      }
      NodeId hTilde = activate(act(d, 1), candidate);
      // Ht = (1 - zt) (.) ht + zt (.) Ht-1
      NodeId keep = g_.binary(OpKind::Sub, k(z, 1.0), z);
      next.h = mul(keep, hTilde);
      if (s.h >= 0) next.h = add(next.h, mul(z, s.h));
      break;
    }
    case Cell::Lstm: {
      // W's gate order is i, o, f, c; P's is i, o, f
      NodeId i =
          activate(act(d, 0), preactivation(d, t, 0, rec, 0, {perUnit(dir.peephole[0], s.cell)}));
      NodeId f = l_.inputForget
                     ? g_.binary(OpKind::Sub, k(i, 1.0), i)
                     : activate(act(d, 0),
                                preactivation(d, t, 2, rec, 2, {perUnit(dir.peephole[2], s.cell)}));
      NodeId cTilde = activate(act(d, 1), preactivation(d, t, 3, rec, 3));
      // Ct = ft (.) Ct-1 + it (.) ct
      next.cell = mul(i, cTilde);
      if (s.cell >= 0) next.cell = add(mul(f, s.cell), next.cell);
      // ot = f(Xt Wo^T + Ht-1 Ro^T + Po (.) Ct + Wbo + Rbo); Ht = ot (.) h(Ct)
      NodeId o = activate(act(d, 0),
                          preactivation(d, t, 1, rec, 1, {perUnit(dir.peephole[1], next.cell)}));
      next.h = mul(o, activate(act(d, 2), next.cell));
      break;
    }
    }
    return next;
  }

  /// `fresh` where the batch element's sequence reaches step t, else `old` (zero when
  /// absent): the state a step leaves, or (old nullopt) the step's Y rows. -1 stays -1.
  NodeId masked(int64_t t, NodeId fresh, std::optional<NodeId> old) {
    if (fresh < 0 || lengths_ < 0) return fresh;
    auto [it, first] = live_.try_emplace(t, -1);
    if (first) {
      NodeId live = g_.compare(CompareDir::LT, k(lengths_, static_cast<double>(t)), lengths_);
      it->second = g_.broadcastInDim(live, c_.typeOf(fresh).shape, {0});
    }
    NodeId other = old && *old >= 0 ? *old : k(fresh, 0.0);
    return g_.select(it->second, fresh, other);
  }

  /// The op that ends output i: x converted to X's dtype, named for the output.
  NodeId finish(NodeId x, size_t i) {
    return l_.compute == l_.dtype ? x : g_.convert(x, l_.dtype, c_.name(i));
  }
  std::string lastName(size_t i) const { return l_.compute == l_.dtype ? c_.name(i) : ""; }

  /// Y: [seq, dirs, batch, hidden] (batch first: [batch, seq, dirs, hidden]) from each
  /// direction's steps in time order.
  NodeId sequenceOutput(const std::vector<std::vector<NodeId>>& ys) {
    size_t time = static_cast<size_t>(l_.timeAxis());
    if (l_.steps == 0) {
      Shape s = {Dim(0), Dim(l_.directions), batch(), Dim(l_.hidden)};
      if (l_.batchFirst) s = {batch(), Dim(0), Dim(l_.directions), Dim(l_.hidden)};
      return g_.constant(l_.dtype, s, {0.0}, c_.name(0));
    }
    // each step's [batch, hidden] as [1, 1, batch, hidden] (batch first: [batch, 1, 1, hidden]),
    // concatenated along the time axis, then the directions along the next
    bool single = l_.directions == 1, oneStep = l_.steps == 1;
    std::vector<NodeId> perDirection;
    for (const std::vector<NodeId>& steps : ys) {
      std::vector<NodeId> units;
      for (NodeId y : steps) {
        Shape s = c_.typeOf(y).shape;
        s.insert(s.begin() + static_cast<std::ptrdiff_t>(time), {Dim(1), Dim(1)});
        units.push_back(g_.reshape(y, s, single && oneStep ? lastName(0) : ""));
      }
      perDirection.push_back(
          oneStep ? units[0]
                  : g_.concatenate(units, static_cast<int64_t>(time), single ? lastName(0) : ""));
    }
    NodeId y = single ? perDirection[0]
                      : g_.concatenate(perDirection, static_cast<int64_t>(time + 1), lastName(0));
    return finish(y, 0);
  }

  /// Y_h or Y_c (output i): [dirs, batch, hidden] (batch first: [batch, dirs, hidden]).
  NodeId stateOutput(const std::vector<NodeId>& last, size_t i) {
    size_t axis = static_cast<size_t>(l_.timeAxis());
    std::vector<NodeId> units;
    for (size_t d = 0; d < last.size(); ++d) {
      bool lastOp = last.size() == 1;
      Shape s = c_.typeOf(last[d]).shape;
      s.insert(s.begin() + static_cast<std::ptrdiff_t>(axis), Dim(1));
      units.push_back(g_.reshape(last[d], s, lastOp ? lastName(i) : ""));
    }
    NodeId v = units.size() == 1 ? units[0]
                                 : g_.concatenate(units, static_cast<int64_t>(axis), lastName(i));
    return finish(v, i);
  }
};

Lowering recurrent(Cell cell) {
  return [cell](NodeContext& c) {
    Layer l = readLayer(c, cell);
    Unroller(c, l).lower();
  };
}

} // namespace

void addRnnOps(OperatorTable& t) {
  t["RNN"] = recurrent(Cell::Rnn);
  t["GRU"] = recurrent(Cell::Gru);
  t["LSTM"] = recurrent(Cell::Lstm);
}

} // namespace weft::onnx
