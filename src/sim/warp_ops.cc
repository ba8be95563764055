// Warp collectives: lane semantics (lane_semantics.h) of shfl.sync (up, down, bfly, idx,
// with the segment mask and clamp of its c operand and the optional validity predicate) and
// vote.sync (all, any, uni, ballot). The scheduler (warp_scheduler.cc) runs them only once
// every non-exited lane of the member mask executes them together.
#include <cstdint>

#include "sim/lane_semantics.h"
#include "sim/lane_values.h"

namespace weft::sim {

void execWarpCollective(const Instr& I, uint32_t m, uint64_t* R) {
  switch (I.op) {
  case Op::Shfl: {
    uint64_t* d = R + size_t(I.d[0].reg) * 32;
    uint64_t* pd = (I.flags & kHasPredOut) ? R + size_t(I.d[1].reg) * 32 : nullptr;
    Src a = src(I.s[0], R), b = src(I.s[1], R), c = src(I.s[2], R);
    uint32_t vals[32];
    for (int l = 0; l < 32; ++l)
      vals[l] = uint32_t(R[size_t(I.s[0].reg) * 32 + l]);
    if (I.s[0].kind != Operand::Reg)
      for (int l = 0; l < 32; ++l)
        vals[l] = uint32_t(a[l]);
    const ShflMode mode = ShflMode(I.mode);
    forLanes(m, [&](int l) {
      int lane = l;
      int bval = int(b[l] & 31);
      uint32_t cv = uint32_t(c[l]);
      int segmask = int((cv >> 8) & 31), cval = int(cv & 31);
      int maxLane = (lane & segmask) | (cval & ~segmask);
      int minLane = lane & segmask;
      int j = lane;
      bool pval;
      switch (mode) {
      case ShflMode::Up:
        j = lane - bval;
        pval = j >= maxLane;
        break;
      case ShflMode::Down:
        j = lane + bval;
        pval = j <= maxLane;
        break;
      case ShflMode::Bfly:
        j = lane ^ bval;
        pval = j <= maxLane;
        break;
      default:
        j = minLane | (bval & ~segmask);
        pval = j <= maxLane;
        break;
      }
      if (!pval) j = lane;
      d[l] = vals[j & 31];
      if (pd) pd[l] = pval;
    });
    return;
  }
  case Op::Vote: {
    uint64_t* d = R + size_t(I.d[0].reg) * 32;
    Src p = src(I.s[0], R);
    const uint64_t neg = I.aux ? 1 : 0;
    uint32_t ballot = 0;
    forLanes(m, [&](int l) { ballot |= uint32_t(((p[l] & 1) ^ neg) & 1) << l; });
    const VoteMode mode = VoteMode(I.mode);
    forLanes(m, [&](int l) {
      switch (mode) {
      case VoteMode::All:
        d[l] = ballot == m;
        break;
      case VoteMode::Any:
        d[l] = ballot != 0;
        break;
      case VoteMode::Uni:
        d[l] = ballot == 0 || ballot == m;
        break;
      case VoteMode::Ballot:
        d[l] = ballot;
        break;
      }
    });
    return;
  }
  default:
    return;
  }
}

} // namespace weft::sim
