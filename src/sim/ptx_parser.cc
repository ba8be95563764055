// The PTX parser: text → ParsedModule (ptx_syntax.h). It reads the module-scope directives,
// variables (placing global and const ones), function declarations with their parameters and
// directives, and each body's registers, labels, .local depot, .shared variables and call
// sequences' .param declarations, and lays out each function's local frame. Instructions are
// kept as written; the decoder and the linker (program_linker.h) make a Program of them.
#include "sim/ptx_parser.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "sim/program_linker.h"
#include "sim/ptx_decoder.h"
#include "sim/ptx_syntax.h"
#include "weft/error.h"

namespace weft::sim {

const char* tyName(Ty t) {
  static const char* names[] = {"none", "pred",  "b8",   "b16",    "b32", "b64", "u8",
                                "u16",  "u32",   "u64",  "s8",     "s16", "s32", "s64",
                                "f16",  "f16x2", "bf16", "bf16x2", "f32", "f64",
                                "s16x2", "u16x2"};
  return names[int(t)];
}

namespace ptx {

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

[[noreturn]] void fail(uint32_t line, const std::string& what) {
  throw DeviceError(fmt::format("PTX line {}: {}", line, what));
}

namespace {

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
      // "::" joins the parts of a qualified state space: ld.shared::cluster.u32
      while (j < n && (identChar(src[j]) || (src[j] == ':' && j + 2 < n && src[j + 1] == ':' &&
                                             identChar(src[j + 2]))))
        j += src[j] == ':' ? 2 : 1;
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

  ParsedModule run();

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

  // Bodies are decoded once the whole module is read (program_linker.h).
  std::vector<ParsedBody> bodies_;

  // the function being parsed
  std::unordered_map<std::string, RegInfo> regs_;
  std::unordered_map<std::string, uint32_t> labels_;
  std::vector<Scope> scopes_;
  uint32_t outgoingBase_ = 0, outgoingTop_ = 0, outgoingMax_ = 0;
  std::string depotName_;
  std::unordered_map<std::string, size_t> varIndex_;

  std::vector<Token> toks_;
  size_t pos_ = 0;
  const GlobalAllocator& alloc_;
  Program prog_;
};

ParsedModule Parser::run() {
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
  return ParsedModule{std::move(prog_), std::move(bodies_), std::move(varIndex_)};
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
    // laid out by the linker (program_linker.h) once every kernel's use is known
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
  f.isLastBlock = f.name.rfind("weft_last_block", 0) == 0;
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
    else if (d == ".reqnctapercluster") {
      // cluster dimensions the kernel requires (x{, y{, z}}); the launch must match them
      for (int i = 0; i < 3; ++i)
        f.reqnctapercluster[i] = i == 0 || accept(",") ? int(number()) : 1;
    } else if (d == ".maxclusterrank")
      f.maxclusterrank = int(number());
    else if (d == ".explicitcluster")
      f.explicitCluster = true;
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
  // the decoder's table names every instruction the simulator runs
  if (!isKnownOpcode(p.opcode.substr(0, p.opcode.find('.'))))
    fail(line, fmt::format("unsupported instruction '{}'", p.opcode));
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
    // Decoding needs the frame layout (fixed at the end of the body) and the module's shared
    // layout (fixed once every function is read): keep the instruction as written.
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
      std::remove_if(bodies_.begin(), bodies_.end(),
                     [&](const ParsedBody& b) { return b.fidx == fidx; }),
      bodies_.end());
  bodies_.push_back(
      {fidx, std::move(regs_), std::move(labels_), depotName_, outgoingBase_, std::move(pending)});
}

} // namespace
} // namespace ptx

Program parsePtx(const std::string& text, const GlobalAllocator& allocateGlobal) {
  ptx::Parser parser(text, allocateGlobal);
  return ptx::linkProgram(parser.run());
}

} // namespace weft::sim
