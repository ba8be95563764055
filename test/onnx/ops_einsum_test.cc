// Einsum (ops_einsum.cc): diagonals, labels summed away, ellipsis broadcasting, implicit
// outputs, several operands, integers and symbolic batch dims, run on the reference
// interpreter against values worked out by hand; malformed equations give a clear error.
#include <catch2/catch.hpp>

#include <cmath>

#include "frontend/onnx/onnx_import.h"
#include "ir/interpreter.h"
#include "model_builder.h"
#include "tensor_checks.h"

using namespace weft;
using namespace weft::onnx;
using namespace weft::onnx::test;
using Catch::Matchers::Contains;

namespace {

struct Operand {
  std::vector<std::string> dims;
  int elem = kFloat;
};

/// A one-node Einsum model over inputs x0, x1, ... of the given dims.
ModelBuilder einsum(const std::string& equation, const std::vector<Operand>& ops) {
  ModelBuilder m(12);
  std::vector<std::string> names;
  for (size_t i = 0; i < ops.size(); ++i) {
    names.push_back("x" + std::to_string(i));
    m.input(names.back(), ops[i].elem, ops[i].dims);
  }
  m.node("Einsum", names, {"y"}, {Attr::text("equation", equation)}, "e").output("y");
  return m;
}

HostTensor run(const std::string& equation, const std::vector<Operand>& ops,
               const std::vector<HostTensor>& inputs, const ir::Binding& binding = {}) {
  ir::Graph g = importOnnxBytes(einsum(equation, ops).bytes());
  return ir::interpret(g, inputs, binding).at(0);
}

} // namespace

TEST_CASE("Einsum: diagonals, sums, broadcast ellipses and chains of operands, by hand",
          "[onnx][einsum]") {
  HostTensor m = tensor({2, 2}, {1, 2, 3, 4});
  SECTION("a repeated label takes the diagonal; implicitly it is summed (the trace)") {
    checkClose(run("ii->i", {{{"2", "2"}}}, {m}), {1, 4});
    HostTensor trace = run("ii", {{{"2", "2"}}}, {m});
    CHECK(trace.shape.empty());
    checkClose(trace, {5});
    // a diagonal holding NaN off the diagonal is not touched by it
    HostTensor withNaN = tensor({2, 2}, {1, std::nan(""), std::nan(""), 4});
    checkClose(run(" i i -> i ", {{{"2", "2"}}}, {withNaN}), {1, 4});
  }
  SECTION("the implicit output is the labels seen once, in ASCII order") {
    // "ba,ca" -> "bc": m m^T; "ij->" sums everything
    checkClose(run("ba,ca", {{{"2", "2"}}, {{"2", "2"}}}, {m, m}), {5, 11, 11, 25});
    checkClose(run("ij->", {{{"2", "2"}}}, {m}), {10});
    checkClose(run("ij->ji", {{{"2", "2"}}}, {m}), {1, 3, 2, 4});
  }
  SECTION("ellipses broadcast, size-1 dims included") {
    // x [1, 3] against y [2, 3]: one dot product per row of y
    HostTensor x = tensor({1, 3}, {1, 2, 3});
    HostTensor y = tensor({2, 3}, {1, 0, -1, 2, 2, 2});
    HostTensor r = run("...i,...i->...", {{{"1", "3"}}, {{"2", "3"}}}, {x, y});
    CHECK(r.shape == std::vector<int64_t>{2});
    checkClose(r, {-2, 12});
    // an ellipsis of rank 0 against one of rank 1
    checkClose(run("...i,i->...", {{{"2", "3"}}, {{"3"}}}, {y, tensor({3}, {1, 2, 3})}), {-2, 12});
  }
  SECTION("three operands contract left to right: x A y") {
    HostTensor v = tensor({2}, {1, 2}), w = tensor({2}, {1, -1});
    checkClose(run("i,ij,j->", {{{"2"}}, {{"2", "2"}}, {{"2"}}}, {v, m, w}), {-3});
    // a label only one operand has and the output lacks is summed first: (sum_j m_ij) * w_k
    checkClose(run("ij,k->ik", {{{"2", "2"}}, {{"2"}}}, {m, w}), {3, -3, 7, -7});
  }
  SECTION("integers stay integers, uint8 wraps at 8 bits") {
    HostTensor a = tensor({2, 2}, {1, 2, 3, 4}, DType::i64);
    HostTensor r = run("ij,jk", {{{"2", "2"}, kInt64}, {{"2", "2"}, kInt64}}, {a, a});
    CHECK(r.dtype == DType::i64);
    CHECK(valuesOf(r) == std::vector<double>{7, 10, 15, 22});
    HostTensor u = tensor({1, 2}, {200, 100}, DType::i32);
    HostTensor w = tensor({2, 1}, {1, 1}, DType::i32);
    CHECK(valuesOf(run("ij,jk", {{{"1", "2"}, kUint8}, {{"2", "1"}, kUint8}}, {u, w})) ==
          std::vector<double>{44});
  }
  SECTION("symbolic batch dims go through the dot") {
    ir::Graph g =
        importOnnxBytes(einsum("bij,bjk->bik", {{{"B", "2", "2"}}, {{"B", "2", "1"}}}).bytes());
    CHECK(g.node(g.outputs()[0]).type.str() == "f32[B, 2, 1]");
    HostTensor b = tensor({2, 2, 1}, {1, 1, 1, 0});
    HostTensor mm = tensor({2, 2, 2}, {1, 2, 3, 4, 1, 2, 3, 4});
    checkClose(ir::interpret(g, {mm, b}, {{"B", 2}})[0], {3, 7, 1, 3});
  }
}

TEST_CASE("Einsum rejects malformed equations, naming the problem", "[onnx][einsum]") {
  auto error = [](const std::string& eq, std::vector<Operand> ops) {
    return errorOf(einsum(eq, ops).bytes());
  };
  Operand m{{"2", "3"}}, sq{{"3", "3"}};
  CHECK_THAT(error("ij,jk->ik", {m}), Contains("2 input terms but the node has 1 input"));
  CHECK_THAT(error("i-j", {m}), Contains("has the character '-'"));
  CHECK_THAT(error("i..j", {m}), Contains("'.' outside an ellipsis"));
  CHECK_THAT(error("...i...", {m}), Contains("more than one ellipsis"));
  CHECK_THAT(error("ij->i->j", {m}), Contains("more than one \"->\""));
  CHECK_THAT(error("ij->k", {m}), Contains("output label 'k' does not occur in any input"));
  CHECK_THAT(error("ij->ii", {m}), Contains("repeats the label 'i'"));
  CHECK_THAT(error("ijk", {m}), Contains("\"ijk\" has 3 labels but input 0 has rank 2"));
  CHECK_THAT(error("ijk...", {m}), Contains("3 labels besides \"...\" but input 0 has rank 2"));
  CHECK_THAT(error("ij,ij->ij", {m, sq}),
             Contains("label 'i' has size 2 in input 0 but 3 in input 1"));
  CHECK_THAT(error("ii->i", {m}), Contains("repeats the label 'i' on axes 0 and 1 of sizes 2 "
                                           "and 3"));
  CHECK_THAT(error("...j->j", {m}),
             Contains("stands for 1 axes but the output term \"j\" has no \"...\""));
  CHECK_THAT(error("ij,jk", {m, {{"3", "3"}, kInt64}}), Contains("input 1 has dtype i64"));
  ModelBuilder none(12);
  none.input("x", kFloat, {"2"}).node("Einsum", {"x"}, {"y"}).output("y");
  CHECK_THAT(errorOf(none.bytes()), Contains("needs the attribute equation"));
}
