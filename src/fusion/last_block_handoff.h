#pragma once
// A step of the planner after stitching, before launch configuration: the last phase of a
// kernel handed to its last block (Barrier::LastBlock) instead of a grid barrier.
//
// A grid barrier before a phase of one tile (log-softmax + NLL's loss: the sum over the 512
// rows every block wrote a value of) makes every block wait for the slowest, only for one block
// to run the phase while the others leave. Measured on an H100 (2026-11-27, docs/performance.md),
// the barrier and that phase cost 1.7 us of log-softmax + NLL's 31.9 (the rows alone: 30.2).
// Handed off, each block counts itself out once its rows are written (an atomic add, release
// and acquire at gpu scope, on a counter of its own in the barrier state) and leaves; the block
// that counts last sees every other block's writes and runs the phase alone, as block 0 of a
// grid of one. No block waits, and the kernel needs no cooperative launch (its grid may pass a
// wave) unless another grid barrier remains.
#include "fusion/kernel_plan.h"

namespace weft::fusion {

/// Turns the kernel's last grid barrier into Barrier::LastBlock where that is exact and pays:
/// the phase it opens (every stage from it on) has one static tile and no rows shared by
/// clusters, no split or across-tiles reduce is anywhere in the kernel (they combine across
/// blocks behind grid barriers of their own and order their tiles), and no group of that phase
/// has a stage before it (a value kept in registers or shared memory for a later stage of its
/// group would be the last block's own tiles', not the ones the phase reads). Run after
/// planStitching, before configureLaunch (which then finds the kernel not cooperative).
void handOffLastPhase(KernelPlan& kernel);

} // namespace weft::fusion
