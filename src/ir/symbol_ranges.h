#pragma once
// What a compile may assume about a graph's symbols: a range of values per symbol (BladeDISC
// §3's value ranges). A generic program (ShapeMode::Generic) is planned once per size class of
// its symbols; each class is a SymbolRanges, the planner sizes its heuristics (warp or block per
// row, split factors, block sizes) by the class's likely size, and the class is the guard that
// picks the version for a binding at run time. Facts the generated code's correctness depends
// on (vector widths, staging, static tile counts) are never taken from ranges, only from static
// dims: every version is correct for every binding, and the guard only chooses the fastest.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/shape.h"
#include "weft/compile_options.h"

namespace weft::ir {

/// The sizes a symbol is assumed to take: lo ≤ value ≤ hi, and a multiple of divisor
/// (BladeDISC's divisibility facts: a row of 4·k floats is read with 128-bit vectors).
struct SymbolRange {
  static constexpr int64_t kUnbounded = INT64_MAX;
  int64_t lo = 1;
  int64_t hi = kUnbounded;
  int64_t divisor = 1;
  bool operator==(const SymbolRange& o) const {
    return lo == o.lo && hi == o.hi && divisor == o.divisor;
  }
  bool contains(int64_t v) const { return lo <= v && v <= hi && v % divisor == 0; }
};

/// Per symbol; a symbol not named is unconstrained ([1, unbounded)).
using SymbolRanges = std::map<std::string, SymbolRange>;

/// The declared sizes of `symbols` (CompileOptions::symbolRanges, --bind B=1..4096) as the
/// planner takes them; symbols not declared are left out (any size).
SymbolRanges declaredRanges(const std::map<std::string, SizeRange>& declared,
                            const std::vector<std::string>& symbols);

/// The size planning heuristics use for a symbol in `r`: the power of two nearest the geometric
/// middle of a bounded range (clamped into it); for an unbounded one kLargeSize (or lo, if
/// larger): "large", as generic plans have always assumed.
inline constexpr int64_t kLargeSize = int64_t(1) << 20;
int64_t likelySize(const SymbolRange& r);

/// `d` with each symbol at its likely size (saturating at 2^40); a static dim's own size.
int64_t assumedSize(const Dim& d, const SymbolRanges& ranges);

/// The largest size `d` takes under `ranges` (a static dim's own size), or `fallback` when a
/// symbol is unbounded. Sound only where the ranges are a guard that holds: a version's plan
/// (fusion/plan_versions.h) runs only under bindings its ranges admit, and the version that
/// serves every other binding is always unbounded.
int64_t upperBoundOr(const Dim& d, const SymbolRanges& ranges, int64_t fallback);

/// The largest power of two known to divide `d` under `ranges` (a static dim's size's), at most
/// 2^20: its factor's times each symbol's divisor. Sound under a guard, as upperBoundOr.
int64_t knownDivisor(const Dim& d, const SymbolRanges& ranges);

/// Whether every symbol `binding` names that `ranges` constrains is inside its range.
bool admits(const SymbolRanges& ranges, const Binding& binding);

/// A version's guard: the bindings it serves, a union of boxes (any admits); empty for the
/// version that serves every binding no other does.
using ShapeGuard = std::vector<SymbolRanges>;
bool admits(const ShapeGuard& guard, const Binding& binding);
/// "B in [1, 16] or B in [129, 1024]"; "every other binding" for an empty guard.
std::string guardStr(const ShapeGuard& guard);

/// "B in [9, 32], S in [9, 32]", with ", B % 4 == 0" for a divisor; "any size" for no
/// constraint.
std::string rangesStr(const SymbolRanges& ranges);

/// The size classes a generic program is versioned over, each applied to every symbol at once:
/// [1, 2], [3, 16], [17, 128], [129, 1024], [1025, 8192], [8193, 65536] (bounds 2·8^i; likely
/// sizes 2, 8, 64, 512, 4096, 32768), then [65537, unbounded): at most seven versions.
/// They partition [1, unbounded) in order.
std::vector<SymbolRange> sizeClasses();

} // namespace weft::ir
