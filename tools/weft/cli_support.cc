#include "cli_support.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <set>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compile.h"
#include "frontend/npy.h"
#include "frontend/onnx/load_graph.h"
#include "frontend/onnx/onnx_import.h"
#include "frontend/json_writer.h"
#include "frontend/random_inputs.h"
#include "frontend/weights_file.h"
#include "frontend/read_file.h"
#include "fusion/gemm_planner.h"
#include "fusion/plan.h"
#include "fusion/plan_versions.h"
#include "passes/hoist_weights.h"
#include "passes/pipeline.h"
#include "weft/error.h"

namespace weft::tools {

frontend::ParsedGraph loadGraph(const std::string& path) {
  // Before looksLikeOnnx opens it: a FIFO would block the open, /dev/zero never ends.
  frontend::requireRegularFile(path, "graph file");
  frontend::ParsedGraph g = frontend::loadGraphAnyFormat(path);
  if (onnx::looksLikeOnnx(path)) withWeightsHoisted(g);
  spdlog::debug("read {}: graph \"{}\" with {} values", path, g.name, g.graph.size());
  return g;
}

void withWeightsHoisted(frontend::ParsedGraph& g) {
  passes::HoistedWeights h = passes::hoistWeights(g.graph);
  for (ir::NodeId id : h.graph.inputs()) {
    auto it = h.values.find(h.graph.node(id).name);
    if (it == h.values.end()) continue;
    g.weightNames.push_back(it->first);
    g.weights.insert(std::move(*it));
  }
  g.graph = std::move(h.graph);
}

std::vector<HostTensor> callInputs(const frontend::ParsedGraph& g,
                                   const std::vector<HostTensor>& inputs) {
  std::vector<HostTensor> out;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!g.weights.count(g.graph.node(g.graph.inputs()[i]).name)) out.push_back(inputs[i]);
  return out;
}

DeviceSpec deviceSpecOption(const std::string& name) {
  std::optional<DeviceSpec> spec = deviceSpecProfile(name);
  if (!spec)
    throw InputError(fmt::format("--device-spec {}: unknown profile; use one of {}", name,
                                 fmt::join(deviceSpecProfileNames(), ", ")));
  return *spec;
}

fusion::Policy policyOption(const std::string& name) {
  std::optional<fusion::Policy> policy = fusion::parsePolicy(name);
  if (!policy)
    throw InputError(fmt::format("--policy {}: unknown policy; use none, xla or astitch", name));
  return *policy;
}

fusion::FusionPlan planGraphFile(const frontend::ParsedGraph& g, const ir::Binding& binding,
                                 const DeviceSpec& spec, fusion::Policy policy) {
  ir::Graph graph = binding.empty() ? g.graph : ir::bindSymbols(g.graph, binding);
  // As weft::compile plans it: large constants hoisted into weights (passes/hoist_weights.h).
  return fusion::plan(passes::hoistWeights(passes::canonicalize(graph)).graph, spec, policy);
}

