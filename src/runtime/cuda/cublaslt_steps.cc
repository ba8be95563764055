#include "runtime/cuda/cublaslt_steps.h"

#ifdef WEFT_HAVE_CUDA_TOOLKIT

#include <map>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "runtime/cuda/cublaslt_api.h"
#include "runtime/cuda/cublaslt_choice.h"
#include "runtime/cuda/cublaslt_gemm.h"
#include "runtime/cuda/cuda_device_impl.h"
#include "weft/error.h"

namespace weft::runtime::cuda {
namespace {

/// cuBLASLt's workspace, shared by a program's steps (they run one after another on one
/// stream): what NVIDIA suggests for Hopper.
constexpr size_t kWorkspaceBytes = size_t(32) << 20;
/// Timed runs of each provider per choice, after one warm-up run of each.
constexpr int kTimedRuns = 5;

/// One step under one binding: its cuBLASLt call, descriptors and algorithm, and its choice.
struct Prepared {
  lt::Described described;
  lt::MatmulDesc desc = nullptr;
  lt::MatrixLayout a = nullptr, b = nullptr, d = nullptr;
  std::optional<lt::MatmulAlgo> algo;
  std::string noAlgo; // why cuBLASLt has none, when it has none
  std::optional<lt::ProviderChoice> choice;
};

struct Step {
  size_t kernel = 0;
  const fusion::LibraryCall* call = nullptr;
  std::string name;
  std::map<Binding, std::unique_ptr<Prepared>> at;
};

class CublasLtGemms final : public LibraryGemms {
public:
  CublasLtGemms(CudaDevice& device, std::shared_ptr<const lt::Api> api,
                const fusion::FusionPlan& plan, std::vector<Step> steps, lt::ProviderMode mode,
                bool tf32)
      : device_(device), api_(std::move(api)), plan_(plan), steps_(std::move(steps)),
        mode_(mode), tf32_(tf32) {
    device_.synchronize(); // makes the device's context current for the handle
    lt::check(*api_, api_->cublasLtCreate(&handle_), "cublasLtCreate");
  }

  ~CublasLtGemms() override {
    const lt::Api& a = *api_;
    for (Step& s : steps_)
      for (auto& [binding, p] : s.at) {
        if (p->a) a.cublasLtMatrixLayoutDestroy(p->a);
        if (p->b) a.cublasLtMatrixLayoutDestroy(p->b);
        if (p->d) a.cublasLtMatrixLayoutDestroy(p->d);
        if (p->desc) a.cublasLtMatmulDescDestroy(p->desc);
      }
    if (handle_) a.cublasLtDestroy(handle_);
    try {
      if (workspace_) device_.free(workspace_);
    } catch (const std::exception& e) {
      spdlog::warn("cuBLASLt workspace: {}", e.what());
    }
  }

  void launch(size_t kernel, const std::function<void()>& weft,
              const std::vector<DevicePtr>& buffers, const Binding& binding) override {
    Step* s = stepOf(kernel);
    if (!s) return weft();
    if (device_.capturing()) { // nothing is prepared or timed in a capture
      if (serves(kernel, binding))
        run(*s, *s->at.at(binding), buffers);
      else
        weft();
      return;
    }
    Prepared& p = prepared(*s, binding, buffers);
    if (!p.choice) choose(*s, p, weft, buffers);
    if (p.choice->library)
      run(*s, p, buffers);
    else
      weft();
  }

  bool decided(const Binding& binding) const override {
    for (const Step& s : steps_) {
      auto it = s.at.find(binding);
      if (it == s.at.end() || !it->second->choice) return false;
    }
    return true;
  }

  bool serves(size_t kernel, const Binding& binding) const override {
    const Prepared* p = preparedAt(kernel, binding);
    return p && p->choice && p->choice->library;
  }

