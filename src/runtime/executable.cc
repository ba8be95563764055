#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "compile.h"
#include "runtime/cuda/cublaslt_steps.h"
#include "runtime/shape_binding.h"
#ifdef WEFT_HAVE_CUDA_DEVICE
#include "runtime/cuda/cuda_device.h"
#endif

namespace weft {

namespace {
constexpr size_t kBarrierStateBytes =
    256; // generation + arrival counters, see codegen's grid barrier
/// What a caller's device buffer must start at a multiple of.
constexpr DevicePtr kBufferAlignment = 16;
} // namespace

/// Everything an Executable keeps per program: a specialised program's one binding, or a
/// generic version's current binding, with buffers that grow to the largest binding seen.
struct Executable::Bound {
  std::shared_ptr<const CompiledProgram> program;
  BoundShapes shapes; // the current binding, its buffer sizes and grids
  bool shaped = false;
  ModuleHandle module = -1;
  std::vector<KernelHandle> kernels;   // per CompiledKernel
  std::vector<int64_t> residentBlocks; // per CompiledKernel: the device's (launchConfigFor)
  std::vector<LaunchConfig> configs;   // per CompiledKernel, under the current binding
  std::vector<DevicePtr> owned;        // allocations that live as long as the Bound
  std::vector<DevicePtr> bufferPtr;    // per plan buffer; Input/Output filled per call
  std::vector<size_t> bytes;           // per plan buffer, under the current binding
  std::map<int, DevicePtr> slotPtr;    // memory-planning slots (static plans only)
  std::vector<size_t> capacity;        // per plan buffer (slotted: its slot's), bytes allocated
  std::vector<DevicePtr> barrierState; // per CompiledKernel (0 when unused)
  std::vector<DevicePtr> hoisted;      // the compiler's weights (in `owned` too), uploaded once
  // host-API staging buffers, grown with the bindings
  std::vector<DevicePtr> hostInputs, hostOutputs;
  std::vector<size_t> hostInputCapacity, hostOutputCapacity;
  // graph mode
  bool captured = false;
  GraphHandle graph = -1;
  std::vector<std::vector<KernelArg>> lastArgs;
  std::vector<LaunchConfig> lastConfigs;
  std::vector<double> plainMs, graphMs;
  int autoDecision = -1; // -1 undecided, 0 plain, 1 graph
  // GEMM steps cuBLASLt may run (cuda only, runtime/cuda/cublaslt_steps.h; null: weft's
  // kernels run every step), and what the captured graph's cuBLASLt nodes were captured with.
  std::unique_ptr<runtime::cuda::LibraryGemms> gemms;
  std::string gemmCaptureKey;
  int gemmRecaptures = 0;
};

namespace {
/// What to allocate a program's buffers for: the binding, or for a generic version up to the
/// declared maximum where its guard allows that much (a version for B in [3, 16] never needs
/// more than B = 16).
/// The largest size of each symbol buffers are sized for: setMaxBinding's, else the upper end
/// of the range the graph was compiled for (CompileOptions::symbolRanges), where finite.
Binding largestSizes(const Binding& max, const CompileOptions& options) {
  Binding out = max;
  for (const auto& [symbol, r] : options.symbolRanges)
    if (r.hi != SizeRange{}.hi) out.emplace(symbol, r.hi);
  return out;
}

Binding capacityBinding(const CompiledProgram& program, const Binding& binding,
                        const Binding& max) {
  Binding cap = binding;
  if (!program.generic) return cap;
  for (auto& [symbol, value] : cap) {
    auto m = max.find(symbol);
    if (m == max.end() || m->second <= value) continue;
    // The guard's largest size of the symbol, when every box bounds it.
    int64_t guardHi = program.guard.empty() ? m->second : 0;
    for (const ir::SymbolRanges& box : program.guard) {
      auto r = box.find(symbol);
      guardHi = std::max(guardHi, r == box.end() ? m->second : r->second.hi);
    }
    value = std::max(value, std::min(m->second, guardHi));
  }
  return cap;
}

/// The plan buffer that holds output `output` when it is not an Output buffer (an output that
/// is also an input or an intermediate: no kernel writes the caller's output buffer), else -1.
int heldElsewhere(const fusion::FusionPlan& plan, ir::NodeId output) {
  int buf = plan.bufferOfValue[static_cast<size_t>(output)];
  return buf >= 0 && plan.buffers[static_cast<size_t>(buf)].kind != fusion::Buffer::Kind::Output
             ? buf
             : -1;
}

size_t bytesOf(const ir::Node& n, const Binding& binding) {
  return static_cast<size_t>(ir::checkedProduct(ir::evaluate(n.type.shape, binding))) *
         ir::dtypeBytes(n.type.dtype);
}

bool sameLaunch(const LaunchConfig& a, const LaunchConfig& b) {
  return a.grid.x == b.grid.x && a.grid.y == b.grid.y && a.grid.z == b.grid.z &&
         a.block.x == b.block.x && a.block.y == b.block.y && a.block.z == b.block.z &&
         a.dynamicSharedBytes == b.dynamicSharedBytes && a.cooperative == b.cooperative &&
         a.clusterSize == b.clusterSize && a.clusterRequired == b.clusterRequired;
}
} // namespace

Executable::Executable(std::shared_ptr<CompiledGraph> compiled, Device& device)
    : compiled_(std::move(compiled)), device_(device) {}

Executable::~Executable() {
  for (auto& [program, b] : bound_) {
    std::vector<DevicePtr> all = b->owned;
    for (const auto& [slot, p] : b->slotPtr)
      all.push_back(p);
    for (const auto* v : {&b->hostInputs, &b->hostOutputs})
      all.insert(all.end(), v->begin(), v->end());
    for (size_t i = 0; i < b->bufferPtr.size(); ++i) {
      const fusion::Buffer& buf = b->program->plan.buffers[i];
      bool io = buf.kind == fusion::Buffer::Kind::Input || buf.kind == fusion::Buffer::Kind::Output;
      if (!io && buf.slot < 0 && b->bufferPtr[i]) all.push_back(b->bufferPtr[i]);
    }
    for (DevicePtr p : all) {
      if (!p) continue;
      try {
        device_.free(p);
      } catch (const std::exception& e) {
        spdlog::warn("freeing a device buffer failed: {}", e.what());
      }
    }
  }
  freeWeights();
}

Executable::Bound& Executable::bind(const Binding& binding) {
  // A weight set with symbolic dims must have the sizes this binding gives them: the kernels
  // index it by the binding, and a smaller one would be read past its end.
  const ir::Graph& graph = irGraph(compiled_->graph());
  for (const auto& [index, w] : weights_) {
    const ir::Node& n = graph.node(graph.inputs()[index]);
    for (size_t d = 0; d < n.type.shape.size() && d < w.shape.shape.size(); ++d) {
      const ir::Dim& dim = n.type.shape[d];
      if (dim.isStatic()) continue;
      const int64_t want = dim.evaluate(binding);
      if (want != w.shape.shape[d])
        throw InputError(fmt::format("weight \"{}\": dim {} is {}, but this binding makes {} "
                                     "{}; set the weight again or bind {} to fit it",
                                     n.name, d, w.shape.shape[d], dim.str(), want, dim.str()));
    }
  }
  std::shared_ptr<const CompiledProgram> program = sharedProgram(compiled_->program(binding));
  auto it = bound_.find(program.get());
  if (it == bound_.end()) {
    auto b = std::make_unique<Bound>();
    b->program = program;
    const codegen::CompiledModule& module = program->module;
    auto loaded = modules_.find(program.get());
    if (loaded == modules_.end()) {
#ifdef WEFT_HAVE_CUDA_DEVICE // the cubins beside the compile cache, or none when it is off
      ModuleHandle handle =
          runtime::cuda::loadModule(device_, module.ptx, compiled_->options().cacheDir);
#else
      ModuleHandle handle = device_.loadModule(module.ptx);
#endif
      loaded = modules_.emplace(program.get(), handle).first;
    }
    b->module = loaded->second;
    const size_t buffers = program->plan.buffers.size();
    b->bufferPtr.assign(buffers, 0);
    b->capacity.assign(buffers, 0);
    for (const codegen::CompiledKernel& k : module.kernels) {
      b->kernels.push_back(device_.getKernel(b->module, k.name));
      // The blocks the device keeps resident at once: whole clusters where the kernel's rows
      // are shared by clusters (its grid no larger), else as many as the compiled kernel keeps
      // on every SM where it fills them (LaunchPlan::fillSMs).
      int64_t resident = 0;
      if (k.launch.clusterRequired && k.launch.clusterSize > 1)
        resident = int64_t(k.launch.clusterSize) *
                   device_.maxActiveClusters(b->kernels.back(), k.launch.blockSize,
                                             k.dynamicSharedBytes, k.launch.clusterSize);
      else if (k.launch.fillSMs)
        resident = int64_t(device_.spec().smCount) *
                   device_.maxActiveBlocksPerSM(b->kernels.back(), k.launch.blockSize,
                                                k.dynamicSharedBytes);
      b->residentBlocks.push_back(resident);
      bool needsBarrier =
          std::any_of(k.params.begin(), k.params.end(), [](const codegen::KernelParam& p) {
            return p.kind == codegen::KernelParam::Kind::BarrierState;
          });
      DevicePtr state = 0;
      if (needsBarrier) { // the barrier leaves its counters as it found them: one per kernel
        state = device_.allocate(kBarrierStateBytes);
        device_.memset(state, 0, kBarrierStateBytes);
        b->owned.push_back(state);
      }
      b->barrierState.push_back(state);
    }
#ifdef WEFT_HAVE_CUDA_DEVICE
    b->gemms = runtime::cuda::LibraryGemms::make(device_, program->plan, module.kernels,
                                                 compiled_->options().tf32);
#endif
    // The constants the compiler made weights: uploaded once, read in place by every run. A
    // generic compile's versions share them: the first version bound uploads (and owns) them.
    for (const auto& [other, bound] : bound_)
      if (program->hoistedWeights && other->hoistedWeights == program->hoistedWeights &&
          bound->hoisted.size() == program->hoistedWeights->size()) {
        b->hoisted = bound->hoisted;
        break;
      }
    if (program->hoistedWeights && b->hoisted.empty())
      for (const HostTensor& w : *program->hoistedWeights) {
        DevicePtr p = device_.allocate(std::max<size_t>(w.byteSize(), 1));
        b->owned.push_back(p);
        if (w.byteSize()) device_.copyToDevice(p, w.bytes.data(), w.byteSize());
        b->hoisted.push_back(p);
        ++stats_.weightUploads;
      }
    it = bound_.emplace(program.get(), std::move(b)).first;
  }
  Bound& b = *it->second;
  if (!b.shaped || b.shapes.binding != binding) {
    if (b.shaped) ++stats_.reshapes;
    reshape(b, binding);
  }
  return b;
}

DevicePtr Executable::regrow(DevicePtr old, size_t& capacity, size_t bytes) {
  if (old && bytes <= capacity) return old;
  if (old) {
    device_.free(old);
    ++stats_.reallocations;
  }
  capacity = std::max<size_t>(bytes, 1);
  return device_.allocate(capacity);
}

void Executable::reshape(Bound& b, const Binding& binding) {
  const CompiledProgram& program = *b.program;
  const fusion::FusionPlan& plan = program.plan;
  b.shapes = bindShapes(program, binding, b.residentBlocks);
  b.bytes = b.shapes.bufferBytes;
  b.configs = b.shapes.launches;
  b.shaped = true;
  Binding cap = capacityBinding(program, binding, largestSizes(maxBinding_, compiled_->options()));
  std::vector<size_t> want = cap == binding ? b.bytes : bindShapes(program, cap).bufferBytes;
  // Memory-planning slots (static plans): one allocation per slot, sized for its largest
  // buffer; every other intermediate its own. Inputs and outputs are bound per call.
  std::map<int, size_t> slotBytes;
  for (size_t i = 0; i < plan.buffers.size(); ++i)
    if (plan.buffers[i].slot >= 0)
      slotBytes[plan.buffers[i].slot] = std::max(slotBytes[plan.buffers[i].slot], want[i]);
  std::map<int, size_t> slotCapacity;
  for (size_t i = 0; i < plan.buffers.size(); ++i)
    if (plan.buffers[i].slot >= 0) slotCapacity[plan.buffers[i].slot] = b.capacity[i];
  for (auto [slot, bytes] : slotBytes) {
    size_t& capacity = slotCapacity[slot];
    b.slotPtr[slot] = regrow(b.slotPtr[slot], capacity, bytes);
  }
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const fusion::Buffer& buf = plan.buffers[i];
    if (buf.kind == fusion::Buffer::Kind::Input || buf.kind == fusion::Buffer::Kind::Output)
      continue;
    if (buf.slot >= 0) {
      b.bufferPtr[i] = b.slotPtr[buf.slot];
      b.capacity[i] = slotCapacity[buf.slot];
    } else {
      b.bufferPtr[i] = regrow(b.bufferPtr[i], b.capacity[i], want[i]);
    }
  }
  spdlog::debug("bound {} buffer(s) and {} kernel(s)", plan.buffers.size(),
                program.module.kernels.size());
}

