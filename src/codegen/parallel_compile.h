#pragma once
// What compiling a plan as several LLVM modules at once takes: how many threads, which steps go
// into which module (contiguous chunks, chosen from the step count alone so that the PTX does
// not depend on the machine), a loop that runs chunks on threads and reports the error a serial
// loop would, and renaming the chunks' local symbols so their PTX can be printed as one module
// (mergePtxModules, ptx_merge.h, does the rest).
#include <cstddef>
#include <functional>
#include <vector>

namespace llvm {
class Module;
}

namespace weft::codegen {

/// `requested` when > 0; else $WEFT_COMPILE_THREADS when set; else the hardware's thread count.
/// Throws weft::InputError when WEFT_COMPILE_THREADS is not a whole number >= 1.
int compileThreads(int requested);

/// Plan steps [begin, end), compiled as one LLVM module.
struct StepRange {
  int begin = 0, end = 0;
};

/// Contiguous, non-empty ranges covering [0, steps) in order: one range when there are fewer than
/// kMinStepsToSplit steps (a small plan gains less than a module's fixed cost), else chunks of
/// near-equal step counts, at least kMinStepsPerChunk each and at most kMaxChunks in all.
inline constexpr int kMinStepsToSplit = 4;
inline constexpr int kMinStepsPerChunk = 2;
inline constexpr int kMaxChunks = 32;
std::vector<StepRange> partitionSteps(int steps);

/// Runs body(i) for every i in [0, count) on up to `threads` threads (the caller's included),
/// each taking the lowest index not yet taken. When bodies throw, the indices above the lowest
/// failing one may be skipped, and once every thread is done that index's exception is rethrown:
/// the error a serial loop would have raised.
void parallelFor(int threads, size_t count, const std::function<void(size_t)>& body);

/// Gives the local (internal or private) symbols of `modules` names no other module uses, so the
/// modules' PTX can be printed as one module: a name that an earlier module already defines, or
/// that another module gives a symbol of external linkage, gets the suffix _c<module index>;
/// unnamed local symbols are named (PTX would call each module's first one __unnamed_1).
/// Symbols of external linkage are left alone: mergePtxModules keeps one copy of each.
void uniquifyLocalSymbols(const std::vector<llvm::Module*>& modules);

} // namespace weft::codegen
