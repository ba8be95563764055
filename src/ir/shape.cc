#include "ir/shape.h"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>

#include "weft/error.h"

namespace weft::ir {
namespace {

int64_t mulChecked(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    throw InputError(fmt::format("size overflow: {} * {} does not fit in int64", a, b));
  return r;
}

bool isIdentifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

} // namespace

Dim Dim::symbol(std::string name) {
  Dim d;
  d.symbols_.push_back(std::move(name));
  return d;
}

std::optional<Dim> Dim::parse(const std::string& text) {
  Dim result;
  std::vector<int64_t> factors; // multiplied at the end: a 0 anywhere makes any product 0
  size_t start = 0;
  if (text.empty()) return std::nullopt;
  while (start <= text.size()) {
    size_t star = text.find('*', start);
    std::string part = text.substr(start, star == std::string::npos ? std::string::npos : star - start);
    // trim spaces
    part.erase(0, part.find_first_not_of(' '));
    part.erase(part.find_last_not_of(' ') + 1);
    if (part.empty()) return std::nullopt;
    if (std::all_of(part.begin(), part.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      if (part.size() > 18) return std::nullopt;
      factors.push_back(std::stoll(part));
    } else if (isIdentifier(part)) {
      result.symbols_.push_back(part);
    } else {
      return std::nullopt;
    }
    if (star == std::string::npos) break;
    start = star + 1;
  }
  // 0*B is 0 for every B: no symbol is left to bind (and 10^17*10^17*0 does not overflow).
  if (std::find(factors.begin(), factors.end(), 0) != factors.end()) return Dim(0);
  for (int64_t f : factors)
    result.factor_ = mulChecked(result.factor_, f);
  std::sort(result.symbols_.begin(), result.symbols_.end());
  return result;
}

Dim Dim::operator*(const Dim& other) const {
  // A factor of 0 makes the static 0, never 0*B (which would compare unequal to 0).
  if (factor_ == 0 || other.factor_ == 0) return Dim(0);
  Dim r;
  r.factor_ = mulChecked(factor_, other.factor_);
  r.symbols_ = symbols_;
  r.symbols_.insert(r.symbols_.end(), other.symbols_.begin(), other.symbols_.end());
  std::sort(r.symbols_.begin(), r.symbols_.end());
  return r;
}

std::optional<Dim> Dim::plus(const Dim& other) const {
  if (symbols_ != other.symbols_) return std::nullopt;
  Dim r = *this;
  if (__builtin_add_overflow(factor_, other.factor_, &r.factor_))
    throw InputError(fmt::format("size overflow: {} + {} does not fit in int64", str(), other.str()));
  return r;
}

std::optional<Dim> Dim::dividedBy(const Dim& other) const {
  if (other.factor_ == 0 || factor_ % other.factor_ != 0) return std::nullopt;
  Dim r;
  r.factor_ = factor_ / other.factor_;
  std::vector<std::string> rest = symbols_;
  for (const auto& s : other.symbols_) {
    auto it = std::find(rest.begin(), rest.end(), s);
    if (it == rest.end()) return std::nullopt;
    rest.erase(it);
  }
  r.symbols_ = std::move(rest);
  return r;
}

int64_t Dim::evaluate(const Binding& binding) const {
  int64_t v = factor_;
  for (const auto& s : symbols_) {
    auto it = binding.find(s);
    if (it == binding.end())
      throw InputError(fmt::format("symbol \"{}\" is not bound; give it a size, e.g. --bind {}=16", s, s));
    v = mulChecked(v, it->second);
  }
  return v;
}

std::string Dim::str() const {
  if (symbols_.empty()) return std::to_string(factor_);
  std::string out = factor_ == 1 ? "" : std::to_string(factor_) + "*";
  for (size_t i = 0; i < symbols_.size(); ++i) out += (i ? "*" : "") + symbols_[i];
  return out;
}

std::string shapeStr(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + s[i].str();
  return out + "]";
}

bool isStatic(const Shape& s) {
  return std::all_of(s.begin(), s.end(), [](const Dim& d) { return d.isStatic(); });
}

Dim numElements(const Shape& s) {
  Dim n = 1;
  for (const Dim& d : s) n = n * d;
  return n;
}

std::vector<int64_t> evaluate(const Shape& s, const Binding& binding) {
  std::vector<int64_t> out;
  out.reserve(s.size());
  for (const Dim& d : s) out.push_back(d.evaluate(binding));
  checkedProduct(out);
  return out;
}

int64_t checkedProduct(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t v : sizes) n = mulChecked(n, v);
  return n;
}

std::vector<std::string> symbolsOf(const Shape& s) {
  std::vector<std::string> out;
  for (const Dim& d : s) out.insert(out.end(), d.symbols().begin(), d.symbols().end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int64_t parseSize(const std::string& text) {
  bool digits = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
  if (!digits)
    throw InputError(fmt::format("\"{}\" is not a size (a whole number, 0 or more)", text));
  size_t first = std::min(text.find_first_not_of('0'), text.size() - 1); // "007" is 7
  if (text.size() - first > 18)
    throw InputError(
        fmt::format("\"{}\" is too large: sizes go up to 10^18 - 1 (18 digits)", text));
  return std::stoll(text.substr(first));
}

Binding parseBinding(const std::string& text) {
  Binding b;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t eq = item.find('=');
    std::string name = eq == std::string::npos ? "" : item.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    bool digits = !value.empty() && std::all_of(value.begin(), value.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c));
    });
    // A size may be 0: an empty batch is a real binding, compiled as its own program.
    if (!isIdentifier(name) || !digits)
      throw InputError(fmt::format("binding \"{}\": expected SYMBOL=SIZE (a whole number, 0 or "
                                   "more), e.g. B=16",
                                   item));
    try {
      b[name] = parseSize(value);
    } catch (const InputError&) { // all digits: too many of them
      throw InputError(
          fmt::format("binding \"{}\": sizes go up to 10^18 - 1 (18 digits)", item));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return b;
}

} // namespace weft::ir
