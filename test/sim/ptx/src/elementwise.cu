#include "common.h"
typedef __fp16 half;
struct __attribute__((aligned(16))) float4 { float x, y, z, w; };
GLOBAL void add_f32(const float* a, const float* b, float* c, int n) {
  int i = gid(); if (i < n) c[i] = a[i] * 2.0f + b[i];
}
GLOBAL void axpy_f64(const double* a, double* b, double s, int n) {
  int i = gid(); if (i < n) b[i] = s * a[i] + b[i] / 3.0;
}
GLOBAL void scale_f16(const half* a, half* b, int n) {
  int i = gid(); if (i < n) b[i] = (half)((float)a[i] * 1.5f + 0.25f);
}
GLOBAL void add_bf16(const __bf16* a, const __bf16* b, __bf16* c, int n) {
  int i = gid(); if (i < n) c[i] = (__bf16)((float)a[i] + (float)b[i]);
}
GLOBAL void clamp_i8(const signed char* a, signed char* b, int n) {
  int i = gid(); if (i < n) { int v = a[i] * 3; b[i] = v > 127 ? 127 : (v < -128 ? -128 : v); }
}
GLOBAL void mix_i32(const int* a, const int* b, int* c, int n) {
  int i = gid(); if (i < n) { int x = a[i], y = b[i]; c[i] = (x / (y | 1)) + (x % 7) - (x >> 3) + (x < y ? x : y) + __builtin_popcount(x) + __builtin_clz(x | 1); }
}
GLOBAL void mix_u64(const unsigned long long* a, unsigned long long* c, int n) {
  int i = gid(); if (i < n) { unsigned long long x = a[i]; c[i] = x * 0x9E3779B97F4A7C15ull + (x >> 17) + x / 1000003ull + (x % 97); }
}
GLOBAL void cmp_bool(const float* a, const float* b, bool* c, int n) {
  int i = gid(); if (i < n) c[i] = (a[i] < b[i]) || (a[i] != a[i]);
}
GLOBAL void cvt_mix(const float* a, int* i32, long long* i64, double* f64, unsigned* u32, int n) {
  int i = gid(); if (i < n) { float x = a[i]; i32[i] = (int)x; i64[i] = (long long)x; f64[i] = (double)x; u32[i] = (unsigned)(x < 0 ? -x : x); }
}
GLOBAL void vec4_f32(const float4* a, float4* b, int n) {
  int i = gid(); if (i < n) { float4 v = a[i]; v.x += 1.f; v.y *= 2.f; v.z -= 3.f; v.w = v.w > 0 ? v.w : 0; b[i] = v; }
}

