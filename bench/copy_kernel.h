#pragma once
// The copy baseline (issue 16): weft's own vectorized device-to-device copy, the speed every
// memory-bound kernel is reported as a fraction of. A copy "of a workload's compulsory bytes"
// reads half of them and writes the other half, so that its reads and writes together are the
// compulsory bytes: the least traffic any schedule of the workload has.
//
// The kernel is PTX written here (no LLVM), so that gpu_replay, which links neither weft nor
// LLVM, times the same code `weft run --time` does. Each thread copies 16-byte vectors in a
// grid-stride loop, four independent loads in flight before their stores (enough bytes in
// flight per SM to cover DRAM latency at full occupancy); loads and stores past the end are
// predicated off, so it touches exactly the bytes it copies.
#include <algorithm>
#include <cstdint>
#include <string>

namespace weft::bench {

inline constexpr const char* kCopyKernelName = "weft_copy";
inline constexpr int kCopyBlockSize = 256;
inline constexpr int kCopyVectorBytes = 16;
inline constexpr int kCopyUnroll = 4;
inline constexpr int kCopyBlocksPerSM = 8; // 2048 threads: a full SM on sm_70 to sm_90

/// One copy launch: `vectors` 16-byte vectors from a source to a destination buffer of
/// `bufferBytes` each, on `grid` blocks of `block` threads.
struct CopyLaunch {
  uint64_t vectors = 0;
  uint64_t bufferBytes = 0;
  uint32_t grid = 1, block = kCopyBlockSize;
};

/// The copy whose reads and writes together are `compulsoryBytes` (rounded up to whole
/// vectors), on a device with `smCount` SMs.
inline CopyLaunch copyLaunch(uint64_t compulsoryBytes, int smCount) {
  CopyLaunch c;
  const uint64_t half = (compulsoryBytes + 1) / 2;
  c.vectors = (half + kCopyVectorBytes - 1) / kCopyVectorBytes;
  c.bufferBytes = std::max<uint64_t>(c.vectors * kCopyVectorBytes, kCopyVectorBytes);
  const uint64_t perBlock = uint64_t(kCopyBlockSize) * kCopyUnroll;
  const uint64_t wanted = std::max<uint64_t>(1, (c.vectors + perBlock - 1) / perBlock);
  c.grid = static_cast<uint32_t>(
      std::min<uint64_t>(wanted, uint64_t(std::max(1, smCount)) * kCopyBlocksPerSM));
  return c;
}

/// The copy kernel's PTX module for sm_<computeCapability>. Parameters: source and destination
/// pointers (global), and the number of 16-byte vectors to copy (u64).
inline std::string copyKernelPtx(int computeCapability) {
  std::string ptx = ".version 8.5\n.target sm_" + std::to_string(computeCapability) +
                    "\n.address_size 64\n\n";
  ptx += R"(// weft: kernel weft_copy copies n 16-byte vectors from src to dst (the copy baseline)
.visible .entry weft_copy(
	.param .u64 weft_copy_src,
	.param .u64 weft_copy_dst,
	.param .u64 weft_copy_n
)
.maxntid 256, 1, 1
{
	.reg .pred 	%p<5>;
	.reg .b32 	%r<21>;
	.reg .b64 	%rd<24>;

	ld.param.u64 	%rd1, [weft_copy_src];
	ld.param.u64 	%rd2, [weft_copy_dst];
	ld.param.u64 	%rd3, [weft_copy_n];
	cvta.to.global.u64 	%rd1, %rd1;
	cvta.to.global.u64 	%rd2, %rd2;
	mov.u32 	%r1, %ctaid.x;
	mov.u32 	%r2, %ntid.x;
	mov.u32 	%r3, %tid.x;
	mov.u32 	%r4, %nctaid.x;
	mul.wide.u32 	%rd4, %r1, %r2;
	cvt.u64.u32 	%rd5, %r3;
	add.s64 	%rd4, %rd4, %rd5;
	mul.wide.u32 	%rd6, %r4, %r2;
	shl.b64 	%rd7, %rd6, 2;
	shl.b64 	%rd8, %rd6, 4;
$L_loop:
	setp.ge.u64 	%p1, %rd4, %rd3;
	@%p1 bra 	$L_done;
	add.s64 	%rd9, %rd4, %rd6;
	add.s64 	%rd10, %rd9, %rd6;
	add.s64 	%rd11, %rd10, %rd6;
	setp.lt.u64 	%p2, %rd9, %rd3;
	setp.lt.u64 	%p3, %rd10, %rd3;
	setp.lt.u64 	%p4, %rd11, %rd3;
	shl.b64 	%rd12, %rd4, 4;
	add.s64 	%rd13, %rd1, %rd12;
	add.s64 	%rd14, %rd13, %rd8;
	add.s64 	%rd15, %rd14, %rd8;
	add.s64 	%rd16, %rd15, %rd8;
	add.s64 	%rd17, %rd2, %rd12;
	add.s64 	%rd18, %rd17, %rd8;
	add.s64 	%rd19, %rd18, %rd8;
	add.s64 	%rd20, %rd19, %rd8;
	ld.global.v4.u32 	{%r5, %r6, %r7, %r8}, [%rd13];
	@%p2 ld.global.v4.u32 	{%r9, %r10, %r11, %r12}, [%rd14];
	@%p3 ld.global.v4.u32 	{%r13, %r14, %r15, %r16}, [%rd15];
	@%p4 ld.global.v4.u32 	{%r17, %r18, %r19, %r20}, [%rd16];
	st.global.v4.u32 	[%rd17], {%r5, %r6, %r7, %r8};
	@%p2 st.global.v4.u32 	[%rd18], {%r9, %r10, %r11, %r12};
	@%p3 st.global.v4.u32 	[%rd19], {%r13, %r14, %r15, %r16};
	@%p4 st.global.v4.u32 	[%rd20], {%r17, %r18, %r19, %r20};
	add.s64 	%rd4, %rd4, %rd7;
	bra.uni 	$L_loop;
$L_done:
	ret;
}
)";
  return ptx;
}

} // namespace weft::bench
