#pragma once
// Lane semantics: what each arithmetic, logic, conversion and comparison instruction does
// to the lanes of a warp, as pure functions of the decoded instruction, the mask of lanes
// that execute it (guard already applied, never 0) and the running group's registers R
// (lane_values.h). They touch nothing else: no memory, no scheduling state, no counters; the
// warp loop (warp_scheduler.cc) counts the instruction and picks the family by opcode.
// Their rules (canonical NaNs, f16/bf16 computed in double and rounded once, cvt chopping
// and extending, packed halves) are the simulator's, written out in src/sim/README.md.
#include <cstdint>

#include "sim/program.h"

namespace weft::sim {

/// mov, mov to and from vectors (Pack / Unpack), cvta and cvt (move_ops.cc).
void execMove(const Instr& I, uint32_t m, uint64_t* R);
/// Integer and bit arithmetic (.s16x2/.u16x2 included), selp and slct (alu_ops.cc). `ccReg`
/// is the slot of the function's hidden carry flag (addc, subc, madc and the .cc forms).
void execAlu(const Instr& I, uint32_t m, uint64_t* R, uint32_t ccReg);
/// Float arithmetic on f16, bf16 (and their x2 pairs), f32 and f64, copysign and testp
/// (float_ops.cc).
void execFloat(const Instr& I, uint32_t m, uint64_t* R);
/// setp on every type, with its optional second predicate and .and/.or/.xor (setp_ops.cc).
void execSetp(const Instr& I, uint32_t m, uint64_t* R);
/// The data of shfl.sync and vote.sync once every member lane has arrived (warp_ops.cc);
/// waiting for the members is the scheduler's.
void execWarpCollective(const Instr& I, uint32_t m, uint64_t* R);
/// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32 (or m16n8k8 with tf32
/// inputs) over the whole warp (m must be every lane): D = A·B + C, each element the exact sum
/// of its 16 (8) products and C rounded once to f32 (tensor_core_ops.cc).
void execMatrixMultiply(const Instr& I, uint32_t m, uint64_t* R);

} // namespace weft::sim
