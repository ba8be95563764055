#include "common.h"
extern "C" DEVICE float __nv_expf(float); extern "C" DEVICE float __nv_logf(float);
extern "C" DEVICE float __nv_tanhf(float); extern "C" DEVICE float __nv_erff(float);
extern "C" DEVICE float __nv_powf(float, float); extern "C" DEVICE float __nv_sinf(float);
extern "C" DEVICE float __nv_cosf(float); extern "C" DEVICE double __nv_sqrt(double);
extern "C" DEVICE float __nv_rsqrtf(float); extern "C" DEVICE double __nv_exp(double);
extern "C" DEVICE double __nv_log(double); extern "C" DEVICE float __nv_sqrtf(float);
extern "C" DEVICE double __nv_tanh(double); extern "C" DEVICE float __nv_fabsf(float);
GLOBAL void math_f32(const float* a, float* out, int n) {
  int i = gid(); if (i >= n) return;
  float x = a[i];
  float* o = out + (long)i * 10;
  o[0] = __nv_expf(x); o[1] = __nv_logf(__nv_fabsf(x) + 1e-3f); o[2] = __nv_tanhf(x);
  o[3] = __nv_erff(x); o[4] = __nv_powf(__nv_fabsf(x), 1.7f); o[5] = __nv_sinf(x);
  o[6] = __nv_cosf(x); o[7] = __nv_rsqrtf(__nv_fabsf(x) + 1.f); o[8] = __nv_sqrtf(__nv_fabsf(x));
  o[9] = 1.f / (1.f + __nv_expf(-x));
}
GLOBAL void math_f64(const double* a, double* out, int n) {
  int i = gid(); if (i >= n) return;
  double x = a[i];
  double* o = out + (long)i * 4;
  o[0] = __nv_sqrt(x < 0 ? -x : x); o[1] = __nv_exp(x); o[2] = __nv_log((x < 0 ? -x : x) + 1e-3); o[3] = __nv_tanh(x);
}
