// Einsum (opset 12): numpy's einsum on any number of operands, lowered to transposes, reshapes,
// sums and the IR's batched dot, so that weft's GEMM does the contractions.
//
// The equation is parsed into one label per axis of each operand: a letter, or for the axes
// an ellipsis stands for, a label of their own per position (aligned from the right across
// operands, numpy broadcasting them). The output is the explicit right-hand side, or implicitly
// the ellipsis axes followed by the letters that appear once, in alphabetical (ASCII) order.
// Then:
//  1. A label repeated within one operand ("ii") takes the diagonal: the elements whose
//     positions agree (iota == iota) are kept by a select and the repeated axes summed, each
//     sum adding one element to zeros, so exact.
//  2. Each label's size is unified over the operands; a size 1 is broadcast to the others
//     (numpy's rule), other differences are refused.
//  3. The operands are contracted left to right. Before each pairwise contraction a label that
//     only one side holds and nothing after needs (the output and the operands still to come)
//     is summed away. The pair is then one dot: the labels both hold and something after needs
//     are its batch axes, the labels both hold that nothing needs are contracted (K), the
//     others are A's rows (M) and B's columns (N), each group flattened by a reshape:
//     [batch..., M, K] x [batch..., K, N].
//  4. The result is transposed to the output's order.
#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <set>

#include "frontend/onnx/importer.h"

