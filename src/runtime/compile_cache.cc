#include "runtime/compile_cache.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <cstdio>
#include <iterator>
#include <string_view>
#include <unistd.h>

#include "fusion/plan_serialization.h"
#include "runtime/cache_base_dir.h"
#include "weft/error.h"

namespace weft::runtime {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json kernelToJson(const codegen::CompiledKernel& k) {
  json params = json::array();
  for (const auto& p : k.params)
    params.push_back({{"kind", static_cast<int>(p.kind)}, {"buffer", p.buffer}, {"symbol", p.symbol}});
  const auto& l = k.launch;
  return {{"name", k.name},
          {"params", params},
          {"planStep", k.planStep},
          {"dynamicSharedBytes", k.dynamicSharedBytes},
          {"launch",
           {{"blockSize", l.blockSize},
            {"tiles", l.tiles.str()},
            {"maxBlocks", l.maxBlocks},
            {"sharedBytes", l.sharedBytes},
            {"maxRegisters", l.maxRegisters},
            {"cooperative", l.cooperative},
            {"clusterSize", l.clusterSize},
            {"clusterRequired", l.clusterRequired},
            {"fillSMs", l.fillSMs}}}};
}

codegen::CompiledKernel kernelFromJson(const json& j) {
  codegen::CompiledKernel k;
  k.name = j.at("name").get<std::string>();
  for (const auto& p : j.at("params")) {
    codegen::KernelParam param;
    param.kind = static_cast<codegen::KernelParam::Kind>(p.at("kind").get<int>());
    param.buffer = p.at("buffer").get<int>();
    param.symbol = p.at("symbol").get<std::string>();
    k.params.push_back(param);
  }
  k.planStep = j.at("planStep").get<int>();
  k.dynamicSharedBytes = j.at("dynamicSharedBytes").get<uint32_t>();
  const json& l = j.at("launch");
  k.launch.blockSize = l.at("blockSize").get<int>();
  auto tiles = ir::Dim::parse(l.at("tiles").get<std::string>());
  if (!tiles) throw Error("compile cache: malformed tile count");
  k.launch.tiles = *tiles;
  k.launch.maxBlocks = l.at("maxBlocks").get<int64_t>();
  k.launch.sharedBytes = l.at("sharedBytes").get<int64_t>();
  k.launch.maxRegisters = l.at("maxRegisters").get<int>();
  k.launch.cooperative = l.at("cooperative").get<bool>();
  k.launch.clusterSize = l.at("clusterSize").get<int>();
  if (k.launch.clusterSize < 1) throw Error("compile cache: malformed cluster size");
  k.launch.clusterRequired = l.at("clusterRequired").get<bool>();
  k.launch.fillSMs = l.at("fillSMs").get<bool>();
  return k;
}

} // namespace

// An entry is a few length-prefixed sections, so that loading reads the PTX once, in place:
//   weft-compile-cache 3\n
//   key <bytes>\n<key>\n
//   checksum <fnv1a64 of the payload, 16 hex digits>\n
//   payload <bytes>\n<payload>\n
// and a payload is "versions <count>\n", then per version "guard <bytes>\n<guard>\n" and
// "plan <bytes>\n<plan>\n" (fusion/plan_serialization.h: binary, with a checksum of its own),
// "kernels <bytes>\n<JSON>\n" (the launch metadata, small) and "ptx <bytes>\n<PTX>\n".
// Format 2 held the modules only (a warm start planned again); the first format was one JSON
// document holding the PTX escaped twice over. Entries of either are never read.
namespace {

constexpr std::string_view kMagic = "weft-compile-cache 3\n";

void putSection(std::string& out, std::string_view name, std::string_view bytes) {
  out += fmt::format("{} {}\n", name, bytes.size());
  out += bytes;
  out += '\n';
}

/// Reads the section `name` at `at` and moves `at` past it; throws weft::Error when the text
/// there is not that section.
std::string_view takeSection(std::string_view text, size_t& at, std::string_view name) {
  auto malformed = [&] { return Error(fmt::format("compile cache: malformed section '{}'", name)); };
  size_t eol = text.find('\n', at);
  if (eol == std::string_view::npos) throw malformed();
  std::string_view head = text.substr(at, eol - at);
  if (head.size() <= name.size() + 1 || head.substr(0, name.size()) != name || head[name.size()] != ' ')
    throw malformed();
  uint64_t bytes = 0;
  for (char c : head.substr(name.size() + 1)) {
    if (c < '0' || c > '9' || bytes > (uint64_t(1) << 40)) throw malformed();
    bytes = bytes * 10 + uint64_t(c - '0');
  }
  size_t begin = eol + 1;
  if (bytes > text.size() - begin || begin + bytes >= text.size() || text[begin + bytes] != '\n')
    throw malformed();
  at = begin + bytes + 1;
  return text.substr(begin, bytes);
}

void putModule(std::string& out, const codegen::CompiledModule& module) {
  json kernels = json::array();
  for (const auto& k : module.kernels) kernels.push_back(kernelToJson(k));
  putSection(out, "kernels", kernels.dump());
  putSection(out, "ptx", module.ptx);
}

codegen::CompiledModule takeModule(std::string_view text, size_t& at) {
  codegen::CompiledModule m;
  try {
    for (const auto& k : json::parse(takeSection(text, at, "kernels"))) m.kernels.push_back(kernelFromJson(k));
  } catch (const json::exception& e) {
    throw Error(fmt::format("compile cache: malformed kernel list: {}", e.what()));
  }
  m.ptx = std::string(takeSection(text, at, "ptx"));
  return m;
}

/// The count a payload's first line states after `word`, at most `max`; `at` moves past it.
size_t takeCount(std::string_view payload, size_t& at, const char* word, size_t max) {
  size_t eol = payload.find('\n', at);
  size_t count = 0;
  std::string format = fmt::format("{} %zu", word);
  if (eol == std::string_view::npos ||
      std::sscanf(std::string(payload.substr(at, eol - at)).c_str(), format.c_str(), &count) != 1 ||
      count > max)
    throw Error(fmt::format("compile cache: malformed {} count", word));
  at = eol + 1;
  return count;
}

std::string entryPayload(const std::vector<fusion::PlanVersion>& plans,
                         const std::vector<codegen::CompiledModule>& modules) {
  std::string out = fmt::format("versions {}\n", plans.size());
  for (size_t i = 0; i < plans.size(); ++i) {
    putSection(out, "guard", fusion::serializeGuard(plans[i].guard));
    putSection(out, "plan", fusion::serializePlan(plans[i].plan));
    putModule(out, modules.at(i));
  }
  return out;
}

CacheEntry entryFromPayload(std::string_view payload) {
  size_t at = 0;
  size_t count = takeCount(payload, at, "versions", 4096);
  if (count == 0) throw Error("compile cache: an entry of no versions");
  CacheEntry entry;
  for (size_t i = 0; i < count; ++i) {
    std::string_view guard = takeSection(payload, at, "guard");
    std::string_view plan = takeSection(payload, at, "plan");
    try {
      entry.plans.push_back({fusion::deserializePlan(plan), fusion::deserializeGuard(guard)});
    } catch (const std::runtime_error& e) {
      throw Error(fmt::format("compile cache: version {}: {}", i, e.what()));
    }
    entry.modules.push_back(takeModule(payload, at));
  }
  if (at != payload.size()) throw Error("compile cache: bytes after the last version");
  return entry;
}

} // namespace

