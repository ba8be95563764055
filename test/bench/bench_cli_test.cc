// `weft bench` end to end on a small workload list: table content and exit codes.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

struct Result {
  int rc;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Result runWeft(const std::string& args) {
  fs::path dir = fs::temp_directory_path() / ("weft_bench_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string cmd = "cd " WEFT_SOURCE_DIR " && " WEFT_BINARY_DIR "/tools/weft " + args + " > " +
                    (dir / "out").string() + " 2> " + (dir / "err").string();
  int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "out"), slurp(dir / "err")};
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
  CHECK(contains(b.err, "--bind B=64"));
}
