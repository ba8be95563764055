#!/bin/sh
# Regenerates the corpus PTX in test/sim/ptx from these sources (needs clang-19, llc-19,
# llvm-link-19, opt-19 and libdevice). The .ptx files are checked in; tests never run this.
set -e
cd "$(dirname "$0")"
CC="clang-19 --cuda-device-only -nocudainc -nocudalib --cuda-gpu-arch=sm_80 -O3 -Wno-unknown-cuda-version"
for f in elementwise reduce grid_barrier control; do $CC -S $f.cu -o ../$f.ptx; done
$CC -emit-llvm -c math.cu -o /tmp/weft_math.bc
llvm-link-19 /tmp/weft_math.bc /usr/local/cuda/nvvm/libdevice/libdevice.10.bc -only-needed -o /tmp/weft_math_linked.bc
opt-19 -O3 /tmp/weft_math_linked.bc -o /tmp/weft_math_opt.bc
llc-19 -march=nvptx64 -mcpu=sm_80 -O3 /tmp/weft_math_opt.bc -o ../math.ptx
# LLVM IR written directly (intrinsics codegen uses: minnum/maximum, funnel shifts, saturating
# conversions, half/bfloat/<2 x half> arithmetic, rounding functions)
llc-19 -march=nvptx64 -mcpu=sm_80 -O3 ops.ll -o ../ops.ptx
# <2 x i16> / <4 x i8> integer ops, NaN-propagating min/max and bf16 arithmetic, as NVPTX
# emits them for sm_80 and for sm_90 (packed .s16x2, native bf16)
for sm in 80 90; do llc-19 -march=nvptx64 -mcpu=sm_$sm -O3 packed.ll -o ../packed_sm$sm.ptx; done
