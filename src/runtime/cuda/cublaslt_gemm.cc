#include "runtime/cuda/cublaslt_gemm.h"

#include <algorithm>
#include <limits>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "weft/error.h"

namespace weft::runtime::cuda::lt {
namespace {

std::optional<int32_t> dataType(ir::DType t) {
  switch (t) {
  case ir::DType::f32: return kR32F;
  case ir::DType::f16: return kR16F;
  case ir::DType::bf16: return kR16BF;
  default: return std::nullopt;
  }
}

const char* typeName(int32_t type) {
  return type == kR32F ? "f32" : type == kR16F ? "f16" : type == kR16BF ? "bf16" : "?";
}

/// The bias of an epilogue that is exactly `dot + broadcast(bias)` (either order) with bias a
/// vector along the result's last dim (N); -1 otherwise.
ir::NodeId biasAlongN(const ir::Graph& g, ir::NodeId dot, const fusion::GemmEpilogue& e) {
  if (e.ops.size() != 2 || e.reads.size() != 1) return -1;
  const ir::Node& bcast = g.node(e.ops[0]);
  const ir::Node& add = g.node(e.ops[1]);
  if (bcast.kind != ir::OpKind::BroadcastInDim || add.kind != ir::OpKind::Add) return -1;
  if (e.result != add.id) return -1;
  bool dotPlusBias = (add.operands[0] == dot && add.operands[1] == bcast.id) ||
                     (add.operands[1] == dot && add.operands[0] == bcast.id);
  if (!dotPlusBias) return -1;
  ir::NodeId bias = bcast.operands[0];
  const ir::Shape& out = g.node(dot).type.shape;
  const ir::Node& b = g.node(bias);
  const auto& dims = bcast.attr<ir::BroadcastAttrs>().dims;
  if (b.type.shape.size() != 1 || dims.size() != 1 || dims[0] != int64_t(out.size()) - 1 ||
      b.type.shape[0] != out.back())
    return -1;
  if (e.reads[0].value != bias || e.reads[0].kind != fusion::EpilogueRead::Kind::Broadcast)
    return -1;
  return bias;
}

std::string opList(const ir::Graph& g, const std::vector<ir::NodeId>& ops) {
  std::vector<std::string> names;
  for (ir::NodeId op : ops)
    names.emplace_back(ir::opName(g.node(op).kind));
  return fmt::format("{}", fmt::join(names, ", "));
}

/// A weft operand (rows × cols, lying as `o` says) as the cuBLASLt matrix it is read as, and
/// whether the product needs it transposed: `wantTransposed` when cuBLASLt must see the
/// matrix transposed (the swapped product), the stored view being transposed already when
/// the operand is row-major.
struct Viewed {
  Layout layout;
  int32_t op = kOpN;
};
Viewed view(const fusion::GemmOperand& o, int64_t rows, int64_t cols, int64_t batch,
            int64_t ld, int64_t batchStride, int32_t type, bool wantTransposed) {
  Viewed v;
  v.layout.type = type;
  bool storedTransposed = o.rowMajor();
  v.layout.rows = uint64_t(storedTransposed ? cols : rows);
  v.layout.cols = uint64_t(storedTransposed ? rows : cols);
  // One column: its stride is never used; cuBLASLt still wants it at least the rows.
  v.layout.ld = v.layout.cols == 1 ? std::max<int64_t>(ld, int64_t(v.layout.rows)) : ld;
  v.layout.batchCount = int32_t(batch);
  v.layout.batchStride = batch > 1 ? batchStride : 0;
  v.op = storedTransposed != wantTransposed ? kOpT : kOpN;
  return v;
}

} // namespace

std::string whyNotEligible(const fusion::FusionPlan& plan, const fusion::LibraryCall& call) {
  const ir::Graph& g = plan.graph;
  const ir::Node& dot = g.node(call.op);
  if (dot.kind != ir::OpKind::Dot)
    return fmt::format("a {} step, not a dot", ir::opName(dot.kind));
  if (!dataType(dot.type.dtype))
    return fmt::format("a {} dot (cuBLASLt serves f32, f16 and bf16 here)",
                       ir::dtypeName(dot.type.dtype));
  const fusion::GemmPlan& p = call.gemm;
  for (const auto& [name, o] : {std::pair{"A", &p.a}, std::pair{"B", &p.b}})
    if (o->computed())
      return fmt::format("operand {} is computed on load (a prologue with elementwise ops)", name);
  if (!call.epilogue.empty() && biasAlongN(g, call.op, call.epilogue) < 0)
    return fmt::format("its epilogue ({}) is not a bias add along N",
                       opList(g, call.epilogue.ops));
  if (biasAlongN(g, call.op, call.epilogue) >= 0 && !p.c.rowMajor())
    return "its bias runs along a column-major result's columns";
  if (g.node(call.result()).type.dtype != dot.type.dtype)
    return "its result's dtype differs from the dot's";
  return "";
}

Described describe(const fusion::FusionPlan& plan, const fusion::LibraryCall& call,
                   const ir::Binding& binding, bool tf32) {
  Described out;
  if (out.whyNot = whyNotEligible(plan, call); !out.whyNot.empty()) return out;
  const ir::Graph& g = plan.graph;
  const fusion::GemmPlan& p = call.gemm;
  const int64_t batch = p.batch.evaluate(binding), m = p.m.evaluate(binding),
                n = p.n.evaluate(binding), k = p.k.evaluate(binding);
  if (batch == 0 || m == 0 || n == 0 || k == 0) {
    out.whyNot = fmt::format("an empty product (batch {}, M {}, N {}, K {})", batch, m, n, k);
    return out;
  }
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  if (std::max({batch, m, n, k}) > kMax) {
    out.whyNot = fmt::format("a dim over int32 (batch {}, M {}, N {}, K {})", batch, m, n, k);
    return out;
  }
  const int32_t type = *dataType(g.node(call.op).type.dtype);
  Matmul mm;
  mm.computeType = tf32 && type == kR32F ? kCompute32FFastTf32 : kCompute32F;
  mm.scaleType = kR32F;
  // A row-major result is computed transposed, so cuBLASLt sees the swapped product.
  mm.swapped = p.c.rowMajor();
  std::vector<ir::NodeId> operands = call.epilogue.operands(g.node(call.op).operands);
  auto evaluated = [&](const fusion::GemmOperand& o, int64_t rows, int64_t cols) {
    return view(o, rows, cols, batch, o.ld.evaluate(binding), o.batchStride.evaluate(binding),
                type, mm.swapped);
  };
  Viewed a = evaluated(p.a, m, k), b = evaluated(p.b, k, n), c = evaluated(p.c, m, n);
  const Viewed& first = mm.swapped ? b : a;
  const Viewed& second = mm.swapped ? a : b;
  mm.a = first.layout;
  mm.b = second.layout;
  mm.transa = first.op;
  mm.transb = second.op;
  mm.d = c.layout; // its op is always N: the result is viewed as the product computes it
  mm.m = uint64_t(mm.swapped ? n : m);
  mm.n = uint64_t(mm.swapped ? m : n);
  mm.k = uint64_t(k);
  mm.aValue = mm.swapped ? operands[1] : operands[0];
  mm.bValue = mm.swapped ? operands[0] : operands[1];
  mm.dValue = call.result();
  for (const auto& [name, l] : {std::pair{"A", &mm.a}, std::pair{"B", &mm.b}, std::pair{"D", &mm.d}})
    if (l->ld < int64_t(l->rows)) {
      out.whyNot = fmt::format("cuBLASLt's {} has leading dimension {} under {} rows (its rows "
                               "overlap: read through a broadcast)",
                               name, l->ld, l->rows);
      return out;
    }
  if (mm.d.batchCount > 1 && mm.d.batchStride == 0) {
    out.whyNot = "every batch of the result is stored in one place";
    return out;
  }
  if (ir::NodeId bias = biasAlongN(g, call.op, call.epilogue); bias >= 0) {
    mm.epilogue = kEpilogueBias;
    mm.biasType = type;
    mm.biasValue = bias;
  }
  out.matmul = mm;
  return out;
}

std::string explainProviders(const fusion::FusionPlan& plan) {
  std::string lines;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const auto* call = std::get_if<fusion::LibraryCall>(&plan.steps[i]);
    if (!call) continue;
    const ir::Node& op = plan.graph.node(call->op);
    std::string what;
    if (std::string why = whyNotEligible(plan, *call); !why.empty()) {
      what = "weft's kernel only: " + why;
    } else {
      std::optional<Described> d;
      try {
        d = describe(plan, *call, {}, call->gemm.tf32);
      } catch (const InputError&) { // symbolic dims: the call is made per binding
      }
      what = !d ? std::string("cuBLASLt may run it (its call is made for each binding)")
             : d->matmul ? "cuBLASLt may run it: " + d->matmul->str()
                         : "weft's kernel only: " + d->whyNot;
    }
    lines += fmt::format("  step {} ({} %{}): {}\n", i, ir::opName(op.kind), op.name, what);
  }
  if (lines.empty()) return "";
  return "GEMM providers on the cuda device (cuBLASLt where its library is installed: the faster "
         "of it and weft's kernel is kept at a step's first run; WEFT_GEMM_PROVIDER=weft|cublaslt "
         "forces one; `weft run --device cuda` plans dots plain where cuBLASLt loads, "
         "DeviceSpec::gemmLibrary):\n" +
         lines;
}

std::string Matmul::str() const {
  auto op = [](int32_t o) { return o == kOpT ? "T" : "N"; };
  return fmt::format("{}, transa {} transb {}, m {} n {} k {}, batch {}, {} → {}, compute {}{}",
                     swapped ? "Cᵀ = Bᵀ·Aᵀ" : "C = A·B", op(transa), op(transb), m, n, k,
                     d.batchCount, typeName(a.type), typeName(d.type),
                     computeType == kCompute32FFastTf32 ? "32F_FAST_TF32" : "32F",
                     epilogue == kEpilogueBias ? ", bias" : "");
}

} // namespace weft::runtime::cuda::lt
