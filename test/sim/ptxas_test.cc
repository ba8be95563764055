// The simulator tests' hand-written PTX files, assembled by ptxas for the target they declare:
// what the simulator is tested to run is PTX the GPU accepts.
#include <catch2/catch.hpp>

#include "../codegen/ptxas_or_skip.h"
#include "sim_test_util.h"

using namespace weft;

TEST_CASE("ptxas: the cluster kernels (mapa, ld/st.shared::cluster, barrier.cluster) assemble "
          "for sm_90",
          "[sim][ptxas][cluster]") {
  const std::string ptxas = test::ptxasOrSkip();
  if (ptxas.empty()) return;
  codegen::PtxasReport r = codegen::runPtxas(ptxas, sim::test::readPtx("cluster.ptx"), "sm_90");
  INFO(r.log);
  REQUIRE(r.ok());
  CHECK(r.functions.size() == 15);
}
