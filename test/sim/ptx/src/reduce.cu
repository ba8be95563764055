#include "common.h"
DEVICE inline float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __nvvm_shfl_sync_bfly_f32(0xffffffffu, v, o, 31);
  return v;
}
// one block per row; blockDim multiple of 32, <= 1024
GLOBAL void row_sum(const float* x, float* y, int cols) {
  SHARED static float partial[32];
  const float* row = x + (long)ctaid() * cols;
  float acc = 0.f;
  for (int c = tid(); c < cols; c += ntid()) acc += row[c];
  acc = warp_sum(acc);
  unsigned lane = tid() & 31, warp = tid() >> 5;
  if (lane == 0) partial[warp] = acc;
  sync();
  if (warp == 0) {
    unsigned nw = ntid() >> 5;
    float v = lane < nw ? partial[lane] : 0.f;
    v = warp_sum(v);
    if (lane == 0) y[ctaid()] = v;
  }
}
GLOBAL void row_max_dyn(const float* x, float* y, int cols) {
  extern SHARED float buf[];
  const float* row = x + (long)ctaid() * cols;
  float m = -__builtin_inff();
  for (int c = tid(); c < cols; c += ntid()) m = __builtin_fmaxf(m, row[c]);
  buf[tid()] = m;
  sync();
  for (unsigned s = ntid() / 2; s > 0; s >>= 1) {
    if (tid() < s) buf[tid()] = __builtin_fmaxf(buf[tid()], buf[tid() + s]);
    sync();
  }
  if (tid() == 0) y[ctaid()] = buf[0];
}
// column sum: each thread owns a column, loops over rows
GLOBAL void col_sum(const float* x, float* y, int rows, int cols) {
  int c = gid();
  if (c >= cols) return;
  float acc = 0.f;
  for (int r = 0; r < rows; ++r) acc += x[(long)r * cols + c];
  y[c] = acc;
}
// column sum with atomics across blocks of rows
GLOBAL void col_sum_atomic(const float* x, float* y, int rows, int cols) {
  int c = tid();
  int r = ctaid();
  if (c < cols && r < rows) __nvvm_atom_add_gen_f(&y[c], x[(long)r * cols + c]);
}
GLOBAL void shfl_ops(const int* in, int* out) {
  unsigned t = tid();
  int v = in[t];
  int up = __nvvm_shfl_sync_up_i32(0xffffffffu, v, 1, 0);
  int down = __nvvm_shfl_sync_down_i32(0xffffffffu, v, 2, 31);
  int idx = __nvvm_shfl_sync_idx_i32(0xffffffffu, v, 5, 31);
  unsigned ballot = __nvvm_vote_ballot_sync(0xffffffffu, v & 1);
  int any = __nvvm_vote_any_sync(0xffffffffu, v > 100);
  int all = __nvvm_vote_all_sync(0xffffffffu, v >= 0);
  out[t * 6 + 0] = up; out[t * 6 + 1] = down; out[t * 6 + 2] = idx;
  out[t * 6 + 3] = ballot; out[t * 6 + 4] = any; out[t * 6 + 5] = all;
}