  std::string captureKey(const std::vector<DevicePtr>& buffers,
                         const Binding& binding) const override {
    std::string key; // "" when cuBLASLt serves no step: the graph is weft's kernels alone
    for (const Step& s : steps_)
      if (serves(s.kernel, binding)) {
        const lt::Matmul& m = *s.at.at(binding)->described.matmul;
        key += fmt::format("{}:", s.kernel);
        for (ir::NodeId v : {m.aValue, m.bValue, m.dValue, m.biasValue})
          key += fmt::format("{:x},", v < 0 ? 0 : pointerOf(v, buffers));
      }
    if (key.empty()) return key;
    for (const auto& [symbol, value] : binding) // the calls' shapes
      key += fmt::format("{}={};", symbol, value);
    return key;
  }

  std::string timedName(size_t kernel, const std::string& name,
                         const Binding& binding) const override {
    const Prepared* p = preparedAt(kernel, binding);
    if (!p || !p->choice) return name;
    std::string choice = p->choice->str();
    // the choice's text without its "name: "
    return fmt::format("{} [{}]", name, choice.substr(choice.find(": ") + 2));
  }

private:
  Step* stepOf(size_t kernel) {
    for (Step& s : steps_)
      if (s.kernel == kernel) return &s;
    return nullptr;
  }
  const Prepared* preparedAt(size_t kernel, const Binding& binding) const {
    for (const Step& s : steps_)
      if (s.kernel == kernel) {
        auto it = s.at.find(binding);
        return it == s.at.end() ? nullptr : it->second.get();
      }
    return nullptr;
  }

  DevicePtr pointerOf(ir::NodeId value, const std::vector<DevicePtr>& buffers) const {
    int buffer = plan_.bufferOfValue.at(size_t(value));
    if (buffer < 0) throw DeviceError(fmt::format("cuBLASLt: value %{} has no buffer", value));
    return buffers.at(size_t(buffer));
  }

  lt::MatrixLayout layout(const lt::Layout& l) {
    const lt::Api& a = *api_;
    lt::MatrixLayout m = nullptr;
    lt::check(a, a.cublasLtMatrixLayoutCreate(&m, l.type, l.rows, l.cols, l.ld),
              "cublasLtMatrixLayoutCreate");
    lt::check(a, a.cublasLtMatrixLayoutSetAttribute(m, lt::kLayoutBatchCount, &l.batchCount,
                                                    sizeof l.batchCount),
              "cublasLtMatrixLayoutSetAttribute");
    lt::check(a, a.cublasLtMatrixLayoutSetAttribute(m, lt::kLayoutStridedBatchOffset,
                                                    &l.batchStride, sizeof l.batchStride),
              "cublasLtMatrixLayoutSetAttribute");
    return m;
  }

  void setBias(const Prepared& p, const std::vector<DevicePtr>& buffers) {
    const lt::Matmul& m = *p.described.matmul;
    if (m.epilogue != lt::kEpilogueBias) return;
    const void* bias = reinterpret_cast<const void*>(uintptr_t(pointerOf(m.biasValue, buffers)));
    lt::check(*api_, api_->cublasLtMatmulDescSetAttribute(p.desc, lt::kDescBiasPointer, &bias,
                                                          sizeof bias),
              "cublasLtMatmulDescSetAttribute");
  }

