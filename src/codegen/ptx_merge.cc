#include "codegen/ptx_merge.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "weft/error.h"

namespace weft::codegen {
namespace {

/// A module-scope statement: a declaration, a variable or a function definition.
struct Statement {
  std::string_view leading; // the comments and blank lines before it
  std::string_view text;    // from its first directive through its final ';' or '}'
};

struct ModuleText {
  std::string_view header; // through the .address_size line
  std::vector<Statement> statements;
  std::string_view trailing;
};

[[noreturn]] void fail(size_t module, const std::string& what) {
  throw Error(fmt::format("cannot merge the PTX of separately compiled modules: module {} {} "
                          "(a weft bug)",
                          module, what));
}

bool startsComment(std::string_view s, size_t i) {
  return s[i] == '/' && i + 1 < s.size() && (s[i + 1] == '/' || s[i + 1] == '*');
}

/// The index just past the comment starting at i ("//" ends before its newline).
size_t endOfComment(std::string_view s, size_t i) {
  if (s[i + 1] == '/') return std::min(s.find('\n', i), s.size());
  size_t close = s.find("*/", i + 2);
  return close == std::string_view::npos ? s.size() : close + 2;
}

size_t skipTrivia(std::string_view s, size_t i) {
  while (i < s.size()) {
    if (std::isspace(static_cast<unsigned char>(s[i])))
      ++i;
    else if (startsComment(s, i))
      i = endOfComment(s, i);
    else
      break;
  }
  return i;
}

/// The end of the statement starting at i: its ';' outside brackets, or the '}' closing a
/// function body (a '}' followed by ';' closes an initialiser list instead).
size_t endOfStatement(std::string_view s, size_t i, size_t module) {
  int depth = 0;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (startsComment(s, i)) {
      i = endOfComment(s, i) - 1;
    } else if (c == '"') {
      i = s.find('"', i + 1);
      if (i == std::string_view::npos) fail(module, "has an unterminated string");
    } else if (c == '(' || c == '{' || c == '[') {
      ++depth;
    } else if (c == ')' || c == '}' || c == ']') {
      if (--depth < 0) fail(module, "has unbalanced brackets");
      if (c == '}' && depth == 0) {
        size_t next = skipTrivia(s, i + 1);
        if (next >= s.size() || s[next] != ';') return i + 1;
      }
    } else if (c == ';' && depth == 0) {
      return i + 1;
    }
  }
  fail(module, "ends inside a statement");
}

ModuleText split(std::string_view ptx, size_t module) {
  ModuleText m;
  size_t at = ptx.find(".address_size");
  if (at == std::string_view::npos) fail(module, "has no .address_size");
  size_t eol = ptx.find('\n', at);
  m.header = ptx.substr(0, eol == std::string_view::npos ? ptx.size() : eol + 1);
  size_t i = m.header.size();
  while (true) {
    size_t lead = i;
    i = skipTrivia(ptx, i);
    if (i >= ptx.size()) {
      m.trailing = ptx.substr(lead);
      return m;
    }
    size_t end = endOfStatement(ptx, i, module);
    m.statements.push_back({ptx.substr(lead, i - lead), ptx.substr(i, end - i)});
    i = end;
  }
}

bool isIdentifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}

/// The symbol a statement declares or defines ("" for anything else, e.g. .pragma).
struct Declared {
  std::string name;
  bool function = false;
  bool definition = false; // a function with a body, or a variable that is not .extern
};

Declared declaredBy(std::string_view text) {
  Declared d;
  bool external = false;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '.' || std::isdigit(static_cast<unsigned char>(c))) {
      size_t start = i++;
      while (i < text.size() && (isIdentifierChar(text[i]) || text[i] == '.'))
        ++i;
      std::string_view word = text.substr(start, i - start);
      d.function = d.function || word == ".entry" || word == ".func";
      external = external || word == ".extern";
    } else if (c == '(' && d.function) { // a function's return parameters
      int depth = 0;
      do {
        depth += text[i] == '(' ? 1 : text[i] == ')' ? -1 : 0;
        ++i;
      } while (i < text.size() && depth > 0);
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%') {
      size_t start = i++;
      while (i < text.size() && isIdentifierChar(text[i]))
        ++i;
      d.name = std::string(text.substr(start, i - start));
      break;
    } else {
      break;
    }
  }
  d.definition = d.function ? !text.empty() && text.back() == '}' : !external;
  return d;
}