std::optional<uint64_t> parseUint64(const std::string& text) {
  if (text.empty() || text.size() > 20 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  uint64_t v = 0;
  for (char c : text)
    if (__builtin_mul_overflow(v, uint64_t{10}, &v) ||
        __builtin_add_overflow(v, static_cast<uint64_t>(c - '0'), &v))
      return std::nullopt;
  return v;
}

void addInputOptions(CLI::App* cmd, InputOptions& o) {
  cmd->add_option("--bind", o.bind, "Sizes of the graph's symbols, e.g. B=16,S=128");
  auto* inputs = cmd->add_option("--inputs", o.inputsDir,
                                 "Directory with one <input name>.npy per graph input (in file "
                                 "names, bytes other than letters, digits, . _ - are %XX)");
  auto* random =
      cmd->add_flag("--random", o.random, "Seeded random inputs (the default without --inputs)");
  cmd->add_option("--seed", o.seed, "Seed of the random inputs (default 0)")
      ->check(CLI::Validator( // a uint64 option would take "-1" as 2^64 - 1 and saturate 2^70
          [](std::string& text) {
            if (parseUint64(text)) return std::string();
            return "give a seed from 0 to 2^64 - 1, not " +
                   (text.empty() ? std::string("an empty value") : text);
          },
          "SEED"));
  inputs->excludes(random);
  cmd->add_option("--save-outputs", o.saveDir,
                  "Write each output to DIR/<output name>.npy (named as for --inputs)");
}

void warnUnusedBindings(const frontend::ParsedGraph& g, const ir::Binding& binding,
                        const std::string& flag) {
  std::set<std::string> used;
  for (const auto& s : g.graph.symbols())
    used.insert(s);
  for (const ir::SymbolEquality& e : g.graph.symbolEqualities())
    used.insert(e.symbol);
  for (const auto& [s, v] : binding)
    if (!used.count(s)) spdlog::warn("{} {}={}: the graph has no symbol \"{}\"", flag, s, v, s);
}

GraphInputs prepareInputs(const frontend::ParsedGraph& g, const std::string& file,
                          const InputOptions& o) {
  GraphInputs r;
  // An unwritable --save-outputs fails here, before the run rather than after it.
  if (!o.saveDir.empty()) makeOutputDir("--save-outputs", o.saveDir);
  r.binding = parseBindOption(o.bind);
  if (!o.inputsDir.empty()) {
    r.inputs = readInputsDir(g.graph, o.inputsDir, &g.weights);
    r.binding = completeBinding(g, file, r.binding, &r.inputs);
    checkBindRanges(g.graph, file, o.bind);
    checkBoundSizes(g.graph, file, r.binding, o.bind, hostMemoryBytes());
    warnUnusedBindings(g, r.binding);
    return r;
  }
  r.binding = completeBinding(g, file, r.binding, nullptr);
  checkBindRanges(g.graph, file, o.bind);
  checkBoundSizes(g.graph, file, r.binding, o.bind, hostMemoryBytes());
  try {
    r.inputs = frontend::randomInputs(g.graph, r.binding, o.seed);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", file, e.what()));
  }
  // Weights keep the values the graph's weights file gave: only the other inputs are random.
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    auto w = g.weights.find(g.graph.node(g.graph.inputs()[i]).name);
    if (w != g.weights.end()) r.inputs[i] = w->second;
  }
  warnUnusedBindings(g, r.binding);
  spdlog::info("random inputs, seed {}", o.seed);
  return r;
}

namespace {

/// "1.5 GiB": a byte count for messages.
std::string bytesStr(long double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) {
    bytes /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", static_cast<uint64_t>(bytes))
                : fmt::format("{:.1f} {}", static_cast<double>(bytes), units[u]);
}

} // namespace

uint64_t hostMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || pageSize <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageSize);
}