namespace weft::onnx {
namespace {

using ir::Dim;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;

/// Labels 0..51 are the letters in ASCII order ('A'..'Z', then 'a'..'z', so that sorting labels
/// sorts their letters as numpy does); kEllipsisLabel + j is the j-th axis (from the left) of
/// the broadcast ellipsis.
constexpr int kEllipsisLabel = 52;

int letterLabel(char ch) {
  return ch >= 'a' ? 26 + (ch - 'a') : ch - 'A';
}

std::string labelStr(int label) {
  if (label >= kEllipsisLabel) return fmt::format("axis {} of \"...\"", label - kEllipsisLabel);
  char ch = static_cast<char>(label < 26 ? 'A' + label : 'a' + (label - 26));
  return fmt::format("'{}'", ch);
}

/// One side of the equation as written: the letters' labels, and where the ellipsis is
/// (the number of letters before it) if there is one.
struct Term {
  std::string text;
  std::vector<int> letters;
  std::optional<size_t> ellipsisAt;
};

/// A value and the label of each of its axes.
struct Operand {
  NodeId node = -1;
  std::vector<int> labels;
};

Term parseTerm(NodeContext& c, const std::string& text, const std::string& what) {
  Term t{text, {}, std::nullopt};
  for (size_t i = 0; i < text.size(); ++i) {
    char ch = text[i];
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) {
      t.letters.push_back(letterLabel(ch));
    } else if (ch == '.') {
      if (text.compare(i, 3, "...") != 0)
        c.fail(fmt::format("equation term \"{}\" ({}) has a '.' outside an ellipsis \"...\"", text,
                           what));
      if (t.ellipsisAt)
        c.fail(fmt::format("equation term \"{}\" ({}) has more than one ellipsis", text, what));
      t.ellipsisAt = t.letters.size();
      i += 2;
    } else {
      c.fail(fmt::format("equation term \"{}\" ({}) has the character '{}'; a term holds letters "
                         "and at most one \"...\"",
                         text, what, ch));
    }
  }
  return t;
}

/// The equation's terms: one per input, and the right-hand side when there is "->".
struct Equation {
  std::vector<Term> inputs;
  std::optional<Term> output;
};

Equation parseEquation(NodeContext& c) {
  if (!c.hasAttr("equation")) c.fail("needs the attribute equation");
  std::string written = c.attrString("equation", "");
  std::string eq;
  for (char ch : written)
    if (ch != ' ') eq += ch;
  Equation e;
  std::string lhs = eq;
  if (size_t arrow = eq.find("->"); arrow != std::string::npos) {
    lhs = eq.substr(0, arrow);
    std::string rhs = eq.substr(arrow + 2);
    if (rhs.find("->") != std::string::npos)
      c.fail(fmt::format("equation \"{}\" has more than one \"->\"", written));
    if (rhs.find(',') != std::string::npos)
      c.fail(fmt::format("equation \"{}\" has a ',' after \"->\"; there is one output", written));
    e.output = parseTerm(c, rhs, "the output");
  }
  size_t start = 0;
  for (;;) {
    size_t comma = lhs.find(',', start);
    std::string text =
        lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    e.inputs.push_back(parseTerm(c, text, fmt::format("input {}", e.inputs.size())));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (e.inputs.size() != c.numInputs())
    c.fail(fmt::format("equation \"{}\" has {} input term{} but the node has {} input{}", written,
                       e.inputs.size(), e.inputs.size() == 1 ? "" : "s", c.numInputs(),
                       c.numInputs() == 1 ? "" : "s"));
  return e;
}

/// The labels of input i's axes: its letters, with the `rank - letters` axes of its ellipsis
/// labelled as the last of the equation's `ellipsisRank` ellipsis axes (numpy aligns them from
/// the right).
std::vector<int> inputLabels(const Term& t, size_t rank, size_t ellipsisRank) {
  std::vector<int> labels(t.letters.begin(), t.letters.end());
  if (!t.ellipsisAt) return labels;
  size_t covered = rank - t.letters.size();
  std::vector<int> dots;
  for (size_t j = ellipsisRank - covered; j < ellipsisRank; ++j)
    dots.push_back(kEllipsisLabel + static_cast<int>(j));
  labels.insert(labels.begin() + static_cast<std::ptrdiff_t>(*t.ellipsisAt), dots.begin(),
                dots.end());
  return labels;
}

/// The output's labels: the explicit right-hand side (its ellipsis standing for every
/// ellipsis axis), or numpy's implicit output: the ellipsis axes, then the letters that occur
/// once in the inputs, sorted.
std::vector<int> outputLabels(NodeContext& c, const Equation& e, size_t ellipsisRank) {
  std::map<int, int> count;
  for (const Term& t : e.inputs)
    for (int l : t.letters)
      ++count[l];
  std::vector<int> out;
  if (!e.output) {
    for (size_t j = 0; j < ellipsisRank; ++j)
      out.push_back(kEllipsisLabel + static_cast<int>(j));
    for (const auto& [label, n] : count) // a std::map iterates in label (ASCII) order
      if (n == 1) out.push_back(label);
    return out;
  }
  const Term& t = *e.output;
  for (size_t i = 0; i < t.letters.size(); ++i) {
    int l = t.letters[i];
    if (!count.count(l))
      c.fail(fmt::format("output label {} does not occur in any input term", labelStr(l)));
    if (std::find(t.letters.begin(), t.letters.begin() + static_cast<std::ptrdiff_t>(i), l) !=
        t.letters.begin() + static_cast<std::ptrdiff_t>(i))
      c.fail(fmt::format("output term \"{}\" repeats the label {}", t.text, labelStr(l)));
  }
  if (!t.ellipsisAt && ellipsisRank > 0)
    c.fail(fmt::format("the inputs' \"...\" stands for {} axes but the output term \"{}\" has no "
                       "\"...\" to put them in",
                       ellipsisRank, t.text));
  return inputLabels(t, t.letters.size() + ellipsisRank, ellipsisRank);
}

std::vector<int64_t> positionsOf(const std::vector<int>& labels, int label) {
  std::vector<int64_t> at;
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] == label) at.push_back(static_cast<int64_t>(i));
  return at;
}

/// x summed over `axes` (sorted), in f32 for f16 and bf16 (a sum of many halves loses them).
NodeId sumOver(NodeContext& c, NodeId x, const std::vector<int64_t>& axes) {
  ir::DType t = c.typeOf(x).dtype;
  NodeId wide = c.convertTo(x, computeDType(t));
  return c.convertTo(c.g.reduce(ir::ReduceKind::Sum, wide, axes), t);
}

