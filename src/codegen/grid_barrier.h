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
//
// The last-block handoff (fusion::Barrier::LastBlock) is `i32 weft_last_block(ptr state,
// i32 blocks, ptr addrspace(3) flag)`, non-inlined too (the simulator never samples the blocks
// of a kernel that calls it), on word 2 of the same state, with a shared word of the kernel's:
//   bar.sync; thread 0: old = atom.acq_rel.gpu.add [state+8], 1;
//                       [flag] = last = old == blocks-1; last: [state+8] = 0 (the next launch's)
//   bar.sync; every thread returns [flag]
// The block's writes before it precede its add (bar.sync, then release); the last block's
// reads after it follow every add (acquire, then bar.sync).
#include <llvm/IR/Module.h>

namespace weft::codegen {

inline constexpr const char* kGridBarrierName = "weft_grid_barrier";

/// Declares (once per module) and returns `void weft_grid_barrier(ptr addrspace(1), i32)`.
llvm::Function* getOrEmitGridBarrier(llvm::Module& m);

inline constexpr const char* kLastBlockName = "weft_last_block";

/// Declares (once per module) and returns `i32 weft_last_block(ptr addrspace(1), i32,
/// ptr addrspace(3))`: 1 in every thread of the block that counts out last, 0 in the others.
llvm::Function* getOrEmitLastBlock(llvm::Module& m);

} // namespace weft::codegen