  /// The step's call under `binding`: descriptors and the heuristic's best algorithm, made
  /// once per binding (before any capture: the workspace is allocated here).
  Prepared& prepared(Step& s, const Binding& binding, const std::vector<DevicePtr>& buffers) {
    std::unique_ptr<Prepared>& slot = s.at[binding];
    if (slot) return *slot;
    slot = std::make_unique<Prepared>();
    Prepared& p = *slot;
    p.described = lt::describe(plan_, *s.call, binding, tf32_);
    if (!p.described.matmul) return p;
    const lt::Matmul& m = *p.described.matmul;
    const lt::Api& a = *api_;
    for (ir::NodeId v : {m.aValue, m.bValue, m.dValue, m.biasValue})
      if (v >= 0 && plan_.bufferOfValue.at(size_t(v)) < 0) {
        p.noAlgo = fmt::format("%{} is in no buffer (a constant compiled into the code)",
                               plan_.graph.node(v).name);
        return p;
      }
    try {
      lt::check(a, a.cublasLtMatmulDescCreate(&p.desc, m.computeType, m.scaleType),
                "cublasLtMatmulDescCreate");
      auto set = [&](int32_t attribute, const void* value, size_t bytes) {
        lt::check(a, a.cublasLtMatmulDescSetAttribute(p.desc, attribute, value, bytes),
                  "cublasLtMatmulDescSetAttribute");
      };
      set(lt::kDescTransA, &m.transa, sizeof m.transa);
      set(lt::kDescTransB, &m.transb, sizeof m.transb);
      set(lt::kDescEpilogue, &m.epilogue, sizeof m.epilogue);
      if (m.epilogue == lt::kEpilogueBias) {
        set(lt::kDescBiasDataType, &m.biasType, sizeof m.biasType);
        int64_t biasStride = 0; // one bias for every batch
        set(lt::kDescBiasBatchStride, &biasStride, sizeof biasStride);
        setBias(p, buffers); // its alignment is part of the heuristic's question
      }
      p.a = layout(m.a);
      p.b = layout(m.b);
      p.d = layout(m.d);
      if (!workspace_) workspace_ = device_.allocate(kWorkspaceBytes);
      lt::MatmulPreference pref = nullptr;
      lt::check(a, a.cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
      size_t maxWorkspace = kWorkspaceBytes;
      lt::HeuristicResult result{};
      int found = 0;
      lt::Status st = a.cublasLtMatmulPreferenceSetAttribute(pref, lt::kPrefMaxWorkspaceBytes,
                                                             &maxWorkspace, sizeof maxWorkspace);
      if (st == lt::kStatusSuccess)
        st = a.cublasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.a, p.b, p.d, p.d, pref, 1,
                                              &result, &found);
      a.cublasLtMatmulPreferenceDestroy(pref);
      if (st != lt::kStatusSuccess)
        p.noAlgo = "cublasLtMatmulAlgoGetHeuristic failed: " + lt::describeStatus(a, st);
      else if (found < 1 || result.state != lt::kStatusSuccess)
        p.noAlgo = "cuBLASLt has no algorithm for it";
      else
        p.algo = result.algo;
    } catch (const DeviceError& e) {
      p.noAlgo = e.what();
    }
    spdlog::debug("{}: cuBLASLt {}{}", s.name, m.str(), p.noAlgo.empty() ? "" : "; " + p.noAlgo);
    return p;
  }

  void run(const Step& s, const Prepared& p, const std::vector<DevicePtr>& buffers) {
    const lt::Matmul& m = *p.described.matmul;
    const lt::Api& a = *api_;
    setBias(p, buffers);
    auto ptr = [&](ir::NodeId v) { return reinterpret_cast<void*>(uintptr_t(pointerOf(v, buffers))); };
    void* A = ptr(m.aValue);
    void* B = ptr(m.bValue);
    void* D = ptr(m.dValue);
    void* workspace = reinterpret_cast<void*>(uintptr_t(workspace_));
    const float alpha = 1.0f, beta = 0.0f;
    device_.runLibraryCall(s.name + " (cuBLASLt)", [&](CUstream stream) {
      lt::check(a,
                a.cublasLtMatmul(handle_, p.desc, &alpha, A, p.a, B, p.b, &beta, D, p.d, D, p.d,
                                 &*p.algo, workspace, kWorkspaceBytes, stream),
                "cublasLtMatmul");
    });
  }

