// Comparisons: lane semantics (lane_semantics.h) of setp. Integers compare signed or
// unsigned by type (.b types and lo/ls/hi/hs unsigned); floats by IEEE rules, the unordered
// forms (equ, ltu, ...) true when either operand is NaN. The optional |q destination gets the
// negated result (for .f16x2/.bf16x2: the high halves' comparison), each combined with the
// optional predicate operand by .and/.or/.xor.
#include <cstdint>
#include <type_traits>

#include "sim/lane_semantics.h"
#include "sim/lane_values.h"

namespace weft::sim {

namespace {

template <class T> inline bool compareOrdered(Cmp c, T x, T y) {
  switch (c) {
  case Cmp::Eq:
    return x == y;
  case Cmp::Ne:
    return x != y;
  case Cmp::Lt:
  case Cmp::Lo:
    return x < y;
  case Cmp::Le:
  case Cmp::Ls:
    return x <= y;
  case Cmp::Gt:
  case Cmp::Hi:
    return x > y;
  case Cmp::Ge:
  case Cmp::Hs:
    return x >= y;
  default:
    return false;
  }
}

template <class T> inline bool compareFloat(Cmp c, T x, T y) {
  const bool nan = x != x || y != y;
  switch (c) {
  case Cmp::Eq:
  case Cmp::Lt:
  case Cmp::Le:
  case Cmp::Gt:
  case Cmp::Ge:
    return !nan && compareOrdered(c, x, y);
  case Cmp::Ne:
    return !nan && x != y;
  case Cmp::Equ:
    return nan || x == y;
  case Cmp::Neu:
    return nan || x != y;
  case Cmp::Ltu:
    return nan || x < y;
  case Cmp::Leu:
    return nan || x <= y;
  case Cmp::Gtu:
    return nan || x > y;
  case Cmp::Geu:
    return nan || x >= y;
  case Cmp::Num:
    return !nan;
  case Cmp::Nan:
    return nan;
  default:
    return false;
  }
}

} // namespace

void execSetp(const Instr& I, uint32_t m, uint64_t* R) {
  uint64_t* d = R + size_t(I.d[0].reg) * 32;
  uint64_t* q = (I.flags & kHasPredOut) ? R + size_t(I.d[1].reg) * 32 : nullptr;
  Src a = src(I.s[0], R), b = src(I.s[1], R);
  Src p = I.ns > 2 ? src(I.s[2], R) : Src{nullptr, 0};
  const Cmp c = Cmp(I.mode);
  const BoolOp bop = I.boolOp;
  const uint64_t pneg = I.aux ? 1 : 0;
  auto finish = [&](int l, bool r) {
    if (bop == BoolOp::None) {
      d[l] = r;
      if (q) q[l] = !r;
      return;
    }
    bool pv = ((p[l] & 1) ^ pneg) != 0;
    auto comb = [&](bool x) {
      return bop == BoolOp::And ? (x && pv) : bop == BoolOp::Or ? (x || pv) : (x != pv);
    };
    d[l] = comb(r);
    if (q) q[l] = comb(!r);
  };
  switch (I.ty) {
  case Ty::F32: {
    const bool ftz = I.flags & kFtz;
    forLanes(m, [&](int l) {
      float x = f32(a[l]), y = f32(b[l]);
      if (ftz) x = ftz32(x), y = ftz32(y);
      finish(l, compareFloat(c, x, y));
    });
    return;
  }
  case Ty::F64:
    forLanes(m, [&](int l) { finish(l, compareFloat(c, f64(a[l]), f64(b[l]))); });
    return;
  case Ty::F16:
  case Ty::BF16:
    forLanes(m, [&](int l) {
      finish(l, compareFloat(c, readFloat(a[l], I.ty), readFloat(b[l], I.ty)));
    });
    return;
  case Ty::F16x2:
  case Ty::BF16x2: {
    // p|q: p compares the low halves, q the high halves, each combined with c on its own
    // (every source is read before a destination is written: they may share a register)
    const Ty half = I.ty == Ty::F16x2 ? Ty::F16 : Ty::BF16;
    forLanes(m, [&](int l) {
      const bool pv = ((p[l] & 1) ^ pneg) != 0;
      bool t[2];
      for (int h = 0; h < 2; ++h) {
        t[h] = compareFloat(c, readFloat(a[l] >> (16 * h), half),
                            readFloat(b[l] >> (16 * h), half));
        if (bop != BoolOp::None)
          t[h] = bop == BoolOp::And ? (t[h] && pv) : bop == BoolOp::Or ? (t[h] || pv) : (t[h] != pv);
      }
      d[l] = t[0];
      if (q) q[l] = t[1];
    });
    return;
  }
  case Ty::Pred:
    forLanes(m, [&](int l) { finish(l, compareOrdered(c, a[l] & 1, b[l] & 1)); });
    return;
  default: {
    // b-types compare unsigned (only eq/ne are legal for them anyway)
    Ty t = I.ty;
    if (t == Ty::B8) t = Ty::U8;
    if (t == Ty::B16) t = Ty::U16;
    if (t == Ty::B32) t = Ty::U32;
    if (t == Ty::B64) t = Ty::U64;
    byInt(t, [&](auto z) {
      using T = decltype(z);
      using U = std::make_unsigned_t<T>;
      const bool unsignedCmp = c == Cmp::Lo || c == Cmp::Ls || c == Cmp::Hi || c == Cmp::Hs;
      forLanes(m, [&](int l) {
        bool r = unsignedCmp ? compareOrdered(c, as<U>(a[l]), as<U>(b[l]))
                             : compareOrdered(c, as<T>(a[l]), as<T>(b[l]));
        finish(l, r);
      });
    });
  }
  }
}

} // namespace weft::sim
