#include "frontend/npy.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "frontend/read_file.h"
#include "ir/dtype.h"
#include "ir/shape.h"
#include "weft/error.h"

namespace weft::frontend {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw InputError(fmt::format("{}: {}", where, what));
}

/// The text after `'key':` in the header dict, with leading spaces skipped.
std::string_view valueOf(std::string_view header, std::string_view key, const std::string& where) {
  for (char quote : {'\'', '"'}) {
    std::string k = fmt::format("{}{}{}", quote, key, quote);
    size_t at = header.find(k);
    if (at == std::string_view::npos) continue;
    size_t colon = header.find(':', at + k.size());
    if (colon == std::string_view::npos) break;
    size_t start = header.find_first_not_of(' ', colon + 1);
    if (start == std::string_view::npos) break;
    return header.substr(start);
  }
  fail(where, fmt::format("the .npy header has no '{}' entry: {}", key, header));
}

std::string parseDescr(std::string_view header, const std::string& where) {
  std::string_view v = valueOf(header, "descr", where);
  if (v.empty() || (v[0] != '\'' && v[0] != '"'))
    fail(where, "the .npy header's 'descr' is not a simple type string (structured arrays are not "
                "supported)");
  size_t end = v.find(v[0], 1);
  if (end == std::string_view::npos)
    fail(where, "the .npy header's 'descr' string is not terminated");
  return std::string(v.substr(1, end - 1));
}

std::vector<int64_t> parseShape(std::string_view header, const std::string& where) {
  std::string_view v = valueOf(header, "shape", where);
  if (v.empty() || v[0] != '(') fail(where, "the .npy header's 'shape' is not a tuple");
  size_t end = v.find(')');
  if (end == std::string_view::npos)
    fail(where, "the .npy header's 'shape' tuple is not terminated");
  std::vector<int64_t> shape;
  std::string_view body = v.substr(1, end - 1);
  size_t i = 0;
  while (i < body.size()) {
    while (i < body.size() && (body[i] == ' ' || body[i] == ','))
      ++i;
    if (i >= body.size()) break;
    size_t j = i;
    while (j < body.size() && std::isdigit(static_cast<unsigned char>(body[j])))
      ++j;
    if (j == i || j - i > 18)
      fail(where, fmt::format("the .npy header's shape ({}) is not a tuple of sizes", body));
    shape.push_back(std::stoll(std::string(body.substr(i, j - i))));
    i = j;
    while (i < body.size() && body[i] == 'L')
      ++i; // Python 2 longs
  }
  return shape;
}

struct NpyType {
  DType dtype;
  const char* descr; // what weft writes
};

std::optional<DType> dtypeOfDescr(const std::string& descr, std::optional<DType> expected,
                                  const std::string& where) {
  if (descr.size() < 2) fail(where, fmt::format("unsupported .npy dtype '{}'", descr));
  char order = descr[0];
  std::string code = descr.substr(1);
  if (order == '>' && code != "i1" && code != "b1" && code != "u1")
    fail(where,
         fmt::format(
             ".npy dtype '{}' is big-endian; weft reads little-endian data only (save it with "
             "arr.astype(arr.dtype.newbyteorder('<')))",
             descr));
  if (order != '<' && order != '|' && order != '=' && order != '>')
    fail(where, fmt::format("unsupported .npy dtype '{}'", descr));
  if (code == "f4") return DType::f32;
  if (code == "f2") return DType::f16;
  if (code == "f8") return DType::f64;
  if (code == "i1") return DType::i8;
  if (code == "i4") return DType::i32;
  if (code == "i8") return DType::i64;
  if (code == "b1") return DType::boolean;
  if (code == "u2" && expected == DType::bf16) return DType::bf16;
  if (code == "u2")
    fail(
        where,
        ".npy dtype '<u2' is read only where bf16 is expected (weft writes bf16 as <u2 bits); this "
        "input is not bf16");
  fail(where,
       fmt::format(
           "unsupported .npy dtype '{}'; weft reads <f4 <f2 <f8 |i1 <i4 <i8 |b1 (and <u2 as bf16)",
           descr));
}

const char* descrOf(DType t) {
  switch (t) {
  case DType::f32:
    return "<f4";
  case DType::f16:
    return "<f2";
  case DType::bf16:
    return "<u2";
  case DType::f64:
    return "<f8";
  case DType::i8:
    return "|i1";
  case DType::i32:
    return "<i4";
  case DType::i64:
    return "<i8";
  case DType::boolean:
    return "|b1";
  }
  return "?";
}

} // namespace

