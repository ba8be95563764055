target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare float @llvm.minnum.f32(float, float)
declare float @llvm.maximum.f32(float, float)
declare float @llvm.minimum.f32(float, float)
declare i32 @llvm.fshl.i32(i32, i32, i32)
declare i32 @llvm.cttz.i32(i32, i1)
declare i64 @llvm.ctpop.i64(i64)
declare i32 @llvm.bitreverse.i32(i32)
declare i32 @llvm.bswap.i32(i32)
declare i32 @llvm.fptosi.sat.i32.f32(float)
declare i8 @llvm.fptoui.sat.i8.f32(float)
declare i32 @llvm.abs.i32(i32, i1)
declare i32 @llvm.smax.i32(i32, i32)
declare half @llvm.fma.f16(half, half, half)
declare float @llvm.floor.f32(float)
declare float @llvm.round.f32(float)
declare float @llvm.trunc.f32(float)
declare double @llvm.rint.f64(double)
declare float @llvm.copysign.f32(float, float)
declare i32 @llvm.umin.i32(i32, i32)
declare i16 @llvm.smin.i16(i16, i16)

define void @ops(ptr addrspace(1) %in, ptr addrspace(1) %out) {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %t64 = zext i32 %t to i64
  %pf = getelementptr float, ptr addrspace(1) %in, i64 %t64
  %x = load float, ptr addrspace(1) %pf
  %xi = bitcast float %x to i32
  %o = getelementptr [32 x i32], ptr addrspace(1) %out, i64 %t64
  %a0 = call float @llvm.minnum.f32(float %x, float 1.0)
  %a1 = call float @llvm.maximum.f32(float %x, float 1.0)
  %a2 = call float @llvm.minimum.f32(float %x, float 1.0)
  %a3 = call i32 @llvm.fshl.i32(i32 %xi, i32 %xi, i32 %t)
  %a4 = call i32 @llvm.cttz.i32(i32 %xi, i1 false)
  %xl = zext i32 %xi to i64
  %a5l = call i64 @llvm.ctpop.i64(i64 %xl)
  %a5 = trunc i64 %a5l to i32
  %a6 = call i32 @llvm.bitreverse.i32(i32 %xi)
  %a7 = call i32 @llvm.bswap.i32(i32 %xi)
  %a8 = call i32 @llvm.fptosi.sat.i32.f32(float %x)
  %a9b = call i8 @llvm.fptoui.sat.i8.f32(float %x)
  %a9 = zext i8 %a9b to i32
  %a10 = call i32 @llvm.abs.i32(i32 %a8, i1 false)
  %a11 = call i32 @llvm.smax.i32(i32 %a8, i32 3)
  %h = fptrunc float %x to half
  %h2 = fmul half %h, %h
  %h3 = call half @llvm.fma.f16(half %h2, half %h, half %h)
  %h4 = fsub half %h3, %h
  %hb = bitcast half %h4 to i16
  %a12 = zext i16 %hb to i32
  %b = fptrunc float %x to bfloat
  %b2 = fadd bfloat %b, %b
  %b3 = fmul bfloat %b2, %b
  %bb = bitcast bfloat %b3 to i16
  %a13 = zext i16 %bb to i32
  %v = insertelement <2 x half> undef, half %h, i32 0
  %v2 = insertelement <2 x half> %v, half %h2, i32 1
  %v3 = fadd <2 x half> %v2, %v2
  %v4 = fmul <2 x half> %v3, %v2
  %a14 = bitcast <2 x half> %v4 to i32
  %a15f = call float @llvm.floor.f32(float %x)
  %a15 = bitcast float %a15f to i32
  %a16f = call float @llvm.round.f32(float %x)
  %a16 = bitcast float %a16f to i32
  %a17f = call float @llvm.trunc.f32(float %x)
  %a17 = bitcast float %a17f to i32
  %xd = fpext float %x to double
  %a18d = call double @llvm.rint.f64(double %xd)
  %a18f = fptrunc double %a18d to float
  %a18 = bitcast float %a18f to i32
  %a19f = frem float %x, 0.75
  %a19 = bitcast float %a19f to i32
  %a20 = sdiv i32 %xi, 7
  %q = sext i32 %xi to i64
  %a21l = srem i64 %q, 1000000007
  %a21 = trunc i64 %a21l to i32
  %a22 = udiv i32 %xi, %t
  %a23 = call i32 @llvm.umin.i32(i32 %xi, i32 %t)
  %s16 = trunc i32 %xi to i16
  %s16b = call i16 @llvm.smin.i16(i16 %s16, i16 -5)
  %a24 = sext i16 %s16b to i32
  %hd = fpext half %h to double
  %hd2 = fmul double %hd, 3.0
  %a25f = fptrunc double %hd2 to float
  %a25 = bitcast float %a25f to i32
  %a26h = fptrunc double %hd2 to half
  %a26s = bitcast half %a26h to i16
  %a26 = zext i16 %a26s to i32
  %a27f = uitofp i64 %xl to float
  %a27 = bitcast float %a27f to i32
  %a28f = fneg float %x
  %a28 = bitcast float %a28f to i32
  %sel = fcmp ult float %x, 0.5
  %a29 = select i1 %sel, i32 %a3, i32 %a4
  %a0i = bitcast float %a0 to i32
  %a1i = bitcast float %a1 to i32
  %a2i = bitcast float %a2 to i32
  %p0 = getelementptr i32, ptr addrspace(1) %o, i64 0
  store i32 %a0i, ptr addrspace(1) %p0
  %p1 = getelementptr i32, ptr addrspace(1) %o, i64 1
  store i32 %a1i, ptr addrspace(1) %p1
  %p2 = getelementptr i32, ptr addrspace(1) %o, i64 2
  store i32 %a2i, ptr addrspace(1) %p2
  %p3 = getelementptr i32, ptr addrspace(1) %o, i64 3
  store i32 %a3, ptr addrspace(1) %p3
  %p4 = getelementptr i32, ptr addrspace(1) %o, i64 4
  store i32 %a4, ptr addrspace(1) %p4
  %p5 = getelementptr i32, ptr addrspace(1) %o, i64 5
  store i32 %a5, ptr addrspace(1) %p5
  %p6 = getelementptr i32, ptr addrspace(1) %o, i64 6
  store i32 %a6, ptr addrspace(1) %p6
  %p7 = getelementptr i32, ptr addrspace(1) %o, i64 7
  store i32 %a7, ptr addrspace(1) %p7
  %p8 = getelementptr i32, ptr addrspace(1) %o, i64 8
  store i32 %a8, ptr addrspace(1) %p8
  %p9 = getelementptr i32, ptr addrspace(1) %o, i64 9
  store i32 %a9, ptr addrspace(1) %p9
  %p10 = getelementptr i32, ptr addrspace(1) %o, i64 10
  store i32 %a10, ptr addrspace(1) %p10
  %p11 = getelementptr i32, ptr addrspace(1) %o, i64 11
  store i32 %a11, ptr addrspace(1) %p11
  %p12 = getelementptr i32, ptr addrspace(1) %o, i64 12
  store i32 %a12, ptr addrspace(1) %p12
  %p13 = getelementptr i32, ptr addrspace(1) %o, i64 13
  store i32 %a13, ptr addrspace(1) %p13
  %p14 = getelementptr i32, ptr addrspace(1) %o, i64 14
  store i32 %a14, ptr addrspace(1) %p14
  %p15 = getelementptr i32, ptr addrspace(1) %o, i64 15
  store i32 %a15, ptr addrspace(1) %p15
  %p16 = getelementptr i32, ptr addrspace(1) %o, i64 16
  store i32 %a16, ptr addrspace(1) %p16
  %p17 = getelementptr i32, ptr addrspace(1) %o, i64 17
  store i32 %a17, ptr addrspace(1) %p17
  %p18 = getelementptr i32, ptr addrspace(1) %o, i64 18
  store i32 %a18, ptr addrspace(1) %p18
  %p19 = getelementptr i32, ptr addrspace(1) %o, i64 19
  store i32 %a19, ptr addrspace(1) %p19
  %p20 = getelementptr i32, ptr addrspace(1) %o, i64 20
  store i32 %a20, ptr addrspace(1) %p20
  %p21 = getelementptr i32, ptr addrspace(1) %o, i64 21
  store i32 %a21, ptr addrspace(1) %p21
  %p22 = getelementptr i32, ptr addrspace(1) %o, i64 22
  store i32 %a22, ptr addrspace(1) %p22
  %p23 = getelementptr i32, ptr addrspace(1) %o, i64 23
  store i32 %a23, ptr addrspace(1) %p23
  %p24 = getelementptr i32, ptr addrspace(1) %o, i64 24
  store i32 %a24, ptr addrspace(1) %p24
  %p25 = getelementptr i32, ptr addrspace(1) %o, i64 25
  store i32 %a25, ptr addrspace(1) %p25
  %p26 = getelementptr i32, ptr addrspace(1) %o, i64 26
  store i32 %a26, ptr addrspace(1) %p26
  %p27 = getelementptr i32, ptr addrspace(1) %o, i64 27
  store i32 %a27, ptr addrspace(1) %p27
  %p28 = getelementptr i32, ptr addrspace(1) %o, i64 28
  store i32 %a28, ptr addrspace(1) %p28
  %p29 = getelementptr i32, ptr addrspace(1) %o, i64 29
  store i32 %a29, ptr addrspace(1) %p29
  ret void
}
!nvvm.annotations = !{!0}
!0 = !{ptr @ops, !"kernel", i32 1}
