#include "frontend/weights_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "frontend/read_file.h"
#include "frontend/unique_keys_json.h"
#include "weft/error.h"

namespace weft::frontend {

using nlohmann::json;

namespace {

struct DTypeName {
  DType dtype;
  const char* name;
};
constexpr DTypeName kDTypes[] = {{DType::f32, "F32"}, {DType::f16, "F16"}, {DType::bf16, "BF16"},
                                 {DType::f64, "F64"}, {DType::i8, "I8"},   {DType::i32, "I32"},
                                 {DType::i64, "I64"}, {DType::boolean, "BOOL"}};

std::string fileDTypeName(DType t) {
  for (const DTypeName& d : kDTypes)
    if (d.dtype == t) return d.name;
  throw InputError(fmt::format("dtype {} has no weights-file name", ir::dtypeName(t)));
}

std::optional<DType> fileDType(const std::string& name) {
  for (const DTypeName& d : kDTypes)
    if (name == d.name) return d.dtype;
  return std::nullopt;
}

std::string shapeText(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

} // namespace

ir::Weights decodeWeights(const std::string& bytes, const std::string& where) {
  if (bytes.size() < 8)
    throw InputError(fmt::format("{}: not a weights file: {} bytes, shorter than the 8-byte "
                                 "header length (a truncated file?)",
                                 where, bytes.size()));
  uint64_t headerBytes = 0;
  for (int i = 7; i >= 0; --i)
    headerBytes = (headerBytes << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  if (headerBytes > bytes.size() - 8)
    throw InputError(fmt::format("{}: the header says it is {} bytes long but the file has {} "
                                 "after the length (a truncated file, or not a weights file)",
                                 where, headerBytes, bytes.size() - 8));
  json header;
  try {
    // A tensor named twice would be read from whichever entry the parser kept: an error.
    header = parseWithUniqueKeys(bytes.substr(8, headerBytes), [&](const std::string& key, size_t) {
      return fmt::format("{}: the header gives \"{}\" twice", where, key);
    });
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: the header is not valid JSON ({})", where, e.what()));
  }
  if (!header.is_object())
    throw InputError(fmt::format("{}: the header must be a JSON object of tensors", where));
  const size_t dataStart = 8 + headerBytes;
  const size_t dataBytes = bytes.size() - dataStart;
  ir::Weights out;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    std::string at = fmt::format("{}: tensor \"{}\"", where, name);
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
        !entry.contains("data_offsets") || !entry["dtype"].is_string() ||
        !entry["shape"].is_array() || !entry["data_offsets"].is_array() ||
        entry["data_offsets"].size() != 2)
      throw InputError(fmt::format("{}: needs \"dtype\" (a string), \"shape\" (an array) and "
                                   "\"data_offsets\" (two integers)",
                                   at));
    std::optional<DType> dtype = fileDType(entry["dtype"].get<std::string>());
    if (!dtype)
      throw InputError(fmt::format("{}: dtype \"{}\" is not one weft reads (F32, F16, BF16, "
                                   "F64, I8, I32, I64, BOOL)",
                                   at, entry["dtype"].get<std::string>()));
    std::vector<int64_t> shape;
    int64_t elements = 1;
    for (const json& d : entry["shape"]) {
      if (!d.is_number_unsigned())
        throw InputError(fmt::format("{}: the shape must hold non-negative integers", at));
      int64_t v = d.get<int64_t>();
      if (v < 0 || __builtin_mul_overflow(elements, v, &elements))
        throw InputError(fmt::format("{}: shape {} is too large", at, entry["shape"].dump()));
      shape.push_back(v);
    }
    const json& off = entry["data_offsets"];
    if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      throw InputError(fmt::format("{}: data_offsets must be two non-negative integers", at));
    uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    uint64_t want = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(elements),
                               static_cast<uint64_t>(ir::dtypeBytes(*dtype)), &want))
      throw InputError(fmt::format("{}: shape {} is too large", at, shapeText(shape)));
    if (begin > end || end > dataBytes)
      throw InputError(fmt::format("{}: data_offsets [{}, {}] lie outside the {} data bytes the "
                                   "file holds (a truncated file?)",
                                   at, begin, end, dataBytes));
    if (end - begin != want)
      throw InputError(fmt::format("{}: {} bytes of data, but {}{} needs {}", at, end - begin,
                                   entry["dtype"].get<std::string>(), shapeText(shape), want));
    HostTensor t;
    t.dtype = *dtype;
    t.shape = shape;
    t.bytes.assign(bytes.begin() + static_cast<std::ptrdiff_t>(dataStart + begin),
                   bytes.begin() + static_cast<std::ptrdiff_t>(dataStart + end));
    out.emplace(name, std::move(t));
  }
  return out;
}

