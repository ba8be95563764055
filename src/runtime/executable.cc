#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "compile.h"
#include "runtime/shape_binding.h"

namespace weft {

namespace {
constexpr size_t kBarrierStateBytes =
    256; // generation + arrival counters, see codegen's grid barrier
} // namespace

/// Everything an Executable keeps per shape binding.
struct Executable::Bound {
  std::shared_ptr<const CompiledProgram> program;
  BoundShapes shapes; // the call's binding, its buffer sizes and grids
  ModuleHandle module = -1;
  std::vector<KernelHandle> kernels;   // per CompiledKernel
  std::vector<LaunchConfig> configs;   // per CompiledKernel
  std::vector<DevicePtr> owned;        // every allocation made for this binding
  std::vector<DevicePtr> bufferPtr;    // per plan buffer; Input/Output filled per call
  std::vector<size_t> bytes;           // per plan buffer
  std::vector<DevicePtr> barrierState; // per CompiledKernel (0 when unused)
  // host-API staging buffers, allocated on first host run
  std::vector<DevicePtr> hostInputs, hostOutputs;
  // graph mode
  bool captured = false;
  GraphHandle graph = -1;
  std::vector<std::vector<KernelArg>> lastArgs;
  std::vector<double> plainMs, graphMs;
  int autoDecision = -1; // -1 undecided, 0 plain, 1 graph
};

Executable::Executable(std::shared_ptr<CompiledGraph> compiled, Device& device)
    : compiled_(std::move(compiled)), device_(device) {}

Executable::~Executable() {
  for (auto& [binding, b] : bound_)
    for (DevicePtr p : b->owned) {
      try {
        device_.free(p);
      } catch (const std::exception& e) {
        spdlog::warn("freeing a device buffer failed: {}", e.what());
      }
    }
}

Executable::Bound& Executable::bind(const Binding& binding) {
  auto it = bound_.find(binding);
  if (it != bound_.end()) return *it->second;
  auto b = std::make_unique<Bound>();
  b->program = sharedProgram(compiled_->program(binding));
  const fusion::FusionPlan& plan = b->program->plan;
  const codegen::CompiledModule& module = b->program->module;
  // A generic program serves every binding: its module is loaded once per device.
  auto loaded = modules_.find(b->program.get());
  if (loaded == modules_.end())
    loaded = modules_.emplace(b->program.get(), device_.loadModule(module.ptx)).first;
  b->module = loaded->second;
  b->shapes = bindShapes(*b->program, binding);
  // Buffers: one allocation per memory-planning slot (sized for its largest buffer), one per
  // unslotted intermediate; inputs and outputs are bound per call.
  std::map<int, size_t> slotBytes;
  b->bytes = b->shapes.bufferBytes;
  b->bufferPtr.assign(plan.buffers.size(), 0);
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    if (plan.buffers[i].slot >= 0)
      slotBytes[plan.buffers[i].slot] = std::max(slotBytes[plan.buffers[i].slot], b->bytes[i]);
  }
  std::map<int, DevicePtr> slotPtr;
  for (auto [slot, bytes] : slotBytes) {
    slotPtr[slot] = device_.allocate(bytes);
    b->owned.push_back(slotPtr[slot]);
  }
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const fusion::Buffer& buf = plan.buffers[i];
    if (buf.kind == fusion::Buffer::Kind::Input || buf.kind == fusion::Buffer::Kind::Output)
      continue;
    if (buf.slot >= 0) {
      b->bufferPtr[i] = slotPtr[buf.slot];
    } else {
      b->bufferPtr[i] = device_.allocate(b->bytes[i]);
      b->owned.push_back(b->bufferPtr[i]);
    }
  }
  for (const codegen::CompiledKernel& k : module.kernels) {
    b->kernels.push_back(device_.getKernel(b->module, k.name));
    b->configs.push_back(b->shapes.launches[b->configs.size()]);
    bool needsBarrier =
        std::any_of(k.params.begin(), k.params.end(), [](const codegen::KernelParam& p) {
          return p.kind == codegen::KernelParam::Kind::BarrierState;
        });
    DevicePtr state = 0;
    if (needsBarrier) {
      state = device_.allocate(kBarrierStateBytes);
      device_.memset(state, 0, kBarrierStateBytes);
      b->owned.push_back(state);
    }
    b->barrierState.push_back(state);
  }
  spdlog::debug("bound {} buffer(s) and {} kernel(s)", plan.buffers.size(), module.kernels.size());
  return *bound_.emplace(binding, std::move(b)).first->second;
}

