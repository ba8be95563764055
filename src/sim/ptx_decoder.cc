// The PTX decoder (ptx_decoder.h): a table from opcode family to decode function. Every
// instruction first has its guard and its modifiers read the same way (type from the last
// type suffix, rounding, state space, ftz/sat/approx/volatile flags); the family's function
// then picks the Op and resolves the operands; a last check rejects types the executor
// cannot run for that Op.
#include "sim/ptx_decoder.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace weft::sim::ptx {

namespace {

/// An opcode split at its dots: "ld.global.v2.f32" → base "ld", parts {global, v2, f32},
/// types {f32}.
struct Mods {
  std::string base;
  std::vector<std::string> parts;
  std::vector<Ty> types;
  bool has(const char* m) const { return std::find(parts.begin(), parts.end(), m) != parts.end(); }
};

Mods splitOpcode(const std::string& opc) {
  Mods m;
  size_t start = 0;
  bool first = true;
  for (size_t i = 0; i <= opc.size(); ++i)
    if (i == opc.size() || opc[i] == '.') {
      std::string part = opc.substr(start, i - start);
      if (first)
        m.base = part, first = false;
      else {
        m.parts.push_back(part);
        if (auto t = tyFromName(part)) m.types.push_back(*t);
      }
      start = i + 1;
    }
  return m;
}

uint64_t floatImmBits(const POperand& o, Ty ty, uint32_t line) {
  if (o.fhex) {
    if (ty == Ty::F32 && o.fdouble) {
      double d;
      uint64_t b = uint64_t(o.value);
      std::memcpy(&d, &b, 8);
      float f = float(d);
      uint32_t r;
      std::memcpy(&r, &f, 4);
      return r;
    }
    if (ty == Ty::F64 && !o.fdouble) {
      float f;
      uint32_t b = uint32_t(o.value);
      std::memcpy(&f, &b, 4);
      double d = f;
      uint64_t r;
      std::memcpy(&r, &d, 8);
      return r;
    }
    return uint64_t(o.value);
  }
  if (ty == Ty::F64) {
    uint64_t r;
    std::memcpy(&r, &o.fvalue, 8);
    return r;
  }
  if (ty == Ty::F32) {
    float f = float(o.fvalue);
    uint32_t r;
    std::memcpy(&r, &f, 4);
    return r;
  }
  fail(line, fmt::format("floating-point immediate used with type .{}", tyName(ty)));
}

Cmp cmpFromName(const std::string& s, bool& ok) {
  static const std::pair<const char*, Cmp> t[] = {
      {"eq", Cmp::Eq},   {"ne", Cmp::Ne},   {"lt", Cmp::Lt},   {"le", Cmp::Le},   {"gt", Cmp::Gt},
      {"ge", Cmp::Ge},   {"lo", Cmp::Lo},   {"ls", Cmp::Ls},   {"hi", Cmp::Hi},   {"hs", Cmp::Hs},
      {"equ", Cmp::Equ}, {"neu", Cmp::Neu}, {"ltu", Cmp::Ltu}, {"leu", Cmp::Leu}, {"gtu", Cmp::Gtu},
      {"geu", Cmp::Geu}, {"num", Cmp::Num}, {"nan", Cmp::Nan}};
  for (auto& [n, c] : t)
    if (s == n) {
      ok = true;
      return c;
    }
  ok = false;
  return Cmp::Eq;
}

/// The thread-block cluster special registers (%cluster_ctarank, %clusterid.x, ...).
bool clusterSreg(const std::string& name, uint8_t& mode) {
  static const std::pair<const char*, Sreg> sregs[] = {
      {"%cluster_ctarank", Sreg::ClusterCtarank},
      {"%cluster_nctarank", Sreg::ClusterNctarank},
      {"%clusterid.x", Sreg::ClusteridX},
      {"%clusterid.y", Sreg::ClusteridY},
      {"%clusterid.z", Sreg::ClusteridZ},
      {"%nclusterid.x", Sreg::NclusteridX},
      {"%nclusterid.y", Sreg::NclusteridY},
      {"%nclusterid.z", Sreg::NclusteridZ},
      {"%cluster_ctaid.x", Sreg::ClusterCtaidX},
      {"%cluster_ctaid.y", Sreg::ClusterCtaidY},
      {"%cluster_ctaid.z", Sreg::ClusterCtaidZ},
      {"%cluster_nctaid.x", Sreg::ClusterNctaidX},
      {"%cluster_nctaid.y", Sreg::ClusterNctaidY},
      {"%cluster_nctaid.z", Sreg::ClusterNctaidZ},
      {"%is_explicit_cluster", Sreg::IsExplicitCluster}};
  for (auto& [n, sr] : sregs)
    if (name == n) {
      mode = uint8_t(sr);
      return true;
    }
  return false;
}

class Decoder;

/// One opcode family: the function that decodes it, the Op its name stands for (families
/// whose Op depends on their modifiers, such as mad or ld, ignore it), and whether the opcode
/// must carry a type suffix.
struct Family {
  const char* name;
  void (Decoder::*decode)(Op);
  Op op;
  bool typed;
};

const Family* familyOf(const std::string& base);

class Decoder {
public:
  Decoder(const DecodeContext& cx, const PInstr& p)
      : cx_(cx), f_(cx.function), p_(p), m_(splitOpcode(p.opcode)), base_(m_.base),
        ty_(m_.types.empty() ? Ty::None : m_.types.back()) {}

  Instr run();

  // the families (kFamilies below maps opcode names to them)
  void mov(Op);
  void addSub(Op op);
  void addWithCarry(Op op);
  void mul(Op);
  void mad(Op);
  void binaryFamily(Op op);
  void unaryFamily(Op op);
  void minMax(Op op);
  void bfe(Op);
  void bfi(Op);
  void shf(Op);
  void bfind(Op);
  void prmt(Op);
  void selp(Op);
  void slct(Op);
  void setp(Op);
  void cvt(Op);
  void cvta(Op);
  void testp(Op);
  void ldSt(Op);
  void atom(Op op);
  void bar(Op);
  void shfl(Op);
  void vote(Op);
  void activemask(Op);
  void mapa(Op);
  void barrierCluster(Op);
  void bra(Op);
  void call(Op);
  void noOperands(Op op);
  void ldmatrix(Op);
  void mma(Op);
  void cpAsync(Op);
  void wgmma(Op);

private:
  [[noreturn]] void bad(const std::string& why) const {
    fail(p_.line, fmt::format("'{}' in function '{}': {}", p_.opcode, f_.name, why));
  }
  void readModifiers();
  uint32_t regOf(const POperand& o, const char* what) const;
  Operand dst(const POperand& o) const;
  /// A symbol's address in its space (sp), with kFrameRel in flags when it lives in the
  /// thread's frame; ~0 for dynamic shared memory (relative to the launch's base).
  uint64_t symAddress(const std::string& name, uint32_t& flags, Space& sp) const;
  /// A source operand read as type t.
  Operand src(const POperand& o, Ty t) const;
  void need(size_t n) const;
  /// Sets the address operand (base register, offset, space) of ld/st/atom.
  void addr(const POperand& o);
  void setCmp(size_t idx);
  void binary(Op op);
  void unary(Op op);
  void ternary(Op op);