std::vector<std::vector<KernelArg>> Executable::kernelArgs(Bound& b,
                                                           const std::vector<DevicePtr>& inputs,
                                                           const std::vector<DevicePtr>& outputs) {
  const fusion::FusionPlan& plan = b.program->plan;
  const ir::Graph& g = plan.graph;
  if (inputs.size() + b.hoisted.size() != g.inputs().size())
    throw InputError(fmt::format("the graph takes {} input(s) but {} were given",
                                 g.inputs().size() - b.hoisted.size(), inputs.size()));
  if (outputs.size() != g.outputs().size())
    throw InputError(fmt::format("the graph has {} output(s) but {} buffers were given",
                                 g.outputs().size(), outputs.size()));
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    int buf = plan.bufferOfValue[static_cast<size_t>(g.inputs()[i])];
    if (buf >= 0)
      b.bufferPtr[static_cast<size_t>(buf)] =
          i < inputs.size() ? inputs[i] : b.hoisted[i - inputs.size()];
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
  const Binding& binding = b.shapes.binding;
  auto launch = [&](size_t k) {
    auto weft = [&] { device_.launch(b.kernels[k], b.configs[k], args[k]); };
    b.gemms ? b.gemms->launch(k, weft, b.bufferPtr, binding) : weft();
  };

  bool useGraph =
      graphMode_ == GraphMode::On || (graphMode_ == GraphMode::Auto && b.autoDecision == 1);
  bool measuring = graphMode_ == GraphMode::Auto && b.autoDecision < 0;
  constexpr size_t kTrials = 3;
  if (measuring) useGraph = b.plainMs.size() >= kTrials; // plain trials first, then graph trials
  if (b.gemms && !b.gemms->decided(binding)) // GEMM providers are timed on a plain run
    useGraph = measuring = false;
  // cuBLASLt's nodes cannot be updated in place: a graph whose were captured for other
  // pointers or shapes is captured again, once; when they change again, weft's kernels (whose
  // nodes are updated in place) run the GEMMs from then on
  if (useGraph && b.captured && b.gemms &&
      b.gemms->captureKey(b.bufferPtr, binding) != b.gemmCaptureKey) {
    b.captured = false;
    if (++b.gemmRecaptures > 1) {
      b.gemms.reset();
      spdlog::info("graph mode: the GEMMs' pointers or shapes keep changing, which cuBLASLt's "
                   "captured nodes cannot follow; weft's kernels run them from now on");
    }
  }
  // A captured node keeps its cluster size when its launch is updated (CUDA graphs): a binding
  // that changes one is captured again.
  if (useGraph && b.captured)
    for (size_t k = 0; k < kernels.size(); ++k)
      if (b.configs[k].clusterSize != b.lastConfigs[k].clusterSize) b.captured = false;
  auto t0 = std::chrono::steady_clock::now();

  if (!useGraph) {
    for (size_t k = 0; k < kernels.size(); ++k)
      launch(k);
    ++stats_.plainRuns;
  } else {
    if (!b.captured) {
      device_.beginCapture();
      for (size_t k = 0; k < kernels.size(); ++k)
        launch(k);
      b.graph = device_.endCapture();
      b.captured = true;
      if (b.gemms) b.gemmCaptureKey = b.gemms->captureKey(b.bufferPtr, binding);
      b.lastArgs = args;
      b.lastConfigs = b.configs;
      ++stats_.captures;
    } else {
      for (size_t k = 0; k < kernels.size(); ++k) {
        if (b.gemms && b.gemms->serves(k, binding)) continue; // as captured (captureKey)
        bool sameArgs =
            args[k].size() == b.lastArgs[k].size() &&
            std::equal(args[k].begin(), args[k].end(), b.lastArgs[k].begin(),
                       [](const KernelArg& x, const KernelArg& y) { return x.bytes == y.bytes; });
        if (!sameLaunch(b.configs[k], b.lastConfigs[k])) { // a new binding of a generic version
          device_.updateGraphKernelLaunch(b.graph, k, b.configs[k], args[k]);
          b.lastConfigs[k] = b.configs[k];
          ++stats_.launchUpdates;
        } else if (!sameArgs) {
          device_.updateGraphKernelArgs(b.graph, k, args[k]);
          ++stats_.argUpdates;
        }
        b.lastArgs[k] = args[k];
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
  // Kernels move up to 16 bytes per access (fusion/thread_mapping.h, vectorWidthFor), at
  // offsets the plan knows to be multiples of 16 from the buffer's start: a buffer that does not
  // start at a multiple of 16 would fault on the GPU, or read the wrong elements.
  const ir::Graph& g = irGraph(compiled_->graph());
  auto checkAligned = [](const char* what, const std::string& name, DevicePtr p) {
    if (p % kBufferAlignment != 0)
      throw InputError(fmt::format("{} \"{}\": device address 0x{:x} is not a multiple of {} "
                                   "bytes; weft's kernels need {}-byte aligned buffers",
                                   what, name, p, kBufferAlignment, kBufferAlignment));
  };
  const std::vector<std::string> names = callInputNames();
  for (size_t i = 0; i < inputs.size() && i < names.size(); ++i)
    checkAligned("input", names[i], inputs[i]);
  for (size_t i = 0; i < outputs.size() && i < g.outputs().size(); ++i)
    checkAligned("output", g.node(g.outputs()[i]).name, outputs[i]);
  Bound& b = bind(full);
  launchAll(b, withWeights(inputs), outputs);
  // An output that is also an input (or an intermediate) has no Output buffer of its own: no
  // kernel writes the caller's, so its value is copied there from the buffer that holds it (the
  // host-tensor run reads it from that buffer). Through the host: Device has no device-to-device
  // copy, and such outputs pass a value through.
  const fusion::FusionPlan& plan = b.program->plan;
  const ir::Graph& pg = plan.graph;
  for (size_t i = 0; i < outputs.size() && i < pg.outputs().size(); ++i) {
    int buf = heldElsewhere(plan, pg.outputs()[i]);
    if (buf < 0) continue;
    DevicePtr src = b.bufferPtr[static_cast<size_t>(buf)];
    size_t bytes = bytesOf(pg.node(pg.outputs()[i]), b.shapes.binding);
    if (src == outputs[i] || bytes == 0) continue;
    std::vector<uint8_t> staged(bytes);
    device_.copyToHost(staged.data(), src, bytes);
    device_.copyToDevice(outputs[i], staged.data(), bytes);
  }
}

Executable::Bound& Executable::stageHostInputs(const std::vector<HostTensor>& inputs,
                                               const Binding& binding) {
  // `inputs` are the call's: the graph's inputs but the weights set by setWeights.
  Binding full = inferBinding(compiled_->graph(), inputShapes(inputs), binding);
  Bound& b = bind(full);
  const ir::Graph& g = irGraph(compiled_->graph());
  std::vector<ir::NodeId> callInputs;
  for (size_t i = 0; i < g.inputs().size(); ++i)
    if (!weights_.count(i)) callInputs.push_back(g.inputs()[i]);
  // Staging buffers grow with the bindings a generic version serves (sized for the declared
  // maximum, as the plan's buffers are).
  Binding cap = capacityBinding(*b.program, full, largestSizes(maxBinding_, compiled_->options()));
  for (size_t i = inputs.size(); i < b.hostInputs.size(); ++i) // weights set since the last run
    if (b.hostInputs[i]) device_.free(b.hostInputs[i]);
  b.hostInputs.resize(inputs.size(), 0);
  b.hostInputCapacity.resize(inputs.size(), 0);
  for (size_t i = 0; i < inputs.size(); ++i)
    b.hostInputs[i] = regrow(b.hostInputs[i], b.hostInputCapacity[i],
                             std::max(inputs[i].byteSize(), bytesOf(g.node(callInputs[i]), cap)));
  b.hostOutputs.resize(g.outputs().size(), 0);
  b.hostOutputCapacity.resize(g.outputs().size(), 0);
  for (size_t i = 0; i < g.outputs().size(); ++i)
    b.hostOutputs[i] = regrow(b.hostOutputs[i], b.hostOutputCapacity[i],
                              bytesOf(g.node(g.outputs()[i]), cap));
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
  launchAll(b, withWeights(b.hostInputs), b.hostOutputs);

  std::vector<HostTensor> out;
  const fusion::FusionPlan& plan = b.program->plan;
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ir::Node& n = g.node(g.outputs()[i]);
    HostTensor t(n.type.dtype, ir::evaluate(n.type.shape, full));
    int buf = heldElsewhere(plan, n.id);
    DevicePtr src = buf >= 0 ? b.bufferPtr[static_cast<size_t>(buf)] : b.hostOutputs[i];
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
  const std::vector<DevicePtr> inputPtrs = withWeights(b.hostInputs);
  launchAll(b, inputPtrs, b.hostOutputs); // warm-up: first launches load code, graph mode captures
  device_.takeCounters();

  Timing t;
  t.deviceClock = true;
  std::vector<std::vector<KernelArg>> args = kernelArgs(b, inputPtrs, b.hostOutputs);
  const auto& kernels = b.program->module.kernels;
  std::vector<std::vector<double>> perKernel(kernels.size());
  std::vector<double> total;
  auto launch = [&](size_t k) { // as launchAll does: weft's kernel or the GEMM provider chosen
    auto weft = [&] { device_.launch(b.kernels[k], b.configs[k], args[k]); };
    b.gemms ? b.gemms->launch(k, weft, b.bufferPtr, b.shapes.binding) : weft();
  };
  for (int r = 0; r < repeats; ++r) {
    for (size_t k = 0; k < kernels.size(); ++k)
      perKernel[k].push_back(timeRegion([&] { launch(k); }, &t.deviceClock));
    total.push_back(timeRegion([&] { launchAll(b, inputPtrs, b.hostOutputs); }, &t.deviceClock));
  }
  device_.takeCounters(); // the timed launches' counters are not the caller's
  for (size_t k = 0; k < kernels.size(); ++k)
    t.kernels.push_back({b.gemms ? b.gemms->timedName(k, kernels[k].name, b.shapes.binding)
                                 : kernels[k].name,
                         median(perKernel[k])});
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
