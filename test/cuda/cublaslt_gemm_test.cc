// Which GEMM steps cuBLASLt can run and the call that runs one (runtime/cuda/cublaslt_gemm.h),
// on plans the astitch planner makes and on GemmPlans written out by hand: row-major results
// computed as Cᵀ = Bᵀ·Aᵀ, transposed and head-split operands, batches, broadcasts, dtypes,
// epilogues and prologues.
#include <catch2/catch.hpp>

#include "fusion/plan.h"
#include "runtime/cuda/cublaslt_gemm.h"

using namespace weft;
using namespace weft::runtime::cuda;
using ir::DType;
using ir::OpKind;
using L = fusion::GemmOperand::Layout;

namespace {

const fusion::LibraryCall& callOf(const fusion::FusionPlan& p, const std::string& dot = "") {
  for (const fusion::Step& s : p.steps)
    if (const auto* c = std::get_if<fusion::LibraryCall>(&s))
      if (dot.empty() || p.graph.node(c->op).name == dot) return *c;
  FAIL("no library call " << dot);
  throw 0;
}

fusion::FusionPlan planOf(const ir::Graph& g) {
  return fusion::plan(g, *deviceSpecProfile("h100"), fusion::Policy::AStitch);
}

ir::NodeId id(const ir::Graph& g, const std::string& name) {
  return *g.find(name);
}

lt::Matmul matmulOf(const fusion::FusionPlan& p, const fusion::LibraryCall& call,
                    const ir::Binding& binding = {}, bool tf32 = false) {
  lt::Described d = lt::describe(p, call, binding, tf32);
  INFO(d.whyNot);
  REQUIRE(d.matmul);
  CHECK(d.whyNot.empty());
  return *d.matmul;
}

lt::Layout layout(int32_t type, uint64_t rows, uint64_t cols, int64_t ld, int32_t batch = 1,
                  int64_t stride = 0) {
  return {type, rows, cols, ld, batch, stride};
}

} // namespace

TEST_CASE("cublasLt: a row-major C = A·B is computed as Cᵀ = Bᵀ·Aᵀ with no transposes",
          "[cuda][cublaslt]") {
  // x [128, 256] · w [256, 768]
  ir::Graph g;
  auto x = g.parameter("x", {DType::f32, {128, 256}});
  auto w = g.parameter("w", {DType::f32, {256, 768}});
  g.addOutput(g.dot(x, w, "y"));
  fusion::FusionPlan p = planOf(g);
  lt::Matmul m = matmulOf(p, callOf(p));
  CHECK(m.swapped);
  CHECK(m.transa == lt::kOpN);
  CHECK(m.transb == lt::kOpN);
  CHECK(m.m == 768);
  CHECK(m.n == 128);
  CHECK(m.k == 256);
  CHECK(m.a == layout(lt::kR32F, 768, 256, 768)); // w, read column-major: wᵀ
  CHECK(m.b == layout(lt::kR32F, 256, 128, 256)); // xᵀ
  CHECK(m.d == layout(lt::kR32F, 768, 128, 768)); // yᵀ
  CHECK(m.aValue == w);
  CHECK(m.bValue == x);
  CHECK(m.dValue == id(g, "y"));
  CHECK(m.biasValue == -1);
  CHECK(m.epilogue == lt::kEpilogueDefault);
  CHECK(m.computeType == lt::kCompute32F);
  CHECK(m.scaleType == lt::kR32F);
  CHECK(m.str() == "Cᵀ = Bᵀ·Aᵀ, transa N transb N, m 768 n 128 k 256, batch 1, f32 → f32, "
                   "compute 32F");
  // TF32 only when the program allows it, and only for f32
  CHECK(matmulOf(p, callOf(p), {}, true).computeType == lt::kCompute32FFastTf32);
}

