#include "ir/symbol_unification.h"

#include <algorithm>
#include <fmt/format.h>
#include <numeric>

#include "weft/error.h"

namespace weft::ir {
namespace {

bool loneSymbol(const Dim& d) { return d.factor() == 1 && d.symbols().size() == 1; }

bool occursIn(const std::string& symbol, const Dim& d) {
  return std::find(d.symbols().begin(), d.symbols().end(), symbol) != d.symbols().end();
}

/// a and b with their common factor and common symbols cancelled (B*768 vs S*768 -> B vs S).
std::pair<Dim, Dim> cancelCommon(const Dim& a, const Dim& b) {
  int64_t g = std::gcd(a.factor(), b.factor());
  if (g == 0) return {a, b}; // both hold a 0-sized dim
  Dim ra(a.factor() / g), rb(b.factor() / g);
  std::vector<std::string> sa = a.symbols(), sb = b.symbols(); // sorted
  std::vector<std::string> onlyA, onlyB;
  std::set_difference(sa.begin(), sa.end(), sb.begin(), sb.end(), std::back_inserter(onlyA));
  std::set_difference(sb.begin(), sb.end(), sa.begin(), sa.end(), std::back_inserter(onlyB));
  for (const std::string& s : onlyA) ra = ra * Dim::symbol(s);
  for (const std::string& s : onlyB) rb = rb * Dim::symbol(s);
  return {ra, rb};
}

} // namespace

std::optional<std::pair<std::string, Dim>> unifier(const Dim& a, const Dim& b) {
  if (a == b) return std::nullopt;
  if (loneSymbol(b) && !occursIn(b.symbols()[0], a)) return std::make_pair(b.symbols()[0], a);
  if (loneSymbol(a) && !occursIn(a.symbols()[0], b)) return std::make_pair(a.symbols()[0], b);
  return std::nullopt;
}

std::vector<RequiredEquality> requiredEqualities(OpKind kind, const std::vector<const Shape*>& operands,
                                                 const Attrs& attrs,
                                                 const std::optional<Shape>& declared) {
  std::vector<RequiredEquality> out;
  auto need = [&](const Dim& a, const Dim& b, std::string where) {
    if (a != b) out.push_back({a, b, std::move(where)});
  };
  if (isElementwise(kind) || kind == OpKind::Select || kind == OpKind::Compare) {
    if (operands.empty()) return out;
    const Shape& first = *operands[0];
    for (size_t i = 1; i < operands.size(); ++i) {
      const Shape& s = *operands[i];
      if (s.size() != first.size()) continue;
      for (size_t d = 0; d < s.size(); ++d)
        need(first[d], s[d], fmt::format("operand {} dim {}", i, d));
    }
  } else if (kind == OpKind::Dot && operands.size() == 2) {
    const Shape &a = *operands[0], &b = *operands[1];
    if (a.size() < 2 || a.size() != b.size()) return out;
    size_t r = a.size();
    for (size_t i = 0; i + 2 < r; ++i)
      need(a[i], b[i], fmt::format("batch dim {}", i));
    need(a[r - 1], b[r - 2], "contracting dim");
  } else if (kind == OpKind::Concatenate && !operands.empty() &&
             std::holds_alternative<ConcatAttrs>(attrs)) { // none: shape inference's error
    int64_t axis = std::get<ConcatAttrs>(attrs).axis;
    const Shape& first = *operands.at(0);
    for (size_t i = 1; i < operands.size(); ++i) {
      const Shape& s = *operands[i];
      if (s.size() != first.size()) continue;
      for (size_t d = 0; d < s.size(); ++d)
        if (static_cast<int64_t>(d) != axis)
          need(first[d], s[d], fmt::format("operand {} dim {}", i, d));
    }
  } else if (kind == OpKind::BroadcastInDim && declared && operands.size() == 1 &&
             std::holds_alternative<BroadcastAttrs>(attrs)) {
    const auto& dims = std::get<BroadcastAttrs>(attrs).dims;
    const Shape& x = *operands[0];
    if (dims.size() != x.size()) return out;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] < 0 || static_cast<size_t>(dims[i]) >= declared->size()) continue;
      if (x[i].isOne()) continue; // a real broadcast
      need((*declared)[static_cast<size_t>(dims[i])], x[i], fmt::format("operand dim {}", i));
    }
  } else if (kind == OpKind::Gather && operands.size() >= 2 &&
             std::holds_alternative<GatherAttrs>(attrs)) { // none: shape inference's error
    // Index operands share the result's shape; each operand axis not gathered has the size of
    // the result dimension `dims` maps it to.
    const auto& a = std::get<GatherAttrs>(attrs);
    const Shape& x = *operands[0];
    const Shape& first = *operands[1];
    for (size_t j = 2; j < operands.size(); ++j) {
      const Shape& s = *operands[j];
      if (s.size() != first.size()) continue;
      for (size_t d = 0; d < s.size(); ++d)
        need(first[d], s[d], fmt::format("index operand {} dim {}", j, d));
    }
    std::vector<int64_t> resultDim = gatherResultDims(a, x.size());
    for (size_t d = 0; d < x.size(); ++d) {
      int64_t r = resultDim[d];
      if (r >= 0 && static_cast<size_t>(r) < first.size())
        need(x[d], first[static_cast<size_t>(r)], fmt::format("operand dim {}", d));
    }
  } else if (kind == OpKind::Reshape && declared && operands.size() == 1) {
    // Element counts must match; overflowing products are shape inference's to report.
    try {
      auto [a, b] = cancelCommon(numElements(*operands[0]), numElements(*declared));
      need(a, b, "element count");
    } catch (const InputError&) {
    }
  }
  return out;
}

Dim substitute(const Dim& d, const std::string& symbol, const Dim& value) {
  if (!occursIn(symbol, d)) return d;
  Dim rest(d.factor());
  for (const std::string& s : d.symbols())
    rest = rest * (s == symbol ? value : Dim::symbol(s));
  return rest;
}

Shape substitute(const Shape& s, const std::string& symbol, const Dim& value) {
  Shape out;
  out.reserve(s.size());
  for (const Dim& d : s)
    out.push_back(substitute(d, symbol, value));
  return out;
}

void checkBinding(const std::vector<SymbolEquality>& equalities, const Binding& binding) {
  for (const SymbolEquality& e : equalities) {
    auto given = binding.find(e.symbol);
    if (given == binding.end()) continue;
    bool bound = std::all_of(e.value.symbols().begin(), e.value.symbols().end(),
                             [&](const std::string& s) { return binding.count(s) > 0; });
    if (!bound) continue; // the graph's own symbols are checked for being bound elsewhere
    int64_t want = e.value.evaluate(binding);
    if (given->second != want)
      throw InputError(fmt::format(
          "binding {}={} contradicts {} = {} (= {} here), which {} needs; bind {} to {} or leave "
          "it out",
          e.symbol, given->second, e.symbol, e.value.str(), want, e.where, e.symbol, want));
  }
}

std::string equalitiesStr(const std::vector<SymbolEquality>& equalities) {
  std::string out;
  for (const SymbolEquality& e : equalities)
    out += fmt::format("{}{} = {} ({})", out.empty() ? "" : "; ", e.symbol, e.value.str(), e.where);
  return out;
}

} // namespace weft::ir
