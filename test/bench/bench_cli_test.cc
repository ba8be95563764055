// `weft bench` end to end on a small workload list: table content and exit codes.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "run_weft.h"

namespace fs = std::filesystem;

namespace {

using Result = weft::testing::WeftResult;

Result runWeft(const std::string& args) {
  return weft::testing::runWeft(args, "", WEFT_SOURCE_DIR);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const std::string kSmall = "examples/graphs/layer_norm.json --bind B=64 --compile-runs 1";

} // namespace

TEST_CASE("weft bench: one kernel per op, XLA's five, one stitched kernel", "[bench][cli]") {
  Result r = runWeft("bench " + kSmall);
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK(contains(r.out, "| layer_norm | none | 15 | 0 |"));
  CHECK(contains(r.out, "| layer_norm | xla | 5 | 0 |"));
  CHECK(contains(r.out, "| layer_norm | astitch | 1 | 0 |"));
  CHECK(contains(r.out, "## Targets"));
  CHECK_FALSE(contains(r.out, "## Compile-time scaling")); // only for the whole suite
  CHECK(contains(r.err, "weft bench: [1/1]"));             // progress on stderr
  CHECK(contains(r.err, "layer_norm astitch h100: simulating"));
}

TEST_CASE("weft bench --format json, two profiles, one policy", "[bench][cli]") {
  Result r = runWeft("bench " + kSmall + " --policy astitch --device-spec h100,v100 --format json");
  INFO(r.err);
  REQUIRE(r.rc == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j["workloads"].size() == 1);
  const auto& runs = j["workloads"][0]["runs"];
  REQUIRE(runs.size() == 2);
  CHECK(runs[0]["profile"] == "h100");
  CHECK(runs[1]["profile"] == "v100");
  CHECK(runs[0]["kernels"] == 1);
  CHECK(runs[0]["compileMs"]["runs"] == 1);
  CHECK_FALSE(runs[1].contains("compileMs")); // compile times are the first profile's
  CHECK(j["workloads"][0]["compulsoryBytes"] == 64 * 768 * 4 * 2 + 768 * 4 * 2);
}

TEST_CASE("weft bench: unknown workload, policy or profile is exit 2 naming it", "[bench][cli]") {
  Result w = runWeft("bench layer_norm_f33");
  CHECK(w.rc == 2);
  CHECK(contains(w.err, "unknown workload \"layer_norm_f33\""));
  CHECK(contains(w.err, "layer_norm_f32"));
  Result p = runWeft("bench " + kSmall + " --policy tvm");
  CHECK(p.rc == 2);
  CHECK(contains(p.err, "unknown policy \"tvm\""));
  Result d = runWeft("bench " + kSmall + " --device-spec h200");
  CHECK(d.rc == 2);
  CHECK(contains(d.err, "unknown profile \"h200\""));
  CHECK(contains(d.err, "v100"));
  Result b = runWeft("bench examples/graphs/layer_norm.json --compile-runs 1");
  CHECK(b.rc == 2);
  CHECK(contains(b.err, "symbol \"B\" is not bound"));
  CHECK(contains(b.err, "--bind B="));
}
