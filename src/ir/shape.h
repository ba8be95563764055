#pragma once
// Dimensions and shapes. A Dim is a static size or a product of a positive factor and named
// symbols ("B", "B*S", "2*B"), so that reshapes of symbolic shapes stay exact (BladeDISC §3).
// A product with a factor of 0 is the static 0, never 0*B: no dim has factor 0 and symbols.
// Two dims are equal when their factors and symbol multisets are equal. A Binding gives each
// symbol a size; evaluating a dim or shape under a binding yields static sizes.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace weft::ir {

using Binding = std::map<std::string, int64_t>;

class Dim {
public:
  Dim() = default;
  Dim(int64_t size) : factor_(size) {} // NOLINT: implicit from a static size on purpose
  static Dim symbol(std::string name);
  /// Parses "768", "B", "B*S", "2*B". Returns nullopt on anything else.
  static std::optional<Dim> parse(const std::string& text);

  bool isStatic() const { return symbols_.empty(); }
  /// A static 1: a dim a broadcast stretches, or a reshape may add or drop.
  bool isOne() const { return symbols_.empty() && factor_ == 1; }
  /// The static size; only valid when isStatic().
  int64_t size() const { return factor_; }
  int64_t factor() const { return factor_; }
  const std::vector<std::string>& symbols() const { return symbols_; } // sorted

  /// Product of two dims; throws InputError when the static product overflows int64.
  Dim operator*(const Dim& other) const;
  /// Sum of two dims when representable (both static, or the same symbols); nullopt otherwise.
  std::optional<Dim> plus(const Dim& other) const;
  /// this / other when exact (other's symbols are a sub-multiset and factors divide).
  std::optional<Dim> dividedBy(const Dim& other) const;

  /// Size under a binding; throws InputError naming the first unbound symbol, or on overflow.
  int64_t evaluate(const Binding& binding) const;

  bool operator==(const Dim& o) const { return factor_ == o.factor_ && symbols_ == o.symbols_; }
  bool operator!=(const Dim& o) const { return !(*this == o); }
  bool operator<(const Dim& o) const {
    return factor_ != o.factor_ ? factor_ < o.factor_ : symbols_ < o.symbols_;
  }
  std::string str() const;

private:
  int64_t factor_ = 1;
  std::vector<std::string> symbols_;
};

using Shape = std::vector<Dim>;

std::string shapeStr(const Shape& s); // "[B, 768]"
bool isStatic(const Shape& s);
/// Number of elements as a Dim (throws InputError on static overflow).
Dim numElements(const Shape& s);
/// Static sizes under a binding (throws InputError on unbound symbols or overflow).
std::vector<int64_t> evaluate(const Shape& s, const Binding& binding);
/// Product of static sizes; throws InputError on int64 overflow.
int64_t checkedProduct(const std::vector<int64_t>& sizes);
/// Every symbol used by the shape, sorted, unique.
std::vector<std::string> symbolsOf(const Shape& s);
/// A size as the command line writes one: decimal digits only, up to 10^18 - 1 (18 digits, so
/// that every size and product of two parses exactly; leading zeros aside). InputError
/// "\"TEXT\" is not a size (...)" or "\"TEXT\" is too large: ..." otherwise.
int64_t parseSize(const std::string& text);
/// Parses "B=16,S=128" into a binding; throws InputError naming the bad item (and, for a size
/// past 18 digits, the limit).
Binding parseBinding(const std::string& text);

} // namespace weft::ir