void checkBoundSizes(const ir::Graph& g, const std::string& file, const ir::Binding& binding,
                     const std::string& bindText, uint64_t hostBytes, const std::string& flag) {
  // Sizes in long double: products far past int64 are still ordered and printable.
  constexpr long double kMax = static_cast<long double>(std::numeric_limits<int64_t>::max());
  std::string bind = bindText.empty() ? "(no " + flag + ")" : flag + " " + bindText;
  auto sizeOf = [&](const ir::Node& n, long double* elements) {
    long double count = 1;
    for (const ir::Dim& d : n.type.shape) {
      long double size = static_cast<long double>(d.factor());
      for (const std::string& sym : d.symbols()) {
        auto it = binding.find(sym);
        if (it == binding.end()) return false; // stays symbolic
        size *= static_cast<long double>(it->second);
      }
      if (size > kMax)
        throw InputError(fmt::format("{}: {}: value \"{}\" {} has dim {} = {:.3g}, which does not "
                                     "fit in int64; use smaller sizes",
                                     file, bind, n.name, n.type.str(), d.str(),
                                     static_cast<double>(size)));
      count *= size;
    }
    *elements = count;
    return true;
  };
  long double held = 0, largest = 0;
  const ir::Node* largestNode = nullptr;
  std::set<ir::NodeId> inOut(g.inputs().begin(), g.inputs().end());
  inOut.insert(g.outputs().begin(), g.outputs().end());
  for (ir::NodeId id = 0; id < static_cast<ir::NodeId>(g.size()); ++id) {
    const ir::Node& n = g.node(id);
    long double elements = 0;
    if (!sizeOf(n, &elements)) continue;
    long double bytes = elements * ir::dtypeBytes(n.type.dtype);
    // Say which count is past int64: often the element count fits and only the bytes do not.
    if (elements > kMax)
      throw InputError(fmt::format("{}: {}: value \"{}\" {} would hold {:.3g} elements ({}), more "
                                   "elements than int64 can count; use smaller sizes",
                                   file, bind, n.name, n.type.str(), static_cast<double>(elements),
                                   bytesStr(bytes)));
    if (bytes > kMax)
      throw InputError(fmt::format("{}: {}: value \"{}\" {} would hold {:.3g} elements of {} "
                                   "bytes, {:.3g} bytes ({}): more bytes than int64 can count; use "
                                   "smaller sizes",
                                   file, bind, n.name, n.type.str(), static_cast<double>(elements),
                                   ir::dtypeBytes(n.type.dtype), static_cast<double>(bytes),
                                   bytesStr(bytes)));
    if (!inOut.count(id)) continue;
    held += bytes;
    if (bytes > largest) {
      largest = bytes;
      largestNode = &n;
    }
  }
  if (hostBytes > 0 && held > static_cast<long double>(hostBytes) && largestNode)
    throw InputError(fmt::format(
        "{}: {}: the inputs and outputs need {} (\"{}\" {} alone {}), more than this machine's "
        "{} of memory; use smaller sizes",
        file, bind, bytesStr(held), largestNode->name, largestNode->type.str(), bytesStr(largest),
        bytesStr(static_cast<long double>(hostBytes))));
}

void withHostMemoryCheck(const std::string& file, const InputOptions& o,
                         const std::function<void()>& work) {
  try {
    work();
  } catch (const std::bad_alloc&) {
    throw InputError(
        fmt::format("{}: not enough host memory for the inputs and outputs under --bind {}; use "
                    "smaller sizes",
                    file, o.bind.empty() ? "(none)" : o.bind));
  } catch (const std::length_error&) { // a vector past max_size(): a size no machine holds
    throw InputError(
        fmt::format("{}: not enough host memory for the values of the graph under --bind {}; use "
                    "smaller sizes",
                    file, o.bind.empty() ? "(none)" : o.bind));
  }
}