std::vector<std::vector<KernelArg>> Executable::kernelArgs(Bound& b,
                                                           const std::vector<DevicePtr>& inputs,
                                                           const std::vector<DevicePtr>& outputs) {
  const fusion::FusionPlan& plan = b.program->plan;
  const ir::Graph& g = plan.graph;
  if (inputs.size() != g.inputs().size())
    throw InputError(fmt::format("the graph takes {} input(s) but {} were given", g.inputs().size(),
                                 inputs.size()));
  if (outputs.size() != g.outputs().size())
    throw InputError(fmt::format("the graph has {} output(s) but {} buffers were given",
                                 g.outputs().size(), outputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    int buf = plan.bufferOfValue[static_cast<size_t>(g.inputs()[i])];
    if (buf >= 0) b.bufferPtr[static_cast<size_t>(buf)] = inputs[i];
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    int buf = plan.bufferOfValue[static_cast<size_t>(g.outputs()[i])];
    if (buf >= 0 && plan.buffers[static_cast<size_t>(buf)].kind == fusion::Buffer::Kind::Output)
      b.bufferPtr[static_cast<size_t>(buf)] = outputs[i];
  }

  const auto& kernels = b.program->module.kernels;
  std::vector<std::vector<KernelArg>> args(kernels.size());
  for (size_t k = 0; k < kernels.size(); ++k) {
    for (const codegen::KernelParam& p : kernels[k].params) {
      switch (p.kind) {
      case codegen::KernelParam::Kind::Buffer:
        args[k].push_back(KernelArg::pointer(b.bufferPtr.at(static_cast<size_t>(p.buffer))));
        break;
      case codegen::KernelParam::Kind::Symbol:
        args[k].push_back(KernelArg::of<int64_t>(b.shapes.binding.at(p.symbol)));
        break;
      case codegen::KernelParam::Kind::BarrierState:
        args[k].push_back(KernelArg::pointer(b.barrierState[k]));
        break;
      }
    }
  }
  return args;
}

void Executable::launchAll(Bound& b, const std::vector<DevicePtr>& inputs,
                           const std::vector<DevicePtr>& outputs) {
  const auto& kernels = b.program->module.kernels;
  std::vector<std::vector<KernelArg>> args = kernelArgs(b, inputs, outputs);

  bool useGraph =
      graphMode_ == GraphMode::On || (graphMode_ == GraphMode::Auto && b.autoDecision == 1);
  bool measuring = graphMode_ == GraphMode::Auto && b.autoDecision < 0;
  constexpr size_t kTrials = 3;
  if (measuring) useGraph = b.plainMs.size() >= kTrials; // plain trials first, then graph trials
  auto t0 = std::chrono::steady_clock::now();

  if (!useGraph) {
    for (size_t k = 0; k < kernels.size(); ++k)
      device_.launch(b.kernels[k], b.configs[k], args[k]);
    ++stats_.plainRuns;
  } else {
    if (!b.captured) {
      device_.beginCapture();
      for (size_t k = 0; k < kernels.size(); ++k)
        device_.launch(b.kernels[k], b.configs[k], args[k]);
      b.graph = device_.endCapture();
      b.captured = true;
      b.lastArgs = args;
      ++stats_.captures;
    } else {
      for (size_t k = 0; k < kernels.size(); ++k) {
        bool same =
            args[k].size() == b.lastArgs[k].size() &&
            std::equal(args[k].begin(), args[k].end(), b.lastArgs[k].begin(),
                       [](const KernelArg& x, const KernelArg& y) { return x.bytes == y.bytes; });
        if (same) continue;
        device_.updateGraphKernelArgs(b.graph, k, args[k]);
        b.lastArgs[k] = args[k];
        ++stats_.argUpdates;
      }
    }
    device_.replay(b.graph);
    ++stats_.replays;
  }
  device_.synchronize();

  if (measuring) {
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    (useGraph ? b.graphMs : b.plainMs).push_back(ms);
    if (b.graphMs.size() >= kTrials) {
      // the first graph run includes the capture; judge on the replays after it
      std::vector<double> replays(b.graphMs.begin() + 1, b.graphMs.end());
      b.autoDecision = graphModeWins(b.plainMs, replays) ? 1 : 0;
      spdlog::info("graph mode {}: plain {:.3f} ms vs graph {:.3f} ms (medians)",
                   b.autoDecision ? "on" : "off", b.plainMs[b.plainMs.size() / 2],
                   replays[replays.size() / 2]);
    }
  }
}

void Executable::run(const std::vector<DevicePtr>& inputs, const std::vector<DevicePtr>& outputs,
                     const Binding& binding) {
  Binding full = binding;
  for (const auto& s : compiled_->graph().symbols())
    if (!full.count(s))
      throw InputError(fmt::format(
          "symbol \"{}\" is not bound; device-buffer runs need an explicit binding", s));
  launchAll(bind(full), inputs, outputs);
}

Executable::Bound& Executable::stageHostInputs(const std::vector<HostTensor>& inputs,
                                               const Binding& binding) {
  Binding full = inferBinding(compiled_->graph(), inputs, binding);
  Bound& b = bind(full);
  const ir::Graph& g = b.program->plan.graph;
  if (b.hostInputs.empty() && !inputs.empty()) {
    for (const HostTensor& t : inputs) {
      b.hostInputs.push_back(device_.allocate(std::max<size_t>(t.byteSize(), 1)));
      b.owned.push_back(b.hostInputs.back());
    }
  }
  if (b.hostOutputs.empty()) {
    for (ir::NodeId o : g.outputs()) {
      const ir::Node& n = g.node(o);
      size_t bytes = static_cast<size_t>(ir::checkedProduct(ir::evaluate(n.type.shape, full))) *
                     ir::dtypeBytes(n.type.dtype);
      b.hostOutputs.push_back(device_.allocate(std::max<size_t>(bytes, 1)));
      b.owned.push_back(b.hostOutputs.back());
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].byteSize())
      device_.copyToDevice(b.hostInputs[i], inputs[i].bytes.data(), inputs[i].byteSize());
    ++stats_.inputCopies;
  }
  return b;
}

