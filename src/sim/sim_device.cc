#include "sim/sim_device.h"

#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "sim/device_memory.h"
#include "sim/ptx_parser.h"
#include "weft/error.h"

namespace weft::sim {
namespace {

struct Kernel {
  int module;
  uint32_t function;
};

struct RecordedLaunch {
  KernelHandle kernel;
  LaunchConfig config;
  std::vector<KernelArg> args;
};

class SimDevice final : public Device {
public:
  SimDevice(const DeviceSpec& spec, const ExecOptions& options) : spec_(spec), options_(options) {}

  std::string name() const override { return "sim (" + spec_.name + ")"; }
  const DeviceSpec& spec() const override { return spec_; }

  DevicePtr allocate(size_t bytes) override { return memory_.allocate(bytes); }
  void free(DevicePtr p) override {
    if (p == 0) return;
    if (!memory_.free(p))
      throw DeviceError(fmt::format("free(0x{:x}): not the start of a live allocation", p));
  }
  void copyToDevice(DevicePtr dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(checked(dst, bytes, "copyToDevice"), src, bytes);
  }
  void copyToHost(void* dst, DevicePtr src, size_t bytes) override {
    if (bytes) std::memcpy(dst, checked(src, bytes, "copyToHost"), bytes);
  }
  void memset(DevicePtr dst, uint8_t value, size_t bytes) override {
    if (bytes) std::memset(checked(dst, bytes, "memset"), value, bytes);
  }

  ModuleHandle loadModule(const std::string& ptx) override {
    auto prog = std::make_unique<Program>(
        parsePtx(ptx, [&](uint64_t bytes) { return memory_.allocate(bytes); }));
    for (const Variable& v : prog->variables)
      if (v.space == Space::Global && !v.init.empty())
        std::memcpy(memory_.translate(v.address, v.size), v.init.data(), v.size);
    modules_.push_back(std::move(prog));
    return ModuleHandle(modules_.size() - 1);
  }

  KernelHandle getKernel(ModuleHandle module, const std::string& name) override {
    if (module < 0 || size_t(module) >= modules_.size())
      throw DeviceError(fmt::format("getKernel: no module {}", module));
    const Program& p = *modules_[module];
    auto it = p.functionIndex.find(name);
    if (it == p.functionIndex.end() || !p.functions[it->second].isKernel) {
      std::string names;
      for (auto& f : p.functions)
        if (f.isKernel) names += (names.empty() ? "" : ", ") + f.name;
      throw DeviceError(fmt::format("getKernel: module {} has no kernel '{}' (kernels: {})", module,
                                    name, names));
    }
    kernels_.push_back({module, it->second});
    return KernelHandle(kernels_.size() - 1);
  }

  void launch(KernelHandle kernel, const LaunchConfig& config,
              const std::vector<KernelArg>& args) override {
    if (capturing_) {
      graphs_.back().push_back({kernel, config, args});
      return;
    }
    run(kernel, config, args);
  }

  void synchronize() override {}

  int maxActiveBlocksPerSM(KernelHandle kernel, int blockSize, size_t dynamicSharedBytes) override {
    const Kernel& k = kernelOf(kernel);
    const Program& p = *modules_[k.module];
    return blocksPerSM(p, p.functions[k.function], spec_, blockSize, dynamicSharedBytes);
  }