namespace {

/// The items of a --bind text, split at commas.
std::vector<std::string> bindItems(const std::string& text) {
  std::vector<std::string> items;
  for (size_t start = 0; start <= text.size();) {
    size_t comma = std::min(text.find(',', start), text.size());
    items.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

bool isRangeItem(const std::string& item) { return item.find("..") != std::string::npos; }

} // namespace

std::map<std::string, SizeRange> parseBindRanges(const std::string& text) {
  std::map<std::string, SizeRange> out;
  if (text.empty()) return out;
  for (const std::string& item : bindItems(text)) {
    if (!isRangeItem(item)) continue;
    size_t eq = item.find('='), dots = item.find("..");
    auto bad = [&](const std::string& why) {
      return InputError(fmt::format("--bind {}: {}", item, why));
    };
    if (eq == std::string::npos || eq == 0 || dots < eq)
      throw bad("a range is written NAME=LO..HI, e.g. B=1..4096");
    std::string name = item.substr(0, eq);
    SizeRange r;
    for (auto [part, value] : {std::pair{item.substr(eq + 1, dots - eq - 1), &r.lo},
                               std::pair{item.substr(dots + 2), &r.hi}}) {
      try { // as a size is read everywhere: decimal digits, up to 10^18 - 1
        *value = ir::parseSize(part);
      } catch (const InputError& e) {
        throw bad(e.what());
      }
    }
    if (r.lo > r.hi) throw bad(fmt::format("the range is empty ({} > {})", r.lo, r.hi));
    if (!out.emplace(name, r).second)
      throw InputError(fmt::format("--bind {}: \"{}\" is given more than one range", text, name));
  }
  return out;
}

ir::Binding parseBindOption(const std::string& fullText) {
  // Ranges (B=1..4096) are parseBindRanges'; the sizes are the other items. The ranges are
  // checked here too, so that every command that reads --bind reports a malformed range as
  // such (not as a symbol left unbound).
  parseBindRanges(fullText);
  std::vector<std::string> sizes;
  for (const std::string& item : bindItems(fullText))
    if (!isRangeItem(item)) sizes.push_back(item);
  return parseSizesOption("--bind", fmt::format("{}", fmt::join(sizes, ",")));
}

ir::Binding parseSizesOption(const std::string& flag, const std::string& text) {
  if (text.empty()) return {};
  for (const std::string& item : bindItems(text))
    if (isRangeItem(item))
      throw InputError(fmt::format("{} {}: \"{}\" is a range; {} takes sizes, e.g. B=4096", flag,
                                   text, item, flag));
  ir::Binding binding;
  try {
    binding = ir::parseBinding(text);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", flag, e.what()));
  }
  // parseBinding keeps the last of B=4,B=5; a symbol given twice is a typo either way.
  std::set<std::string> seen;
  for (const std::string& item : bindItems(text)) {
    std::string name = item.substr(0, item.find('='));
    if (!seen.insert(name).second)
      throw InputError(fmt::format("{} {}: \"{}\" is given more than once", flag, text, name));
  }
  return binding;
}

ir::Binding completeBinding(const frontend::ParsedGraph& g, const std::string& file,
                            ir::Binding binding, const std::vector<HostTensor>* inputs) {
  if (inputs) {
    for (size_t k = 0; k < g.graph.inputs().size() && k < inputs->size(); ++k) {
      const ir::Shape& shape = g.graph.node(g.graph.inputs()[k]).type.shape;
      const auto& actual = (*inputs)[k].shape;
      for (size_t d = 0; d < shape.size() && d < actual.size(); ++d) {
        const ir::Dim& dim = shape[d];
        if (dim.symbols().size() == 1 && dim.factor() == 1 && !binding.count(dim.symbols()[0]))
          binding[dim.symbols()[0]] = actual[d];
      }
    }
  }
  std::vector<std::string> unbound;
  for (const auto& s : g.graph.symbols())
    if (!binding.count(s)) unbound.push_back(s);
  if (!unbound.empty()) {
    std::string example;
    for (const auto& s : unbound)
      example += fmt::format("{}{}=16", example.empty() ? "" : ",", s);
    std::string names;
    for (const auto& s : unbound)
      names += fmt::format("{}\"{}\"", names.empty() ? "" : ", ", s);
    throw InputError(fmt::format("{}: symbol{} {} {} not bound; give {} a size with --bind {}",
                                 file, unbound.size() > 1 ? "s" : "", names,
                                 unbound.size() > 1 ? "are" : "is",
                                 unbound.size() > 1 ? "them" : "it", example));
  }
  // A symbol the graph unified away (S = B) may be bound; it must then agree.
  try {
    ir::checkBinding(g.graph.symbolEqualities(), binding);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", file, e.what()));
  }
  return binding;
}

namespace {

/// The sizes --bind lets a symbol take: its size, else its range; nullopt when it says nothing.
std::optional<SizeRange> boundSizes(const std::string& symbol, const ir::Binding& sizes,
                                    const std::map<std::string, SizeRange>& ranges) {
  if (auto it = sizes.find(symbol); it != sizes.end()) return SizeRange{it->second, it->second};
  if (auto it = ranges.find(symbol); it != ranges.end()) return it->second;
  return std::nullopt;
}

int64_t mulSaturated(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
}

std::string sizesStr(const SizeRange& r) {
  return r.lo == r.hi ? std::to_string(r.lo) : fmt::format("{}..{}", r.lo, r.hi);
}

} // namespace

void checkBindRanges(const ir::Graph& g, const std::string& file, const std::string& bindText) {
  std::map<std::string, SizeRange> ranges = parseBindRanges(bindText);
  if (ranges.empty()) return; // sizes alone are ir::checkBinding's
  ir::Binding sizes = parseBindOption(bindText);
  for (const ir::SymbolEquality& e : g.symbolEqualities()) {
    std::optional<SizeRange> given = boundSizes(e.symbol, sizes, ranges);
    if (!given) continue;
    // The sizes e.value can take: its factor times each symbol's sizes (ranges are monotone:
    // every factor is 0 or more).
    SizeRange want{e.value.factor(), e.value.factor()};
    bool open = false;
    for (const std::string& s : e.value.symbols()) {
      std::optional<SizeRange> r = boundSizes(s, sizes, ranges);
      if (!r) {
        open = true;
        break;
      }
      want.lo = mulSaturated(want.lo, r->lo);
      want.hi = mulSaturated(want.hi, r->hi);
    }
    if (open || (given->lo <= want.hi && want.lo <= given->hi)) continue;
    throw InputError(fmt::format(
        "{}: --bind {}: {}={} contradicts {} = {} ({} {} here), which {} needs; bind {} {} {} or "
        "leave it out",
        file, bindText, e.symbol, sizesStr(*given), e.symbol, e.value.str(),
        want.lo == want.hi ? "=" : "in", sizesStr(want), e.where, e.symbol,
        want.lo == want.hi ? "to" : "within", sizesStr(want)));
  }
}

std::string valueFileName(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')
      out += c;
    else
      out += fmt::format("%{:02X}", static_cast<unsigned>(static_cast<unsigned char>(c)));
  }
  return out;
}

std::vector<HostTensor> readInputsDir(const ir::Graph& g, const std::string& dir,
                                      const ir::Weights* weights) {
  namespace fs = std::filesystem;
  std::error_code ec; // the non-throwing overloads: a symlink loop or an over-long name is
                      // the user's path problem, reported as such
  fs::file_status st = fs::status(dir, ec);
  if (!fs::is_directory(st)) {
    std::string why = !ec                                          ? "not a directory"
                      : ec == std::errc::no_such_file_or_directory ? "no such directory"
                                                                   : ec.message();
    throw InputError(fmt::format(
        "--inputs {}: {}; it must be a directory holding one <input name>.npy per graph input", dir,
        why));
  }
  std::vector<HostTensor> out;
  for (ir::NodeId id : g.inputs()) {
    const ir::Node& n = g.node(id);
    if (weights && weights->count(n.name)) { // a weight: its value is the weights file's
      out.push_back(weights->at(n.name));
      continue;
    }
    fs::path p = fs::path(dir) / (valueFileName(n.name) + ".npy");
    fs::file_status file = fs::status(p, ec);
    if (ec && ec != std::errc::no_such_file_or_directory)
      throw InputError(fmt::format("--inputs {}: cannot read {} for graph input \"{}\" ({}): {}",
                                   dir, p.filename().string(), n.name, n.type.str(), ec.message()));
    if (!fs::exists(file))
      throw InputError(fmt::format("--inputs {}: no {} for graph input \"{}\" ({})", dir,
                                   p.filename().string(), n.name, n.type.str()));
    out.push_back(frontend::readNpy(p.string(), n.type.dtype));
  }
  return out;
}

void makeOutputDir(const std::string& flag, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!ec && !std::filesystem::is_directory(dir, ec))
    ec = std::make_error_code(std::errc::not_a_directory);
  if (ec)
    throw InputError(
        fmt::format("{} {}: cannot create the directory: {}", flag, dir, ec.message()));
}

