// Compulsory bytes, rows-fit-on-chip, the suite's names and the generated graphs.
#include <catch2/catch.hpp>

#include "bench/synthetic_graphs.h"
#include "bench/workloads.h"
#include "ir/printer.h"
#include "weft/error.h"

using namespace weft;
using namespace weft::bench;

TEST_CASE("compulsory bytes: every input read once, every output written once",
          "[bench][workloads]") {
  ir::Graph g;
  ir::NodeId x = g.parameter("x", {ir::DType::f32, {10, 4}}); // 160 B
  ir::NodeId b = g.parameter("b", {ir::DType::f16, {4}});     // 8 B
  ir::NodeId b32 = g.convert(b, ir::DType::f32);
  ir::NodeId bb = g.broadcastInDim(b32, {10, 4}, {1});
  ir::NodeId y = g.binary(ir::OpKind::Add, x, bb);
  ir::NodeId s = g.reduce(ir::ReduceKind::Sum, y, {1}); // 40 B
  ir::NodeId h = g.convert(y, ir::DType::bf16);         // 80 B
  g.setOutputs({s, h});
  CHECK(compulsoryBytes(g) == 160 + 8 + 40 + 80);
}

TEST_CASE("compulsory bytes: an input only gathers read counts the elements they gather",
          "[bench][workloads][gather]") {
  ir::Graph g;
  ir::NodeId table = g.parameter("table", {ir::DType::f32, {1000, 8}}); // 32,000 B
  ir::NodeId small = g.parameter("small", {ir::DType::f32, {2, 8}});    // 64 B
  ir::NodeId ids = g.parameter("ids", {ir::DType::i32, {5}});           // 20 B
  ir::NodeId spread = g.broadcastInDim(ids, {5, 8}, {0});
  ir::NodeId rows = g.gather(table, {spread}, {0}, {1});           // 40 elements: 160 B
  ir::NodeId picks = g.gather(small, {spread}, {0}, {1});          // 160 B > the table's 64
  ir::NodeId y = g.binary(ir::OpKind::Add, rows, picks);           // 160 B
  ir::NodeId twice = g.gather(table, {spread}, {0}, {1});
  g.setOutputs({y, twice});                                        // 160 B more
  CHECK(compulsoryBytes(g) == (160 + 160) + 64 + 20 + 160 + 160);
  // Read by something else too: the whole input.
  g.addOutput(g.unary(ir::OpKind::Neg, small));                    // 64 B
  CHECK(compulsoryBytes(g) == (160 + 160) + 64 + 20 + 160 + 160 + 64);
}

TEST_CASE("rows fit on chip when each reduce's row fits one block's shared memory",
          "[bench][workloads]") {
  ir::Graph g;
  ir::NodeId x = g.parameter("x", {ir::DType::f16, {8, 1000}});
  g.addOutput(g.reduce(ir::ReduceKind::Sum, x, {1})); // 1000 elements x 4 B (f32 accumulation)
  CHECK(rowsFitOnChip(g, 4000));
  CHECK_FALSE(rowsFitOnChip(g, 3999));

  ir::Graph m;
  ir::NodeId a = m.parameter("a", {ir::DType::f32, {4, 4}});
  m.addOutput(m.dot(a, a));
  CHECK_FALSE(rowsFitOnChip(m, 1 << 20)); // library kernels are not stitched
}

TEST_CASE("generated graphs have exactly the size asked for and are deterministic",
          "[bench][workloads]") {
  for (int nodes : {100, 1000, 10000}) {
    ir::Graph g = clusteredGraph(nodes, 64, 64);
    CHECK(g.size() == size_t(nodes));
    int dots = 0;
    for (const ir::Node& n : g.nodes())
      dots += n.kind == ir::OpKind::Dot;
    CHECK(dots >= nodes / 60); // a matmul every ~50 nodes
  }
  ir::Graph c = elementwiseCluster(200, 16, 8);
  CHECK(c.size() == 201); // x and 200 ops
  CHECK(ir::printGraph(elementwiseCluster(200, 16, 8)) == ir::printGraph(c));
  CHECK(ir::printGraph(elementwiseCluster(200, 16, 8, 2)) != ir::printGraph(c));
}

TEST_CASE("the suite's workloads load, and unknown names list the suite", "[bench][workloads]") {
  std::vector<Workload> suite = suiteWorkloads(defaultWorkloadsDir());
  REQUIRE(suite.size() == 16);
  for (const Workload& w : suite) {
    if (w.name == "graph_10000") continue; // generated, large; its generator is tested above
    INFO(w.name);
    ir::Graph g = w.build();
    CHECK(g.symbols().empty()); // production shapes are static
    CHECK(compulsoryBytes(g) > 0);
  }
  CHECK(findWorkload("softmax", defaultWorkloadsDir()).name == "softmax");
  try {
    findWorkload("softmx", defaultWorkloadsDir());
    FAIL("no error");
  } catch (const InputError& e) {
    std::string m = e.what();
    CHECK(m.find("unknown workload \"softmx\"") != std::string::npos);
    CHECK(m.find("layer_norm_f32") != std::string::npos);
    CHECK(m.find("graph_10000") != std::string::npos);
  }
}
