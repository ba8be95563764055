#pragma once
// The grid-wide barrier of cooperative kernels: a non-inlined device function named exactly
// `weft_grid_barrier` (the simulator recognises grid barriers by that name) taking the
// barrier-state pointer (KernelParam::BarrierState) and the number of blocks.
//
// State layout (the runtime zeroes it before the first launch): word 0 = arrival counter,
// word 1 = generation. Reusable sense/generation barrier:
//   bar.sync; thread 0: gen = ld.acquire.gpu [state+4];
//                       old = atom.acq_rel.gpu.add [state], 1;
//                       last arriver (old == blocks-1): [state] = 0; st.release.gpu [state+4],
//                       gen+1 others: spin while ld.acquire.gpu [state+4] == gen;
//   bar.sync
// The counter is back to 0 after every barrier, so the state needs zeroing only once.
#include <llvm/IR/Module.h>

namespace weft::codegen {

inline constexpr const char* kGridBarrierName = "weft_grid_barrier";

/// Declares (once per module) and returns `void weft_grid_barrier(ptr addrspace(1), i32)`.
llvm::Function* getOrEmitGridBarrier(llvm::Module& m);

} // namespace weft::codegen