TEST_CASE("cublasLt: an operand read transposed in place is transposed by cuBLASLt",
          "[cuda][cublaslt]") {
  // x [70, 96] · transpose(w [130, 96]): the GEMM reads w column-major (ld 96)
  ir::Graph g;
  auto x = g.parameter("x", {DType::f16, {70, 96}});
  auto w = g.parameter("w", {DType::f16, {130, 96}});
  g.addOutput(g.dot(x, g.transpose(w, {1, 0}), "y"));
  fusion::FusionPlan p = planOf(g);
  const fusion::LibraryCall& call = callOf(p);
  REQUIRE_FALSE(call.gemm.b.rowMajor());
  REQUIRE_FALSE(call.epilogue.b.empty()); // a layout-only prologue: eligible
  lt::Matmul m = matmulOf(p, call);
  CHECK(m.transa == lt::kOpT);
  CHECK(m.transb == lt::kOpN);
  CHECK(m.a == layout(lt::kR16F, 96, 130, 96)); // wᵀ [K, N] as it lies: column-major, ld 96
  CHECK(m.b == layout(lt::kR16F, 96, 70, 96));
  CHECK(m.d == layout(lt::kR16F, 130, 70, 130));
  CHECK(m.aValue == w); // the prologue's source, read in place
  CHECK(m.bValue == x);
  // f16 accumulates in f32 whatever tf32 says
  CHECK(matmulOf(p, call, {}, true).computeType == lt::kCompute32F);
}

TEST_CASE("cublasLt: batched operands keep their batch strides", "[cuda][cublaslt]") {
  ir::Graph g;
  auto a = g.parameter("a", {DType::bf16, {12, 128, 64}});
  auto b = g.parameter("b", {DType::bf16, {12, 64, 96}});
  g.addOutput(g.dot(a, b, "c"));
  fusion::FusionPlan p = planOf(g);
  lt::Matmul m = matmulOf(p, callOf(p));
  CHECK(m.a == layout(lt::kR16BF, 96, 64, 96, 12, 64 * 96));
  CHECK(m.b == layout(lt::kR16BF, 64, 128, 64, 12, 128 * 64));
  CHECK(m.d == layout(lt::kR16BF, 96, 128, 96, 12, 128 * 96));
  CHECK(m.str() == "Cᵀ = Bᵀ·Aᵀ, transa N transb N, m 96 n 128 k 64, batch 12, bf16 → bf16, "
                   "compute 32F");
}

TEST_CASE("cublasLt: attention's head split, K^T and head merge map to leading dimensions and "
          "batch strides",
          "[cuda][cublaslt]") {
  const int64_t S = 48, H = 128, NH = 4, D = H / NH;
  ir::Graph g;
  ir::NodeId x = g.parameter("x", {DType::f16, {S, H}});
  auto heads = [&](const char* name, std::vector<int64_t> perm) {
    ir::NodeId w = g.parameter(std::string("w") + name, {DType::f16, {H, H}});
    return g.transpose(g.reshape(g.dot(x, w, name), {S, NH, D}), perm);
  };
  ir::NodeId q = heads("q", {1, 0, 2}), k = heads("k", {1, 2, 0}), v = heads("v", {1, 0, 2});
  // (no softmax: an exp would be the scores GEMM's epilogue, which cuBLASLt does not run)
  ir::NodeId context = g.dot(g.dot(q, k, "scores"), v, "context.heads");
  g.addOutput(g.reshape(g.transpose(context, {1, 0, 2}), {S, H}, "context"));
  fusion::FusionPlan p = planOf(g);

  // scores [NH, S, S] = q [NH, S, D] (rows H apart, heads D apart) · kᵀ (column-major, ld H)
  lt::Matmul scores = matmulOf(p, callOf(p, "scores"));
  CHECK(scores.transa == lt::kOpT); // kᵀ lies as k: cuBLASLt transposes it back
  CHECK(scores.transb == lt::kOpN);
  CHECK(scores.a == layout(lt::kR16F, D, S, H, NH, D));
  CHECK(scores.b == layout(lt::kR16F, D, S, H, NH, D));
  CHECK(scores.d == layout(lt::kR16F, S, S, S, NH, S * S));
  CHECK(scores.aValue == id(g, "k"));
  CHECK(scores.bValue == id(g, "q"));

  // context [NH, S, D] stored into [S, NH, D] in place: ld H, heads D apart
  const fusion::LibraryCall& merge = callOf(p, "context.heads");
  REQUIRE_FALSE(merge.epilogue.store.empty());
  lt::Matmul ctx = matmulOf(p, merge);
  CHECK(ctx.d == layout(lt::kR16F, D, S, H, NH, D));
  CHECK(ctx.dValue == id(g, "context"));
}