/// The operand with each repeated label taken once: the elements whose positions agree on
/// the label's axes (an iota per axis compared with the first's), the others zeroed by a
/// select, summed over the repeats.
Operand takeDiagonals(NodeContext& c, Operand op, size_t input) {
  std::vector<int> seen;
  const std::vector<int> written = op.labels; // op.labels loses the repeats as they go
  for (int label : written) {
    if (std::find(seen.begin(), seen.end(), label) != seen.end()) continue;
    seen.push_back(label);
    std::vector<int64_t> at = positionsOf(op.labels, label);
    if (at.size() == 1) continue;
    const Shape s = c.typeOf(op.node).shape;
    std::optional<NodeId> agree;
    NodeId first = c.g.iota(ir::DType::i64, s, at[0]);
    for (size_t k = 1; k < at.size(); ++k) {
      if (s[static_cast<size_t>(at[k])] != s[static_cast<size_t>(at[0])])
        c.fail(fmt::format("input {} repeats the label {} on axes {} and {} of sizes {} and {}; a "
                           "diagonal needs equal sizes",
                           input, labelStr(label), at[0], at[k],
                           s[static_cast<size_t>(at[0])].str(),
                           s[static_cast<size_t>(at[k])].str()));
      NodeId eq = c.g.compare(ir::CompareDir::EQ, first, c.g.iota(ir::DType::i64, s, at[k]));
      agree = agree ? c.g.binary(OpKind::And, *agree, eq) : eq;
    }
    NodeId kept = c.g.select(*agree, op.node, c.splatLike(op.node, 0));
    std::vector<int64_t> repeats(at.begin() + 1, at.end());
    op.node = sumOver(c, kept, repeats);
    for (size_t k = repeats.size(); k-- > 0;)
      op.labels.erase(op.labels.begin() + repeats[k]);
  }
  return op;
}

/// Each label's size over all operands: equal everywhere, or 1 in some (broadcast to the
/// others' size, numpy's rule).
std::map<int, Dim> labelSizes(NodeContext& c, const std::vector<Operand>& ops) {
  std::map<int, Dim> sizes;
  std::map<int, size_t> from; // the input that gave the size
  for (size_t i = 0; i < ops.size(); ++i) {
    const Shape s = c.typeOf(ops[i].node).shape;
    for (size_t a = 0; a < s.size(); ++a) {
      int l = ops[i].labels[a];
      auto it = sizes.find(l);
      if (it == sizes.end() || (it->second.isOne() && !s[a].isOne())) {
        sizes[l] = s[a];
        from[l] = i;
      } else if (s[a] != it->second && !s[a].isOne()) {
        c.fail(fmt::format("label {} has size {} in input {} but {} in input {}", labelStr(l),
                           it->second.str(), from[l], s[a].str(), i));
      }
    }
  }
  return sizes;
}

/// The operand broadcast to the unified sizes of its labels (its size-1 axes stretched).
Operand broadcastToSizes(NodeContext& c, Operand op, const std::map<int, Dim>& sizes) {
  Shape target;
  std::vector<int64_t> dims;
  for (size_t a = 0; a < op.labels.size(); ++a) {
    target.push_back(sizes.at(op.labels[a]));
    dims.push_back(static_cast<int64_t>(a));
  }
  if (c.typeOf(op.node).shape != target) op.node = c.g.broadcastInDim(op.node, target, dims);
  return op;
}

/// The operand summed over the labels `keep` does not hold.
Operand sumAway(NodeContext& c, Operand op, const std::set<int>& keep) {
  std::vector<int64_t> axes;
  std::vector<int> left;
  for (size_t a = 0; a < op.labels.size(); ++a) {
    if (keep.count(op.labels[a]))
      left.push_back(op.labels[a]);
    else
      axes.push_back(static_cast<int64_t>(a));
  }
  if (axes.empty()) return op;
  return {sumOver(c, op.node, axes), left};
}

/// The operand with its axes in the order of `labels` (a permutation of its own).
NodeId arranged(NodeContext& c, const Operand& op, const std::vector<int>& labels,
                const std::string& name = "") {
  std::vector<int64_t> perm;
  for (int l : labels)
    perm.push_back(positionsOf(op.labels, l).at(0));
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i)
    identity = identity && perm[i] == static_cast<int64_t>(i);
  return identity ? op.node : c.g.transpose(op.node, perm, name);
}

Dim productOf(const std::vector<int>& labels, const std::map<int, Dim>& sizes) {
  Dim p(1);
  for (int l : labels)
    p = p * sizes.at(l);
  return p;
}

