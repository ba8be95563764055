#include "codegen/ptx_annotate.h"

#include <fmt/format.h>

#include "ir/printer.h"

#include <map>
#include <string_view>

namespace weft::codegen {
namespace {

// A 10,000-op kernel would otherwise put a megabyte on one line.
constexpr size_t kMaxNamedOps = 32;

/// The kernel name of a line "... .entry NAME(" , or "" for any other line.
std::string_view entryName(std::string_view line) {
  size_t at = line.find(".entry ");
  if (at == std::string_view::npos || line.starts_with("//")) return {};
  std::string_view rest = line.substr(at + 7);
  size_t end = rest.find_first_of("( \t");
  return rest.substr(0, end);
}

} // namespace

std::string annotateKernels(const std::string& ptx, const fusion::FusionPlan& plan) {
  std::map<std::string, std::string, std::less<>> comments;
  for (const fusion::Step& step : plan.steps) {
    const auto* k = std::get_if<fusion::KernelPlan>(&step);
    if (!k) continue;
    std::string names;
    for (size_t i = 0; i < k->ops.size() && i < kMaxNamedOps; ++i)
      names += (i ? ", " : "") + ir::escapeControl(plan.graph.node(k->ops[i]).name);
    if (k->ops.size() > kMaxNamedOps)
      names += fmt::format(" and {} more", k->ops.size() - kMaxNamedOps);
    comments[k->name] = fmt::format("{}kernel {} computes {}\n", kKernelCommentPrefix, k->name, names);
  }
  std::string out;
  out.reserve(ptx.size() + comments.size() * 80);
  size_t begin = 0;
  while (begin < ptx.size()) {
    size_t end = ptx.find('\n', begin);
    end = end == std::string::npos ? ptx.size() : end + 1;
    std::string_view line(ptx.data() + begin, end - begin);
    std::string_view name = entryName(line);
    if (!name.empty())
      if (auto it = comments.find(name); it != comments.end()) out += it->second;
    out += line;
    begin = end;
  }
  return out;
}

} // namespace weft::codegen
