#include "sim/float_convert.h"

#include <cmath>

namespace weft::sim {

uint64_t encodeFloat(double x, int expBits, int mantBits, Round mode) {
  const uint64_t sign = std::signbit(x) ? 1ull << (expBits + mantBits) : 0;
  const uint64_t expMask = (1ull << expBits) - 1;
  if (std::isnan(x)) return (expMask << mantBits) | ((1ull << mantBits) - 1);
  const uint64_t inf = sign | (expMask << mantBits);
  const uint64_t maxFinite = sign | ((expMask - 1) << mantBits) | ((1ull << mantBits) - 1);
  if (std::isinf(x)) return inf;
  const double a = std::fabs(x);
  if (a == 0) return sign;
  const int bias = (1 << (expBits - 1)) - 1;
  const int emin = 1 - bias, emax = bias;
  int e;
  std::frexp(a, &e); // a = f * 2^e, f in [0.5, 1)
  int E = e - 1;
  if (E < emin) E = emin;
  double q = std::ldexp(a, mantBits - E); // a / quantum
  const bool neg = sign != 0;
  double r;
  switch (mode) {
  case Round::Rz:
  case Round::Rzi:
    r = std::trunc(q);
    break;
  case Round::Rm:
  case Round::Rmi:
    r = neg ? std::ceil(q) : std::floor(q);
    break;
  case Round::Rp:
  case Round::Rpi:
    r = neg ? std::floor(q) : std::ceil(q);
    break;
  default: {
    r = std::floor(q);
    double frac = q - r;
    if (frac > 0.5 || (frac == 0.5 && std::fmod(r, 2.0) != 0)) r += 1;
  }
  }
  // r * 2^(E - mantBits) is the rounded magnitude; r may have carried to 2^(mantBits+1)
  uint64_t m = uint64_t(r);
  if (m >> (mantBits + 1)) {
    m >>= 1;
    ++E;
  }
  if (E > emax) {
    bool toInf = mode == Round::Rn || mode == Round::None || (mode == Round::Rm && neg) ||
                 (mode == Round::Rp && !neg);
    return toInf ? inf : maxFinite;
  }
  if (m < (1ull << mantBits)) return sign | m; // subnormal (E == emin) or zero
  return sign | (uint64_t(E + bias) << mantBits) | (m - (1ull << mantBits));
}

double decodeFloat(uint64_t bits, int expBits, int mantBits) {
  const int bias = (1 << (expBits - 1)) - 1;
  const uint64_t expMask = (1ull << expBits) - 1;
  const bool neg = (bits >> (expBits + mantBits)) & 1;
  const uint64_t ex = (bits >> mantBits) & expMask;
  const uint64_t man = bits & ((1ull << mantBits) - 1);
  double v;
  if (ex == expMask)
    v = man ? std::nan("") : INFINITY;
  else if (ex == 0)
    v = std::ldexp(double(man), 1 - bias - mantBits);
  else
    v = std::ldexp(double(man | (1ull << mantBits)), int(ex) - bias - mantBits);
  return neg ? -v : v;
}

} // namespace weft::sim