void checkOutputFile(const std::string& flag, const std::string& path) {
  namespace fs = std::filesystem;
  auto fail = [&](const std::string& why) {
    throw InputError(fmt::format("{} {}: cannot write the file: {}", flag, path, why));
  };
  std::error_code ec;
  if (fs::is_directory(path, ec)) fail("it is a directory");
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  struct stat st;
  if (::stat(parent.c_str(), &st) != 0)
    fail(fmt::format("{}: {}", parent.string(), std::strerror(errno)));
  if (!S_ISDIR(st.st_mode)) fail(fmt::format("{} is not a directory", parent.string()));
  if (::access(parent.c_str(), W_OK) != 0)
    fail(fmt::format("{}: {}", parent.string(), std::strerror(errno)));
}

void writeOutputFile(const std::string& flag, const std::string& path, const std::string& text) {
  errno = 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  auto reason = [] { return errno ? std::string(std::strerror(errno)) : "unknown reason"; };
  if (!out) throw InputError(fmt::format("{} {}: cannot write the file: {}", flag, path, reason()));
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) throw InputError(fmt::format("{} {}: cannot write the file: {}", flag, path, reason()));
}

namespace {

/// Whether two paths name one file (through "..", symlinks and hard links, existing or not).
bool samePath(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (std::filesystem::equivalent(a, b, ec)) return true;
  std::filesystem::path ca = std::filesystem::weakly_canonical(a, ec);
  if (ec) return false;
  std::filesystem::path cb = std::filesystem::weakly_canonical(b, ec);
  return !ec && ca == cb;
}

} // namespace