  const DecodeContext& cx_;
  Function& f_;
  const PInstr& p_;
  const Mods m_;
  const std::string& base_;
  const Ty ty_;
  Instr in_;
};

Instr Decoder::run() {
  in_.line = p_.line;
  in_.func = cx_.functionIndex;
  if (f_.isGridBarrier) in_.flags |= kSync;
  if (!p_.guard.empty()) {
    auto it = cx_.body.regs.find(p_.guard);
    if (it == cx_.body.regs.end()) bad("unknown guard predicate " + p_.guard);
    in_.guard = it->second.slot;
    in_.flags |= kHasGuard;
    if (p_.guardNeg) in_.flags |= kNegGuard;
  }
  in_.ty = ty_;
  readModifiers();
  const Family* family = familyOf(base_);
  if (ty_ == Ty::None && (!family || family->typed)) bad("missing type suffix");
  if (!family) bad("unsupported instruction");
  (this->*family->decode)(family->op);
  // Types we cannot execute for a given op are rejected here rather than at run time.
  if (tyIsPackedInt(ty_) && in_.op != Op::Add && in_.op != Op::Sub && in_.op != Op::Min &&
      in_.op != Op::Max)
    bad("packed 16-bit integer types are only supported for add, sub, min and max");
  if (tyIsPackedInt(ty_) && (in_.flags & kSat)) bad(".sat is not defined for packed integers");
  if ((in_.op == Op::Div || in_.op == Op::Rem || in_.op == Op::MulLo || in_.op == Op::MulHi ||
       in_.op == Op::MulWide) &&
      (ty_ == Ty::F16x2 || ty_ == Ty::BF16x2))
    bad("packed half types are not supported for this instruction");
  return in_;
}

void Decoder::readModifiers() {
  for (auto& part : m_.parts) {
    if (part == "ftz")
      in_.flags |= kFtz;
    else if (part == "sat")
      in_.flags |= kSat;
    else if (part == "approx")
      in_.flags |= kApprox;
    else if (part == "uni")
      in_.flags |= kUni;
    else if (part == "rn")
      in_.round = Round::Rn;
    else if (part == "rz")
      in_.round = Round::Rz;
    else if (part == "rm")
      in_.round = Round::Rm;
    else if (part == "rp")
      in_.round = Round::Rp;
    else if (part == "rni")
      in_.round = Round::Rni;
    else if (part == "rzi")
      in_.round = Round::Rzi;
    else if (part == "rmi")
      in_.round = Round::Rmi;
    else if (part == "rpi")
      in_.round = Round::Rpi;
    else if (part == "rna")
      in_.round = Round::Rna;
    else if (part == "global")
      in_.space = Space::Global;
    else if (part == "shared" || part == "shared::cta")
      in_.space = Space::Shared;
    else if (part == "shared::cluster")
      in_.space = Space::SharedCluster;
    else if (part == "local")
      in_.space = Space::Local;
    else if (part == "param")
      in_.space = Space::Param;
    else if (part == "const")
      in_.space = Space::Const;
    else if (part == "volatile" || part == "acquire" || part == "release" || part == "relaxed" ||
             part == "acq_rel")
      in_.flags |= kVolatile;
  }
}

// ---------------------------------------------------------------- operands

uint32_t Decoder::regOf(const POperand& o, const char* what) const {
  if (o.kind != POperand::Reg) bad(fmt::format("{} must be a register", what));
  auto it = cx_.body.regs.find(o.name);
  if (it == cx_.body.regs.end()) bad("unknown register " + o.name);
  return it->second.slot;
}

Operand Decoder::dst(const POperand& o) const {
  Operand r;
  if (o.kind == POperand::Sink) {
    r.kind = Operand::Reg;
    r.reg = f_.ccReg; // harmless scratch: overwritten sink value is never read as carry
    return r;
  }
  r.kind = Operand::Reg;
  r.reg = regOf(o, "destination");
  return r;
}

uint64_t Decoder::symAddress(const std::string& name, uint32_t& flags, Space& sp) const {
  if (name.rfind("@out:", 0) == 0) {
    unsigned off = 0, sz = 0;
    std::sscanf(name.c_str(), "@out:%u:%u", &off, &sz);
    flags |= kFrameRel;
    sp = Space::Local;
    return cx_.body.outgoingBase + off;
  }
  for (auto& pr : f_.params)
    if (pr.name == name) {
      if (f_.isKernel) {
        sp = Space::Param;
        return pr.offset;
      }
      flags |= kFrameRel;
      sp = Space::Local;
      return pr.offset;
    }
  for (auto& pr : f_.returns)
    if (pr.name == name) {
      flags |= kFrameRel;
      sp = Space::Local;
      return pr.offset;
    }
  auto it = cx_.varIndex.find(name);
  if (it != cx_.varIndex.end()) {
    const Variable& v = cx_.program.variables[it->second];
    sp = v.space;
    if (v.external) return ~uint64_t(0); // relative to the launch's dynamic shared base
    return v.address;
  }
  if (name == cx_.body.depotName) {
    flags |= kFrameRel;
    sp = Space::Local;
    return 0;
  }
  bad("unknown symbol " + name);
}

Operand Decoder::src(const POperand& o, Ty t) const {
  Operand r;
  switch (o.kind) {
  case POperand::Reg: {
    auto it = cx_.body.regs.find(o.name);
    if (it == cx_.body.regs.end()) {
      bad("unknown register or unsupported special register " + o.name);
    }
    r.kind = Operand::Reg;
    r.reg = it->second.slot;
    return r;
  }
  case POperand::Imm:
    r.kind = Operand::Imm;
    r.imm = uint64_t(o.value);
    if (tyIsFloat(t) && t != Ty::F16x2 && t != Ty::BF16x2) {
      // integer literal used as float operand: PTX treats it as its value
      POperand q = o;
      q.kind = POperand::FImm;
      q.fvalue = double(o.value);
      r.imm = floatImmBits(q, t, p_.line);
    }
    return r;
  case POperand::FImm:
    r.kind = Operand::Imm;
    r.imm = floatImmBits(o, t, p_.line);
    return r;
  case POperand::Sym: {
    uint32_t fl = 0;
    Space sp;
    uint64_t a = symAddress(o.name, fl, sp);
    if (fl & kFrameRel)
      bad("address of a frame symbol used as a value (only the depot is supported, via mov)");
    if (a == ~uint64_t(0)) bad("address of dynamic shared memory must be taken with mov");
    r.kind = Operand::Imm;
    r.imm = a + uint64_t(o.value);
    return r;
  }
  default:
    bad("unsupported operand form");
  }
  return r;
}

void Decoder::need(size_t n) const {
  if (p_.ops.size() != n) bad(fmt::format("expected {} operands, found {}", n, p_.ops.size()));
}

void Decoder::addr(const POperand& o) {
  if (o.kind != POperand::Addr) bad("expected an address operand [..]");
  in_.addr.kind = Operand::Imm;
  in_.addr.imm = uint64_t(o.value);
  if (o.baseIsReg) {
    in_.flags |= kAddrReg;
    in_.addr.reg = regOf(regNamed(o.name), "address base");
  } else if (!o.name.empty()) {
    uint32_t fl = 0;
    Space sp = in_.space;
    uint64_t a = symAddress(o.name, fl, sp);
    if (a == ~uint64_t(0)) {
      in_.flags |= kDynShared;
      a = in_.space == Space::Generic ? kSharedWindow : 0;
    }
    in_.flags |= fl;
    if (fl & kFrameRel) {
      if (in_.space != Space::Param && in_.space != Space::Local)
        bad("frame symbol used outside .param/.local");
      in_.space = Space::Local;
    } else if (in_.space == Space::Param && sp != Space::Param) {
      bad("ld.param of a non-parameter symbol");
    } else if (in_.space == Space::Generic) {
      // generic access to a named variable: its generic address
      if (sp == Space::Shared)
        a += kSharedWindow;
      else if (sp == Space::Const)
        a += kConstWindow;
    }
    in_.addr.imm += a;
  }
}

void Decoder::setCmp(size_t idx) {
  bool ok;
  if (idx >= m_.parts.size()) bad("missing comparison");
  in_.mode = uint8_t(cmpFromName(m_.parts[idx], ok));
  if (!ok) bad("unknown comparison ." + m_.parts[idx]);
}

void Decoder::binary(Op op) {
  need(3);
  in_.op = op;
  in_.nd = 1;
  in_.ns = 2;
  in_.d[0] = dst(p_.ops[0]);
  Ty sty = (op == Op::Shl || op == Op::Shr) ? Ty::U32 : ty_;
  in_.s[0] = src(p_.ops[1], ty_);
  in_.s[1] = src(p_.ops[2], sty);
}

void Decoder::unary(Op op) {
  need(2);
  in_.op = op;
  in_.nd = 1;
  in_.ns = 1;
  in_.d[0] = dst(p_.ops[0]);
  in_.s[0] = src(p_.ops[1], ty_);
}

void Decoder::ternary(Op op) {
  need(4);
  in_.op = op;
  in_.nd = 1;
  in_.ns = 3;
  in_.d[0] = dst(p_.ops[0]);
  for (int i = 0; i < 3; ++i)
    in_.s[i] = src(p_.ops[i + 1], ty_);
}

// ---------------------------------------------------------------- families

void Decoder::mov(Op) {
  need(2);
  const POperand& d = p_.ops[0];
  const POperand& s = p_.ops[1];
  in_.nd = 1;
  if (d.kind == POperand::Vec) {
    in_.op = Op::Unpack;
    in_.nd = uint8_t(d.elems.size());
    for (size_t i = 0; i < d.elems.size(); ++i) {
      in_.d[i] = dst(d.elems[i]);
      if (d.elems[i].kind == POperand::Sink) in_.d[i].kind = Operand::None;
    }
    in_.ns = 1;
    in_.s[0] = src(s, ty_);
  } else if (s.kind == POperand::Vec) {
    in_.op = Op::Pack;
    in_.d[0] = dst(d);
    in_.ns = uint8_t(s.elems.size());
    Ty et = tyBytes(ty_) == 8 && s.elems.size() == 2   ? Ty::B32
            : tyBytes(ty_) == 8                        ? Ty::B16
            : tyBytes(ty_) == 4 && s.elems.size() == 2 ? Ty::B16
                                                       : Ty::B8;
    for (size_t i = 0; i < s.elems.size(); ++i)
      in_.s[i] = src(s.elems[i], et);
  } else if (s.kind == POperand::Reg && !cx_.body.regs.count(s.name)) {
    static const std::pair<const char*, Sreg> sregs[] = {
        {"%tid.x", Sreg::TidX},
        {"%tid.y", Sreg::TidY},
        {"%tid.z", Sreg::TidZ},
        {"%ntid.x", Sreg::NtidX},
        {"%ntid.y", Sreg::NtidY},
        {"%ntid.z", Sreg::NtidZ},
        {"%ctaid.x", Sreg::CtaidX},
        {"%ctaid.y", Sreg::CtaidY},
        {"%ctaid.z", Sreg::CtaidZ},
        {"%nctaid.x", Sreg::NctaidX},
        {"%nctaid.y", Sreg::NctaidY},
        {"%nctaid.z", Sreg::NctaidZ},
        {"%laneid", Sreg::LaneId},
        {"%warpid", Sreg::WarpId},
        {"%nwarpid", Sreg::NWarpId},
        {"%smid", Sreg::SmId},
        {"%nsmid", Sreg::NSmId},
        {"%gridid", Sreg::GridId},
        {"%clock", Sreg::Clock},
        {"%clock64", Sreg::Clock64},
        {"%globaltimer", Sreg::GlobalTimer},
        {"%dynamic_smem_size", Sreg::DynSmemSize},
        {"%total_smem_size", Sreg::TotalSmemSize},
        {"%lanemask_eq", Sreg::LanemaskEq},
        {"%lanemask_lt", Sreg::LanemaskLt},
        {"%lanemask_le", Sreg::LanemaskLe},
        {"%lanemask_gt", Sreg::LanemaskGt},
        {"%lanemask_ge", Sreg::LanemaskGe}};
    bool found = false;
    for (auto& [n, sr] : sregs)
      if (s.name == n) {
        in_.mode = uint8_t(sr);
        found = true;
      }
    if (!found) found = clusterSreg(s.name, in_.mode);
    if (!found && s.name.rfind("%envreg", 0) == 0) {
      in_.mode = uint8_t(Sreg::EnvReg);
      found = true;
    }
    if (!found) bad("unknown register or special register " + s.name);
    in_.op = Op::MovSreg;
    in_.d[0] = dst(d);
  } else if (s.kind == POperand::Sym && s.name == cx_.body.depotName) {
    in_.op = Op::MovDepot;
    in_.d[0] = dst(d);
    in_.s[0].kind = Operand::Imm;
    in_.s[0].imm = uint64_t(s.value);
  } else if (s.kind == POperand::Sym && cx_.varIndex.count(s.name) &&
             cx_.program.variables[cx_.varIndex.at(s.name)].external) {
    in_.op = Op::MovDynShared;
    in_.d[0] = dst(d);
    in_.ns = 1;
    in_.s[0].kind = Operand::Imm;
    in_.s[0].imm = uint64_t(s.value);
  } else {
    in_.op = Op::Mov;
    in_.d[0] = dst(d);
    in_.ns = 1;
    in_.s[0] = src(s, ty_);
  }
}

void Decoder::addSub(Op op) {
  bool cc = m_.has("cc");
  binary(op == Op::Add ? (cc ? Op::AddCC : Op::Add) : (cc ? Op::SubCC : Op::Sub));
}

void Decoder::addWithCarry(Op op) {
  binary(op);
  if (m_.has("cc")) in_.aux = 1;
}

void Decoder::mul(Op) {
  if (base_ == "mul24") bad("mul24 is not supported");
  if (tyIsFloat(ty_))
    binary(Op::Mul);
  else if (m_.has("hi"))
    binary(Op::MulHi);
  else if (m_.has("wide"))
    binary(Op::MulWide);
  else
    binary(Op::MulLo);
}

void Decoder::mad(Op) {
  if (m_.has("relu")) {
    if (base_ != "fma" ||
        (ty_ != Ty::F16 && ty_ != Ty::F16x2 && ty_ != Ty::BF16 && ty_ != Ty::BF16x2))
      bad(".relu needs fma of a half-precision type");
    in_.flags |= kRelu;
  }
  if (base_ == "fma" || tyIsFloat(ty_))
    ternary(Op::Fma);
  else if (base_ == "madc") {
    ternary(m_.has("hi") ? Op::MadCHi : Op::MadCLo);
    if (m_.has("cc")) in_.aux = 1;
  } else if (m_.has("hi"))
    ternary(Op::MadHi);
  else if (m_.has("wide"))
    ternary(Op::MadWide);
  else {
    ternary(Op::MadLo);
  }
  if (base_ == "mad" && m_.has("cc")) {
    in_.op = m_.has("hi") ? Op::MadCHi : Op::MadCLo;
    in_.aux = 1;  // sets carry
    in_.aux2 = 1; // no carry-in
  }
}

void Decoder::binaryFamily(Op op) {
  binary(op);
}

void Decoder::unaryFamily(Op op) {
  unary(op);
}

void Decoder::minMax(Op op) {
  binary(op);
  if (m_.has("NaN")) in_.flags |= kNaN;
  if (m_.has("relu")) in_.flags |= kRelu;
  // the opcode is split at dots: .xorsign.abs arrives as two parts
  if (m_.has("xorsign")) bad(".xorsign.abs is not supported");
  if ((in_.flags & kNaN) && !tyIsFloat(ty_)) bad(".NaN needs a floating-point type");
  if ((in_.flags & kRelu) && ty_ != Ty::S32 && ty_ != Ty::S16x2) bad(".relu needs .s32 or .s16x2");
}

void Decoder::bfe(Op) {
  need(4);
  in_.op = Op::Bfe;
  in_.nd = 1;
  in_.ns = 3;
  in_.d[0] = dst(p_.ops[0]);
  in_.s[0] = src(p_.ops[1], ty_);
  in_.s[1] = src(p_.ops[2], Ty::U32);
  in_.s[2] = src(p_.ops[3], Ty::U32);
}

void Decoder::bfi(Op) {
  need(5);
  in_.op = Op::Bfi;
  in_.nd = 1;
  in_.ns = 4;
  in_.d[0] = dst(p_.ops[0]);
  in_.s[0] = src(p_.ops[1], ty_);
  in_.s[1] = src(p_.ops[2], ty_);
  in_.s[2] = src(p_.ops[3], Ty::U32);
  in_.s[3] = src(p_.ops[4], Ty::U32);
}

void Decoder::shf(Op) {
  // shf.{l,r}.{wrap,clamp}.b32 d, a, b, c: funnel shift of {b:a} by c
  need(4);
  in_.op = Op::Shf;
  in_.mode = uint8_t((m_.has("r") ? 1 : 0) | (m_.has("clamp") ? 2 : 0));
  in_.nd = 1;
  in_.ns = 3;
  in_.d[0] = dst(p_.ops[0]);
  in_.s[0] = src(p_.ops[1], Ty::B32);
  in_.s[1] = src(p_.ops[2], Ty::B32);
  in_.s[2] = src(p_.ops[3], Ty::U32);
}

void Decoder::bfind(Op) {
  unary(Op::Bfind);
  if (m_.has("shiftamt")) in_.aux = 1;
}

void Decoder::prmt(Op) {
  if (m_.parts.size() != 1) bad("only the default prmt mode is supported");
  ternary(Op::Prmt);
}

void Decoder::selp(Op) {
  need(4);
  in_.op = Op::Selp;
  in_.nd = 1;
  in_.ns = 3;
  in_.d[0] = dst(p_.ops[0]);
  in_.s[0] = src(p_.ops[1], ty_);
  in_.s[1] = src(p_.ops[2], ty_);
  in_.s[2] = src(p_.ops[3], Ty::Pred);
}

void Decoder::slct(Op) {
  need(4);
  if (m_.types.size() != 2) bad("slct needs two types");
  in_.op = Op::Slct;
  in_.ty = m_.types[0];
  in_.ty2 = m_.types[1];
  in_.nd = 1;
  in_.ns = 3;
  in_.d[0] = dst(p_.ops[0]);
  in_.s[0] = src(p_.ops[1], in_.ty);
  in_.s[1] = src(p_.ops[2], in_.ty);
  in_.s[2] = src(p_.ops[3], in_.ty2);
}

void Decoder::setp(Op) {
  if (base_ == "set") bad("set is not supported (only setp)");
  setCmp(0);
  in_.op = Op::Setp;
  size_t nops = p_.ops.size();
  if (nops != 3 && nops != 4) bad("expected 3 or 4 operands");
  in_.nd = 1;
  in_.d[0] = dst(p_.ops[0]);
  if (!p_.ops[0].pipe.empty()) {
    in_.flags |= kHasPredOut;
    in_.nd = 2;
    in_.d[1] = dst(regNamed(p_.ops[0].pipe));
  }
  in_.ns = 2;
  in_.s[0] = src(p_.ops[1], ty_);
  in_.s[1] = src(p_.ops[2], ty_);
  if (m_.has("and")) in_.boolOp = BoolOp::And;
  if (m_.has("or")) in_.boolOp = BoolOp::Or;
  if (m_.has("xor")) in_.boolOp = BoolOp::Xor;
  if (nops == 4) {
    if (in_.boolOp == BoolOp::None) bad("a fourth operand needs .and/.or/.xor");
    in_.ns = 3;
    in_.s[2] = src(p_.ops[3], Ty::Pred);
    if (p_.ops[3].negated) in_.aux = 1;
  }
}

void Decoder::cvt(Op) {
  if (m_.has("tf32") || in_.round == Round::Rna) {
    // cvt.rna.tf32.f32 d, a: a rounded to tf32 into a .b32 (".tf32" is no scalar type: the one
    // type read is the source's)
    need(2);
    if (!m_.has("tf32") || in_.round != Round::Rna || m_.types.size() != 1 ||
        m_.types[0] != Ty::F32 || m_.has("satfinite") || m_.has("relu"))
      bad("of the conversions to tf32 only cvt.rna.tf32.f32 is supported");
    in_.op = Op::Cvt;
    in_.ty = Ty::B32;
    in_.ty2 = Ty::F32;
    in_.nd = in_.ns = 1;
    in_.d[0] = dst(p_.ops[0]);
    in_.s[0] = src(p_.ops[1], Ty::F32);
    return;
  }
  if (m_.types.size() == 2 && (m_.types[0] == Ty::F16x2 || m_.types[0] == Ty::BF16x2) &&
      m_.types[1] == Ty::F32) {
    // cvt.rn.f16x2.f32 d, a, b: d = {cvt(a) in the upper half, cvt(b) in the lower}
    need(3);
    if (m_.has("relu") || m_.has("satfinite")) bad("this cvt variant is not supported");
    in_.op = Op::Cvt;
    in_.ty = m_.types[0];
    in_.ty2 = Ty::F32;
    in_.nd = 1;
    in_.ns = 2;
    in_.d[0] = dst(p_.ops[0]);
    in_.s[0] = src(p_.ops[1], Ty::F32);
    in_.s[1] = src(p_.ops[2], Ty::F32);
    return;
  }
  need(2);
  if (m_.types.size() != 2) bad("cvt needs a destination and a source type");
  if (m_.has("pack") || m_.has("relu")) bad("this cvt variant is not supported");
  in_.op = Op::Cvt;
  in_.ty = m_.types[0];
  in_.ty2 = m_.types[1];
  in_.nd = in_.ns = 1;
  in_.d[0] = dst(p_.ops[0]);
  in_.s[0] = src(p_.ops[1], in_.ty2);
}

void Decoder::cvta(Op) {
  need(2);
  in_.op = Op::Cvta;
  if (m_.has("to")) in_.flags |= kToSpace;
  // shared::cluster addresses live in the generic shared window too (program.h)
  if (in_.space == Space::SharedCluster) in_.space = Space::Shared;
  if (in_.space == Space::Generic || in_.space == Space::Param)
    bad("cvta needs .global/.shared/.local/.const");
  in_.nd = in_.ns = 1;
  in_.d[0] = dst(p_.ops[0]);
  in_.s[0] = src(p_.ops[1], ty_);
}

void Decoder::testp(Op) {
  need(2);
  in_.op = Op::Testp;
  static const char* modes[] = {"finite", "infinite", "number", "notanumber", "normal", "subnormal"};
  bool found = false;
  for (int i = 0; i < 6; ++i)
    if (m_.has(modes[i])) in_.mode = uint8_t(i), found = true;
  if (!found) bad("unknown testp mode");
  in_.nd = in_.ns = 1;
  in_.d[0] = dst(p_.ops[0]);
  in_.s[0] = src(p_.ops[1], ty_);
}

void Decoder::ldSt(Op) {
  need(2);
  bool isLd = base_ != "st";
  in_.op = isLd ? Op::Ld : Op::St;
  int vec = m_.has("v2") ? 2 : m_.has("v4") ? 4 : 1;
  const POperand& val = isLd ? p_.ops[0] : p_.ops[1];
  addr(isLd ? p_.ops[1] : p_.ops[0]);
  if (vec > 1) {
    if (val.kind != POperand::Vec || int(val.elems.size()) != vec)
      bad("vector operand size mismatch");
    for (int i = 0; i < vec; ++i) {
      if (isLd) {
        in_.d[i] = dst(val.elems[i]);
        if (val.elems[i].kind == POperand::Sink) in_.d[i].kind = Operand::None;
      } else
        in_.s[i] = src(val.elems[i], ty_);
    }
  } else {
    if (isLd)
      in_.d[0] = dst(val);
    else
      in_.s[0] = src(val, ty_);
  }
  if (isLd)
    in_.nd = uint8_t(vec);
  else
    in_.ns = uint8_t(vec);
}

void Decoder::atom(Op op) {
  in_.op = op;
  static const std::pair<const char*, AtomOp> ops[] = {
      {"add", AtomOp::Add}, {"min", AtomOp::Min}, {"max", AtomOp::Max}, {"exch", AtomOp::Exch},
      {"cas", AtomOp::Cas}, {"and", AtomOp::And}, {"or", AtomOp::Or},   {"xor", AtomOp::Xor},
      {"inc", AtomOp::Inc}, {"dec", AtomOp::Dec}};
  bool found = false;
  for (auto& [n, a] : ops)
    if (m_.has(n)) in_.mode = uint8_t(a), found = true;
  if (!found) bad("unknown atomic operation");
  if (m_.has("v2") || m_.has("v4") || ty_ == Ty::F16 || ty_ == Ty::F16x2 || ty_ == Ty::BF16 ||
      ty_ == Ty::BF16x2)
    bad("vector and half-precision atomics are not supported");
  size_t first = 0;
  if (in_.op == Op::Atom) {
    in_.nd = 1;
    in_.d[0] = dst(p_.ops[0]);
    first = 1;
  }
  size_t nsrc = AtomOp(in_.mode) == AtomOp::Cas ? 2 : 1;
  if (p_.ops.size() != first + 1 + nsrc) bad("wrong number of operands");
  addr(p_.ops[first]);
  in_.ns = uint8_t(nsrc);
  for (size_t i = 0; i < nsrc; ++i)
    in_.s[i] = src(p_.ops[first + 1 + i], ty_);
  if (m_.has("acquire") || m_.has("release") || m_.has("acq_rel")) in_.flags |= kVolatile;
}

void Decoder::bar(Op op) {
  if (m_.has("cluster")) return barrierCluster(op);
  if (m_.has("warp")) {
    in_.op = Op::BarWarp;
    if (p_.ops.size() == 1) in_.s[0] = src(p_.ops[0], Ty::U32), in_.ns = 1;
  } else {
    if (m_.has("red")) bad("bar.red is not supported");
    if (m_.has("arrive")) {
      if (p_.ops.size() != 2) bad("bar.arrive needs a barrier and a thread count");
      in_.aux = 1; // arrive without waiting
    }
    in_.op = Op::Bar;
    if (p_.ops.empty()) {
      in_.ns = 1;
      in_.s[0].kind = Operand::Imm;
    } else {
      in_.ns = uint8_t(std::min<size_t>(p_.ops.size(), 2));
      for (size_t i = 0; i < in_.ns; ++i)
        in_.s[i] = src(p_.ops[i], Ty::U32);
    }
  }
}

void Decoder::shfl(Op) {
  if (!m_.has("sync")) bad("only shfl.sync is supported");
  in_.op = Op::Shfl;
  in_.mode = uint8_t(m_.has("up")     ? ShflMode::Up
                     : m_.has("down") ? ShflMode::Down
                     : m_.has("bfly") ? ShflMode::Bfly
                                      : ShflMode::Idx);
  need(5);
  in_.nd = 1;
  in_.d[0] = dst(p_.ops[0]);
  if (!p_.ops[0].pipe.empty()) {
    in_.flags |= kHasPredOut;
    in_.nd = 2;
    in_.d[1] = dst(regNamed(p_.ops[0].pipe));
  }
  in_.ns = 4;
  in_.s[0] = src(p_.ops[1], Ty::B32);
  for (int i = 1; i < 4; ++i)
    in_.s[i] = src(p_.ops[i + 1], Ty::U32);
}

void Decoder::vote(Op) {
  if (!m_.has("sync")) bad("only vote.sync is supported");
  in_.op = Op::Vote;
  in_.mode = uint8_t(m_.has("all")   ? VoteMode::All
                     : m_.has("any") ? VoteMode::Any
                     : m_.has("uni") ? VoteMode::Uni
                                     : VoteMode::Ballot);
  need(3);
  in_.nd = 1;
  in_.d[0] = dst(p_.ops[0]);
  in_.ns = 2;
  in_.s[0] = src(p_.ops[1], Ty::Pred);
  if (p_.ops[1].negated) in_.aux = 1;
  in_.s[1] = src(p_.ops[2], Ty::U32);
}

void Decoder::activemask(Op) {
  need(1);
  in_.op = Op::Activemask;
  in_.nd = 1;
  in_.d[0] = dst(p_.ops[0]);
}

void Decoder::bra(Op) {
  if (base_ == "brx") bad("indirect branches are not supported");
  need(1);
  if (p_.ops[0].kind != POperand::Sym) bad("branch target must be a label");
  in_.op = Op::Bra; // the target label is resolved by the linker
}

void Decoder::call(Op) {
  in_.op = Op::Call; // the callee is resolved by the linker
  in_.callArgBase = uint32_t(f_.callArgs.size());
  in_.aux = f_.numRegs;
  in_.aux2 = f_.frameSize;
  auto addArg = [&](const std::string& name) {
    unsigned off = 0, sz = 0;
    if (name.rfind("@out:", 0) != 0 || std::sscanf(name.c_str(), "@out:%u:%u", &off, &sz) != 2)
      bad("call argument '" + name + "' is not a .param declared in the call sequence");
    f_.callArgs.push_back({cx_.body.outgoingBase + off, sz});
  };
  for (auto& r : p_.callRets)
    addArg(r);
  for (auto& a : p_.callArgs)
    addArg(a);
  in_.nd = uint8_t(p_.callRets.size());
  in_.ns = uint8_t(p_.callArgs.size());
}

void Decoder::noOperands(Op op) {
  in_.op = op;
}

// ---------------------------------------------------------------- thread-block clusters

void Decoder::mapa(Op) {
  // mapa.shared::cluster.{u32,u64} d, a, rank (a shared::cta or shared::cluster address), or
  // mapa.u64 d, a, rank on generic addresses of shared memory; getctarank likewise, d, a
  const bool rankOf = base_ == "getctarank";
  if (ty_ != Ty::U32 && ty_ != Ty::U64) bad("needs .u32 or .u64");
  if (in_.space != Space::SharedCluster && in_.space != Space::Generic)
    bad("takes .shared::cluster or generic addresses");
  if (in_.space == Space::Generic && ty_ != Ty::U64) bad("generic addresses need .u64");
  need(rankOf ? 2 : 3);
  in_.op = Op::Mapa;
  in_.mode = rankOf ? 1 : 0;
  in_.nd = 1;
  in_.ns = rankOf ? 1 : 2;
  in_.d[0] = dst(p_.ops[0]);
  in_.s[0] = src(p_.ops[1], ty_);
  if (!rankOf) in_.s[1] = src(p_.ops[2], Ty::U32);
}

void Decoder::barrierCluster(Op) {
  // barrier.cluster.arrive{.release,.relaxed}{.aligned} / barrier.cluster.wait{.acquire}{.aligned}
  const bool arrive = m_.has("arrive"), wait = m_.has("wait");
  if (base_ != "barrier" || arrive == wait)
    bad("only barrier.cluster.arrive and barrier.cluster.wait are supported");
  if (!p_.ops.empty()) bad("barrier.cluster takes no operands");
  in_.op = Op::BarCluster;
  in_.mode = arrive ? 1 : 2;
}

// ---------------------------------------------------------------- tensor cores, async copies

void Decoder::ldmatrix(Op) {
  if (!m_.has("sync") || !m_.has("aligned") || !m_.has("m8n8") || ty_ != Ty::B16)
    bad("only ldmatrix.sync.aligned.m8n8{.x1,.x2,.x4}{.trans}.shared.b16 is supported");
  int num = m_.has("x4") ? 4 : m_.has("x2") ? 2 : m_.has("x1") ? 1 : 0;
  if (!num) bad("ldmatrix needs .x1, .x2 or .x4");
  if (in_.space != Space::Shared && in_.space != Space::Generic)
    bad("ldmatrix reads shared memory");
  need(2);
  in_.op = Op::Ldmatrix;
  in_.mode = m_.has("trans") ? 1 : 0;
  const POperand& v = p_.ops[0];
  if (v.kind == POperand::Vec) {
    if (int(v.elems.size()) != num) bad("ldmatrix: one destination register per matrix");
    for (int i = 0; i < num; ++i)
      in_.d[i] = dst(v.elems[size_t(i)]);
  } else {
    if (num != 1) bad("ldmatrix: one destination register per matrix");
    in_.d[0] = dst(v);
  }
  in_.nd = uint8_t(num);
  addr(p_.ops[1]);
}

void Decoder::mma(Op) {
  const auto& t = m_.types;
  // m16n8k16 with f16/bf16 inputs, or m16n8k8 with tf32 inputs (".tf32" is no scalar type:
  // it stays among the parts, and the types are the two f32s); both take A in 4 registers,
  // B in 2, C and D in 4.
  const bool sync = m_.has("sync") && m_.has("aligned") && m_.has("row") && m_.has("col");
  const bool half = m_.has("m16n8k16") && t.size() == 4 && t[0] == Ty::F32 && t[3] == Ty::F32 &&
                    t[1] == t[2] && (t[1] == Ty::F16 || t[1] == Ty::BF16);
  const bool tf32 = m_.has("m16n8k8") && m_.has("tf32") && t.size() == 2 && t[0] == Ty::F32 &&
                    t[1] == Ty::F32 &&
                    std::count(m_.parts.begin(), m_.parts.end(), std::string("tf32")) == 2;
  if (!sync || !(half || tf32))
    bad("only mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32 and "
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 are supported");
  need(4);
  in_.op = Op::Mma;
  in_.ty = Ty::F32;
  in_.ty2 = half ? t[1] : Ty::F32; // F32: tf32 inputs, m16n8k8
  auto regs = [&](const POperand& v, size_t n, const char* what) -> const std::vector<POperand>& {
    if (v.kind != POperand::Vec || v.elems.size() != n)
      bad(fmt::format("mma: {} takes a vector of {} registers", what, n));
    return v.elems;
  };
  const auto& d = regs(p_.ops[0], 4, "D");
  const auto& a = regs(p_.ops[1], 4, "A");
  const auto& b = regs(p_.ops[2], 2, "B");
  const auto& c = regs(p_.ops[3], 4, "C");
  for (size_t i = 0; i < 4; ++i)
    in_.d[i] = dst(d[i]);
  for (size_t i = 0; i < 4; ++i)
    in_.s[i] = src(a[i], Ty::B32);
  for (size_t i = 0; i < 2; ++i)
    in_.s[4 + i] = src(b[i], Ty::B32);
  for (size_t i = 0; i < 4; ++i)
    in_.s[6 + i] = src(c[i], Ty::F32);
  in_.nd = 4;
  in_.ns = 10;
}

void Decoder::cpAsync(Op) {
  if (!m_.has("async")) bad("only cp.async is supported");
  if (m_.has("commit_group")) {
    in_.op = Op::CpAsyncCommit;
    return;
  }
  if (m_.has("wait_group") || m_.has("wait_all")) {
    in_.op = Op::CpAsyncWait;
    if (m_.has("wait_group")) {
      need(1);
      in_.s[0] = src(p_.ops[0], Ty::U32);
      in_.ns = 1;
    }
    return;
  }
  // cp.async.{ca,cg}.shared{::cta}.global [dst], [src], cp-size{, src-size}
  if (!(m_.has("ca") || m_.has("cg")) || !m_.has("global"))
    bad("only cp.async.{ca,cg}.shared.global is supported");
  if (p_.ops.size() != 3 && p_.ops.size() != 4) bad("cp.async takes [dst], [src], cp-size{, src-size}");
  in_.op = Op::CpAsync;
  in_.space = Space::Shared;
  addr(p_.ops[0]);
  const POperand& from = p_.ops[1];
  if (from.kind != POperand::Addr || !from.baseIsReg)
    bad("cp.async: the global source must be [register + offset]");
  in_.s[0].kind = Operand::Reg;
  in_.s[0].reg = regOf(regNamed(from.name), "cp.async source");
  in_.s[0].imm = uint64_t(from.value);
  if (p_.ops[2].kind != POperand::Imm) bad("cp.async: cp-size must be an immediate");
  in_.aux = uint32_t(p_.ops[2].value);
  if (in_.aux != 4 && in_.aux != 8 && in_.aux != 16) bad("cp.async: cp-size must be 4, 8 or 16");
  if (m_.has("cg") && in_.aux != 16) bad("cp.async.cg: cp-size must be 16");
  in_.ns = 1;
  if (p_.ops.size() == 4) {
    in_.s[1] = src(p_.ops[3], Ty::U32);
    in_.ns = 2;
  }
}

void Decoder::wgmma(Op) {
  if (!m_.has("sync") || !m_.has("aligned"))
    bad("wgmma instructions are .sync.aligned");
  if (m_.has("fence")) {
    need(0);
    in_.op = Op::WgmmaFence;
    return;
  }
  if (m_.has("commit_group")) {
    need(0);
    in_.op = Op::WgmmaCommit;
    return;
  }
  if (m_.has("wait_group")) {
    need(1);
    if (p_.ops[0].kind != POperand::Imm) bad("wgmma.wait_group takes an immediate group count");
    in_.op = Op::WgmmaWait;
    in_.s[0] = src(p_.ops[0], Ty::U32);
    in_.ns = 1;
    return;
  }
  if (!m_.has("mma_async")) bad("unsupported wgmma instruction");
  // wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16} d, a-desc, b-desc, scale-d,
  // imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b
  const auto& t = m_.types;
  int n = 0;
  for (const std::string& part : m_.parts)
    if (part.size() > 5 && part.rfind("m64n", 0) == 0 && part.substr(part.size() - 3) == "k16")
      n = std::atoi(part.substr(4, part.size() - 7).c_str());
  if (t.size() != 3 || t[0] != Ty::F32 || t[1] != t[2] || (t[1] != Ty::F16 && t[1] != Ty::BF16) ||
      n < 8 || n > 256 || n % 8 != 0 || m_.has("satfinite"))
    bad("only wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16} (N a multiple of 8 "
        "up to 256) is supported");
  if (p_.ops.size() == 7)
    bad("wgmma.mma_async with A in registers is not supported: A must be a shared-memory "
        "descriptor");
  need(8);
  const POperand& d = p_.ops[0];
  if (d.kind != POperand::Vec || int(d.elems.size()) != n / 2)
    bad(fmt::format("wgmma.mma_async m64n{}k16 with f32 accumulators takes {} registers in D", n,
                    n / 2));
  in_.op = Op::Wgmma;
  in_.ty = Ty::F32;
  in_.ty2 = t[1];
  in_.aux = uint32_t(f_.operandLists.size());
  in_.aux2 = uint32_t(n / 2);
  for (const POperand& r : d.elems)
    f_.operandLists.push_back(dst(r));
  in_.s[0] = src(p_.ops[1], Ty::B64);
  in_.s[1] = src(p_.ops[2], Ty::B64);
  in_.s[2] = src(p_.ops[3], Ty::Pred);
  if (p_.ops[3].negated) bad("wgmma.mma_async: a negated scale-d predicate is not supported");
  in_.ns = 3;
  auto imm = [&](size_t i, const char* what, std::initializer_list<int64_t> allowed) {
    const POperand& o = p_.ops[i];
    if (o.kind != POperand::Imm || std::find(allowed.begin(), allowed.end(), o.value) == allowed.end())
      bad(fmt::format("wgmma.mma_async: {} must be an immediate {}", what,
                      *allowed.begin() == 1 ? "1 or -1" : "0 or 1"));
    return o.value;
  };
  if (imm(4, "imm-scale-a", {1, -1}) < 0) in_.mode |= 1;
  if (imm(5, "imm-scale-b", {1, -1}) < 0) in_.mode |= 2;
  // imm-trans 1: the operand is MN-major (M-major A, N-major B)
  if (imm(6, "imm-trans-a", {0, 1})) in_.mode |= 4;
  if (imm(7, "imm-trans-b", {0, 1})) in_.mode |= 8;
}

// ---------------------------------------------------------------- the table

const Family kFamilies[] = {
    {"mov", &Decoder::mov, Op::Mov, true},
    {"add", &Decoder::addSub, Op::Add, true},
    {"sub", &Decoder::addSub, Op::Sub, true},
    {"addc", &Decoder::addWithCarry, Op::AddC, true},
    {"subc", &Decoder::addWithCarry, Op::SubC, true},
    {"mul", &Decoder::mul, Op::Mul, true},
    {"mul24", &Decoder::mul, Op::Mul, true}, // rejected
    {"mad", &Decoder::mad, Op::Mad, true},
    {"madc", &Decoder::mad, Op::Mad, true},
    {"fma", &Decoder::mad, Op::Fma, true},
    {"div", &Decoder::binaryFamily, Op::Div, true},
    {"rem", &Decoder::binaryFamily, Op::Rem, true},
    {"and", &Decoder::binaryFamily, Op::And, true},
    {"or", &Decoder::binaryFamily, Op::Or, true},
    {"xor", &Decoder::binaryFamily, Op::Xor, true},
    {"shl", &Decoder::binaryFamily, Op::Shl, true},
    {"shr", &Decoder::binaryFamily, Op::Shr, true},
    {"copysign", &Decoder::binaryFamily, Op::Copysign, true},
    {"abs", &Decoder::unaryFamily, Op::Abs, true},
    {"neg", &Decoder::unaryFamily, Op::Neg, true},
    {"not", &Decoder::unaryFamily, Op::Not, true},
    {"cnot", &Decoder::unaryFamily, Op::CNot, true},
    {"popc", &Decoder::unaryFamily, Op::Popc, true},
    {"clz", &Decoder::unaryFamily, Op::Clz, true},
    {"brev", &Decoder::unaryFamily, Op::Brev, true},
    {"rcp", &Decoder::unaryFamily, Op::Rcp, true},
    {"sqrt", &Decoder::unaryFamily, Op::Sqrt, true},
    {"rsqrt", &Decoder::unaryFamily, Op::Rsqrt, true},
    {"ex2", &Decoder::unaryFamily, Op::Ex2, true},
    {"lg2", &Decoder::unaryFamily, Op::Lg2, true},
    {"sin", &Decoder::unaryFamily, Op::Sin, true},
    {"cos", &Decoder::unaryFamily, Op::Cos, true},
    {"tanh", &Decoder::unaryFamily, Op::Tanh, true},
    {"min", &Decoder::minMax, Op::Min, true},
    {"max", &Decoder::minMax, Op::Max, true},
    {"bfe", &Decoder::bfe, Op::Bfe, true},
    {"bfi", &Decoder::bfi, Op::Bfi, true},
    {"shf", &Decoder::shf, Op::Shf, true},
    {"bfind", &Decoder::bfind, Op::Bfind, true},
    {"prmt", &Decoder::prmt, Op::Prmt, true},
    {"selp", &Decoder::selp, Op::Selp, true},
    {"slct", &Decoder::slct, Op::Slct, true},
    {"setp", &Decoder::setp, Op::Setp, true},
    {"set", &Decoder::setp, Op::Set, true}, // rejected
    {"cvt", &Decoder::cvt, Op::Cvt, true},
    {"cvta", &Decoder::cvta, Op::Cvta, true},
    {"testp", &Decoder::testp, Op::Testp, true},
    {"ld", &Decoder::ldSt, Op::Ld, true},
    {"ldu", &Decoder::ldSt, Op::Ld, true},
    {"st", &Decoder::ldSt, Op::St, true},
    {"atom", &Decoder::atom, Op::Atom, true},
    {"red", &Decoder::atom, Op::Red, true},
    {"membar", &Decoder::noOperands, Op::Fence, false},
    {"fence", &Decoder::noOperands, Op::Fence, false},
    {"bar", &Decoder::bar, Op::Bar, false},
    {"barrier", &Decoder::bar, Op::Bar, false},
    {"shfl", &Decoder::shfl, Op::Shfl, false},
    {"vote", &Decoder::vote, Op::Vote, false},
    {"activemask", &Decoder::activemask, Op::Activemask, false},
    {"mapa", &Decoder::mapa, Op::Mapa, true},
    {"getctarank", &Decoder::mapa, Op::Mapa, true},
    {"ldmatrix", &Decoder::ldmatrix, Op::Ldmatrix, true},
    {"mma", &Decoder::mma, Op::Mma, true},
    {"cp", &Decoder::cpAsync, Op::CpAsync, false},
    {"wgmma", &Decoder::wgmma, Op::Wgmma, false},
    {"bra", &Decoder::bra, Op::Bra, false},
    {"brx", &Decoder::bra, Op::Bra, true}, // rejected
    {"call", &Decoder::call, Op::Call, false},
    {"ret", &Decoder::noOperands, Op::Ret, false},
    {"exit", &Decoder::noOperands, Op::Exit, false},
    {"trap", &Decoder::noOperands, Op::Trap, false},
    {"nanosleep", &Decoder::noOperands, Op::Nop, false},
    {"pmevent", &Decoder::noOperands, Op::Nop, false},
};

const Family* familyOf(const std::string& base) {
  static const std::unordered_map<std::string_view, const Family*> index = [] {
    std::unordered_map<std::string_view, const Family*> m;
    for (const Family& f : kFamilies)
      m.emplace(f.name, &f);
    return m;
  }();
  auto it = index.find(base);
  return it == index.end() ? nullptr : it->second;
}

} // namespace

Instr decodeInstruction(const DecodeContext& context, const PInstr& p) {
  return Decoder(context, p).run();
}

bool isKnownOpcode(const std::string& base) {
  return familyOf(base) != nullptr;
}

} // namespace weft::sim::ptx