CompileCache::CompileCache(std::string dir) : dir_(dir == "off" ? "" : dir.empty() ? defaultCacheBaseDir() : dir) {}

std::string CompileCache::pathFor(const std::string& key) const {
  return fmt::format("{}/{:016x}.entry", dir_, ir::fnv1a64(key));
}

std::optional<std::string> CompileCache::loadPayload(const std::string& key) const {
  if (!enabled()) return std::nullopt;
  std::ifstream in(pathFor(key), std::ios::binary | std::ios::ate);
  if (!in) return std::nullopt;
  // In one read: an entry of graph_10000 is 8 MB.
  std::string text(size_t(std::max<std::streamoff>(in.tellg(), 0)), '\0');
  in.seekg(0);
  if (!in.read(text.data(), std::streamsize(text.size()))) return std::nullopt;
  try {
    std::string_view view(text);
    if (view.substr(0, kMagic.size()) != kMagic) throw Error("compile cache: not an entry of this format");
    size_t at = kMagic.size();
    std::string_view storedKey = takeSection(view, at, "key");
    std::string_view checksum = takeSection(view, at, "checksum");
    std::string_view payload = takeSection(view, at, "payload");
    if (at != view.size() || storedKey != key || checksum != fmt::format("{:016x}", ir::fnv1a64(payload))) {
      spdlog::warn("compile cache: entry {} does not match its key or checksum; planning and "
                   "compiling again",
                   pathFor(key));
      return std::nullopt;
    }
    return std::string(payload);
  } catch (const std::exception& e) {
    spdlog::warn("compile cache: entry {} is corrupt ({}); planning and compiling again",
                 pathFor(key), e.what());
    return std::nullopt;
  }
}

std::optional<CacheEntry> CompileCache::load(const std::string& key) const {
  auto t0 = std::chrono::steady_clock::now();
  auto payload = loadPayload(key);
  if (!payload) return std::nullopt;
  try {
    auto t1 = std::chrono::steady_clock::now();
    CacheEntry entry = entryFromPayload(*payload);
    if (spdlog::should_log(spdlog::level::debug)) {
      using ms = std::chrono::duration<double, std::milli>;
      spdlog::debug("compile cache: {} bytes read and checked in {:.1f} ms, {} version(s) parsed "
                    "in {:.1f} ms",
                    payload->size(), ms(t1 - t0).count(), entry.plans.size(),
                    ms(std::chrono::steady_clock::now() - t1).count());
    }
    return entry;
  } catch (const std::exception& e) {
    spdlog::warn("compile cache: entry {} is corrupt ({}); planning and compiling again",
                 pathFor(key), e.what());
  }
  return std::nullopt;
}

void CompileCache::store(const std::string& key, const std::vector<fusion::PlanVersion>& plans,
                         const std::vector<codegen::CompiledModule>& modules) const {
  if (!enabled()) return;
  storePayload(key, entryPayload(plans, modules));
}

void CompileCache::storePayload(const std::string& key, const std::string& payload) const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  std::string entry(kMagic);
  putSection(entry, "key", key);
  putSection(entry, "checksum", fmt::format("{:016x}", ir::fnv1a64(payload)));
  putSection(entry, "payload", payload);
  std::string path = pathFor(key);
  std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << entry;
    if (!out) {
      spdlog::warn("compile cache: cannot write {}; continuing without caching", tmp);
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    spdlog::warn("compile cache: cannot rename {} to {}: {}", tmp, path, ec.message());
    fs::remove(tmp, ec);
  }
}

} // namespace weft::runtime