/// Label numbers count functions in their LLVM module ($L__BB<function>_<block>); the same
/// function compiled in two modules differs only in them.
std::string withoutLabelNumbers(std::string_view text) {
  static const std::regex label(R"(\$L__BB[0-9]+_)");
  return std::regex_replace(std::string(text), label, "$$L__BB_");
}

/// `leading` without a final "// .globl <name>" line, the comment LLVM writes before a visible
/// definition (that is being dropped).
std::string_view withoutGloblComment(std::string_view leading, const std::string& name) {
  size_t at = leading.rfind("// .globl");
  if (at == std::string_view::npos) return leading;
  std::string_view rest = leading.substr(at + 9);
  size_t n = rest.find_first_not_of(" \t");
  if (n == std::string_view::npos || rest.substr(n, name.size()) != name) return leading;
  if (rest.find_first_not_of(" \t\r\n", n + name.size()) != std::string_view::npos) return leading;
  size_t lineStart = leading.rfind('\n', at);
  return leading.substr(0, lineStart == std::string_view::npos ? 0 : lineStart + 1);
}

} // namespace

std::string mergePtxModules(const std::vector<std::string>& modules) {
  if (modules.size() == 1) return modules[0];
  std::vector<ModuleText> parts;
  parts.reserve(modules.size());
  size_t bytes = 0;
  for (size_t k = 0; k < modules.size(); ++k) {
    parts.push_back(split(modules[k], k));
    if (parts[k].header != parts[0].header)
      fail(k, fmt::format("has the header\n{}\nbut module 0 has\n{}", parts[k].header,
                          parts[0].header));
    bytes += modules[k].size();
  }
  struct Seen {
    bool defined = false;
    std::string_view definition;
  };
  std::unordered_map<std::string, Seen> seen;
  std::string out;
  out.reserve(bytes);
  if (!parts.empty()) out += parts[0].header;
  for (size_t k = 0; k < parts.size(); ++k) {
    for (const Statement& st : parts[k].statements) {
      Declared d = declaredBy(st.text);
      bool keep = true;
      if (!d.name.empty()) {
        auto [it, fresh] = seen.try_emplace(d.name);
        Seen& s = it->second;
        if (!fresh && !d.definition) {
          keep = false; // declared or defined above
        } else if (!fresh && s.defined) {
          if (!d.function) fail(k, fmt::format("defines the variable {} again", d.name));
          if (withoutLabelNumbers(s.definition) != withoutLabelNumbers(st.text))
            fail(k, fmt::format("defines the function {} differently", d.name));
          keep = false;
        }
        if (keep && d.definition) s = {true, st.text};
      }
      if (keep) {
        out += st.leading;
        out += st.text;
      } else {
        out += withoutGloblComment(st.leading, d.name);
      }
    }
    out += parts[k].trailing;
  }
  return out;
}

std::string numberCallSequences(std::string ptx) {
  // "{ // callseq N, M" opens a sequence, "} // callseq N" closes it; sequences do not nest.
  static constexpr std::string_view kTag = "// callseq ";
  std::string out;
  out.reserve(ptx.size());
  size_t copied = 0, opened = 0;
  for (size_t at = ptx.find(kTag); at != std::string::npos; at = ptx.find(kTag, at)) {
    size_t digits = at + kTag.size(), end = digits;
    while (end < ptx.size() && std::isdigit(static_cast<unsigned char>(ptx[end])))
      ++end;
    if (end == digits) {
      at = end;
      continue;
    }
    bool opens = end < ptx.size() && ptx[end] == ',';
    size_t number = opens ? opened++ : (opened > 0 ? opened - 1 : 0);
    out.append(ptx, copied, digits - copied);
    out += std::to_string(number);
    copied = at = end;
  }
  if (copied == 0) return ptx;
  out.append(ptx, copied, std::string::npos);
  return out;
}

} // namespace weft::codegen