/// A and B contracted into one operand holding the labels `keep` needs: one batched dot.
Operand contractPair(NodeContext& c, Operand a, Operand b, const std::set<int>& keep,
                     const std::map<int, Dim>& sizes) {
  std::set<int> inA(a.labels.begin(), a.labels.end()), inB(b.labels.begin(), b.labels.end());
  std::set<int> keepA = keep, keepB = keep;
  keepA.insert(inB.begin(), inB.end());
  keepB.insert(inA.begin(), inA.end());
  a = sumAway(c, a, keepA);
  b = sumAway(c, b, keepB);
  std::vector<int> batch, m, k, n;
  for (int l : a.labels) {
    if (!inB.count(l))
      m.push_back(l);
    else if (keep.count(l))
      batch.push_back(l);
    else
      k.push_back(l);
  }
  for (int l : b.labels)
    if (!inA.count(l)) n.push_back(l);
  Shape batchShape;
  for (int l : batch)
    batchShape.push_back(sizes.at(l));
  auto flat = [&](Dim rows, Dim cols) {
    Shape s = batchShape;
    s.push_back(rows);
    s.push_back(cols);
    return s;
  };
  std::vector<int> orderA = batch, orderB = batch;
  orderA.insert(orderA.end(), m.begin(), m.end());
  orderA.insert(orderA.end(), k.begin(), k.end());
  orderB.insert(orderB.end(), k.begin(), k.end());
  orderB.insert(orderB.end(), n.begin(), n.end());
  NodeId lhs = c.reshapeTo(arranged(c, a, orderA), flat(productOf(m, sizes), productOf(k, sizes)));
  NodeId rhs = c.reshapeTo(arranged(c, b, orderB), flat(productOf(k, sizes), productOf(n, sizes)));
  NodeId y = c.g.dot(lhs, rhs);
  Operand out{-1, batch};
  out.labels.insert(out.labels.end(), m.begin(), m.end());
  out.labels.insert(out.labels.end(), n.begin(), n.end());
  Shape outShape;
  for (int l : out.labels)
    outShape.push_back(sizes.at(l));
  out.node = c.reshapeTo(y, outShape);
  return out;
}

void lowerEinsum(NodeContext& c) {
  if (c.numInputs() == 0) c.fail("needs at least one input");
  Equation e = parseEquation(c);
  const ir::DType dtype = c.type(0).dtype;
  size_t ellipsisRank = 0;
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    if (!c.has(i)) c.fail(fmt::format("input {} is missing", i));
    if (c.type(i).dtype != dtype)
      c.fail(fmt::format("input {} has dtype {} but input 0 has {}; the operands share one type", i,
                         ir::dtypeName(c.type(i).dtype), ir::dtypeName(dtype)));
    const Term& t = e.inputs[i];
    size_t rank = c.rank(i);
    if (!t.ellipsisAt && t.letters.size() != rank)
      c.fail(fmt::format("equation term \"{}\" has {} labels but input {} has rank {}", t.text,
                         t.letters.size(), i, rank));
    if (t.ellipsisAt && t.letters.size() > rank)
      c.fail(fmt::format("equation term \"{}\" has {} labels besides \"...\" but input {} has "
                         "rank {}",
                         t.text, t.letters.size(), i, rank));
    if (t.ellipsisAt) ellipsisRank = std::max(ellipsisRank, rank - t.letters.size());
  }
  if (ir::isBool(dtype)) c.fail("the inputs are bool; Einsum takes numeric tensors");
  std::vector<int> out = outputLabels(c, e, ellipsisRank);

  std::vector<Operand> ops;
  for (size_t i = 0; i < e.inputs.size(); ++i)
    ops.push_back(
        takeDiagonals(c, {c.in(i), inputLabels(e.inputs[i], c.rank(i), ellipsisRank)}, i));
  std::map<int, Dim> sizes = labelSizes(c, ops);
  for (Operand& op : ops)
    op = broadcastToSizes(c, op, sizes);

  // What each step must keep: the output's labels and those of the operands after it.
  std::vector<std::set<int>> needed(ops.size());
  std::set<int> later(out.begin(), out.end());
  for (size_t i = ops.size(); i-- > 0;) {
    needed[i] = later;
    later.insert(ops[i].labels.begin(), ops[i].labels.end());
  }
  Operand acc = ops[0];
  for (size_t i = 1; i < ops.size(); ++i)
    acc = contractPair(c, acc, ops[i], needed[i], sizes);
  acc = sumAway(c, acc, needed.back());

  int onnxType = c.onnxType(0);
  bool narrow = heldNarrowBits(onnxType) != 0; // products wrap at the narrow width
  NodeId y = arranged(c, acc, out, narrow ? "" : c.name());
  if (narrow) {
    c.setOutput(0, castTo(c, y, onnxType, c.name()));
    c.setOutputOnnxType(0, onnxType);
    return;
  }
  c.setOutput(0, y);
}

} // namespace

void addEinsumOps(OperatorTable& t) {
  t["Einsum"] = lowerEinsum;
}

} // namespace weft::onnx
