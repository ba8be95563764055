#pragma once
// What a compile is asked for: the fusion policy, the target GPU, codegen's switches and the
// disk cache. The one definition: the planner (fusion::Policy) and codegen
// (codegen::CodegenOptions) take these as their own.
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "weft/device_spec.h"
#include "weft/dtype.h"

namespace weft {

/// How memory-intensive ops are fused into kernels (docs/planner.md).
enum class Policy : uint8_t {
  None,    // one kernel per memory-intensive op
  Xla,     // XLA-style loop/input fusion (no reduce→consumer, no expensive→broadcast fusion)
  AStitch, // the default: whole memory-intensive regions stitched
};
std::string_view policyName(Policy p);                 // "none", "xla", "astitch"
std::optional<Policy> parsePolicy(std::string_view s); // the names above

/// How a graph's symbolic dims are compiled (docs/architecture.md, "Shapes").
enum class ShapeMode : uint8_t {
  Specialized, // one program per binding, every symbol bound before planning: peak speed for
               // one shape, and the reference generic programs are measured against
  Generic,     // the default: one program per graph, versioned by size classes; symbols stay
               // symbolic through planning and codegen and are kernel parameters; a new
               // binding only picks a version and evaluates sizes and grids
};
std::string_view shapeModeName(ShapeMode m);                 // "specialized", "generic"
std::optional<ShapeMode> parseShapeMode(std::string_view s); // the names above

/// A symbol's declared sizes, both ends included.
struct SizeRange {
  int64_t lo = 1;
  int64_t hi = std::numeric_limits<int64_t>::max();
  bool operator==(const SizeRange&) const = default;
};

struct CodegenOptions {
  bool keepLlvmIr = false;
  bool optimise = true;      // O3; off only for debugging codegen
  std::string libdevicePath; // "" = find through CUDA_HOME, /usr/local/cuda, or WEFT_LIBDEVICE
  bool useLibdevice = true;  // false: weft's own math implementations
  /// Threads compiling the plan: 0 = $WEFT_COMPILE_THREADS, or one per hardware thread when it
  /// is unset. With 1, the plan is one LLVM module compiled on the calling thread; with more,
  /// plans of 4 steps or more are split into modules by step count alone (partitionSteps), so
  /// their PTX is the same for any number of threads above 1, and the same from run to run.
  int threads = 0;
};

struct CompileOptions {
  Policy policy = Policy::AStitch;
  DeviceSpec device = *deviceSpecProfile("h100"); // the GPU planned for (a Device's spec())
  bool canonicalize = true; // simplify the graph (folding, CSE, ...) before planning
  /// Generic: CompiledGraph compiles one program for every binding with no symbol bound to 0
  /// (a binding with a 0-sized symbol still gets a specialised program of its own).
  ShapeMode shapes = ShapeMode::Generic;
  /// Declared sizes of symbols (`--bind B=1..4096`): a generic program is planned for these
  /// sizes only (fewer versions, and plans that may rely on the upper bound), and binding a
  /// symbol outside its range is an InputError. Symbols not named here range over 1.. anything.
  std::map<std::string, SizeRange> symbolRanges;
  CodegenOptions codegen;
  /// Automatic mixed precision (passes/amp.h): f16 or bf16 runs the graph's f32 arithmetic in
  /// that precision, reductions, exp/log and statistics kept in f32; inputs and outputs keep
  /// their dtypes. Unset: the graph as written.
  std::optional<DType> amp;
  /// TF32 tensor cores for f32 dots (sm_80+, `--tf32`): each operand element is rounded to a
  /// 10-bit significand (as cvt.rna.tf32.f32) and the products accumulated in f32 on
  /// mma.sync m16n8k8. Off: f32 dots are exact f32 FMA. Part of the cache key.
  bool tf32 = false;
  /// f16 and bf16 dots on Hopper's warpgroup MMA (wgmma) on sm_90; false (`--no-wgmma`): on
  /// mma.sync there too, as on sm_80, to compare the two. Part of the cache key.
  bool warpgroupMma = true;
  /// Disk cache directory: "" = $XDG_CACHE_HOME/weft (or ~/.cache/weft); "off" = no disk cache.
  /// The cuda device keeps the cubins it links in its `cubins` folder (D/cubins); with "off" it
  /// still links the PTX in parallel and keeps nothing. WEFT_CUBIN_CACHE=DIR|off overrides both
  /// (runtime/cuda/cuda_device_impl.h, cubinCacheFor).
  std::string cacheDir;
};

} // namespace weft