HostTensor decodeNpy(const std::string& bytes, const std::string& where,
                     std::optional<DType> expected) {
  if (bytes.size() < kMagicSize + 4 || std::memcmp(bytes.data(), kMagic, kMagicSize) != 0)
    fail(where, "not a .npy file (it does not start with \\x93NUMPY)");
  auto major = static_cast<unsigned char>(bytes[6]);
  size_t headerLen = 0, headerStart = 0;
  auto byteAt = [&](size_t i) { return static_cast<size_t>(static_cast<unsigned char>(bytes[i])); };
  if (major == 1) {
    headerLen = byteAt(8) | byteAt(9) << 8;
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) fail(where, "truncated .npy header");
    headerLen = byteAt(8) | byteAt(9) << 8 | byteAt(10) << 16 | byteAt(11) << 24;
    headerStart = 12;
  } else {
    fail(where,
         fmt::format(".npy format version {}.{} is not supported (weft reads 1.0, 2.0 and 3.0)",
                     major, static_cast<int>(static_cast<unsigned char>(bytes[7]))));
  }
  if (bytes.size() < headerStart + headerLen)
    fail(where,
         fmt::format(
             "truncated .npy header: it declares {} bytes but the file has {} after the preamble",
             headerLen, bytes.size() - headerStart));
  std::string_view header(bytes.data() + headerStart, headerLen);
  std::string descr = parseDescr(header, where);
  std::string_view fortran = valueOf(header, "fortran_order", where);
  if (fortran.substr(0, 4) == "True")
    fail(where,
         "the array is in Fortran order; weft reads C order only (save np.ascontiguousarray(arr))");
  if (fortran.substr(0, 5) != "False")
    fail(where, "the .npy header's 'fortran_order' is neither True nor False");
  std::vector<int64_t> shape = parseShape(header, where);
  DType t = *dtypeOfDescr(descr, expected, where);
  if (expected && t != *expected)
    fail(where, fmt::format("the array has dtype {} ('{}') but {} is expected", ir::dtypeName(t),
                            descr, ir::dtypeName(*expected)));
  int64_t count;
  try {
    count = ir::checkedProduct(shape);
  } catch (const InputError& e) {
    fail(where, fmt::format("shape ({}): {}", fmt::join(shape, ", "), e.what()));
  }
  size_t dataStart = headerStart + headerLen;
  size_t have = bytes.size() - dataStart;
  uint64_t need = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(count), static_cast<uint64_t>(ir::dtypeBytes(t)),
                             &need) ||
      need > have)
    fail(where, fmt::format("truncated data: shape ({}) of {} needs {} bytes but the file holds {}",
                            fmt::join(shape, ", "), ir::dtypeName(t), need, have));
  HostTensor out(t, shape);
  if (need) // an empty array's bytes.data() may be null, which memcpy must not get
    std::memcpy(out.bytes.data(), bytes.data() + dataStart, static_cast<size_t>(need));
  if (t == DType::boolean)
    for (auto& b : out.bytes)
      b = b ? 1 : 0;
  return out;
}

HostTensor readNpy(const std::string& path, std::optional<DType> expected) {
  return decodeNpy(readFileBytes(path, ".npy file"), path, expected);
}

std::string encodeNpy(const HostTensor& t) {
  std::string shape;
  for (size_t i = 0; i < t.shape.size(); ++i)
    shape += fmt::format("{}{}", i ? ", " : "", t.shape[i]);
  if (t.shape.size() == 1) shape += ",";
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}",
                                 descrOf(t.dtype), shape);
  // Pad with spaces so that magic + version + length + header is a multiple of 64, ending in '\n'.
  bool v2 = dict.size() + 11 > 65535;
  size_t preamble = v2 ? 12 : 10;
  size_t total = (preamble + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - preamble - dict.size() - 1, ' ');
  dict += '\n';
  std::string out(kMagic, kMagicSize);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  size_t len = dict.size();
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (v2) {
    out += static_cast<char>((len >> 16) & 0xff);
    out += static_cast<char>((len >> 24) & 0xff);
  }
  out += dict;
  out.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  return out;
}

void writeNpy(const std::string& path, const HostTensor& t) {
  errno = 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  auto reason = [] { return errno ? std::string(std::strerror(errno)) : "unknown reason"; };
  if (!out) throw InputError(fmt::format("{}: cannot create the .npy file: {}", path, reason()));
  std::string bytes = encodeNpy(t);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw InputError(fmt::format("{}: cannot write the .npy file: {}", path, reason()));
}

} // namespace weft::frontend