void writeGraphWithWeights(const std::string& output, const std::string& weightsPath,
                           const ir::Graph& g, const std::string& name,
                           const std::vector<std::string>& weightNames,
                           const ir::Weights& weights, const std::string& source) {
  if (weightNames.empty()) {
    writeOutputFile("-o", output, frontend::writeGraphJson(g, name));
    return;
  }
  // The weights file beside the graph, named relative to it in "weights_file".
  std::filesystem::path out(output);
  std::filesystem::path defaultPath = std::filesystem::path(out).replace_extension(".safetensors");
  std::filesystem::path path = weightsPath.empty() ? defaultPath : std::filesystem::path(weightsPath);
  checkOutputFile("--weights", path.string());
  // One path for both: the graph's JSON would overwrite the weights just written.
  for (const auto& [flag, other] : {std::pair<const char*, std::string>{"-o", output},
                                    std::pair<const char*, std::string>{"the input", source}})
    if (samePath(path.string(), other))
      throw InputError(fmt::format("--weights {}: the same file as {} {}; give the weights a "
                                   "file of their own (default: {})",
                                   path.string(), flag, other, defaultPath.string()));
  std::filesystem::path folder = out.parent_path().empty() ? "." : out.parent_path();
  std::string relative =
      std::filesystem::absolute(path).lexically_relative(std::filesystem::absolute(folder))
          .string();
  ir::Weights written;
  for (const std::string& w : weightNames)
    written.emplace(w, weights.at(w));
  try {
    frontend::writeWeightsFile(path.string(), written);
  } catch (const InputError& e) {
    throw InputError(fmt::format("--weights {}", e.what()));
  }
  writeOutputFile("-o", output,
                  frontend::writeGraphJson(g, name, weightNames,
                                           relative.empty() ? path.string() : relative));
}

void saveOutputs(const ir::Graph& g, const std::vector<HostTensor>& outputs,
                 const std::string& dir) {
  makeOutputDir("--save-outputs", dir);
  for (size_t k = 0; k < outputs.size(); ++k) {
    std::filesystem::path p =
        std::filesystem::path(dir) / (valueFileName(g.node(g.outputs()[k]).name) + ".npy");
    writeOutputFile("--save-outputs", p.string(), frontend::encodeNpy(outputs[k]));
    spdlog::info("wrote {}", p.string());
  }
}

void addPlanOptions(CLI::App* cmd, PlanOptions& o) {
  cmd->add_option("graph", o.file, "Graph file (weft JSON or ONNX)")->required();
  cmd->add_option("--policy", o.policy, "Fusion policy: none, xla, astitch")
      ->capture_default_str();
  cmd->add_option("--device-spec", o.deviceSpec, "Device profile: v100, a100, h100")
      ->capture_default_str();
  cmd->add_option("--bind", o.bind, "Symbol sizes, e.g. B=64,S=128 (unbound symbols stay symbolic)");
  addShapesOption(cmd, o.shapes);
  addTf32Option(cmd, o.tf32);
}

