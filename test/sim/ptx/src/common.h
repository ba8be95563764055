// Minimal CUDA-like builtins for compiling corpus kernels with clang --cuda-device-only.
#pragma once
#define GLOBAL extern "C" __attribute__((global))
#define DEVICE __attribute__((device))
#define SHARED __attribute__((shared))
DEVICE inline unsigned tid() { return __nvvm_read_ptx_sreg_tid_x(); }
DEVICE inline unsigned ntid() { return __nvvm_read_ptx_sreg_ntid_x(); }
DEVICE inline unsigned ctaid() { return __nvvm_read_ptx_sreg_ctaid_x(); }
DEVICE inline unsigned nctaid() { return __nvvm_read_ptx_sreg_nctaid_x(); }
DEVICE inline unsigned gid() { return ctaid() * ntid() + tid(); }
DEVICE inline void sync() { __syncthreads(); }
