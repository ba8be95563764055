#include "common.h"
// Grid barrier: a .func named weft_grid_barrier (noinline) with a counter + generation.
DEVICE inline unsigned ld_acquire(unsigned* p) {
  unsigned v; asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v;
}
DEVICE inline void st_release(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
DEVICE inline unsigned atom_add_acq_rel(unsigned* p, unsigned v) {
  unsigned old; asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory"); return old;
}
extern "C" DEVICE __attribute__((noinline)) void weft_grid_barrier(unsigned* bar) {
  sync();
  if (tid() == 0) {
    unsigned nb = nctaid();
    unsigned gen = ld_acquire(bar + 1);
    unsigned arrived = atom_add_acq_rel(bar, 1u);
    if (arrived == nb - 1) {
      __atomic_store_n(bar, 0u, __ATOMIC_RELAXED);
      st_release(bar + 1, gen + 1);
    } else {
      while (ld_acquire(bar + 1) == gen) {}
    }
  }
  sync();
}
// sum of all elements: per-block partials, grid barrier, block 0 sums partials, barrier,
// everyone reads the total and writes x - mean.
GLOBAL void center(const float* x, float* y, float* partial, unsigned* bar, int n) {
  SHARED static float s[256];
  unsigned i = gid();
  float v = i < (unsigned)n ? x[i] : 0.f;
  s[tid()] = v;
  sync();
  for (unsigned st = ntid() / 2; st > 0; st >>= 1) {
    if (tid() < st) s[tid()] += s[tid() + st];
    sync();
  }
  if (tid() == 0) partial[ctaid()] = s[0];
  weft_grid_barrier(bar);
  if (ctaid() == 0 && tid() == 0) {
    float t = 0.f;
    for (unsigned b = 0; b < nctaid(); ++b) t += partial[b];
    partial[nctaid()] = t / n;
  }
  weft_grid_barrier(bar);
  if (i < (unsigned)n) y[i] = x[i] - partial[nctaid()];
}