void addTf32Option(CLI::App* cmd, bool& tf32) {
  cmd->add_flag("--tf32", tf32,
                "f32 dots on TF32 tensor cores (sm_80+): operands rounded to 10-bit significands, "
                "sums in f32; off: exact f32");
}

void addAmpOption(CLI::App* cmd, std::string& amp) {
  cmd->add_option("--amp", amp,
                  "Mixed precision: f16 or bf16 runs f32 arithmetic in that precision, "
                  "reductions, exp/log and statistics in f32; inputs and outputs keep their dtypes")
      ->check(CLI::Validator( // "" is ampOption's "off": given on the command line it is a slip
          [](std::string& text) {
            return text.empty() ? std::string("give f16 or bf16, not an empty value")
                                : std::string();
          },
          "f16|bf16"));
}

std::optional<DType> ampOption(const std::string& text) {
  if (text.empty()) return std::nullopt;
  if (text == "f16") return DType::f16;
  if (text == "bf16") return DType::bf16;
  throw InputError(fmt::format("--amp {}: use f16 or bf16", text));
}

void addShapesOption(CLI::App* cmd, std::string& shapes) {
  cmd->add_option("--shapes", shapes,
                  "generic (one program for every binding, versioned by size classes; symbols "
                  "as kernel parameters) or specialized (one program per binding)")
      ->capture_default_str();
}

ShapeMode shapeModeOption(const std::string& name) {
  std::optional<ShapeMode> mode = parseShapeMode(name);
  if (!mode)
    throw InputError(
        fmt::format("--shapes {}: unknown shape mode; use specialized or generic", name));
  return *mode;
}

PlanVersions plansFromOptions(const PlanOptions& o, const frontend::ParsedGraph& g) {
  DeviceSpec spec = deviceSpecOption(o.deviceSpec);
  fusion::Policy policy = policyOption(o.policy);
  ir::Binding binding = parseBindOption(o.bind);
  checkBoundSizes(g.graph, o.file, binding, o.bind, 0);
  // As eval and run: a binding must agree with the symbols the graph unified (S = B).
  try {
    ir::checkBinding(g.graph.symbolEqualities(), binding);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", o.file, e.what()));
  }
  checkBindRanges(g.graph, o.file, o.bind);
  PlanVersions v;
  auto withTf32 = [&] { // as weft::compile applies --tf32
    if (o.tf32)
      for (fusion::PlanVersion& p : v.plans)
        fusion::replanGemms(p.plan, {.tf32 = true});
  };
  // A symbol bound to 0 runs its own specialised program, as weft::compile does
  // (genericServes): the generic versions would show a plan that binding never runs.
  // A range that holds only 0 (B=0..0) is that binding.
  for (const auto& [s, r] : parseBindRanges(o.bind))
    if (r.hi == 0) binding[s] = 0;
  ir::Binding relevant;
  for (const std::string& s : g.graph.symbols())
    if (auto it = binding.find(s); it != binding.end()) relevant.insert(*it);
  if (shapeModeOption(o.shapes) == ShapeMode::Specialized || g.graph.symbols().empty() ||
      !genericServes(relevant)) {
    v.plans.push_back({planGraphFile(g, binding, spec, policy), {}});
    withTf32();
    return v;
  }
  // The generic program is planned with every symbol symbolic, whatever --bind says; --bind
  // only picks the version that binding runs.
  ir::Graph canonical = passes::hoistWeights(passes::canonicalize(g.graph)).graph;
  v.plans = fusion::planVersions(canonical, spec, policy,
                                 ir::declaredRanges(parseBindRanges(o.bind), canonical.symbols()));
  std::vector<ir::ShapeGuard> guards;
  for (const fusion::PlanVersion& p : v.plans)
    guards.push_back(p.guard);
  v.selected = fusion::versionFor(guards, binding);
  v.bound = !binding.empty();
  withTf32();
  return v;
}

fusion::FusionPlan planFromOptions(const PlanOptions& o, const frontend::ParsedGraph& g) {
  PlanVersions v = plansFromOptions(o, g);
  return std::move(v.plans[v.selected].plan);
}

} // namespace weft::tools
