#pragma once
// The decoded form of a PTX module that the executor runs: per function a flat array of
// instructions whose operands are already resolved to register slots, immediates (symbol
// addresses included) and special registers. Built once by parsePtx (ptx_parser.h).
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace weft::sim {

enum class Op : uint8_t {
  // data movement
  Mov,
  MovSreg,
  MovDepot,
  MovDynShared,
  Pack,
  Unpack,
  Cvta,
  Cvt,
  // integer and float arithmetic
  Add,
  Sub,
  AddCC,
  AddC,
  SubCC,
  SubC,
  MulLo,
  MulHi,
  MulWide,
  MadLo,
  MadHi,
  MadWide,
  MadCLo,
  MadCHi,
  Mul,
  Mad,
  Fma,
  Div,
  Rem,
  Abs,
  Neg,
  Min,
  Max,
  And,
  Or,
  Xor,
  Not,
  CNot,
  Shl,
  Shr,
  Popc,
  Clz,
  Brev,
  Bfe,
  Bfi,
  Bfind,
  Prmt,
  Shf,
  Selp,
  Setp,
  Set,
  Slct,
  Rcp,
  Sqrt,
  Rsqrt,
  Ex2,
  Lg2,
  Sin,
  Cos,
  Tanh,
  Copysign,
  Testp,
  // memory
  Ld,
  St,
  Atom,
  Red,
  Fence,
  // synchronisation and warp-level
  Bar,
  BarWarp,
  Shfl,
  Vote,
  Activemask,
  // thread-block clusters (cluster_ops.cc)
  Mapa,       // mapa{.shared::cluster}.{u32,u64} d, a, rank: a's shared variable in block `rank`;
              // mode 1: getctarank{.shared::cluster}.{u32,u64} d, a: the rank a's block has
  BarCluster, // barrier.cluster.arrive (mode 1) / barrier.cluster.wait (mode 2)
  // tensor cores and asynchronous copies (tensor_core_ops.cc)
  Ldmatrix,      // ldmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}.shared.b16; mode 1 = .trans
  Mma,           // mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32; ty2 = input
                 // (F32: m16n8k8.row.col.f32.tf32.tf32.f32)
  CpAsync,       // cp.async.{ca,cg}.shared.global: aux = cp-size, s[1] = src-size when ns == 2
  CpAsyncCommit, // cp.async.commit_group
  CpAsyncWait,   // cp.async.wait_group N (ns == 1) or cp.async.wait_all (ns == 0)
  // Hopper warpgroup MMA (tensor_core_ops.cc): wgmma.mma_async.sync.aligned.m64nNk16.f32.
  // {f16,bf16}.{f16,bf16} with A and B from shared-memory descriptors. ty2 = input type; its
  // N / 2 accumulator registers are Function::operandLists[aux .. aux + aux2); s[0], s[1] the
  // descriptors, s[2] scale-d; mode bit 0 / 1: imm-scale-a / imm-scale-b is -1; bit 2 / 3:
  // imm-trans-a / imm-trans-b is 1 (A M-major, B N-major).
  Wgmma,
  WgmmaFence,  // wgmma.fence.sync.aligned
  WgmmaCommit, // wgmma.commit_group.sync.aligned
  WgmmaWait,   // wgmma.wait_group.sync.aligned N
  // control
  Bra,
  Call,
  Ret,
  Exit,
  Trap,
  Nop,
};

/// Scalar types as written in an instruction's type suffix.
enum class Ty : uint8_t {
  None,
  Pred,
  B8,
  B16,
  B32,
  B64,
  U8,
  U16,
  U32,
  U64,
  S8,
  S16,
  S32,
  S64,
  F16,
  F16x2,
  BF16,
  BF16x2,
  F32,
  F64,
  // packed 16-bit integers (sm_90 add/sub/min/max): two lanes in a .b32, lane 0 in bits 0-15
  S16x2,
  U16x2,
};
inline int tyBytes(Ty t) {
  constexpr int8_t bytes[] = {0, 1, 1, 2, 4, 8, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 2, 4, 4, 8, 4, 4};
  return bytes[int(t)];
}
inline bool tyIsFloat(Ty t) {
  return t == Ty::F16 || t == Ty::F16x2 || t == Ty::BF16 || t == Ty::BF16x2 || t == Ty::F32 ||
         t == Ty::F64;
}
inline bool tyIsSigned(Ty t) {
  return t == Ty::S8 || t == Ty::S16 || t == Ty::S32 || t == Ty::S64;
}
inline bool tyIsPackedInt(Ty t) {
  return t == Ty::S16x2 || t == Ty::U16x2;
}
const char* tyName(Ty t);

/// SharedCluster: .shared::cluster, an address in the cluster's shared window (program.h's
/// kClusterRankStride says how ranks are laid out); a shared::cta address is one of them.
enum class Space : uint8_t { Generic, Global, Shared, Local, Param, Const, SharedCluster };
/// Rna: to nearest, ties away from zero (cvt.rna.tf32.f32 only).
enum class Round : uint8_t { None, Rn, Rz, Rm, Rp, Rni, Rzi, Rmi, Rpi, Rna };
enum class Cmp : uint8_t {
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  Lo,
  Ls,
  Hi,
  Hs,
  Equ,
  Neu,
  Ltu,
  Leu,
  Gtu,
  Geu,
  Num,
  Nan
};
enum class BoolOp : uint8_t { None, And, Or, Xor };
enum class AtomOp : uint8_t { Add, Min, Max, Exch, Cas, And, Or, Xor, Inc, Dec };
enum class ShflMode : uint8_t { Up, Down, Bfly, Idx };
enum class VoteMode : uint8_t { All, Any, Uni, Ballot };
enum class Sreg : uint8_t {
  TidX,
  TidY,
  TidZ,
  NtidX,
  NtidY,
  NtidZ,
  CtaidX,
  CtaidY,
  CtaidZ,
  NctaidX,
  NctaidY,
  NctaidZ,
  LaneId,
  WarpId,
  NWarpId,
  SmId,
  NSmId,
  GridId,
  Clock,
  Clock64,
  GlobalTimer,
  DynSmemSize,
  TotalSmemSize,
  LanemaskEq,
  LanemaskLt,
  LanemaskLe,
  LanemaskGt,
  LanemaskGe,
  EnvReg,
  // thread-block clusters: clusters are clusterSize consecutive blocks along x
  ClusterCtarank,
  ClusterNctarank,
  ClusteridX,
  ClusteridY,
  ClusteridZ,
  NclusteridX,
  NclusteridY,
  NclusteridZ,
  ClusterCtaidX,
  ClusterCtaidY,
  ClusterCtaidZ,
  ClusterNctaidX,
  ClusterNctaidY,
  ClusterNctaidZ,
  IsExplicitCluster,
};

struct Operand {
  enum Kind : uint8_t { None, Reg, Imm } kind = None;
  uint32_t reg = 0; // register slot in the function's frame
  uint64_t imm = 0; // immediate bits (already in the operand's type), or address offset
  bool isReg() const { return kind == Reg; }
};

// Instruction flags.
enum : uint32_t {
  kFtz = 1 << 0,
  kSat = 1 << 1,
  kApprox = 1 << 2,
  kVolatile = 1 << 3, // ld/st .volatile, or .acquire/.release/.relaxed (sync-capable access)
  kToSpace = 1 << 4,  // cvta.to.<space>
  kClamp = 1 << 5,    // bfe/shfl variations
  kUni = 1 << 6,
  kHasPredOut = 1 << 7, // shfl with |p output, setp with |q output
  kSync = 1 << 8,       // instruction belongs to a grid-barrier function (counted as sync)
  kNegGuard = 1 << 9,
  kHasGuard = 1 << 10,
  kAddrReg = 1 << 11,   // address operand has a base register (else absolute)
  kFrameRel = 1 << 12,  // address is relative to the thread's local frame (func params)
  kSinkD0 = 1 << 13,    // first destination is the sink "_"
  kDynShared = 1 << 14, // address is relative to the kernel's dynamic shared memory base
  kNaN = 1 << 15,       // min/max.NaN: a NaN operand gives NaN
  kRelu = 1 << 16,      // min/max/fma .relu: a negative result is 0 (a NaN result stays NaN)
};

/// Instr::reconvergePc of a branch whose diverged threads only meet again when they leave
/// the function (or never: a side of it loops forever).
constexpr uint32_t kNoReconvergence = ~0u;

struct Instr {
  Op op = Op::Nop;
  Ty ty = Ty::None;  // main type (destination / operation type)
  Ty ty2 = Ty::None; // source type (cvt), second type
  Space space = Space::Generic;
  Round round = Round::None;
  uint8_t mode = 0; // Cmp, AtomOp, ShflMode, VoteMode, Sreg, Space of cvta; per op
  BoolOp boolOp = BoolOp::None;
  uint8_t nd = 0, ns = 0; // destination / source operand counts (vector lanes for ld/st)
  uint32_t flags = 0;
  uint32_t guard = 0;  // predicate register slot when kHasGuard
  uint32_t target = 0; // branch target index, callee function index, barrier id
  uint32_t line = 0;   // PTX source line
  Operand d[4];
  Operand s[10]; // mma.sync reads ten: A's four registers, B's two, C's four
  // address operand of ld/st/atom: base register (kAddrReg) + offset in addr.imm
  Operand addr;
  uint32_t aux = 0, aux2 = 0; // Call: caller's register count and local frame size
  uint32_t callArgBase = 0;   // Call: index into Function::callArgs of the caller
  uint32_t func = 0;          // index of the function this instruction belongs to
  // Guarded Bra: where the threads that took it and those that did not reconverge, the
  // branch's immediate post-dominator (reconvergence.h)
  uint32_t reconvergePc = kNoReconvergence;
};

struct Variable {
  std::string name;
  Space space = Space::Global;
  uint64_t size = 0;
  uint32_t align = 1;
  bool external = false;     // .extern .shared name[]: dynamic shared memory
  std::vector<uint8_t> init; // initial bytes (global/const)
  uint64_t address = 0;      // offset in its space (shared/const); device address (global)
};

struct CallArg {
  uint32_t callerOffset; // offset of the caller's .param in its frame's local param area
  uint32_t size;
};

struct Function {
  std::string name;
  bool isKernel = false;
  bool defined = false;
  bool isGridBarrier = false;   // name starts with "weft_grid_barrier"
  bool isLastBlock = false;     // name starts with "weft_last_block" (a last-block handoff)
  // Kernels: they or a function they call hand off to their last block (weft_last_block), so
  // which block runs on depends on all of them running: block sampling is off for them.
  bool handsOff = false;
  uint32_t entry = 0, end = 0;  // [entry, end) in Program::code
  uint32_t numRegs = 0;         // 64-bit slots per thread (all register classes)
  uint32_t reg32Equivalent = 0; // declared registers counted in 32-bit units
  uint32_t maxLive32 = 0;       // most 32-bit registers live at once (occupancy estimate)
  // .reqnctapercluster x, y, z (0: none), .maxclusterrank n (0: none), .explicitcluster
  int reqnctapercluster[3] = {0, 0, 0};
  int maxclusterrank = 0;
  bool explicitCluster = false;
  // Parameters: kernel params live in the launch buffer; func params live in the thread's
  // local memory frame at paramOffset.
  struct Param {
    std::string name;
    uint32_t offset, size, align;
  };
  std::vector<Param> params;
  std::vector<Param> returns;
  uint32_t paramsSize = 0; // kernel: bytes of the param buffer
  // Local frame: [depot | incoming params | returns | outgoing call params]
  uint32_t depotSize = 0;
  uint32_t frameSize = 0;
  uint32_t frameAlign = 8;
  std::vector<CallArg> callArgs; // per call: returns first (in callee order), then args
  /// Register operands of instructions with more than Instr holds (wgmma's accumulators):
  /// an instruction's are [Instr::aux, Instr::aux + Instr::aux2).
  std::vector<Operand> operandLists;
  int maxnreg = 0;
  int reqntid = 0, maxntid = 0;
  uint32_t ccReg = 0; // hidden carry-flag register
  // Kernels: shared memory of the variables this kernel and the functions it calls use.
  // Variables that no kernel uses together may share addresses.
  uint64_t staticSharedBytes = 0;
  uint64_t dynamicSharedOffset = 0; // where .extern .shared arrays start for this kernel
};

struct Program {
  std::vector<Instr> code; // all functions' instructions; a pc indexes this array
  std::vector<Function> functions;
  std::unordered_map<std::string, uint32_t> functionIndex;
  std::vector<Variable> variables; // module-scope (and demoted function-scope) variables
  uint64_t staticSharedBytes = 0;  // the largest Function::staticSharedBytes of a kernel
  uint32_t dynamicSharedAlign = 16;
  std::vector<uint8_t> constData; // .const space image
  std::vector<std::string> sourceLines;
};

// Generic address windows (64-bit generic addresses). Global allocations live below
// kSharedWindow; cvta.shared adds kSharedWindow to a .shared address, and so on.
constexpr uint64_t kGlobalBase = 0x0000'0001'0000'0000ull;
constexpr uint64_t kSharedWindow = 0x0000'7000'0000'0000ull;
constexpr uint64_t kLocalWindow = 0x0000'7100'0000'0000ull;
constexpr uint64_t kConstWindow = 0x0000'7200'0000'0000ull;
constexpr uint64_t kParamWindow = 0x0000'7300'0000'0000ull;
constexpr uint64_t kWindowSize = 0x0000'0100'0000'0000ull;
// Shared::cluster addresses (32-bit, as on sm_90): below kClusterRankStride a shared::cta
// address of the accessing block itself; (rank + 1) * kClusterRankStride + offset is `offset`
// in the shared memory of block `rank` of the accessing thread's cluster (what mapa returns).
// In the generic shared window the same layout holds above kSharedWindow.
constexpr uint64_t kClusterRankStride = 0x0100'0000ull;
constexpr uint64_t kMaxClusterSize = 16; // the largest (non-portable) cluster

} // namespace weft::sim