ir::Weights readWeightsFile(const std::string& path) {
  return decodeWeights(readFileBytes(path, "weights file"), path);
}

std::string encodeWeights(const ir::Weights& weights) {
  json header = json::object();
  size_t offset = 0;
  std::vector<std::pair<size_t, const HostTensor*>> placed;
  for (const auto& [name, t] : weights) {
    offset = (offset + 7) / 8 * 8;
    header[name] = {{"dtype", fileDTypeName(t.dtype)},
                    {"shape", t.shape},
                    {"data_offsets", {offset, offset + t.byteSize()}}};
    placed.emplace_back(offset, &t);
    offset += t.byteSize();
  }
  header["__metadata__"] = {{"format", "weft"}};
  std::string text = header.dump();
  text.append((8 - (text.size() % 8)) % 8, ' '); // the data starts 8-byte aligned
  std::string out(8, '\0');
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i)
    out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  out += text;
  const size_t dataStart = out.size();
  out.resize(dataStart + offset, '\0');
  for (const auto& [at, t] : placed)
    if (t->byteSize()) std::memcpy(&out[dataStart + at], t->bytes.data(), t->byteSize());
  return out;
}

void writeWeightsFile(const std::string& path, const ir::Weights& weights) {
  std::string bytes = encodeWeights(weights);
  errno = 0;
  auto fail = [&] {
    throw InputError(fmt::format("{}: cannot write the weights file: {}", path,
                                 errno ? std::strerror(errno) : "unknown reason"));
  };
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) fail();
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  // The stream buffers: a full disk (/dev/full) shows only when the buffer is flushed.
  f.flush();
  if (!f) fail();
  f.close();
  if (!f) fail();
}

ir::Weights loadWeightsFor(const ir::Graph& g, const std::vector<std::string>& names,
                           const std::string& path) {
  ir::Weights all = readWeightsFile(path);
  std::set<std::string> declared(names.begin(), names.end());
  for (const auto& [name, t] : all)
    if (!declared.count(name))
      throw InputError(fmt::format("{}: tensor \"{}\" is not a weight of the graph (its "
                                   "weights: {})",
                                   path, name, fmt::join(names, ", ")));
  ir::Weights out;
  for (const std::string& name : names) {
    auto it = all.find(name);
    if (it == all.end())
      throw InputError(fmt::format("{}: tensor \"{}\" is missing; the graph declares it as a "
                                   "weight",
                                   path, name));
    const ir::Node& n = g.node(*g.find(name));
    const HostTensor& t = it->second;
    if (t.dtype != n.type.dtype)
      throw InputError(fmt::format("{}: tensor \"{}\" is {}{}, but the graph declares it {}", path,
                                   name, fileDTypeName(t.dtype), shapeText(t.shape),
                                   n.type.str()));
    bool same = t.shape.size() == n.type.shape.size();
    for (size_t d = 0; same && d < t.shape.size(); ++d)
      same = n.type.shape[d].isStatic() && n.type.shape[d].size() == t.shape[d];
    if (!same)
      throw InputError(fmt::format("{}: tensor \"{}\" has shape {}, but the graph declares it {}",
                                   path, name, shapeText(t.shape), n.type.str()));
    out.emplace(name, std::move(it->second));
  }
  return out;
}

} // namespace weft::frontend
