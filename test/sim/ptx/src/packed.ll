target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare <2 x i16> @llvm.smax.v2i16(<2 x i16>, <2 x i16>)
declare <2 x i16> @llvm.smin.v2i16(<2 x i16>, <2 x i16>)
declare <2 x i16> @llvm.umax.v2i16(<2 x i16>, <2 x i16>)
declare <2 x i16> @llvm.umin.v2i16(<2 x i16>, <2 x i16>)
declare <4 x i8> @llvm.smax.v4i8(<4 x i8>, <4 x i8>)
declare <4 x i8> @llvm.umin.v4i8(<4 x i8>, <4 x i8>)
declare float @llvm.maximum.f32(float, float)
declare float @llvm.minimum.f32(float, float)
declare half @llvm.maximum.f16(half, half)
declare <2 x half> @llvm.minimum.v2f16(<2 x half>, <2 x half>)
declare <2 x half> @llvm.maxnum.v2f16(<2 x half>, <2 x half>)
declare bfloat @llvm.minimum.bf16(bfloat, bfloat)
declare <2 x bfloat> @llvm.maximum.v2bf16(<2 x bfloat>, <2 x bfloat>)
declare bfloat @llvm.minnum.bf16(bfloat, bfloat)
declare bfloat @llvm.fma.bf16(bfloat, bfloat, bfloat)
declare bfloat @llvm.fabs.bf16(bfloat)
declare bfloat @llvm.floor.bf16(bfloat)

