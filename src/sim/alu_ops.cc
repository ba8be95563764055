// Integer and bit arithmetic: lane semantics (lane_semantics.h) of add/sub (.sat, .cc and
// carry-in forms), mul/mad in their lo/hi/wide/carry forms, div/rem, abs/neg/min/max, the
// logic and shift instructions, the bit-field family, prmt, shf, selp and slct. Values wrap
// to the instruction's width; division by zero gives all ones (div) or the dividend (rem).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "sim/lane_semantics.h"
#include "sim/lane_values.h"

namespace weft::sim {

namespace {

template <class T> struct Wider;
template <> struct Wider<int8_t> { using type = int16_t; };
template <> struct Wider<uint8_t> { using type = uint16_t; };
template <> struct Wider<int16_t> { using type = int32_t; };
template <> struct Wider<uint16_t> { using type = uint32_t; };
template <> struct Wider<int32_t> { using type = int64_t; };
template <> struct Wider<uint32_t> { using type = uint64_t; };
template <> struct Wider<int64_t> { using type = __int128; };
template <> struct Wider<uint64_t> { using type = unsigned __int128; };

template <class T> inline T mulHi(T a, T b) {
  using W = typename Wider<T>::type;
  return T((W(a) * W(b)) >> (8 * sizeof(T)));
}

/// add/sub/min/max{.relu} on .s16x2 / .u16x2: each 16-bit half on its own, add and sub
/// wrapping, .relu (s16x2 min/max) turning negative halves into 0.
inline void packedInt16(const Instr& I, uint32_t m, uint64_t* d, Src a, Src b) {
  const bool sgn = I.ty == Ty::S16x2, relu = I.flags & kRelu;
  forLanes(m, [&](int l) {
    uint32_t out = 0;
    for (int h = 0; h < 2; ++h) {
      const int sh = 16 * h;
      const uint16_t x = uint16_t(a[l] >> sh), y = uint16_t(b[l] >> sh);
      uint16_t r;
      switch (I.op) {
      case Op::Add:
        r = uint16_t(x + y);
        break;
      case Op::Sub:
        r = uint16_t(x - y);
        break;
      default: {
        const bool mn = I.op == Op::Min;
        if (sgn) {
          int16_t v = mn ? std::min(int16_t(x), int16_t(y)) : std::max(int16_t(x), int16_t(y));
          if (relu && v < 0) v = 0;
          r = uint16_t(v);
        } else {
          r = mn ? std::min(x, y) : std::max(x, y);
        }
      }
      }
      out |= uint32_t(r) << sh;
    }
    d[l] = out;
  });
}

} // namespace

void execAlu(const Instr& I, uint32_t m, uint64_t* R, uint32_t ccReg) {
  uint64_t* d = R + size_t(I.d[0].reg) * 32;
  Src a = src(I.s[0], R);
  Src b = I.ns > 1 ? src(I.s[1], R) : Src{nullptr, 0};
  Src c = I.ns > 2 ? src(I.s[2], R) : Src{nullptr, 0};
  uint64_t* cc = R + size_t(ccReg) * 32;
  const bool pred = I.ty == Ty::Pred;
  if (tyIsPackedInt(I.ty)) { // the parser allows add, sub, min and max only
    packedInt16(I, m, d, a, b);
    return;
  }
  switch (I.op) {
  case Op::Add:
    byWidth(I.ty, [&](auto z) {
      using U = decltype(z);
      if (I.flags & kSat) {
        forLanes(m, [&](int l) {
          int64_t r = int64_t(as<int32_t>(a[l])) + as<int32_t>(b[l]);
          d[l] = uint32_t(int32_t(std::clamp<int64_t>(r, INT32_MIN, INT32_MAX)));
        });
        return;
      }
      forLanes(m, [&](int l) { d[l] = U(U(a[l]) + U(b[l])); });
    });
    return;
  case Op::Sub:
    byWidth(I.ty, [&](auto z) {
      using U = decltype(z);
      if (I.flags & kSat) {
        forLanes(m, [&](int l) {
          int64_t r = int64_t(as<int32_t>(a[l])) - as<int32_t>(b[l]);
          d[l] = uint32_t(int32_t(std::clamp<int64_t>(r, INT32_MIN, INT32_MAX)));
        });
        return;
      }
      forLanes(m, [&](int l) { d[l] = U(U(a[l]) - U(b[l])); });
    });
    return;
  case Op::AddCC:
  case Op::AddC:
  case Op::SubCC:
  case Op::SubC:
    byWidth(I.ty, [&](auto z) {
      using U = decltype(z);
      using W = typename Wider<U>::type;
      const bool sub = I.op == Op::SubCC || I.op == Op::SubC;
      const bool carryIn = I.op == Op::AddC || I.op == Op::SubC;
      const bool carryOut = I.op == Op::AddCC || I.op == Op::SubCC || I.aux;
      forLanes(m, [&](int l) {
        W x = W(U(a[l])), y = W(U(b[l])), ci = carryIn ? W(cc[l] & 1) : W(0);
        W r = sub ? W(x - y - ci) : W(x + y + ci);
        d[l] = U(r);
        if (carryOut) cc[l] = (r >> (8 * sizeof(U))) & 1;
      });
    });
    return;
  case Op::MulLo:
    byWidth(I.ty, [&](auto z) {
      using U = decltype(z);
      forLanes(m, [&](int l) { d[l] = U(typename Wider<U>::type(U(a[l])) * U(b[l])); });
    });
    return;
  case Op::MulHi:
    byInt(I.ty, [&](auto z) {
      using T = decltype(z);
      forLanes(m, [&](int l) { d[l] = bitsOf(mulHi<T>(as<T>(a[l]), as<T>(b[l]))); });
    });
    return;
  case Op::MulWide:
    byInt(I.ty, [&](auto z) {
      using T = decltype(z);
      using W = typename Wider<T>::type;
      forLanes(m, [&](int l) { d[l] = bitsOf(W(W(as<T>(a[l])) * W(as<T>(b[l])))); });
    });
    return;
  case Op::MadLo:
    byWidth(I.ty, [&](auto z) {
      using U = decltype(z);
      using W = typename Wider<U>::type;
      forLanes(m, [&](int l) { d[l] = U(W(U(a[l])) * U(b[l]) + U(c[l])); });
    });
    return;
  case Op::MadHi:
    byInt(I.ty, [&](auto z) {
      using T = decltype(z);
      using U = std::make_unsigned_t<T>;
      forLanes(m, [&](int l) { d[l] = U(U(mulHi<T>(as<T>(a[l]), as<T>(b[l]))) + U(c[l])); });
    });
    return;
  case Op::MadWide:
    byInt(I.ty, [&](auto z) {
      using T = decltype(z);
      using W = typename Wider<T>::type;
      using UW = std::make_unsigned_t<W>;
      forLanes(m, [&](int l) {
        UW prod = UW(W(as<T>(a[l])) * W(as<T>(b[l])));
        d[l] = bitsOf(W(prod + as<UW>(c[l])));
      });
    });
    return;
  case Op::MadCLo:
  case Op::MadCHi:
    byInt(I.ty, [&](auto z) {
      using T = decltype(z);
      using U = std::make_unsigned_t<T>;
      using UW = std::make_unsigned_t<typename Wider<T>::type>;
      const bool carryIn = I.aux2 == 0;
      forLanes(m, [&](int l) {
        U prod = I.op == Op::MadCHi ? U(mulHi<T>(as<T>(a[l]), as<T>(b[l]))) : U(U(a[l]) * U(b[l]));
        UW r = UW(prod) + UW(U(c[l])) + (carryIn ? UW(cc[l] & 1) : UW(0));
        d[l] = U(r);
        if (I.aux) cc[l] = uint64_t(r >> (8 * sizeof(U))) & 1;
      });
    });
    return;
  case Op::Div:
  case Op::Rem:
    byInt(I.ty, [&](auto z) {
      using T = decltype(z);
      const bool div = I.op == Op::Div;
      forLanes(m, [&](int l) {
        T x = as<T>(a[l]), y = as<T>(b[l]);
        T r;
        if (y == 0)
          r = div ? T(~T(0)) : x;
        else if constexpr (std::is_signed_v<T>) {
          if (x == std::numeric_limits<T>::min() && y == T(-1))
            r = div ? x : T(0);
          else
            r = div ? T(x / y) : T(x % y);
        } else
          r = div ? T(x / y) : T(x % y);
        d[l] = bitsOf(r);
      });
    });
    return;
  case Op::Abs:
    byInt(I.ty, [&](auto z) {
      using T = decltype(z);
      using U = std::make_unsigned_t<T>;
      forLanes(m, [&](int l) {
        T x = as<T>(a[l]);
        d[l] = bitsOf(x < 0 ? T(U(0) - U(x)) : x);
      });
    });
    return;
  case Op::Neg:
    byWidth(I.ty, [&](auto z) {
      using U = decltype(z);
      forLanes(m, [&](int l) { d[l] = U(U(0) - U(a[l])); });
    });
    return;
  case Op::Min:
  case Op::Max:
    byInt(I.ty, [&](auto z) {
      using T = decltype(z);
      const bool mn = I.op == Op::Min;
      const bool relu = I.flags & kRelu; // .s32 only (parser)
      forLanes(m, [&](int l) {
        T x = as<T>(a[l]), y = as<T>(b[l]);
        T r = mn ? std::min(x, y) : std::max(x, y);
        if constexpr (std::is_signed_v<T>)
          if (relu && r < T(0)) r = T(0);
        d[l] = bitsOf(r);
      });
    });
    return;
  case Op::And:
    forLanes(m, [&](int l) { d[l] = a[l] & b[l]; });
    return;
  case Op::Or:
    forLanes(m, [&](int l) { d[l] = a[l] | b[l]; });
    return;
  case Op::Xor:
    forLanes(m, [&](int l) { d[l] = a[l] ^ b[l]; });
    return;
  case Op::Not:
    if (pred)
      forLanes(m, [&](int l) { d[l] = (a[l] & 1) ^ 1; });
    else
      forLanes(m, [&](int l) { d[l] = ~a[l]; });
    return;
  case Op::CNot:
    byWidth(I.ty, [&](auto z) {
      using U = decltype(z);
      forLanes(m, [&](int l) { d[l] = U(a[l]) == 0 ? 1 : 0; });
    });
    return;
  case Op::Shl:
  case Op::Shr:
    byInt(I.ty, [&](auto z) {
      using T = decltype(z);
      using U = std::make_unsigned_t<T>;
      constexpr uint32_t bits = 8 * sizeof(T);
      const bool left = I.op == Op::Shl;
      forLanes(m, [&](int l) {
        uint32_t s = uint32_t(b[l]);
        T x = as<T>(a[l]);
        T r;
        if (left)
          r = s >= bits ? T(0) : T(U(U(x) << s));
        else if constexpr (std::is_signed_v<T>)
          r = s >= bits ? T(x < 0 ? -1 : 0) : T(x >> s);
        else
          r = s >= bits ? T(0) : T(x >> s);
        d[l] = bitsOf(r);
      });
    });
    return;
  case Op::Popc:
    if (tyBytes(I.ty) == 8)
      forLanes(m, [&](int l) { d[l] = uint32_t(__builtin_popcountll(a[l])); });
    else
      forLanes(m, [&](int l) { d[l] = uint32_t(__builtin_popcount(uint32_t(a[l]))); });
    return;
  case Op::Clz:
    if (tyBytes(I.ty) == 8)
      forLanes(m, [&](int l) { d[l] = a[l] ? uint32_t(__builtin_clzll(a[l])) : 64u; });
    else
      forLanes(m, [&](int l) {
        uint32_t x = uint32_t(a[l]);
        d[l] = x ? uint32_t(__builtin_clz(x)) : 32u;
      });
    return;
  case Op::Brev:
    forLanes(m, [&](int l) {
      uint64_t x = a[l], r = 0;
      int n = tyBytes(I.ty) * 8;
      for (int i = 0; i < n; ++i)
        r |= ((x >> i) & 1) << (n - 1 - i);
      d[l] = r;
    });
    return;
  case Op::Bfe:
    forLanes(m, [&](int l) {
      const int msb = tyBytes(I.ty) * 8 - 1;
      uint64_t x = a[l];
      uint32_t pos = uint32_t(b[l]) & 0xff, len = uint32_t(c[l]) & 0xff;
      uint64_t sbit = 0;
      if (tyIsSigned(I.ty) && len > 0) sbit = (x >> std::min<uint32_t>(pos + len - 1, msb)) & 1;
      uint64_t r = 0;
      for (int i = 0; i <= msb; ++i) {
        uint64_t bit =
            (uint32_t(i) < len && pos + i <= uint32_t(msb)) ? (x >> (pos + i)) & 1 : sbit;
        r |= bit << i;
      }
      d[l] = r;
    });
    return;
  case Op::Bfi: {
    Src e = src(I.s[3], R);
    forLanes(m, [&](int l) {
      const int msb = tyBytes(I.ty) * 8 - 1;
      uint64_t f = a[l], r = b[l];
      uint32_t pos = uint32_t(c[l]) & 0xff, len = uint32_t(e[l]) & 0xff;
      for (uint32_t i = 0; i < len && pos + i <= uint32_t(msb); ++i)
        r = (r & ~(1ull << (pos + i))) | (((f >> i) & 1) << (pos + i));
      d[l] = r;
    });
    return;
  }
  case Op::Shf: {
    const bool right = I.mode & 1, clamp = I.mode & 2;
    forLanes(m, [&](int l) {
      uint64_t pair = (uint64_t(uint32_t(b[l])) << 32) | uint32_t(a[l]);
      uint32_t n = uint32_t(c[l]);
      n = clamp ? std::min(n, 32u) : (n & 31);
      d[l] = right ? uint32_t(pair >> n) : uint32_t((pair << n) >> 32);
    });
    return;
  }
  case Op::Bfind:
    // position of the most significant non-sign bit; 0xffffffff when none
    byInt(I.ty, [&](auto z) {
      using T = decltype(z);
      using U = std::make_unsigned_t<T>;
      constexpr int bits = 8 * sizeof(T);
      forLanes(m, [&](int l) {
        U x = U(a[l]);
        if (std::is_signed_v<T> && (x >> (bits - 1))) x = U(~x);
        uint32_t r = 0xffffffffu;
        for (int i = bits - 1; i >= 0; --i)
          if ((x >> i) & 1) {
            r = uint32_t(i);
            break;
          }
        if (I.aux && r != 0xffffffffu) r = uint32_t(bits - 1) - r;
        d[l] = r;
      });
    });
    return;
  case Op::Prmt:
    forLanes(m, [&](int l) {
      uint64_t tmp = uint64_t(uint32_t(a[l])) | (uint64_t(uint32_t(b[l])) << 32);
      uint32_t sel = uint32_t(c[l]), r = 0;
      for (int i = 0; i < 4; ++i) {
        uint32_t s = (sel >> (4 * i)) & 0xf;
        uint32_t byte = uint32_t(tmp >> ((s & 7) * 8)) & 0xff;
        if (s & 8) byte = (byte & 0x80) ? 0xff : 0;
        r |= byte << (8 * i);
      }
      d[l] = r;
    });
    return;
  case Op::Selp:
    forLanes(m, [&](int l) { d[l] = (c[l] & 1) ? a[l] : b[l]; });
    return;
  case Op::Slct:
    if (I.ty2 == Ty::F32)
      forLanes(m, [&](int l) { d[l] = f32(c[l]) >= 0.0f ? a[l] : b[l]; });
    else
      forLanes(m, [&](int l) { d[l] = as<int32_t>(c[l]) >= 0 ? a[l] : b[l]; });
    return;
  default:
    return;
  }
}

} // namespace weft::sim
