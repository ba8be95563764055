#include "ir/fingerprint.h"

#include <cstring>
#include <fmt/format.h>

#include "ir/sha256.h"

namespace weft::ir {
namespace {

/// A double by its 64 bits: -0 and +0 differ, and so do NaN payloads.
std::string bits(double v) {
  uint64_t u;
  std::memcpy(&u, &v, sizeof u);
  return fmt::format("{:016x}", u);
}

std::string list(const std::vector<int64_t>& v) {
  return fmt::format("[{}]", fmt::join(v, ","));
}

std::string attrsText(const Attrs& attrs) {
  return std::visit(
      [](const auto& a) -> std::string {
        using A = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<A, NoAttrs>) {
          return "";
        } else if constexpr (std::is_same_v<A, ParameterAttrs>) {
          return fmt::format("index={}", a.index);
        } else if constexpr (std::is_same_v<A, ConstantAttrs>) {
          if (a.values.size() <= kInlineConstantValues) {
            std::string out = "values=";
            for (double v : a.values)
              out += bits(v) + ",";
            return out;
          }
          Sha256 h;
          h.update(a.values.data(), a.values.size() * sizeof(double));
          return fmt::format("values#{}:sha256={}", a.values.size(), h.hexDigest());
        } else if constexpr (std::is_same_v<A, IotaAttrs>) {
          return fmt::format("axis={}", a.axis);
        } else if constexpr (std::is_same_v<A, CompareAttrs>) {
          return fmt::format("dir={}", compareDirName(a.dir));
        } else if constexpr (std::is_same_v<A, BroadcastAttrs>) {
          return "dims=" + list(a.dims);
        } else if constexpr (std::is_same_v<A, TransposeAttrs>) {
          return "perm=" + list(a.perm);
        } else if constexpr (std::is_same_v<A, SliceAttrs>) {
          return fmt::format("starts={} limits={} strides={}", list(a.starts), list(a.limits),
                             list(a.strides));
        } else if constexpr (std::is_same_v<A, ConcatAttrs>) {
          return fmt::format("axis={}", a.axis);
        } else if constexpr (std::is_same_v<A, PadAttrs>) {
          return fmt::format("low={} high={} value={}", list(a.low), list(a.high), bits(a.value));
        } else if constexpr (std::is_same_v<A, GatherAttrs>) {
          return fmt::format("axes={} dims={}", list(a.axes), list(a.dims));
        } else {
          static_assert(std::is_same_v<A, ReduceAttrs>);
          return fmt::format("kind={} axes={}", reduceKindName(a.kind), list(a.axes));
        }
      },
      attrs);
}

} // namespace

std::string fingerprint(const Graph& g) {
  std::string out;
  for (const Node& n : g.nodes()) {
    std::vector<std::string> shape;
    for (const Dim& d : n.type.shape)
      shape.push_back(d.str());
    // Names are length-prefixed so that no name can mimic the fields around it.
    out += fmt::format("%{} {}:{} {} {}[{}] ({}) {{{}}}\n", n.id, n.name.size(), n.name,
                       opName(n.kind), dtypeName(n.type.dtype), fmt::join(shape, ","),
                       fmt::join(n.operands, ","), attrsText(n.attrs));
  }
  out += fmt::format("inputs {}\noutputs {}\n", fmt::join(g.inputs(), ","),
                     fmt::join(g.outputs(), ","));
  return out;
}

} // namespace weft::ir