TEST_CASE("cublasLt: a bias add along N is its bias epilogue", "[cuda][cublaslt]") {
  for (DType t : {DType::f32, DType::f16}) {
    ir::Graph g;
    auto x = g.parameter("x", {t, {3, 64, 32}});
    auto w = g.parameter("w", {t, {3, 32, 48}});
    auto bias = g.parameter("bias", {t, {48}});
    auto mm = g.dot(x, w, "mm");
    g.addOutput(g.binary(OpKind::Add, g.broadcastInDim(bias, {3, 64, 48}, {2}), mm, "h"));
    fusion::FusionPlan p = planOf(g);
    const fusion::LibraryCall& call = callOf(p);
    REQUIRE(call.result() == id(g, "h")); // the add is the GEMM's epilogue
    CHECK(lt::whyNotEligible(p, call).empty());
    lt::Matmul m = matmulOf(p, call);
    CHECK(m.epilogue == lt::kEpilogueBias);
    CHECK(m.biasValue == bias);
    CHECK(m.biasType == (t == DType::f32 ? lt::kR32F : lt::kR16F));
    CHECK(m.m == 48); // the bias runs along cuBLASLt's rows: weft's N
    CHECK(m.dValue == id(g, "h"));
    CHECK_THAT(m.str(), Catch::EndsWith(", bias"));
  }
}

TEST_CASE("cublasLt: other epilogues, computed operands and other dtypes stay weft's",
          "[cuda][cublaslt]") {
  SECTION("relu") {
    ir::Graph g;
    auto x = g.parameter("x", {DType::f32, {64, 32}});
    auto w = g.parameter("w", {DType::f32, {32, 48}});
    auto zero = g.broadcastInDim(g.scalar(DType::f32, 0), {64, 48}, {});
    g.addOutput(g.binary(OpKind::Max, g.dot(x, w, "mm"), zero, "relu"));
    fusion::FusionPlan p = planOf(g);
    REQUIRE(callOf(p).result() == id(g, "relu"));
    CHECK_THAT(lt::whyNotEligible(p, callOf(p)),
               Catch::StartsWith("its epilogue (") && Catch::EndsWith(") is not a bias add along N") &&
                   Catch::Contains("max"));
    CHECK_FALSE(lt::describe(p, callOf(p), {}, false).matmul);
  }
  SECTION("a bias along M (a vector per row)") {
    ir::Graph g;
    auto x = g.parameter("x", {DType::f32, {64, 32}});
    auto w = g.parameter("w", {DType::f32, {32, 48}});
    auto bias = g.parameter("bias", {DType::f32, {64}});
    g.addOutput(g.binary(OpKind::Add, g.dot(x, w, "mm"), g.broadcastInDim(bias, {64, 48}, {0}), "h"));
    fusion::FusionPlan p = planOf(g);
    REQUIRE(callOf(p).result() == id(g, "h"));
    CHECK(lt::whyNotEligible(p, callOf(p)) ==
          "its epilogue (broadcast_in_dim, add) is not a bias add along N");
  }
  SECTION("an operand scaled on load") {
    ir::Graph g;
    auto x = g.parameter("x", {DType::f16, {70, 96}});
    auto w = g.parameter("w", {DType::f16, {96, 130}});
    auto half = g.broadcastInDim(g.constant(DType::f16, {}, {0.5}), {70, 96}, {});
    g.addOutput(g.dot(g.binary(OpKind::Mul, x, half, "x.scaled"), w, "out"));
    fusion::FusionPlan p = planOf(g);
    REQUIRE(callOf(p).gemm.a.computed());
    CHECK(lt::whyNotEligible(p, callOf(p)) ==
          "operand A is computed on load (a prologue with elementwise ops)");
  }
  SECTION("integer and f64 dots") {
    for (DType t : {DType::i32, DType::f64}) {
      ir::Graph g;
      g.addOutput(g.dot(g.parameter("a", {t, {8, 8}}), g.parameter("b", {t, {8, 8}}), "c"));
      fusion::FusionPlan p = planOf(g);
      CHECK(lt::whyNotEligible(p, callOf(p)) ==
            std::string("a ") + std::string(ir::dtypeName(t)) +
                " dot (cuBLASLt serves f32, f16 and bf16 here)");
    }
  }
}