  /// Times both providers on the step's current operands (its inputs are in place: earlier
  /// steps ran on this stream) and keeps the faster.
  void choose(const Step& s, Prepared& p, const std::function<void()>& weft,
              const std::vector<DevicePtr>& buffers) {
    lt::ProviderChoice c;
    c.step = s.name;
    if (!p.described.matmul || !p.algo) {
      c.why = p.described.matmul ? p.noAlgo : p.described.whyNot;
    } else if (mode_ != lt::ProviderMode::Auto) {
      c = lt::chooseProvider(s.name, {}, {}, mode_);
    } else {
      std::vector<double> weftMs, libraryMs;
      try {
        auto timed = [&](const std::function<void()>& work) {
          device_.startTimer();
          work();
          return device_.stopTimer().value_or(0);
        };
        auto library = [&] { run(s, p, buffers); };
        timed(weft);
        timed(library);
        for (int r = 0; r < kTimedRuns; ++r) {
          weftMs.push_back(timed(weft));
          libraryMs.push_back(timed(library));
        }
        c = lt::chooseProvider(s.name, weftMs, libraryMs, mode_);
      } catch (const DeviceError& e) {
        c = lt::ProviderChoice{};
        c.step = s.name;
        c.why = e.what();
      }
    }
    spdlog::info("{}", c.str());
    p.choice = c;
  }

  CudaDevice& device_;
  std::shared_ptr<const lt::Api> api_;
  const fusion::FusionPlan& plan_;
  std::vector<Step> steps_;
  lt::ProviderMode mode_;
  bool tf32_;
  lt::Handle handle_ = nullptr;
  DevicePtr workspace_ = 0;
};

} // namespace

bool gemmLibraryAvailable(Device& device) {
  if (!dynamic_cast<CudaDevice*>(&device)) return false;
  if (lt::providerModeFromEnvironment() == lt::ProviderMode::Weft) return false;
  lt::Loaded loaded = lt::load();
  if (!loaded) spdlog::debug("dots may fuse into weft's GEMMs: {}", loaded.why);
  return bool(loaded);
}

std::unique_ptr<LibraryGemms> LibraryGemms::make(Device& device, const fusion::FusionPlan& plan,
                                                 const std::vector<codegen::CompiledKernel>& kernels,
                                                 bool tf32) {
  auto* cuda = dynamic_cast<CudaDevice*>(&device);
  if (!cuda) return nullptr;
  lt::ProviderMode mode = lt::providerModeFromEnvironment();
  if (mode == lt::ProviderMode::Weft) return nullptr;
  std::vector<Step> steps;
  for (size_t k = 0; k < kernels.size(); ++k) {
    int step = kernels[k].planStep;
    if (step < 0 || size_t(step) >= plan.steps.size()) continue;
    const auto* call = std::get_if<fusion::LibraryCall>(&plan.steps[size_t(step)]);
    if (!call) continue;
    if (std::string why = lt::whyNotEligible(plan, *call); !why.empty()) {
      spdlog::debug("{}: weft's kernel ({})", kernels[k].name, why);
      continue;
    }
    Step s;
    s.kernel = k;
    s.call = call;
    s.name = kernels[k].name;
    steps.push_back(std::move(s));
  }
  if (steps.empty()) return nullptr;
  lt::Loaded loaded = lt::load();
  if (!loaded) {
    spdlog::debug("GEMM steps run weft's kernels: {}", loaded.why);
    return nullptr;
  }
  try {
    return std::make_unique<CublasLtGemms>(*cuda, loaded.api, plan, std::move(steps), mode, tf32);
  } catch (const DeviceError& e) { // a library that loads but cannot start: weft's kernels
    spdlog::warn("GEMM steps run weft's kernels: {}", e.what());
    return nullptr;
  }
}

} // namespace weft::runtime::cuda

#else // no cuda.h: no cuda device, no provider

namespace weft::runtime::cuda {
bool gemmLibraryAvailable(Device&) { return false; }
std::unique_ptr<LibraryGemms> LibraryGemms::make(Device&, const fusion::FusionPlan&,
                                                 const std::vector<codegen::CompiledKernel>&,
                                                 bool) {
  return nullptr;
}
} // namespace weft::runtime::cuda

#endif
