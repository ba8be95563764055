#include "common.h"
extern "C" DEVICE __attribute__((noinline)) int collatz_steps(long long v) {
  int s = 0;
  while (v != 1) { v = (v & 1) ? 3 * v + 1 : v / 2; ++s; }
  return s;
}
extern "C" DEVICE __attribute__((noinline)) int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
GLOBAL void divergent(const int* in, int* out) {
  int i = gid();
  int v = in[i];
  int r;
  if (v % 3 == 0) r = collatz_steps(v + 1);
  else if (v % 3 == 1) r = fib(v & 15);
  else { r = 0; for (int k = 0; k < v; ++k) r += k * k; }
  out[i] = r;
}
GLOBAL void local_array(const int* in, int* out, int n) {
  int buf[16];
  int i = gid();
  for (int k = 0; k < 16; ++k) buf[k] = in[(i + k) % n];
  int idx = in[i] & 15;
  volatile int* vb = buf;
  out[i] = vb[idx] + vb[(idx + 3) & 15];
}
