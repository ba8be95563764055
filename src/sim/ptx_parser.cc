#include "sim/ptx_parser.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>

#include <fmt/format.h>

#include "sim/reconvergence.h"
#include "sim/register_allocation.h"
#include "weft/error.h"

namespace weft::sim {

const char* tyName(Ty t) {
  static const char* names[] = {"none", "pred",  "b8",   "b16",    "b32", "b64", "u8",
                                "u16",  "u32",   "u64",  "s8",     "s16", "s32", "s64",
                                "f16",  "f16x2", "bf16", "bf16x2", "f32", "f64",
                                "s16x2", "u16x2"};
  return names[int(t)];
}

namespace {

std::optional<Ty> tyFromName(const std::string& s) {
  static const std::pair<const char*, Ty> table[] = {
      {"pred", Ty::Pred},     {"b8", Ty::B8},   {"b16", Ty::B16},     {"b32", Ty::B32},
      {"b64", Ty::B64},       {"u8", Ty::U8},   {"u16", Ty::U16},     {"u32", Ty::U32},
      {"u64", Ty::U64},       {"s8", Ty::S8},   {"s16", Ty::S16},     {"s32", Ty::S32},
      {"s64", Ty::S64},       {"f16", Ty::F16}, {"f16x2", Ty::F16x2}, {"bf16", Ty::BF16},
      {"bf16x2", Ty::BF16x2}, {"f32", Ty::F32}, {"f64", Ty::F64},   {"s16x2", Ty::S16x2},
      {"u16x2", Ty::U16x2}};
  for (auto& [n, t] : table)
    if (s == n) return t;
  return std::nullopt;
}

// ---------------------------------------------------------------- tokens
struct Token {
  enum Kind { Ident, Number, String, Punct, End } kind;
  std::string text;
  uint32_t line;
};

bool identStart(char c) {
  return std::isalpha(uint8_t(c)) || c == '_' || c == '$' || c == '%' || c == '.';
}
bool identChar(char c) {
  return std::isalnum(uint8_t(c)) || c == '_' || c == '$' || c == '.';
}

std::vector<Token> tokenize(const std::string& src) {
  std::vector<Token> out;
  uint32_t line = 1;
  size_t i = 0, n = src.size();
  while (i < n) {
    char c = src[i];
    if (c == '\n') {
      ++line;
      ++i;
      continue;
    }
    if (std::isspace(uint8_t(c))) {
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && src[i + 1] == '/') {
      while (i < n && src[i] != '\n')
        ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && src[i + 1] == '*') {
      i += 2;
      while (i + 1 < n && !(src[i] == '*' && src[i + 1] == '/')) {
        if (src[i] == '\n') ++line;
        ++i;
      }
      i += 2;
      continue;
    }
    if (c == '"') {
      size_t j = i + 1;
      while (j < n && src[j] != '"')
        ++j;
      out.push_back({Token::String, src.substr(i + 1, j - i - 1), line});
      i = j + 1;
      continue;
    }
    if (std::isdigit(uint8_t(c))) {
      size_t j = i;
      bool hex = (c == '0' && i + 1 < n && std::strchr("xXfFdD", src[i + 1]));
      while (j < n && (std::isalnum(uint8_t(src[j])) || src[j] == '.' ||
                       (!hex && (src[j] == '-' || src[j] == '+') &&
                        (src[j - 1] == 'e' || src[j - 1] == 'E'))))
        ++j;
      out.push_back({Token::Number, src.substr(i, j - i), line});
      i = j;
      continue;
    }
    if (identStart(c)) {
      size_t j = i + 1;
      while (j < n && identChar(src[j]))
        ++j;
      out.push_back({Token::Ident, src.substr(i, j - i), line});
      i = j;
      continue;
    }
    out.push_back({Token::Punct, std::string(1, c), line});
    ++i;
  }
  out.push_back({Token::End, "", line});
  return out;
}

// ---------------------------------------------------------------- parsed operands
struct POperand {
  enum Kind { Reg, Imm, FImm, Sym, Addr, Vec, Sink } kind = Imm;
  std::string name; // Reg / Sym / Addr base (register or symbol)
  bool baseIsReg = false;
  int64_t value = 0; // Imm, Addr offset, Sym offset
  double fvalue = 0; // FImm when decimal
  bool fhex = false; // FImm written as 0f/0d bits: value holds the bits
  bool fdouble = false;
  bool negated = false;        // !%p
  std::vector<POperand> elems; // Vec
  std::string pipe;            // "%p1|%p2": name of the second destination
};

POperand regNamed(const std::string& name) {
  POperand o;
  o.kind = POperand::Reg;
  o.name = name;
  return o;
}

struct PInstr {
  std::string guard;
  bool guardNeg = false;
  std::string opcode;
  std::vector<POperand> ops;
  // call
  std::vector<std::string> callRets, callArgs;
  std::string callee;
  uint32_t line;
};

[[noreturn]] void fail(uint32_t line, const std::string& what) {
  throw DeviceError(fmt::format("PTX line {}: {}", line, what));
}

uint64_t parseIntLiteral(const std::string& t, uint32_t line) {
  try {
    size_t pos = 0;
    uint64_t v;
    if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X'))
      v = std::stoull(t.substr(2), &pos, 16), pos += 2;
    else
      v = std::stoull(t, &pos, 10);
    if (pos < t.size() && (t[pos] == 'U' || t[pos] == 'u')) ++pos;
    if (pos != t.size()) fail(line, "bad integer literal '" + t + "'");
    return v;
  } catch (const std::logic_error&) {
    fail(line, "bad integer literal '" + t + "'");
  }
}

// ---------------------------------------------------------------- parser
struct RegInfo {
  uint32_t slot;
  Ty ty;
};

struct Scope {
  std::unordered_map<std::string, Function::Param> params; // outgoing .param in a callseq
};

class Parser {
public:
  Parser(const std::string& src, const GlobalAllocator& alloc)
      : toks_(tokenize(src)), alloc_(alloc) {
    size_t start = 0;
    for (size_t i = 0; i <= src.size(); ++i)
      if (i == src.size() || src[i] == '\n') {
        prog_.sourceLines.push_back(src.substr(start, i - start));
        start = i + 1;
      }
  }