  void beginCapture() override {
    if (capturing_) throw DeviceError("beginCapture: a capture is already in progress");
    capturing_ = true;
    graphs_.emplace_back();
  }
  GraphHandle endCapture() override {
    if (!capturing_) throw DeviceError("endCapture: no capture in progress");
    capturing_ = false;
    return GraphHandle(graphs_.size() - 1);
  }
  void replay(GraphHandle graph) override {
    for (const RecordedLaunch& l : graphOf(graph))
      run(l.kernel, l.config, l.args);
  }
  void updateGraphKernelArgs(GraphHandle graph, size_t node,
                             const std::vector<KernelArg>& args) override {
    auto& g = graphOf(graph);
    if (node >= g.size())
      throw DeviceError(fmt::format("updateGraphKernelArgs: graph {} has {} nodes, no node {}",
                                    graph, g.size(), node));
    g[node].args = args;
  }
  void updateGraphKernelLaunch(GraphHandle graph, size_t node, const LaunchConfig& config,
                               const std::vector<KernelArg>& args) override {
    auto& g = graphOf(graph);
    if (node >= g.size())
      throw DeviceError(fmt::format("updateGraphKernelLaunch: graph {} has {} nodes, no node {}",
                                    graph, g.size(), node));
    if (config.cooperative != g[node].config.cooperative)
      throw DeviceError(fmt::format("updateGraphKernelLaunch: node {} of graph {} was captured {}",
                                    node, graph,
                                    g[node].config.cooperative ? "cooperative" : "not cooperative"));
    g[node].config = config;
    g[node].args = args;
  }

  std::vector<LaunchCounters> takeCounters() override { return std::exchange(counters_, {}); }

private:
  uint8_t* checked(DevicePtr p, size_t bytes, const char* what) {
    uint8_t* h = memory_.translate(p, bytes);
    if (!h)
      throw DeviceError(
          fmt::format("{}: {} bytes at 0x{:x} are not inside one live allocation ({})", what, bytes,
                      p, memory_.describe(p)));
    return h;
  }
  const Kernel& kernelOf(KernelHandle k) const {
    if (k < 0 || size_t(k) >= kernels_.size())
      throw DeviceError(fmt::format("no kernel handle {}", k));
    return kernels_[k];
  }
  std::vector<RecordedLaunch>& graphOf(GraphHandle g) {
    if (g < 0 || size_t(g) >= graphs_.size() || (capturing_ && size_t(g) == graphs_.size() - 1))
      throw DeviceError(fmt::format("no captured graph {}", g));
    return graphs_[g];
  }

  void run(KernelHandle kernel, const LaunchConfig& config, const std::vector<KernelArg>& args) {
    const Kernel& k = kernelOf(kernel);
    const Program& p = *modules_[k.module];
    const Function& fn = p.functions[k.function];
    if (args.size() != fn.params.size())
      throw DeviceError(fmt::format("kernel '{}' takes {} parameters; launched with {}", fn.name,
                                    fn.params.size(), args.size()));
    LaunchRequest rq;
    rq.program = &p;
    rq.function = k.function;
    rq.config = config;
    rq.spec = &spec_;
    rq.memory = &memory_;
    rq.options = options_;
    rq.params.assign(fn.paramsSize, 0);
    for (size_t i = 0; i < args.size(); ++i) {
      const auto& prm = fn.params[i];
      if (args[i].bytes.size() != prm.size)
        throw DeviceError(
            fmt::format("kernel '{}': argument {} ('{}') has {} bytes; the parameter has {}",
                        fn.name, i, prm.name, args[i].bytes.size(), prm.size));
      std::memcpy(rq.params.data() + prm.offset, args[i].bytes.data(), prm.size);
    }
    counters_.push_back(executeLaunch(rq));
  }

  DeviceSpec spec_;
  ExecOptions options_;
  DeviceMemory memory_;
  std::vector<std::unique_ptr<Program>> modules_;
  std::vector<Kernel> kernels_;
  std::vector<std::vector<RecordedLaunch>> graphs_;
  bool capturing_ = false;
  std::vector<LaunchCounters> counters_;
};

} // namespace

std::unique_ptr<Device> makeSimDevice(const DeviceSpec& spec, const ExecOptions& options) {
  return std::make_unique<SimDevice>(spec, options);
}

std::unique_ptr<Device> makeSimDevice(const DeviceSpec& spec) {
  return makeSimDevice(spec, ExecOptions{});
}

} // namespace weft::sim
