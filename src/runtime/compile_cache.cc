#include "runtime/compile_cache.h"

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <sstream>
#include <unistd.h>

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
            {"clusterRequired", l.clusterRequired}}}};
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
  return k;
}

} // namespace

std::string serializeModule(const codegen::CompiledModule& module) {
  json kernels = json::array();
  for (const auto& k : module.kernels) kernels.push_back(kernelToJson(k));
  return json{{"ptx", module.ptx}, {"kernels", kernels}}.dump();
}

codegen::CompiledModule deserializeModule(const std::string& text) {
  try {
    json j = json::parse(text);
    codegen::CompiledModule m;
    m.ptx = j.at("ptx").get<std::string>();
    for (const auto& k : j.at("kernels")) m.kernels.push_back(kernelFromJson(k));
    return m;
  } catch (const json::exception& e) {
    throw Error(fmt::format("compile cache: malformed entry: {}", e.what()));
  }
}

CompileCache::CompileCache(std::string dir) : dir_(dir == "off" ? "" : dir.empty() ? defaultCacheBaseDir() : dir) {}

std::string CompileCache::pathFor(const std::string& key) const {
  return fmt::format("{}/{:016x}.json", dir_, fnv1a64(key));
}

std::optional<std::string> CompileCache::loadPayload(const std::string& key) const {
  if (!enabled()) return std::nullopt;
  std::ifstream in(pathFor(key), std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    json entry = json::parse(ss.str());
    std::string payload = entry.at("payload").get<std::string>();
    if (entry.at("key").get<std::string>() != key ||
        entry.at("checksum").get<std::string>() != fmt::format("{:016x}", fnv1a64(payload))) {
      spdlog::warn("compile cache: entry {} does not match its key or checksum; recompiling", pathFor(key));
      return std::nullopt;
    }
    return payload;
  } catch (const std::exception& e) {
    spdlog::warn("compile cache: entry {} is corrupt ({}); recompiling", pathFor(key), e.what());
    return std::nullopt;
  }
}

std::optional<codegen::CompiledModule> CompileCache::load(const std::string& key) const {
  auto payload = loadPayload(key);
  if (!payload) return std::nullopt;
  try {
    return deserializeModule(*payload);
  } catch (const std::exception& e) {
    spdlog::warn("compile cache: entry {} is corrupt ({}); recompiling", pathFor(key), e.what());
    return std::nullopt;
  }
}

std::optional<std::vector<codegen::CompiledModule>>
CompileCache::loadVersions(const std::string& key, size_t count) const {
  auto payload = loadPayload(key);
  if (!payload) return std::nullopt;
  try {
    json list = json::parse(*payload);
    std::vector<codegen::CompiledModule> modules;
    for (const json& m : list)
      modules.push_back(deserializeModule(m.get<std::string>()));
    if (modules.size() == count) return modules;
    spdlog::warn("compile cache: entry {} holds {} version(s), not {}; recompiling", pathFor(key),
                 modules.size(), count);
  } catch (const std::exception& e) {
    spdlog::warn("compile cache: entry {} is corrupt ({}); recompiling", pathFor(key), e.what());
  }
  return std::nullopt;
}

void CompileCache::storeVersions(const std::string& key,
                                 const std::vector<codegen::CompiledModule>& modules) const {
  if (!enabled()) return;
  json list = json::array();
  for (const codegen::CompiledModule& m : modules)
    list.push_back(serializeModule(m));
  storePayload(key, list.dump());
}

void CompileCache::store(const std::string& key, const codegen::CompiledModule& module) const {
  if (!enabled()) return;
  storePayload(key, serializeModule(module));
}

void CompileCache::storePayload(const std::string& key, const std::string& payload) const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  json entry = {{"key", key}, {"checksum", fmt::format("{:016x}", fnv1a64(payload))}, {"payload", payload}};
  std::string path = pathFor(key);
  std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << entry.dump();
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
