#include "ir/symbol_ranges.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace weft::ir {

int64_t likelySize(const SymbolRange& r) {
  if (r.hi == SymbolRange::kUnbounded) return std::max(r.lo, kLargeSize);
  // The power of two nearest the range's geometric middle: heuristics that round sizes to
  // powers of two (threads per row, split factors) see the sizes they were tuned on.
  double middle = 0.5 * (std::log2(double(std::max<int64_t>(r.lo, 1))) + std::log2(double(r.hi)));
  int64_t p = int64_t(1) << std::clamp<int64_t>(std::llround(middle), 0, 62);
  return std::clamp<int64_t>(p, r.lo, r.hi);
}

int64_t assumedSize(const Dim& d, const SymbolRanges& ranges) {
  constexpr int64_t kCap = int64_t(1) << 40; // products of assumed sizes stay in int64
  int64_t v = d.factor();
  for (const std::string& s : d.symbols()) {
    auto it = ranges.find(s);
    int64_t x = likelySize(it == ranges.end() ? SymbolRange{} : it->second);
    v = v > kCap / x ? kCap : v * x;
  }
  return v;
}

int64_t upperBoundOr(const Dim& d, const SymbolRanges& ranges, int64_t fallback) {
  constexpr int64_t kCap = int64_t(1) << 40;
  int64_t v = d.factor();
  for (const std::string& s : d.symbols()) {
    auto it = ranges.find(s);
    if (it == ranges.end() || it->second.hi >= kCap) return fallback;
    v = v > kCap / it->second.hi ? kCap : v * it->second.hi;
  }
  return v >= kCap ? fallback : v;
}

int64_t knownDivisor(const Dim& d, const SymbolRanges& ranges) {
  static constexpr int64_t kCap = int64_t(1) << 20;
  auto powerOfTwoIn = [](int64_t v) { return v == 0 ? kCap : std::min(v & -v, kCap); };
  if (d.isStatic()) return powerOfTwoIn(d.size());
  int64_t p = powerOfTwoIn(d.factor());
  for (const std::string& s : d.symbols()) {
    auto it = ranges.find(s);
    if (it != ranges.end()) p = std::min(p * powerOfTwoIn(it->second.divisor), kCap);
  }
  return p;
}

bool admits(const SymbolRanges& ranges, const Binding& binding) {
  for (const auto& [name, value] : binding) {
    auto it = ranges.find(name);
    if (it != ranges.end() && !it->second.contains(value)) return false;
  }
  return true;
}

bool admits(const ShapeGuard& guard, const Binding& binding) {
  return guard.empty() ||
         std::any_of(guard.begin(), guard.end(), [&](const SymbolRanges& r) { return admits(r, binding); });
}

std::string guardStr(const ShapeGuard& guard) {
  if (guard.empty()) return "every other binding";
  std::string out;
  for (const SymbolRanges& r : guard)
    out += (out.empty() ? "" : " or ") + rangesStr(r);
  return out;
}

std::string rangesStr(const SymbolRanges& ranges) {
  std::string out;
  for (const auto& [name, r] : ranges) {
    if (r == SymbolRange{}) continue; // unconstrained
    if (!out.empty()) out += ", ";
    out += r.hi == SymbolRange::kUnbounded ? fmt::format("{} >= {}", name, r.lo)
                                           : fmt::format("{} in [{}, {}]", name, r.lo, r.hi);
    if (r.divisor > 1) out += fmt::format(", {} % {} == 0", name, r.divisor);
  }
  return out.empty() ? "any size" : out;
}

SymbolRanges declaredRanges(const std::map<std::string, SizeRange>& declared,
                            const std::vector<std::string>& symbols) {
  SymbolRanges out;
  for (const std::string& s : symbols)
    if (auto it = declared.find(s); it != declared.end())
      out[s] = SymbolRange{it->second.lo, it->second.hi, 1};
  return out;
}

std::vector<SymbolRange> sizeClasses() {
  std::vector<SymbolRange> classes;
  int64_t lo = 1;
  for (int64_t hi = 2; hi <= 65536; hi *= 8) {
    classes.push_back({lo, hi});
    lo = hi + 1;
  }
  classes.push_back({lo, SymbolRange::kUnbounded});
  return classes;
}

} // namespace weft::ir