TEST_CASE("cublasLt: on a device with a GEMM library astitch leaves every dot for it",
          "[cuda][cublaslt]") {
  // What stayed weft's above (an epilogue other than a bias, an operand computed on load)
  // stays plain when the device runs plain GEMMs on cuBLASLt (DeviceSpec::gemmLibrary).
  DeviceSpec library = *deviceSpecProfile("h100");
  library.gemmLibrary = true;
  ir::Graph g;
  auto x = g.parameter("x", {DType::f16, {70, 96}});
  auto w = g.parameter("w", {DType::f16, {96, 130}});
  auto half = g.broadcastInDim(g.constant(DType::f16, {}, {0.5}), {70, 96}, {});
  auto mm = g.dot(g.binary(OpKind::Mul, x, half, "x.scaled"), w, "mm");
  auto zero = g.broadcastInDim(g.scalar(DType::f16, 0), {70, 130}, {});
  g.addOutput(g.binary(OpKind::Max, mm, zero, "relu"));
  REQUIRE_FALSE(lt::whyNotEligible(planOf(g), callOf(planOf(g))).empty());
  fusion::FusionPlan p = fusion::plan(g, library, fusion::Policy::AStitch);
  CHECK(lt::whyNotEligible(p, callOf(p)) == "");
  CHECK(lt::describe(p, callOf(p), {}, false).matmul);
  CHECK_THAT(lt::explainProviders(p), Catch::Contains("cuBLASLt may run it"));
}

TEST_CASE("cublasLt: symbolic dims are evaluated under the binding", "[cuda][cublaslt]") {
  ir::Dim B = ir::Dim::symbol("B"), S = ir::Dim::symbol("S");
  ir::Graph g;
  auto a = g.parameter("a", {DType::f32, {B, S, 40}});
  auto b = g.parameter("b", {DType::f32, {B, 40, S}});
  g.addOutput(g.dot(a, b, "c"));
  fusion::FusionPlan p = planOf(g);
  lt::Matmul m = matmulOf(p, callOf(p), {{"B", 3}, {"S", 17}});
  CHECK(m.a == layout(lt::kR32F, 17, 40, 17, 3, 40 * 17));
  CHECK(m.b == layout(lt::kR32F, 40, 17, 40, 3, 17 * 40));
  CHECK(m.d == layout(lt::kR32F, 17, 17, 17, 3, 17 * 17));
  lt::Described empty = lt::describe(p, callOf(p), {{"B", 3}, {"S", 0}}, false);
  CHECK_FALSE(empty.matmul);
  CHECK(empty.whyNot == "an empty product (batch 3, M 0, N 0, K 40)");
}

namespace {
/// A plan of one dot a [M, K] · b [K, N] whose GemmPlan's operands are set by hand.
struct HandPlan {
  fusion::FusionPlan plan;
  fusion::LibraryCall call;
  HandPlan(int64_t batch, int64_t m, int64_t k, int64_t n) {
    ir::Shape as = {m, k}, bs = {k, n};
    if (batch > 1) as.insert(as.begin(), batch), bs.insert(bs.begin(), batch);
    ir::NodeId a = plan.graph.parameter("a", {DType::f32, as});
    ir::NodeId b = plan.graph.parameter("b", {DType::f32, bs});
    call.op = plan.graph.dot(a, b, "c");
    call.gemm.batch = batch;
    call.gemm.m = m;
    call.gemm.n = n;
    call.gemm.k = k;
  }
};
fusion::GemmOperand operand(L layout, int64_t ld, int64_t batchStride = 0) {
  fusion::GemmOperand o;
  o.layout = layout;
  o.ld = ld;
  o.batchStride = batchStride;
  return o;
}
} // namespace

