#include "runtime/cuda/ptx_split.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace weft::runtime::cuda {
namespace {

bool startsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

/// A top-level line that opens a function: `.entry`/`.func` after optional linkage words.
bool opensFunction(const std::string& line, bool* entry) {
  std::istringstream words(line);
  std::string w;
  while (words >> w) {
    if (w == ".visible" || w == ".weak" || w == ".extern") continue;
    *entry = w == ".entry" || startsWith(w, ".entry");
    return *entry || w == ".func" || startsWith(w, ".func");
  }
  return false;
}

/// The name after `.entry` or `.func` (and a `.func`'s return parameters, in parentheses).
std::string functionName(const std::string& line) {
  size_t at = line.find(".entry");
  at = at == std::string::npos ? line.find(".func") + 5 : at + 6;
  while (at < line.size() && line[at] == ' ')
    ++at;
  if (at < line.size() && line[at] == '(') at = line.find(')', at) + 1;
  while (at < line.size() && line[at] == ' ')
    ++at;
  size_t end = at;
  while (end < line.size() && (std::isalnum(static_cast<unsigned char>(line[end])) ||
                               line[end] == '_' || line[end] == '$' || line[end] == '.'))
    ++end;
  return line.substr(at, end - at);
}

struct Function {
  std::string name, text;
  size_t lines = 0;
};

} // namespace

std::vector<PtxPart> splitPtxModule(const std::string& ptx, size_t parts) {
  std::string common, helpers;
  std::vector<Function> entries;
  std::istringstream in(ptx);
  std::string line;
  while (std::getline(in, line)) {
    bool entry = false;
    if (!opensFunction(line, &entry)) {
      size_t text = line.find_first_not_of(" \t");
      if (text == std::string::npos || line.compare(text, 2, "//") != 0) common += line + "\n";
      continue;
    }
    // A definition runs to its closing brace at the start of a line; a prototype to the first
    // line ending in ';' before any '{'.
    Function f{functionName(line), line + "\n", 1};
    bool definition = entry || line.find('{') != std::string::npos; // entries are never prototypes
    bool done = !definition && !line.empty() && line.back() == ';';
    while (!done && std::getline(in, line)) {
      f.text += line + "\n";
      ++f.lines;
      if (line == "{") definition = true;
      done = definition ? line == "}" : !line.empty() && line.back() == ';';
    }
    if (!definition)
      common += f.text; // a prototype: every part may call it
    else if (entry)
      entries.push_back(std::move(f));
    else
      helpers += f.text;
  }
  parts = std::min(parts, entries.size());
  if (parts <= 1) {
    PtxPart whole{ptx, {}};
    for (const Function& f : entries)
      whole.entries.push_back(f.name);
    return {whole};
  }
  size_t total = 0;
  for (const Function& f : entries)
    total += f.lines;
  std::vector<PtxPart> out;
  size_t next = 0, done = 0;
  for (size_t p = 0; p < parts; ++p) {
    PtxPart part{common + helpers, {}};
    // Up to this part's share of the lines, at least one entry, and leave one for each part after.
    size_t goal = total * (p + 1) / parts;
    while (next < entries.size() && entries.size() - next > parts - p - 1 &&
           (part.entries.empty() || done + entries[next].lines <= goal || p + 1 == parts)) {
      part.ptx += entries[next].text;
      part.entries.push_back(entries[next].name);
      done += entries[next].lines;
      ++next;
    }
    out.push_back(std::move(part));
  }
  return out;
}

} // namespace weft::runtime::cuda