  Program run();

private:
  const Token& peek(size_t k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  const Token& next() { return toks_[std::min(pos_++, toks_.size() - 1)]; }
  bool isPunct(const char* p, size_t k = 0) const {
    return peek(k).kind == Token::Punct && peek(k).text == p;
  }
  bool accept(const char* p) {
    if (peek().kind != Token::End && peek().text == p) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(const char* p) {
    if (!accept(p)) fail(peek().line, fmt::format("expected '{}' but found '{}'", p, peek().text));
  }
  std::string ident() {
    if (peek().kind != Token::Ident)
      fail(peek().line, fmt::format("expected a name but found '{}'", peek().text));
    return next().text;
  }
  uint64_t number() {
    bool neg = accept("-");
    if (peek().kind != Token::Number)
      fail(peek().line, fmt::format("expected a number but found '{}'", peek().text));
    auto& t = next();
    uint64_t v = parseIntLiteral(t.text, t.line);
    return neg ? uint64_t(-int64_t(v)) : v;
  }
  void skipLine() {
    uint32_t l = peek().line;
    while (peek().kind != Token::End && peek().line == l)
      ++pos_;
  }
  void skipStatement() {
    while (peek().kind != Token::End && !isPunct(";"))
      ++pos_;
    accept(";");
  }

  void parseVariable(Space space, bool external, Function* inFunc);
  void parseFunction(bool isKernel, bool external);
  void parseParamList(Function& f, std::vector<Function::Param>& out, bool isKernel);
  Function::Param parseParamDecl(uint32_t& offset);
  void parseBody(Function& f, uint32_t fidx);
  POperand parseOperand();
  PInstr parseInstruction(uint32_t line);
  void decode(Function& f, uint32_t fidx, const PInstr& p);
  void finish();

  // A parsed function body waiting to be decoded. Decoding happens once the whole module
  // is read, because shared memory is laid out per kernel over the call graph.
  struct Body {
    uint32_t fidx;
    std::unordered_map<std::string, RegInfo> regs;
    std::unordered_map<std::string, uint32_t> labels; // label → index in pending
    std::string depotName;
    uint32_t outgoingBase;
    std::vector<PInstr> pending;
  };
  std::vector<Body> bodies_;
  void layoutShared();

  // per-function decode state
  std::unordered_map<std::string, RegInfo> regs_;
  std::unordered_map<std::string, uint32_t> labels_;
  std::vector<std::pair<uint32_t, std::string>> branchFixups_; // pc → label
  std::vector<std::pair<uint32_t, std::string>> callFixups_;   // pc → callee
  std::vector<Scope> scopes_;
  uint32_t outgoingBase_ = 0, outgoingTop_ = 0, outgoingMax_ = 0;
  std::string depotName_;
  std::unordered_map<std::string, size_t> varIndex_;

  std::vector<Token> toks_;
  size_t pos_ = 0;
  const GlobalAllocator& alloc_;
  Program prog_;
};

Program Parser::run() {
  while (peek().kind != Token::End) {
    const Token& t = peek();
    if (t.kind != Token::Ident)
      fail(t.line, fmt::format("unexpected '{}' at module scope", t.text));
    if (t.text == ".version" || t.text == ".target" || t.text == ".address_size" ||
        t.text == ".file" || t.text == ".loc" || t.text == ".section") {
      skipLine();
      continue;
    }
    bool external = false;
    while (peek().text == ".visible" || peek().text == ".extern" || peek().text == ".weak" ||
           peek().text == ".common") {
      if (peek().text == ".extern") external = true;
      ++pos_;
    }
    const std::string d = peek().text;
    if (d == ".entry" || d == ".func") {
      ++pos_;
      parseFunction(d == ".entry", external);
    } else if (d == ".global" || d == ".const" || d == ".shared") {
      ++pos_;
      parseVariable(d == ".global"  ? Space::Global
                    : d == ".const" ? Space::Const
                                    : Space::Shared,
                    external, nullptr);
    } else if (d == ".pragma") {
      skipStatement();
    } else {
      fail(t.line, fmt::format("unsupported module-scope directive '{}'", d));
    }
  }
  finish();
  return std::move(prog_);
}

void Parser::parseVariable(Space space, bool external, Function* inFunc) {
  uint32_t line = peek().line;
  uint32_t align = 0;
  Ty ty = Ty::None;
  while (peek().kind == Token::Ident && peek().text[0] == '.') {
    std::string a = next().text;
    if (a == ".align")
      align = uint32_t(number());
    else if (auto t = tyFromName(a.substr(1)))
      ty = *t;
    else if (a == ".v2" || a == ".v4")
      fail(line, "vector-typed variables are not supported");
    else
      fail(line, fmt::format("unsupported variable attribute '{}'", a));
  }
  if (ty == Ty::None) fail(line, "variable without a type");
  Variable v;
  v.name = ident();
  v.space = space;
  uint64_t elem = std::max(1, tyBytes(ty));
  uint64_t count = 1;
  bool unsized = false;
  while (accept("[")) {
    if (accept("]")) {
      unsized = true;
      continue;
    }
    count *= number();
    expect("]");
  }
  v.size = unsized ? 0 : count * elem;
  v.align = align ? align : uint32_t(elem);
  v.external = unsized;
  if (unsized && !(space == Space::Shared))
    fail(line, "unsized arrays are only supported for .extern .shared");
  (void)external;
  if (accept("=")) {
    std::vector<uint64_t> vals;
    bool brace = accept("{");
    do {
      if (isPunct("}")) break;
      if (peek().kind == Token::Number || isPunct("-")) {
        bool neg = accept("-");
        auto& t = next();
        uint64_t val;
        if (t.text.size() > 2 && t.text[0] == '0' &&
            (t.text[1] == 'f' || t.text[1] == 'F' || t.text[1] == 'd' || t.text[1] == 'D'))
          val = parseIntLiteral("0x" + t.text.substr(2), t.line);
        else if (t.text.find('.') != std::string::npos) {
          double d = std::stod(t.text);
          if (neg) d = -d, neg = false;
          if (ty == Ty::F32) {
            float f = float(d);
            uint32_t b;
            std::memcpy(&b, &f, 4);
            val = b;
          } else
            std::memcpy(&val, &d, 8);
        } else
          val = parseIntLiteral(t.text, t.line);
        vals.push_back(neg ? uint64_t(-int64_t(val)) : val);
      } else {
        fail(peek().line,
             "unsupported variable initialiser (only numeric constants are supported)");
      }
    } while (accept(","));
    if (brace) expect("}");
    v.init.resize(v.size);
    for (size_t i = 0; i < vals.size() && (i + 1) * elem <= v.size; ++i)
      std::memcpy(v.init.data() + i * elem, &vals[i], elem);
  }
  expect(";");
  (void)inFunc;
  // lay out
  if (space == Space::Shared) {
    // laid out in layoutShared() once every kernel's use is known
    if (v.external) prog_.dynamicSharedAlign = std::max(prog_.dynamicSharedAlign, v.align);
  } else if (space == Space::Const) {
    uint64_t a = v.align, off = (prog_.constData.size() + a - 1) / a * a;
    prog_.constData.resize(off + v.size);
    if (!v.init.empty()) std::memcpy(prog_.constData.data() + off, v.init.data(), v.size);
    v.address = off;
  } else {
    v.address = alloc_(std::max<uint64_t>(v.size, 1));
  }
  if (varIndex_.count(v.name)) fail(line, fmt::format("variable '{}' declared twice", v.name));
  varIndex_[v.name] = prog_.variables.size();
  prog_.variables.push_back(std::move(v));
}

Function::Param Parser::parseParamDecl(uint32_t& offset) {
  uint32_t line = peek().line;
  expect(".param");
  uint32_t align = 0;
  Ty ty = Ty::None;
  while (peek().kind == Token::Ident && peek().text[0] == '.') {
    std::string a = next().text;
    if (a == ".align")
      align = uint32_t(number());
    else if (a == ".ptr" || a == ".global" || a == ".shared" || a == ".const" || a == ".local")
      continue;
    else if (auto t = tyFromName(a.substr(1)))
      ty = *t;
    else
      fail(line, fmt::format("unsupported parameter attribute '{}'", a));
  }
  if (ty == Ty::None) fail(line, "parameter without a type");
  Function::Param p;
  p.name = ident();
  uint32_t elem = std::max(1, tyBytes(ty));
  uint64_t count = 1;
  while (accept("[")) {
    count *= number();
    expect("]");
  }
  p.size = uint32_t(count * elem);
  p.align = align ? align : elem;
  offset = (offset + p.align - 1) / p.align * p.align;
  p.offset = offset;
  offset += p.size;
  return p;
}

void Parser::parseParamList(Function& f, std::vector<Function::Param>& out, bool isKernel) {
  expect("(");
  uint32_t off = 0;
  if (!isPunct(")")) {
    do
      out.push_back(parseParamDecl(off));
    while (accept(","));
  }
  expect(")");
  (void)f;
  (void)isKernel;
}

void Parser::parseFunction(bool isKernel, bool external) {
  Function f;
  f.isKernel = isKernel;
  if (!isKernel && isPunct("(")) parseParamList(f, f.returns, false);
  f.name = ident();
  f.isGridBarrier = f.name.rfind("weft_grid_barrier", 0) == 0;
  parseParamList(f, f.params, isKernel);
  while (peek().kind == Token::Ident && peek().text[0] == '.') {
    std::string d = next().text;
    auto readDims = [&] {
      int v = int(number());
      while (accept(","))
        v *= int(number());
      return v;
    };
    if (d == ".maxnreg")
      f.maxnreg = int(number());
    else if (d == ".reqntid")
      f.reqntid = readDims();
    else if (d == ".maxntid")
      f.maxntid = readDims();
    else if (d == ".minnctapersm" || d == ".maxnctapersm")
      number();
    else if (d == ".noreturn")
      continue;
    else
      fail(peek().line, fmt::format("unsupported function directive '{}'", d));
  }
  uint32_t idx;
  auto it = prog_.functionIndex.find(f.name);
  if (it != prog_.functionIndex.end()) {
    idx = it->second;
    if (prog_.functions[idx].defined && isPunct("{"))
      fail(peek().line, fmt::format("function '{}' defined twice", f.name));
  } else {
    idx = uint32_t(prog_.functions.size());
    prog_.functionIndex[f.name] = idx;
    prog_.functions.push_back(f);
  }
  if (accept(";") || external) {
    if (external && !isPunct("{")) return;
    if (!isPunct("{")) return;
  }
  prog_.functions[idx] = f;
  parseBody(prog_.functions[idx], idx);
}

POperand Parser::parseOperand() {
  POperand o;
  uint32_t line = peek().line;
  if (accept("[")) {
    o.kind = POperand::Addr;
    if (peek().kind == Token::Ident) {
      o.name = ident();
      o.baseIsReg = o.name[0] == '%';
      if (accept("+"))
        o.value = int64_t(number());
      else if (isPunct("-"))
        o.value = int64_t(number());
    } else {
      o.value = int64_t(number());
    }
    expect("]");
    return o;
  }
  if (accept("{")) {
    o.kind = POperand::Vec;
    do
      o.elems.push_back(parseOperand());
    while (accept(","));
    expect("}");
    return o;
  }
  if (accept("!")) {
    o = parseOperand();
    o.negated = true;
    return o;
  }
  if (peek().kind == Token::Number || isPunct("-")) {
    bool neg = accept("-");
    const Token& t = next();
    if (t.kind != Token::Number)
      fail(line, fmt::format("expected a number after '-', found '{}'", t.text));
    const std::string& s = t.text;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F' || s[1] == 'd' || s[1] == 'D')) {
      o.kind = POperand::FImm;
      o.fhex = true;
      o.fdouble = s[1] == 'd' || s[1] == 'D';
      o.value = int64_t(parseIntLiteral("0x" + s.substr(2), line));
      if (neg) o.value ^= o.fdouble ? int64_t(1ull << 63) : int64_t(1ull << 31);
    } else if (s.find('.') != std::string::npos ||
               ((s.find('e') != std::string::npos || s.find('E') != std::string::npos) &&
                s.find('x') == std::string::npos && s.find('X') == std::string::npos)) {
      o.kind = POperand::FImm;
      o.fvalue = std::stod(s) * (neg ? -1 : 1);
    } else {
      o.kind = POperand::Imm;
      uint64_t v = parseIntLiteral(s, line);
      o.value = neg ? -int64_t(v) : int64_t(v);
    }
    return o;
  }
  std::string name = ident();
  if (name == "_") {
    o.kind = POperand::Sink;
    return o;
  }
  // Registers usually start with '%', but a scoped block may declare any identifier as one
  // (NVPTX's f64 shuffles: `{ .reg .b32 tmp; mov.b64 {tmp, %r37}, %rd8; }`). Every scoped
  // declaration of a name shares one slot: a block-local register is written before it is
  // read inside its own block, so blocks never see each other's values.
  if (name[0] == '%' || regs_.count(name)) {
    o.kind = POperand::Reg;
    o.name = name;
    if (accept("|")) o.pipe = ident();
    return o;
  }
  o.kind = POperand::Sym;
  o.name = name;
  if (accept("+")) o.value = int64_t(number());
  return o;
}

PInstr Parser::parseInstruction(uint32_t line) {
  PInstr p;
  p.line = line;
  if (accept("@")) {
    p.guardNeg = accept("!");
    p.guard = ident();
  }
  p.opcode = ident();
  {
    static const char* known[] = {
        "mov",  "add",       "sub",        "addc", "subc",   "mul",      "mul24", "mad",
        "madc", "fma",       "div",        "rem",  "abs",    "neg",      "not",   "cnot",
        "popc", "clz",       "brev",       "min",  "max",    "and",      "or",    "xor",
        "shl",  "shr",       "bfe",        "bfi",  "bfind",  "shf",      "prmt",  "selp",
        "slct", "setp",      "set",        "cvt",  "cvta",   "rcp",      "sqrt",  "rsqrt",
        "ex2",  "lg2",       "sin",        "cos",  "tanh",   "copysign", "testp", "ld",
        "ldu",  "st",        "atom",       "red",  "membar", "fence",    "bar",   "barrier",
        "shfl", "vote",      "activemask", "bra",  "brx",    "call",     "ret",   "exit",
        "trap", "nanosleep", "pmevent"};
    std::string base = p.opcode.substr(0, p.opcode.find('.'));
    if (std::find_if(std::begin(known), std::end(known),
                     [&](const char* k) { return base == k; }) == std::end(known))
      fail(line, fmt::format("unsupported instruction '{}'", p.opcode));
  }
  if (p.opcode.rfind("call", 0) == 0) {
    // call[.uni] (rets), fn, (args);   |   call fn, (args);   |  call (rets), fn;
    if (accept("(")) {
      do
        p.callRets.push_back(ident());
      while (accept(","));
      expect(")");
      expect(",");
    }
    p.callee = ident();
    if (accept(",")) {
      expect("(");
      if (!isPunct(")")) {
        do
          p.callArgs.push_back(ident());
        while (accept(","));
      }
      expect(")");
    }
    expect(";");
    return p;
  }
  try {
    if (!isPunct(";")) {
      do
        p.ops.push_back(parseOperand());
      while (accept(","));
    }
    if (!accept(";")) fail(peek().line, fmt::format("expected ';' but found '{}'", peek().text));
  } catch (const DeviceError& e) {
    throw DeviceError(fmt::format("{} (in the operands of '{}')", e.what(), p.opcode));
  }
  return p;
}

void Parser::parseBody(Function& f, uint32_t fidx) {
  regs_.clear();
  labels_.clear();
  branchFixups_.clear();
  scopes_.clear();
  depotName_.clear();
  f.defined = true;
  // Frame layout: depot first (sized when declared), params and returns after it. The
  // depot declaration comes first in NVPTX output; params are placed at finish of body.
  uint32_t regCount = 0;
  uint32_t reg32 = 0;
  std::vector<PInstr> pending;
  expect("{");
  int depth = 1;
  outgoingTop_ = 0;
  outgoingMax_ = 0;
  while (depth > 0) {
    const Token& t = peek();
    if (t.kind == Token::End) fail(t.line, fmt::format("function '{}' is not closed", f.name));
    if (accept("{")) {
      ++depth;
      scopes_.emplace_back();
      outgoingTop_ = 0;
      continue;
    }
    if (accept("}")) {
      --depth;
      if (!scopes_.empty() && depth > 0) scopes_.pop_back();
      continue;
    }
    if (t.kind == Token::Ident && isPunct(":", 1)) {
      std::string l = next().text;
      next();
      labels_[l] = uint32_t(pending.size());
      continue;
    }
    if (t.kind == Token::Ident && t.text == ".reg") {
      ++pos_;
      uint32_t line = peek().line;
      Ty ty = Ty::None;
      while (peek().kind == Token::Ident && peek().text[0] == '.') {
        std::string a = next().text;
        if (auto tt = tyFromName(a.substr(1)))
          ty = *tt;
        else if (a == ".v2" || a == ".v4")
          fail(line, "vector registers are not supported");
        else
          fail(line, fmt::format("unsupported register attribute '{}'", a));
      }
      do {
        std::string name = ident();
        uint32_t n = 1;
        bool range = false;
        if (accept("<")) {
          n = uint32_t(number());
          expect(">");
          range = true;
        }
        for (uint32_t i = 0; i < n; ++i) {
          std::string rn = range ? name + std::to_string(i) : name;
          regs_[rn] = {regCount++, ty};
        }
        if (ty != Ty::Pred) reg32 += n * (tyBytes(ty) > 4 ? 2 : 1);
      } while (accept(","));
      expect(";");
      continue;
    }
    if (t.kind == Token::Ident && t.text == ".local") {
      ++pos_;
      uint32_t line = peek().line;
      uint32_t align = 1, elem = 1;
      while (peek().kind == Token::Ident && peek().text[0] == '.') {
        std::string a = next().text;
        if (a == ".align")
          align = uint32_t(number());
        else if (auto tt = tyFromName(a.substr(1)))
          elem = std::max(1, tyBytes(*tt));
        else
          fail(line, fmt::format("unsupported .local attribute '{}'", a));
      }
      std::string name = ident();
      uint64_t count = 1;
      while (accept("[")) {
        count *= number();
        expect("]");
      }
      expect(";");
      if (!depotName_.empty())
        fail(line, "more than one .local variable in a function is not supported");
      depotName_ = name;
      f.depotSize = uint32_t(count * elem);
      f.frameAlign = std::max<uint32_t>(f.frameAlign, align);
      continue;
    }
    if (t.kind == Token::Ident && t.text == ".shared") {
      ++pos_;
      parseVariable(Space::Shared, false, &f);
      continue;
    }
    if (t.kind == Token::Ident && t.text == ".param") {
      // outgoing call parameter inside a callseq block
      uint32_t off = outgoingTop_;
      Function::Param p = parseParamDecl(off);
      expect(";");
      outgoingTop_ = off;
      outgoingMax_ = std::max(outgoingMax_, outgoingTop_);
      if (scopes_.empty()) scopes_.emplace_back();
      scopes_.back().params[p.name] = p;
      continue;
    }
    if (t.kind == Token::Ident && (t.text == ".pragma" || t.text == ".loc" || t.text == ".file")) {
      if (t.text == ".pragma")
        skipStatement();
      else
        skipLine();
      continue;
    }
    if (t.kind == Token::Ident && t.text[0] == '.')
      fail(t.line, fmt::format("unsupported directive '{}' in function '{}'", t.text, f.name));
    PInstr p = parseInstruction(t.line);
    // Decoding needs the frame layout, which is known once all declarations are seen;
    // NVPTX declares everything before the first instruction, so decode right away but
    // resolve frame offsets relative to the param area base fixed below.
    pending.push_back(std::move(p));
    // Scoped outgoing params must be resolved while the scope is open.
    PInstr& q = pending.back();
    auto resolveScoped = [&](const std::string& name, uint32_t& off, uint32_t& size) {
      for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s) {
        auto it = s->params.find(name);
        if (it != s->params.end()) {
          off = it->second.offset;
          size = it->second.size;
          return true;
        }
      }
      return false;
    };
    // encode outgoing param references as "@out:<offset>:<size>" names
    auto encode = [&](std::string& name) {
      uint32_t off, size;
      if (resolveScoped(name, off, size)) name = fmt::format("@out:{}:{}", off, size);
    };
    for (auto& n : q.callRets)
      encode(n);
    for (auto& n : q.callArgs)
      encode(n);
    for (auto& o : q.ops)
      if (o.kind == POperand::Addr && !o.baseIsReg) encode(o.name);
  }
  // frame layout
  uint32_t off = (f.depotSize + 15) / 16 * 16;
  for (auto& p : f.params)
    p.offset += off;
  uint32_t psize = 0;
  for (auto& p : f.params)
    psize = std::max(psize, p.offset + p.size);
  off = std::max(off, (psize + 15) / 16 * 16);
  for (auto& p : f.returns)
    p.offset += off;
  for (auto& p : f.returns)
    psize = std::max(psize, p.offset + p.size);
  off = std::max(off, (psize + 15) / 16 * 16);
  outgoingBase_ = off;
  f.frameSize = (off + outgoingMax_ + 15) / 16 * 16;
  if (f.isKernel) {
    // kernel params live in the launch buffer, not the frame
    uint32_t o = 0;
    for (auto& p : f.params) {
      o = (o + p.align - 1) / p.align * p.align;
      p.offset = o;
      o += p.size;
    }
    f.paramsSize = o;
    f.frameSize = (((f.depotSize + 15) / 16 * 16) + outgoingMax_ + 15) / 16 * 16;
    outgoingBase_ = (f.depotSize + 15) / 16 * 16;
  }
  f.ccReg = regCount++;
  f.numRegs = regCount;
  f.reg32Equivalent = reg32;
  // a redefinition after a declaration replaces the pending body
  bodies_.erase(
      std::remove_if(bodies_.begin(), bodies_.end(), [&](const Body& b) { return b.fidx == fidx; }),
      bodies_.end());
  bodies_.push_back(
      {fidx, std::move(regs_), std::move(labels_), depotName_, outgoingBase_, std::move(pending)});
}

// ---------------------------------------------------------------- decoding

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

void Parser::decode(Function& f, uint32_t fidx, const PInstr& p) {
  const uint32_t line = p.line;
  std::string text = p.opcode;
  auto bad = [&](const std::string& why) -> void {
    fail(line, fmt::format("'{}' in function '{}': {}", text, f.name, why));
  };
  Instr in;
  in.line = line;
  in.func = fidx;
  if (f.isGridBarrier) in.flags |= kSync;
  if (!p.guard.empty()) {
    auto it = regs_.find(p.guard);
    if (it == regs_.end()) bad("unknown guard predicate " + p.guard);
    in.guard = it->second.slot;
    in.flags |= kHasGuard;
    if (p.guardNeg) in.flags |= kNegGuard;
  }
  Mods m = splitOpcode(p.opcode);
  const std::string& b = m.base;
  Ty ty = m.types.empty() ? Ty::None : m.types.back();
  in.ty = ty;
  for (auto& part : m.parts) {
    if (part == "ftz")
      in.flags |= kFtz;
    else if (part == "sat")
      in.flags |= kSat;
    else if (part == "approx")
      in.flags |= kApprox;
    else if (part == "uni")
      in.flags |= kUni;
    else if (part == "rn")
      in.round = Round::Rn;
    else if (part == "rz")
      in.round = Round::Rz;
    else if (part == "rm")
      in.round = Round::Rm;
    else if (part == "rp")
      in.round = Round::Rp;
    else if (part == "rni")
      in.round = Round::Rni;
    else if (part == "rzi")
      in.round = Round::Rzi;
    else if (part == "rmi")
      in.round = Round::Rmi;
    else if (part == "rpi")
      in.round = Round::Rpi;
    else if (part == "global")
      in.space = Space::Global;
    else if (part == "shared" || part == "shared::cta")
      in.space = Space::Shared;
    else if (part == "local")
      in.space = Space::Local;
    else if (part == "param")
      in.space = Space::Param;
    else if (part == "const")
      in.space = Space::Const;
    else if (part == "volatile" || part == "acquire" || part == "release" || part == "relaxed" ||
             part == "acq_rel")
      in.flags |= kVolatile;
  }

  auto regOf = [&](const POperand& o, const char* what) -> uint32_t {
    if (o.kind != POperand::Reg) bad(fmt::format("{} must be a register", what));
    auto it = regs_.find(o.name);
    if (it == regs_.end()) bad("unknown register " + o.name);
    return it->second.slot;
  };
  auto dst = [&](const POperand& o) {
    Operand r;
    if (o.kind == POperand::Sink) {
      r.kind = Operand::Reg;
      r.reg = f.ccReg; // harmless scratch: overwritten sink value is never read as carry
      return r;
    }
    r.kind = Operand::Reg;
    r.reg = regOf(o, "destination");
    return r;
  };
  auto symAddress = [&](const std::string& name, uint32_t& flags, Space& sp) -> uint64_t {
    if (name.rfind("@out:", 0) == 0) {
      unsigned off = 0, sz = 0;
      std::sscanf(name.c_str(), "@out:%u:%u", &off, &sz);
      flags |= kFrameRel;
      sp = Space::Local;
      return outgoingBase_ + off;
    }
    for (auto& pr : f.params)
      if (pr.name == name) {
        if (f.isKernel) {
          sp = Space::Param;
          return pr.offset;
        }
        flags |= kFrameRel;
        sp = Space::Local;
        return pr.offset;
      }
    for (auto& pr : f.returns)
      if (pr.name == name) {
        flags |= kFrameRel;
        sp = Space::Local;
        return pr.offset;
      }
    auto it = varIndex_.find(name);
    if (it != varIndex_.end()) {
      const Variable& v = prog_.variables[it->second];
      sp = v.space;
      if (v.external) return ~uint64_t(0); // relative to the launch's dynamic shared base
      return v.address;
    }
    if (name == depotName_) {
      flags |= kFrameRel;
      sp = Space::Local;
      return 0;
    }
    bad("unknown symbol " + name);
    return 0;
  };
  // source operand of type t
  auto src = [&](const POperand& o, Ty t) {
    Operand r;
    switch (o.kind) {
    case POperand::Reg: {
      auto it = regs_.find(o.name);
      if (it == regs_.end()) {
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
        r.imm = floatImmBits(q, t, line);
      }
      return r;
    case POperand::FImm:
      r.kind = Operand::Imm;
      r.imm = floatImmBits(o, t, line);
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
  };
  auto need = [&](size_t n) {
    if (p.ops.size() != n) bad(fmt::format("expected {} operands, found {}", n, p.ops.size()));
  };
  auto addr = [&](const POperand& o) {
    if (o.kind != POperand::Addr) bad("expected an address operand [..]");
    in.addr.kind = Operand::Imm;
    in.addr.imm = uint64_t(o.value);
    if (o.baseIsReg) {
      in.flags |= kAddrReg;
      in.addr.reg = regOf(regNamed(o.name), "address base");
    } else if (!o.name.empty()) {
      uint32_t fl = 0;
      Space sp = in.space;
      uint64_t a = symAddress(o.name, fl, sp);
      if (a == ~uint64_t(0)) {
        in.flags |= kDynShared;
        a = in.space == Space::Generic ? kSharedWindow : 0;
      }
      in.flags |= fl;
      if (fl & kFrameRel) {
        if (in.space != Space::Param && in.space != Space::Local)
          bad("frame symbol used outside .param/.local");
        in.space = Space::Local;
      } else if (in.space == Space::Param && sp != Space::Param) {
        bad("ld.param of a non-parameter symbol");
      } else if (in.space == Space::Generic) {
        // generic access to a named variable: its generic address
        if (sp == Space::Shared)
          a += kSharedWindow;
        else if (sp == Space::Const)
          a += kConstWindow;
      }
      in.addr.imm += a;
    }
  };
  auto setCmp = [&](size_t idx) {
    bool ok;
    if (idx >= m.parts.size()) bad("missing comparison");
    in.mode = uint8_t(cmpFromName(m.parts[idx], ok));
    if (!ok) bad("unknown comparison ." + m.parts[idx]);
  };
  auto binary = [&](Op op) {
    need(3);
    in.op = op;
    in.nd = 1;
    in.ns = 2;
    in.d[0] = dst(p.ops[0]);
    Ty sty = (op == Op::Shl || op == Op::Shr) ? Ty::U32 : ty;
    in.s[0] = src(p.ops[1], ty);
    in.s[1] = src(p.ops[2], sty);
  };
  auto unary = [&](Op op) {
    need(2);
    in.op = op;
    in.nd = 1;
    in.ns = 1;
    in.d[0] = dst(p.ops[0]);
    in.s[0] = src(p.ops[1], ty);
  };
  auto ternary = [&](Op op) {
    need(4);
    in.op = op;
    in.nd = 1;
    in.ns = 3;
    in.d[0] = dst(p.ops[0]);
    for (int i = 0; i < 3; ++i)
      in.s[i] = src(p.ops[i + 1], ty);
  };
  if (ty == Ty::None && b != "bra" && b != "ret" && b != "exit" && b != "trap" && b != "bar" &&
      b != "barrier" && b != "membar" && b != "fence" && b != "call" && b != "activemask" &&
      b != "nanosleep" && b != "shfl" && b != "vote" && b != "pmevent")
    bad("missing type suffix");

  if (b == "mov") {
    need(2);
    const POperand& d = p.ops[0];
    const POperand& s = p.ops[1];
    in.nd = 1;
    if (d.kind == POperand::Vec) {
      in.op = Op::Unpack;
      in.nd = uint8_t(d.elems.size());
      for (size_t i = 0; i < d.elems.size(); ++i) {
        in.d[i] = dst(d.elems[i]);
        if (d.elems[i].kind == POperand::Sink) in.d[i].kind = Operand::None;
      }
      in.ns = 1;
      in.s[0] = src(s, ty);
    } else if (s.kind == POperand::Vec) {
      in.op = Op::Pack;
      in.d[0] = dst(d);
      in.ns = uint8_t(s.elems.size());
      Ty et = tyBytes(ty) == 8 && s.elems.size() == 2   ? Ty::B32
              : tyBytes(ty) == 8                        ? Ty::B16
              : tyBytes(ty) == 4 && s.elems.size() == 2 ? Ty::B16
                                                        : Ty::B8;
      for (size_t i = 0; i < s.elems.size(); ++i)
        in.s[i] = src(s.elems[i], et);
    } else if (s.kind == POperand::Reg && !regs_.count(s.name)) {
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
          in.mode = uint8_t(sr);
          found = true;
        }
      if (!found && s.name.rfind("%envreg", 0) == 0) {
        in.mode = uint8_t(Sreg::EnvReg);
        found = true;
      }
      if (!found) bad("unknown register or special register " + s.name);
      in.op = Op::MovSreg;
      in.d[0] = dst(d);
    } else if (s.kind == POperand::Sym && s.name == depotName_) {
      in.op = Op::MovDepot;
      in.d[0] = dst(d);
      in.s[0].kind = Operand::Imm;
      in.s[0].imm = uint64_t(s.value);
    } else if (s.kind == POperand::Sym && varIndex_.count(s.name) &&
               prog_.variables[varIndex_[s.name]].external) {
      in.op = Op::MovDynShared;
      in.d[0] = dst(d);
      in.ns = 1;
      in.s[0].kind = Operand::Imm;
      in.s[0].imm = uint64_t(s.value);
    } else {
      in.op = Op::Mov;
      in.d[0] = dst(d);
      in.ns = 1;
      in.s[0] = src(s, ty);
    }
  } else if (b == "add" || b == "sub") {
    bool cc = m.has("cc");
    binary(b == "add" ? (cc ? Op::AddCC : Op::Add) : (cc ? Op::SubCC : Op::Sub));
  } else if (b == "addc" || b == "subc") {
    binary(b == "addc" ? Op::AddC : Op::SubC);
    if (m.has("cc")) in.aux = 1;
  } else if (b == "mul" || b == "mul24") {
    if (b == "mul24") bad("mul24 is not supported");
    if (tyIsFloat(ty))
      binary(Op::Mul);
    else if (m.has("hi"))
      binary(Op::MulHi);
    else if (m.has("wide"))
      binary(Op::MulWide);
    else
      binary(Op::MulLo);
  } else if (b == "mad" || b == "madc" || b == "fma") {
    if (m.has("relu")) {
      if (b != "fma" || (ty != Ty::F16 && ty != Ty::F16x2 && ty != Ty::BF16 && ty != Ty::BF16x2))
        bad(".relu needs fma of a half-precision type");
      in.flags |= kRelu;
    }
    if (b == "fma" || tyIsFloat(ty))
      ternary(Op::Fma);
    else if (b == "madc") {
      ternary(m.has("hi") ? Op::MadCHi : Op::MadCLo);
      if (m.has("cc")) in.aux = 1;
    } else if (m.has("hi"))
      ternary(Op::MadHi);
    else if (m.has("wide"))
      ternary(Op::MadWide);
    else {
      ternary(Op::MadLo);
    }
    if (b == "mad" && m.has("cc")) {
      in.op = m.has("hi") ? Op::MadCHi : Op::MadCLo;
      in.aux = 1;  // sets carry
      in.aux2 = 1; // no carry-in
    }
  } else if (b == "div") {
    binary(Op::Div);
  } else if (b == "rem") {
    binary(Op::Rem);
  } else if (b == "abs" || b == "neg" || b == "not" || b == "cnot" || b == "popc" || b == "clz" ||
             b == "brev") {
    unary(b == "abs"    ? Op::Abs
          : b == "neg"  ? Op::Neg
          : b == "not"  ? Op::Not
          : b == "cnot" ? Op::CNot
          : b == "popc" ? Op::Popc
          : b == "clz"  ? Op::Clz
                        : Op::Brev);
  } else if (b == "min" || b == "max") {
    binary(b == "min" ? Op::Min : Op::Max);
    if (m.has("NaN")) in.flags |= kNaN;
    if (m.has("relu")) in.flags |= kRelu;
    // the opcode is split at dots: .xorsign.abs arrives as two parts
    if (m.has("xorsign")) bad(".xorsign.abs is not supported");
    if ((in.flags & kNaN) && !tyIsFloat(ty)) bad(".NaN needs a floating-point type");
    if ((in.flags & kRelu) && ty != Ty::S32 && ty != Ty::S16x2)
      bad(".relu needs .s32 or .s16x2");
  } else if (b == "and" || b == "or" || b == "xor") {
    binary(b == "and" ? Op::And : b == "or" ? Op::Or : Op::Xor);
  } else if (b == "shl" || b == "shr") {
    binary(b == "shl" ? Op::Shl : Op::Shr);
  } else if (b == "bfe") {
    need(4);
    in.op = Op::Bfe;
    in.nd = 1;
    in.ns = 3;
    in.d[0] = dst(p.ops[0]);
    in.s[0] = src(p.ops[1], ty);
    in.s[1] = src(p.ops[2], Ty::U32);
    in.s[2] = src(p.ops[3], Ty::U32);
  } else if (b == "bfi") {
    need(5);
    in.op = Op::Bfi;
    in.nd = 1;
    in.ns = 4;
    in.d[0] = dst(p.ops[0]);
    in.s[0] = src(p.ops[1], ty);
    in.s[1] = src(p.ops[2], ty);
    in.s[2] = src(p.ops[3], Ty::U32);
    in.s[3] = src(p.ops[4], Ty::U32);
  } else if (b == "shf") {
    // shf.{l,r}.{wrap,clamp}.b32 d, a, b, c: funnel shift of {b:a} by c
    need(4);
    in.op = Op::Shf;
    in.mode = uint8_t((m.has("r") ? 1 : 0) | (m.has("clamp") ? 2 : 0));
    in.nd = 1;
    in.ns = 3;
    in.d[0] = dst(p.ops[0]);
    in.s[0] = src(p.ops[1], Ty::B32);
    in.s[1] = src(p.ops[2], Ty::B32);
    in.s[2] = src(p.ops[3], Ty::U32);
  } else if (b == "bfind") {
    unary(Op::Bfind);
    if (m.has("shiftamt")) in.aux = 1;
  } else if (b == "prmt") {
    if (m.parts.size() != 1) bad("only the default prmt mode is supported");
    ternary(Op::Prmt);
  } else if (b == "selp") {
    need(4);
    in.op = Op::Selp;
    in.nd = 1;
    in.ns = 3;
    in.d[0] = dst(p.ops[0]);
    in.s[0] = src(p.ops[1], ty);
    in.s[1] = src(p.ops[2], ty);
    in.s[2] = src(p.ops[3], Ty::Pred);
  } else if (b == "slct") {
    need(4);
    if (m.types.size() != 2) bad("slct needs two types");
    in.op = Op::Slct;
    in.ty = m.types[0];
    in.ty2 = m.types[1];
    in.nd = 1;
    in.ns = 3;
    in.d[0] = dst(p.ops[0]);
    in.s[0] = src(p.ops[1], in.ty);
    in.s[1] = src(p.ops[2], in.ty);
    in.s[2] = src(p.ops[3], in.ty2);
  } else if (b == "setp" || b == "set") {
    if (b == "set") bad("set is not supported (only setp)");
    setCmp(0);
    in.op = Op::Setp;
    size_t nops = p.ops.size();
    if (nops != 3 && nops != 4) bad("expected 3 or 4 operands");
    in.nd = 1;
    in.d[0] = dst(p.ops[0]);
    if (!p.ops[0].pipe.empty()) {
      in.flags |= kHasPredOut;
      in.nd = 2;
      in.d[1] = dst(regNamed(p.ops[0].pipe));
    }
    in.ns = 2;
    in.s[0] = src(p.ops[1], ty);
    in.s[1] = src(p.ops[2], ty);
    if (m.has("and")) in.boolOp = BoolOp::And;
    if (m.has("or")) in.boolOp = BoolOp::Or;
    if (m.has("xor")) in.boolOp = BoolOp::Xor;
    if (nops == 4) {
      if (in.boolOp == BoolOp::None) bad("a fourth operand needs .and/.or/.xor");
      in.ns = 3;
      in.s[2] = src(p.ops[3], Ty::Pred);
      if (p.ops[3].negated) in.aux = 1;
    }
  } else if (b == "cvt") {
    if (m.types.size() == 2 && (m.types[0] == Ty::F16x2 || m.types[0] == Ty::BF16x2) &&
        m.types[1] == Ty::F32) {
      // cvt.rn.f16x2.f32 d, a, b: d = {cvt(a) in the upper half, cvt(b) in the lower}
      need(3);
      if (m.has("relu") || m.has("satfinite")) bad("this cvt variant is not supported");
      in.op = Op::Cvt;
      in.ty = m.types[0];
      in.ty2 = Ty::F32;
      in.nd = 1;
      in.ns = 2;
      in.d[0] = dst(p.ops[0]);
      in.s[0] = src(p.ops[1], Ty::F32);
      in.s[1] = src(p.ops[2], Ty::F32);
      prog_.code.push_back(in);
      return;
    }
    need(2);
    if (m.types.size() != 2) bad("cvt needs a destination and a source type");
    if (m.has("pack") || m.has("relu")) bad("this cvt variant is not supported");
    in.op = Op::Cvt;
    in.ty = m.types[0];
    in.ty2 = m.types[1];
    in.nd = in.ns = 1;
    in.d[0] = dst(p.ops[0]);
    in.s[0] = src(p.ops[1], in.ty2);
  } else if (b == "cvta") {
    need(2);
    in.op = Op::Cvta;
    if (m.has("to")) in.flags |= kToSpace;
    if (in.space == Space::Generic || in.space == Space::Param)
      bad("cvta needs .global/.shared/.local/.const");
    in.nd = in.ns = 1;
    in.d[0] = dst(p.ops[0]);
    in.s[0] = src(p.ops[1], ty);
  } else if (b == "rcp" || b == "sqrt" || b == "rsqrt" || b == "ex2" || b == "lg2" || b == "sin" ||
             b == "cos" || b == "tanh") {
    unary(b == "rcp"     ? Op::Rcp
          : b == "sqrt"  ? Op::Sqrt
          : b == "rsqrt" ? Op::Rsqrt
          : b == "ex2"   ? Op::Ex2
          : b == "lg2"   ? Op::Lg2
          : b == "sin"   ? Op::Sin
          : b == "cos"   ? Op::Cos
                         : Op::Tanh);
  } else if (b == "copysign") {
    binary(Op::Copysign);
  } else if (b == "testp") {
    need(2);
    in.op = Op::Testp;
    static const char* modes[] = {"finite",     "infinite", "number",
                                  "notanumber", "normal",   "subnormal"};
    bool found = false;
    for (int i = 0; i < 6; ++i)
      if (m.has(modes[i])) in.mode = uint8_t(i), found = true;
    if (!found) bad("unknown testp mode");
    in.nd = in.ns = 1;
    in.d[0] = dst(p.ops[0]);
    in.s[0] = src(p.ops[1], ty);
  } else if (b == "ld" || b == "st" || b == "ldu") {
    need(2);
    bool isLd = b != "st";
    in.op = isLd ? Op::Ld : Op::St;
    int vec = m.has("v2") ? 2 : m.has("v4") ? 4 : 1;
    const POperand& val = isLd ? p.ops[0] : p.ops[1];
    addr(isLd ? p.ops[1] : p.ops[0]);
    if (vec > 1) {
      if (val.kind != POperand::Vec || int(val.elems.size()) != vec)
        bad("vector operand size mismatch");
      for (int i = 0; i < vec; ++i) {
        if (isLd) {
          in.d[i] = dst(val.elems[i]);
          if (val.elems[i].kind == POperand::Sink) in.d[i].kind = Operand::None;
        } else
          in.s[i] = src(val.elems[i], ty);
      }
    } else {
      if (isLd)
        in.d[0] = dst(val);
      else
        in.s[0] = src(val, ty);
    }
    if (isLd)
      in.nd = uint8_t(vec);
    else
      in.ns = uint8_t(vec);
  } else if (b == "atom" || b == "red") {
    in.op = b == "atom" ? Op::Atom : Op::Red;
    static const std::pair<const char*, AtomOp> ops[] = {
        {"add", AtomOp::Add}, {"min", AtomOp::Min}, {"max", AtomOp::Max}, {"exch", AtomOp::Exch},
        {"cas", AtomOp::Cas}, {"and", AtomOp::And}, {"or", AtomOp::Or},   {"xor", AtomOp::Xor},
        {"inc", AtomOp::Inc}, {"dec", AtomOp::Dec}};
    bool found = false;
    for (auto& [n, a] : ops)
      if (m.has(n)) in.mode = uint8_t(a), found = true;
    if (!found) bad("unknown atomic operation");
    if (m.has("v2") || m.has("v4") || ty == Ty::F16 || ty == Ty::F16x2 || ty == Ty::BF16 ||
        ty == Ty::BF16x2)
      bad("vector and half-precision atomics are not supported");
    size_t first = 0;
    if (in.op == Op::Atom) {
      in.nd = 1;
      in.d[0] = dst(p.ops[0]);
      first = 1;
    }
    size_t nsrc = AtomOp(in.mode) == AtomOp::Cas ? 2 : 1;
    if (p.ops.size() != first + 1 + nsrc) bad("wrong number of operands");
    addr(p.ops[first]);
    in.ns = uint8_t(nsrc);
    for (size_t i = 0; i < nsrc; ++i)
      in.s[i] = src(p.ops[first + 1 + i], ty);
    if (m.has("acquire") || m.has("release") || m.has("acq_rel")) in.flags |= kVolatile;
  } else if (b == "membar" || b == "fence") {
    in.op = Op::Fence;
  } else if (b == "bar" || b == "barrier") {
    if (m.has("warp")) {
      in.op = Op::BarWarp;
      if (p.ops.size() == 1) in.s[0] = src(p.ops[0], Ty::U32), in.ns = 1;
    } else {
      if (m.has("red")) bad("bar.red is not supported");
      if (m.has("arrive")) {
        if (p.ops.size() != 2) bad("bar.arrive needs a barrier and a thread count");
        in.aux = 1; // arrive without waiting
      }
      in.op = Op::Bar;
      if (p.ops.empty()) {
        in.ns = 1;
        in.s[0].kind = Operand::Imm;
      } else {
        in.ns = uint8_t(std::min<size_t>(p.ops.size(), 2));
        for (size_t i = 0; i < in.ns; ++i)
          in.s[i] = src(p.ops[i], Ty::U32);
      }
    }
  } else if (b == "shfl") {
    if (!m.has("sync")) bad("only shfl.sync is supported");
    in.op = Op::Shfl;
    in.mode = uint8_t(m.has("up")     ? ShflMode::Up
                      : m.has("down") ? ShflMode::Down
                      : m.has("bfly") ? ShflMode::Bfly
                                      : ShflMode::Idx);
    need(5);
    in.nd = 1;
    in.d[0] = dst(p.ops[0]);
    if (!p.ops[0].pipe.empty()) {
      in.flags |= kHasPredOut;
      in.nd = 2;
      in.d[1] = dst(regNamed(p.ops[0].pipe));
    }
    in.ns = 4;
    in.s[0] = src(p.ops[1], Ty::B32);
    for (int i = 1; i < 4; ++i)
      in.s[i] = src(p.ops[i + 1], Ty::U32);
  } else if (b == "vote") {
    if (!m.has("sync")) bad("only vote.sync is supported");
    in.op = Op::Vote;
    in.mode = uint8_t(m.has("all")   ? VoteMode::All
                      : m.has("any") ? VoteMode::Any
                      : m.has("uni") ? VoteMode::Uni
                                     : VoteMode::Ballot);
    need(3);
    in.nd = 1;
    in.d[0] = dst(p.ops[0]);
    in.ns = 2;
    in.s[0] = src(p.ops[1], Ty::Pred);
    if (p.ops[1].negated) in.aux = 1;
    in.s[1] = src(p.ops[2], Ty::U32);
  } else if (b == "activemask") {
    need(1);
    in.op = Op::Activemask;
    in.nd = 1;
    in.d[0] = dst(p.ops[0]);
  } else if (b == "bra" || b == "brx") {
    if (b == "brx") bad("indirect branches are not supported");
    need(1);
    if (p.ops[0].kind != POperand::Sym) bad("branch target must be a label");
    in.op = Op::Bra;
    branchFixups_.push_back({uint32_t(prog_.code.size()), p.ops[0].name});
  } else if (b == "call") {
    in.op = Op::Call;
    in.callArgBase = uint32_t(f.callArgs.size());
    in.aux = f.numRegs;
    in.aux2 = f.frameSize;
    auto addArg = [&](const std::string& name) {
      unsigned off = 0, sz = 0;
      if (name.rfind("@out:", 0) != 0 || std::sscanf(name.c_str(), "@out:%u:%u", &off, &sz) != 2)
        bad("call argument '" + name + "' is not a .param declared in the call sequence");
      f.callArgs.push_back({outgoingBase_ + off, sz});
    };
    for (auto& r : p.callRets)
      addArg(r);
    for (auto& a : p.callArgs)
      addArg(a);
    in.nd = uint8_t(p.callRets.size());
    in.ns = uint8_t(p.callArgs.size());
    callFixups_.push_back({uint32_t(prog_.code.size()), p.callee});
  } else if (b == "ret") {
    in.op = Op::Ret;
  } else if (b == "exit") {
    in.op = Op::Exit;
  } else if (b == "trap") {
    in.op = Op::Trap;
  } else if (b == "nanosleep" || b == "pmevent") {
    in.op = Op::Nop;
  } else {
    bad("unsupported instruction");
  }
  // Types we cannot execute for a given op are rejected here rather than at run time.
  if (tyIsPackedInt(ty) && in.op != Op::Add && in.op != Op::Sub && in.op != Op::Min &&
      in.op != Op::Max)
    bad("packed 16-bit integer types are only supported for add, sub, min and max");
  if (tyIsPackedInt(ty) && (in.flags & kSat)) bad(".sat is not defined for packed integers");
  if ((in.op == Op::Div || in.op == Op::Rem || in.op == Op::MulLo || in.op == Op::MulHi ||
       in.op == Op::MulWide) &&
      (ty == Ty::F16x2 || ty == Ty::BF16x2))
    bad("packed half types are not supported for this instruction");
  prog_.code.push_back(in);
}

void Parser::layoutShared() {
  // which functions each function calls, and which shared variables it names
  const size_t nf = prog_.functions.size(), nv = prog_.variables.size();
  std::vector<std::vector<uint32_t>> callees(nf), uses(nf);
  for (const Body& b : bodies_)
    for (const PInstr& p : b.pending) {
      if (!p.callee.empty()) {
        auto it = prog_.functionIndex.find(p.callee);
        if (it != prog_.functionIndex.end()) callees[b.fidx].push_back(it->second);
      }
      std::function<void(const POperand&)> visit = [&](const POperand& o) {
        for (auto& e : o.elems)
          visit(e);
        if ((o.kind != POperand::Sym && o.kind != POperand::Addr) || o.baseIsReg) return;
        auto it = varIndex_.find(o.name);
        if (it != varIndex_.end() && prog_.variables[it->second].space == Space::Shared)
          uses[b.fidx].push_back(uint32_t(it->second));
      };
      for (auto& o : p.ops)
        visit(o);
    }
  // kernels using each variable, through the call graph
  std::vector<std::vector<uint32_t>> kernelsOf(nv);
  std::vector<std::vector<uint32_t>> varsOf(nf);
  for (uint32_t k = 0; k < nf; ++k) {
    if (!prog_.functions[k].isKernel) continue;
    std::vector<bool> seen(nf, false), vseen(nv, false);
    std::vector<uint32_t> stack = {k};
    seen[k] = true;
    while (!stack.empty()) {
      uint32_t f = stack.back();
      stack.pop_back();
      for (uint32_t v : uses[f])
        if (!vseen[v]) {
          vseen[v] = true;
          kernelsOf[v].push_back(k);
          varsOf[k].push_back(v);
        }
      for (uint32_t c : callees[f])
        if (!seen[c]) seen[c] = true, stack.push_back(c);
    }
  }
  auto shareKernel = [&](uint32_t a, uint32_t b) {
    for (uint32_t x : kernelsOf[a])
      if (std::find(kernelsOf[b].begin(), kernelsOf[b].end(), x) != kernelsOf[b].end()) return true;
    return false;
  };
  // first fit: a variable never overlaps one that a common kernel also uses
  std::vector<uint32_t> placed;
  for (uint32_t v = 0; v < nv; ++v) {
    Variable& var = prog_.variables[v];
    if (var.space != Space::Shared || var.external) continue;
    const uint64_t a = std::max<uint32_t>(var.align, 1);
    uint64_t off = 0;
    for (bool moved = true; moved;) {
      moved = false;
      off = (off + a - 1) / a * a;
      for (uint32_t u : placed) {
        const Variable& o = prog_.variables[u];
        if (off < o.address + o.size && o.address < off + var.size && shareKernel(u, v)) {
          off = o.address + o.size;
          moved = true;
        }
      }
    }
    var.address = off;
    placed.push_back(v);
  }
  for (uint32_t k = 0; k < nf; ++k) {
    Function& f = prog_.functions[k];
    if (!f.isKernel) continue;
    uint64_t extent = 0;
    uint32_t dynAlign = 16;
    for (uint32_t v : varsOf[k]) {
      const Variable& var = prog_.variables[v];
      if (var.external)
        dynAlign = std::max(dynAlign, var.align);
      else
        extent = std::max(extent, var.address + var.size);
    }
    f.staticSharedBytes = extent;
    f.dynamicSharedOffset = (extent + dynAlign - 1) / dynAlign * dynAlign;
    prog_.staticSharedBytes = std::max(prog_.staticSharedBytes, extent);
  }
}

void Parser::finish() {
  layoutShared();
  for (Body& body : bodies_) {
    Function& f = prog_.functions[body.fidx];
    regs_ = std::move(body.regs);
    labels_ = std::move(body.labels);
    depotName_ = body.depotName;
    outgoingBase_ = body.outgoingBase;
    branchFixups_.clear();
    f.entry = uint32_t(prog_.code.size());
    for (auto& p : body.pending)
      decode(f, body.fidx, p);
    f.end = uint32_t(prog_.code.size());
    for (auto& [pc, label] : branchFixups_) {
      auto it = labels_.find(label);
      if (it == labels_.end()) fail(prog_.code[pc].line, fmt::format("unknown label '{}'", label));
      prog_.code[pc].target = f.entry + it->second;
    }
    if (f.end == f.entry) {
      Instr r;
      r.op = Op::Ret;
      r.func = body.fidx;
      prog_.code.push_back(r);
      f.end = uint32_t(prog_.code.size());
    }
    std::vector<uint8_t> widths(f.numRegs, 0);
    for (auto& [name, info] : regs_)
      widths[info.slot] = info.ty == Ty::Pred ? 0 : tyBytes(info.ty) > 4 ? 2 : 1;
    compactRegisters(prog_, f, widths);
    computeReconvergencePoints(prog_, f);
  }
  bodies_.clear();
  // resolve calls (callee may be defined after the caller)
  for (auto& [pc, callee] : callFixups_) {
    Instr& in = prog_.code[pc];
    auto it = prog_.functionIndex.find(callee);
    if (it == prog_.functionIndex.end())
      fail(in.line, fmt::format("call to unknown function '{}'", callee));
    const Function& cf = prog_.functions[it->second];
    if (!cf.defined)
      fail(in.line, fmt::format("call to '{}', which is declared but not defined in this module "
                                "(external functions such as vprintf are not supported)",
                                callee));
    if (cf.isKernel) fail(in.line, fmt::format("call to kernel '{}'", callee));
    if (in.nd != cf.returns.size() || in.ns != cf.params.size())
      fail(in.line,
           fmt::format(
               "call to '{}' passes {} arguments and {} return values; it declares {} and {}",
               callee, in.ns, in.nd, cf.params.size(), cf.returns.size()));
    in.target = it->second;
  }
  // a kernel needs at least the registers of every function it calls
  for (auto& k : prog_.functions) {
    if (!k.isKernel || !k.defined) continue;
    std::vector<bool> seen(prog_.functions.size(), false);
    std::vector<uint32_t> stack = {prog_.functionIndex[k.name]};
    uint32_t pressure = 0;
    while (!stack.empty()) {
      uint32_t f = stack.back();
      stack.pop_back();
      if (seen[f]) continue;
      seen[f] = true;
      const Function& fn = prog_.functions[f];
      pressure = std::max(pressure, fn.maxLive32);
      for (uint32_t pc = fn.entry; pc < fn.end; ++pc)
        if (prog_.code[pc].op == Op::Call) stack.push_back(prog_.code[pc].target);
    }
    k.maxLive32 = pressure;
  }
  // the frame sizes recorded in Call instructions were provisional; refresh them
  for (auto& in : prog_.code)
    if (in.op == Op::Call) {
      const Function& caller = prog_.functions[in.func];
      in.aux = caller.numRegs;
      in.aux2 = caller.frameSize;
    }
}

} // namespace

Program parsePtx(const std::string& ptx, const GlobalAllocator& allocateGlobal) {
  Parser p(ptx, allocateGlobal);
  return p.run();
}

} // namespace weft::sim