TEST_CASE("cublasLt: every combination of layouts gets the transposes it needs",
          "[cuda][cublaslt]") {
  struct Case {
    L a, b, c;
    int32_t transa, transb;
    bool swapped;
  };
  // M 5, K 7, N 9; lds padded past the dims so each is told apart
  for (Case c : {Case{L::RowMajor, L::RowMajor, L::RowMajor, lt::kOpN, lt::kOpN, true},
                 Case{L::ColumnMajor, L::RowMajor, L::RowMajor, lt::kOpN, lt::kOpT, true},
                 Case{L::RowMajor, L::ColumnMajor, L::RowMajor, lt::kOpT, lt::kOpN, true},
                 Case{L::ColumnMajor, L::ColumnMajor, L::RowMajor, lt::kOpT, lt::kOpT, true},
                 Case{L::ColumnMajor, L::ColumnMajor, L::ColumnMajor, lt::kOpN, lt::kOpN, false},
                 Case{L::RowMajor, L::RowMajor, L::ColumnMajor, lt::kOpT, lt::kOpT, false}}) {
    HandPlan h(1, 5, 7, 9);
    h.call.gemm.a = operand(c.a, c.a == L::RowMajor ? 8 : 6);  // rows of 7, or columns of 5
    h.call.gemm.b = operand(c.b, c.b == L::RowMajor ? 10 : 8); // rows of 9, or columns of 7
    h.call.gemm.c = operand(c.c, c.c == L::RowMajor ? 11 : 6);
    lt::Matmul m = matmulOf(h.plan, h.call);
    INFO(m.str());
    CHECK(m.swapped == c.swapped);
    CHECK(m.transa == c.transa);
    CHECK(m.transb == c.transb);
    CHECK(m.m == (c.swapped ? 9u : 5u));
    CHECK(m.n == (c.swapped ? 5u : 9u));
    // cuBLASLt's A is the operand whose product dim is its m: op(A) is m × k
    const lt::Layout& A = m.a;
    uint64_t opRows = m.transa == lt::kOpN ? A.rows : A.cols;
    uint64_t opCols = m.transa == lt::kOpN ? A.cols : A.rows;
    CHECK(opRows == m.m);
    CHECK(opCols == m.k);
    const lt::Layout& Bl = m.b;
    CHECK((m.transb == lt::kOpN ? Bl.rows : Bl.cols) == m.k);
    CHECK((m.transb == lt::kOpN ? Bl.cols : Bl.rows) == m.n);
    CHECK(m.d.rows == m.m);
    CHECK(m.d.cols == m.n);
    CHECK(m.d.ld == (c.c == L::RowMajor ? 11 : 6));
  }
}

TEST_CASE("cublasLt: a batch read through a broadcast has batch stride 0, rows read through one "
          "are refused",
          "[cuda][cublaslt]") {
  HandPlan h(4, 16, 8, 32);
  h.call.gemm.a = operand(L::RowMajor, 8, 16 * 8);
  h.call.gemm.b = operand(L::RowMajor, 32, 0); // one weight for every batch
  h.call.gemm.c = operand(L::RowMajor, 32, 16 * 32);
  lt::Matmul m = matmulOf(h.plan, h.call);
  CHECK(m.a == layout(lt::kR32F, 32, 8, 32, 4, 0));
  CHECK(m.b == layout(lt::kR32F, 8, 16, 8, 4, 16 * 8));

  h.call.gemm.a = operand(L::RowMajor, 0, 8); // every row of A the same
  lt::Described d = lt::describe(h.plan, h.call, {}, false);
  CHECK_FALSE(d.matmul);
  CHECK(d.whyNot == "cuBLASLt's B has leading dimension 0 under 8 rows (its rows overlap: read "
                    "through a broadcast)");
}