std::vector<HostTensor> Executable::run(const std::vector<HostTensor>& inputs,
                                        const Binding& binding) {
  Bound& b = stageHostInputs(inputs, binding);
  const Binding& full = b.shapes.binding;
  const ir::Graph& g = b.program->plan.graph;
  launchAll(b, b.hostInputs, b.hostOutputs);

  std::vector<HostTensor> out;
  const fusion::FusionPlan& plan = b.program->plan;
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ir::Node& n = g.node(g.outputs()[i]);
    HostTensor t(n.type.dtype, ir::evaluate(n.type.shape, full));
    int buf = plan.bufferOfValue[static_cast<size_t>(n.id)];
    DevicePtr src = b.hostOutputs[i];
    if (buf >= 0 && plan.buffers[static_cast<size_t>(buf)].kind != fusion::Buffer::Kind::Output)
      src = b.bufferPtr[static_cast<size_t>(
          buf)]; // an output that is also an input or an intermediate
    if (t.byteSize()) device_.copyToHost(t.bytes.data(), src, t.byteSize());
    out.push_back(std::move(t));
  }
  return out;
}

namespace {
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
} // namespace

double Executable::timeRegion(const std::function<void()>& work, bool* deviceClock) {
  auto t0 = std::chrono::steady_clock::now();
  device_.startTimer();
  work();
  std::optional<double> ms = device_.stopTimer();
  if (ms) return *ms;
  device_.synchronize();
  *deviceClock = false;
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

Executable::Timing Executable::time(const std::vector<HostTensor>& inputs, int repeats,
                                    const Binding& binding) {
  if (repeats < 1)
    throw InputError(fmt::format("the number of timed runs must be at least 1 (got {})", repeats));
  Bound& b = stageHostInputs(inputs, binding);
  launchAll(b, b.hostInputs,
            b.hostOutputs); // warm-up: first launches load code, graph mode captures
  device_.takeCounters();

  Timing t;
  t.deviceClock = true;
  std::vector<std::vector<KernelArg>> args = kernelArgs(b, b.hostInputs, b.hostOutputs);
  const auto& kernels = b.program->module.kernels;
  std::vector<std::vector<double>> perKernel(kernels.size());
  std::vector<double> total;
  for (int r = 0; r < repeats; ++r) {
    for (size_t k = 0; k < kernels.size(); ++k)
      perKernel[k].push_back(
          timeRegion([&] { device_.launch(b.kernels[k], b.configs[k], args[k]); }, &t.deviceClock));
    total.push_back(timeRegion([&] { launchAll(b, b.hostInputs, b.hostOutputs); }, &t.deviceClock));
  }
  device_.takeCounters(); // the timed launches' counters are not the caller's
  for (size_t k = 0; k < kernels.size(); ++k)
    t.kernels.push_back({kernels[k].name, median(perKernel[k])});
  t.totalMs = median(total);
  t.runs = repeats;
  return t;
}

Program Executable::programFor(const Binding& binding) { return compiled_->program(binding); }

bool graphModeWins(const std::vector<double>& plainMs, const std::vector<double>& graphMs,
                   double margin) {
  if (plainMs.empty() || graphMs.empty()) return false;
  return median(graphMs) < median(plainMs) * (1.0 - margin);
}

} // namespace weft