; LLVM 19 on sm_80 / sm_90: <2 x i16> and <4 x i8> integer ops, NaN-propagating and
; number-preferring min/max on f32/f16/bf16 and their pairs, bf16 arithmetic, compares and
; conversions. Each thread t reads words a = in[2t], b = in[2t+1] and writes 32 words out[32t + k].
define void @packed(ptr addrspace(1) %in, ptr addrspace(1) %out) {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %t64 = zext i32 %t to i64
  %i0 = mul i64 %t64, 2
  %pa = getelementptr i32, ptr addrspace(1) %in, i64 %i0
  %pb = getelementptr i32, ptr addrspace(1) %pa, i64 1
  %a = load i32, ptr addrspace(1) %pa
  %b = load i32, ptr addrspace(1) %pb
  %o = getelementptr [32 x i32], ptr addrspace(1) %out, i64 %t64
  ; <2 x i16>
  %va = bitcast i32 %a to <2 x i16>
  %vb = bitcast i32 %b to <2 x i16>
  %s0 = add <2 x i16> %va, %vb
  %s1 = sub <2 x i16> %va, %vb
  %s2 = call <2 x i16> @llvm.smax.v2i16(<2 x i16> %va, <2 x i16> %vb)
  %s3 = call <2 x i16> @llvm.smin.v2i16(<2 x i16> %va, <2 x i16> %vb)
  %s4 = call <2 x i16> @llvm.umax.v2i16(<2 x i16> %va, <2 x i16> %vb)
  %s5 = call <2 x i16> @llvm.umin.v2i16(<2 x i16> %va, <2 x i16> %vb)
  ; <4 x i8>
  %ca = bitcast i32 %a to <4 x i8>
  %cb = bitcast i32 %b to <4 x i8>
  %c0 = add <4 x i8> %ca, %cb
  %c1 = call <4 x i8> @llvm.smax.v4i8(<4 x i8> %ca, <4 x i8> %cb)
  %c2 = call <4 x i8> @llvm.umin.v4i8(<4 x i8> %ca, <4 x i8> %cb)
  %c3 = shufflevector <4 x i8> %ca, <4 x i8> %cb, <4 x i32> <i32 7, i32 0, i32 5, i32 2>
  ; i8 -> i32 sign extension of the sum of two bytes
  %e0 = extractelement <4 x i8> %c0, i32 3
  %e1 = sext i8 %e0 to i32
  ; floats: NaN-propagating and number-preferring min/max
  %fa = bitcast i32 %a to float
  %fb = bitcast i32 %b to float
  %f0 = call float @llvm.maximum.f32(float %fa, float %fb)
  %f1 = call float @llvm.minimum.f32(float %fa, float %fb)
  %ha = bitcast i32 %a to <2 x half>
  %hb = bitcast i32 %b to <2 x half>
  %ha0 = extractelement <2 x half> %ha, i32 0
  %hb0 = extractelement <2 x half> %hb, i32 0
  %h0 = call half @llvm.maximum.f16(half %ha0, half %hb0)
  %h1 = call <2 x half> @llvm.minimum.v2f16(<2 x half> %ha, <2 x half> %hb)
  %h2 = call <2 x half> @llvm.maxnum.v2f16(<2 x half> %ha, <2 x half> %hb)
  %hc = fcmp olt <2 x half> %ha, %hb
  %h3 = select <2 x i1> %hc, <2 x half> %ha, <2 x half> %hb
  %ba = bitcast i32 %a to <2 x bfloat>
  %bb = bitcast i32 %b to <2 x bfloat>
  %ba0 = extractelement <2 x bfloat> %ba, i32 0
  %bb0 = extractelement <2 x bfloat> %bb, i32 0
  %b0 = call bfloat @llvm.minimum.bf16(bfloat %ba0, bfloat %bb0)
  %b1 = call <2 x bfloat> @llvm.maximum.v2bf16(<2 x bfloat> %ba, <2 x bfloat> %bb)
  %b2 = call bfloat @llvm.minnum.bf16(bfloat %ba0, bfloat %bb0)
  %b3 = fadd <2 x bfloat> %ba, %bb
  %b4 = fmul <2 x bfloat> %ba, %bb
  %b5 = call bfloat @llvm.fma.bf16(bfloat %ba0, bfloat %bb0, bfloat %ba0)
  %b6 = fneg <2 x bfloat> %ba
  %b7 = call bfloat @llvm.fabs.bf16(bfloat %bb0)
  %bc = fcmp ugt <2 x bfloat> %ba, %bb
  %b8 = select <2 x i1> %bc, <2 x bfloat> %ba, <2 x bfloat> %bb
  %b9 = sitofp i32 %a to bfloat
  %b10 = fptosi bfloat %ba0 to i32
  %b11 = fpext bfloat %ba0 to float
  %b12 = call bfloat @llvm.floor.bf16(bfloat %ba0)
  %b13 = fptrunc float %fa to bfloat
  %h4 = fadd <2 x half> %ha, %hb
  ; store
  %w0 = bitcast <2 x i16> %s0 to i32
  %w1 = bitcast <2 x i16> %s1 to i32
  %w2 = bitcast <2 x i16> %s2 to i32
  %w3 = bitcast <2 x i16> %s3 to i32
  %w4 = bitcast <2 x i16> %s4 to i32
  %w5 = bitcast <2 x i16> %s5 to i32
  %w6 = bitcast <4 x i8> %c0 to i32
  %w7 = bitcast <4 x i8> %c1 to i32
  %w8 = bitcast <4 x i8> %c2 to i32
  %w9 = bitcast <4 x i8> %c3 to i32
  %w10 = bitcast float %f0 to i32
  %w11 = bitcast float %f1 to i32
  %w12h = bitcast half %h0 to i16
  %w12 = zext i16 %w12h to i32
  %w13 = bitcast <2 x half> %h1 to i32
  %w14 = bitcast <2 x half> %h2 to i32
  %w15 = bitcast <2 x half> %h3 to i32
  %w16h = bitcast bfloat %b0 to i16
  %w16 = zext i16 %w16h to i32
  %w17 = bitcast <2 x bfloat> %b1 to i32
  %w18h = bitcast bfloat %b2 to i16
  %w18 = zext i16 %w18h to i32
  %w19 = bitcast <2 x bfloat> %b3 to i32
  %w20 = bitcast <2 x bfloat> %b4 to i32
  %w21h = bitcast bfloat %b5 to i16
  %w21 = zext i16 %w21h to i32
  %w22 = bitcast <2 x bfloat> %b6 to i32
  %w23h = bitcast bfloat %b7 to i16
  %w23 = zext i16 %w23h to i32
  %w24 = bitcast <2 x bfloat> %b8 to i32
  %w25h = bitcast bfloat %b9 to i16
  %w25 = zext i16 %w25h to i32
  %w27 = bitcast float %b11 to i32
  %w28h = bitcast bfloat %b12 to i16
  %w28 = zext i16 %w28h to i32
  %w29h = bitcast bfloat %b13 to i16
  %w29 = zext i16 %w29h to i32
  %w30 = bitcast <2 x half> %h4 to i32
  %o1 = getelementptr i32, ptr addrspace(1) %o, i64 1
  %o2 = getelementptr i32, ptr addrspace(1) %o, i64 2
  %o3 = getelementptr i32, ptr addrspace(1) %o, i64 3
  %o4 = getelementptr i32, ptr addrspace(1) %o, i64 4
  %o5 = getelementptr i32, ptr addrspace(1) %o, i64 5
  %o6 = getelementptr i32, ptr addrspace(1) %o, i64 6
  %o7 = getelementptr i32, ptr addrspace(1) %o, i64 7
  %o8 = getelementptr i32, ptr addrspace(1) %o, i64 8
  %o9 = getelementptr i32, ptr addrspace(1) %o, i64 9
  %o10 = getelementptr i32, ptr addrspace(1) %o, i64 10
  %o11 = getelementptr i32, ptr addrspace(1) %o, i64 11
  %o12 = getelementptr i32, ptr addrspace(1) %o, i64 12
  %o13 = getelementptr i32, ptr addrspace(1) %o, i64 13
  %o14 = getelementptr i32, ptr addrspace(1) %o, i64 14
  %o15 = getelementptr i32, ptr addrspace(1) %o, i64 15
  %o16 = getelementptr i32, ptr addrspace(1) %o, i64 16
  %o17 = getelementptr i32, ptr addrspace(1) %o, i64 17
  %o18 = getelementptr i32, ptr addrspace(1) %o, i64 18
  %o19 = getelementptr i32, ptr addrspace(1) %o, i64 19
  %o20 = getelementptr i32, ptr addrspace(1) %o, i64 20
  %o21 = getelementptr i32, ptr addrspace(1) %o, i64 21
  %o22 = getelementptr i32, ptr addrspace(1) %o, i64 22
  %o23 = getelementptr i32, ptr addrspace(1) %o, i64 23
  %o24 = getelementptr i32, ptr addrspace(1) %o, i64 24
  %o25 = getelementptr i32, ptr addrspace(1) %o, i64 25
  %o26 = getelementptr i32, ptr addrspace(1) %o, i64 26
  %o27 = getelementptr i32, ptr addrspace(1) %o, i64 27
  %o28 = getelementptr i32, ptr addrspace(1) %o, i64 28
  %o29 = getelementptr i32, ptr addrspace(1) %o, i64 29
  %o30 = getelementptr i32, ptr addrspace(1) %o, i64 30
  %o31 = getelementptr i32, ptr addrspace(1) %o, i64 31
  store i32 %w0, ptr addrspace(1) %o
  store i32 %w1, ptr addrspace(1) %o1
  store i32 %w2, ptr addrspace(1) %o2
  store i32 %w3, ptr addrspace(1) %o3
  store i32 %w4, ptr addrspace(1) %o4
  store i32 %w5, ptr addrspace(1) %o5
  store i32 %w6, ptr addrspace(1) %o6
  store i32 %w7, ptr addrspace(1) %o7
  store i32 %w8, ptr addrspace(1) %o8
  store i32 %w9, ptr addrspace(1) %o9
  store i32 %w10, ptr addrspace(1) %o10
  store i32 %w11, ptr addrspace(1) %o11
  store i32 %w12, ptr addrspace(1) %o12
  store i32 %w13, ptr addrspace(1) %o13
  store i32 %w14, ptr addrspace(1) %o14
  store i32 %w15, ptr addrspace(1) %o15
  store i32 %w16, ptr addrspace(1) %o16
  store i32 %w17, ptr addrspace(1) %o17
  store i32 %w18, ptr addrspace(1) %o18
  store i32 %w19, ptr addrspace(1) %o19
  store i32 %w20, ptr addrspace(1) %o20
  store i32 %w21, ptr addrspace(1) %o21
  store i32 %w22, ptr addrspace(1) %o22
  store i32 %w23, ptr addrspace(1) %o23
  store i32 %w24, ptr addrspace(1) %o24
  store i32 %w25, ptr addrspace(1) %o25
  store i32 %b10, ptr addrspace(1) %o26
  store i32 %w27, ptr addrspace(1) %o27
  store i32 %w28, ptr addrspace(1) %o28
  store i32 %w29, ptr addrspace(1) %o29
  store i32 %w30, ptr addrspace(1) %o30
  store i32 %e1, ptr addrspace(1) %o31
  ret void
}
!nvvm.annotations = !{!0}
!0 = !{ptr @packed, !"kernel", i32 1}
