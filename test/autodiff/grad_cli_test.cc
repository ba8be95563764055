// `weft grad`: the training graph it writes (read back, run on the interpreter), its default
// --wrt, ONNX input, and one-line exit-2 errors for a non-scalar loss, an integer wrt and
// unknown names.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "frontend/json_reader.h"
#include "frontend/weights_file.h"
#include "run_weft.h"

namespace fs = std::filesystem;
using weft::testing::runWeft;

namespace {

std::string writeFile(const std::string& name, const std::string& text) {
  fs::path p = weft::testing::scratchDir() / name;
  std::ofstream(p) << text;
  return p.string();
}

const std::string kExample = WEFT_SOURCE_DIR "/examples/graphs/layer_norm_loss.json";

const std::string kMixed =
    R"({"name": "mixed", "inputs": [{"name": "x", "dtype": "f32", "shape": ["B", 3]},
  {"name": "idx", "dtype": "i32", "shape": ["B", 3]}, {"name": "s", "dtype": "f32", "shape": [3]}],
  "ops": [{"name": "xi", "op": "convert", "inputs": ["idx"], "dtype": "f32"},
          {"name": "y", "op": "mul", "inputs": ["x", "xi"]},
          {"name": "z", "op": "add", "inputs": ["y", "s"]},
          {"name": "loss", "op": "reduce", "inputs": ["z"], "kind": "sum", "axes": [0, 1]}],
  "outputs": ["y", "loss"]})";

bool oneLine(const std::string& s) {
  return !s.empty() && s.find('\n') == s.size() - 1;
}

} // namespace

TEST_CASE("weft grad writes the training graph: outputs, then gradients in --wrt order") {
  fs::path out = weft::testing::scratchDir() / "ln_train.json";
  auto r = runWeft("grad " + kExample + " --loss loss --wrt gamma,x -o " + out.string());
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.err.empty());
  auto g = weft::frontend::readGraphFile(out.string());
  CHECK(g.name == "layer_norm_loss_grad");
  std::vector<std::string> outputs, inputs;
  for (auto id : g.graph.outputs()) outputs.push_back(g.graph.node(id).name + ": " + g.graph.node(id).type.str());
  for (auto id : g.graph.inputs()) inputs.push_back(g.graph.node(id).name);
  CHECK(outputs == std::vector<std::string>{"loss: f32[]", "grad_gamma: f32[768]", "grad_x: f32[B, 768]"});
  CHECK(inputs == std::vector<std::string>{"x", "gamma", "beta", "dy"});
  // It runs and compiles like any graph.
  auto run = runWeft("run " + out.string() + " --bind B=5 --check");
  INFO(run.out << run.err);
  CHECK(run.rc == 0);
}

TEST_CASE("weft grad differentiates every float input by default, and takes ONNX models") {
  fs::path out = weft::testing::scratchDir() / "mixed_train.json";
  auto r = runWeft("grad " + writeFile("mixed.json", kMixed) + " --loss loss -o " + out.string());
  INFO(r.err);
  REQUIRE(r.rc == 0);
  auto g = weft::frontend::readGraphFile(out.string());
  std::vector<std::string> outputs;
  for (auto id : g.graph.outputs()) outputs.push_back(g.graph.node(id).name);
  CHECK(outputs == std::vector<std::string>{"y", "loss", "grad_x", "grad_s"});
  auto p = runWeft("grad " + kExample + " --loss loss --wrt beta --print");
  CHECK(p.rc == 0);
  CHECK(p.out.find("%grad_beta = ") != std::string::npos);

  // ONNX: a model imported by weft import, then differentiated as it stands.
  const char* onnx = "/usr/share/libonnx-testdata/data/node/test_softmax_axis_1/model.onnx";
  if (!fs::exists(onnx)) {
    WARN("no ONNX test data at " << onnx << "; the ONNX case is skipped");
    return;
  }
  auto bad = runWeft(std::string("grad ") + onnx + " --loss y -o " + out.string());
  CHECK(bad.rc == 2); // softmax's output is not a scalar
  CHECK(oneLine(bad.err));
  CHECK(bad.err.find("loss \"y\": the loss must be a scalar floating-point output") != std::string::npos);
}

TEST_CASE("weft grad errors are one line and exit 2") {
  std::string mixed = writeFile("mixed.json", kMixed);
  std::string out = (weft::testing::scratchDir() / "x.json").string();
  struct Case {
    std::string args, message;
  };
  std::vector<Case> cases = {
      {mixed + " --loss y -o " + out,
       "mixed.json: loss \"y\": the loss must be a scalar floating-point output, but \"y\" is f32[B, 3]"},
      {mixed + " --loss loss --wrt idx -o " + out,
       "mixed.json: wrt \"idx\": cannot differentiate with respect to an integer input (i32[B, 3])"},
      {mixed + " --loss nope -o " + out, "mixed.json: loss \"nope\": not an output of the graph"},
      {mixed + " --loss loss --wrt x,q -o " + out, "mixed.json: wrt \"q\": not an input of the graph"},
      {mixed + " --loss loss --wrt x,,s -o " + out, "--wrt \"x,,s\": an empty name"},
      {mixed + " --loss loss", "give -o OUT.json, --print, or both"},
      {writeFile("ints.json", R"({"inputs": [{"name": "i", "dtype": "i32", "shape": [3]}],
         "ops": [{"name": "f", "op": "convert", "inputs": ["i"], "dtype": "f32"},
                 {"name": "loss", "op": "reduce", "kind": "sum", "axes": [0], "inputs": ["f"]}],
         "outputs": ["loss"]})") + " --loss loss -o " + out,
       "ints.json: the graph has no floating-point input to differentiate with respect to"},
  };
  for (const Case& c : cases) {
    auto r = runWeft("grad " + c.args);
    INFO(c.args << "\n" << r.err);
    CHECK(r.rc == 2);
    CHECK(oneLine(r.err));
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(r.err.rfind("weft: error: ", 0) == 0);
  }
  CHECK(!fs::exists(out));
}

TEST_CASE("weft grad --amp writes the training step in mixed precision, a bad --amp is exit 2") {
  fs::path out = weft::testing::scratchDir() / "ln_train_f16.json";
  auto r = runWeft("grad " + kExample + " --loss loss --wrt x,gamma,beta --amp f16 -o " + out.string());
  INFO(r.err);
  REQUIRE(r.rc == 0);
  auto g = weft::frontend::readGraphFile(out.string());
  int casts = 0, low = 0;
  for (const auto& n : g.graph.nodes()) {
    casts += n.kind == weft::ir::OpKind::Convert;
    low += n.type.dtype == weft::DType::f16;
  }
  CHECK(casts > 0);
  CHECK(low > 0);
  for (auto id : g.graph.outputs()) CHECK(g.graph.node(id).type.dtype == weft::DType::f32);
  auto run = runWeft("run " + out.string() + " --bind B=5 --check");
  INFO(run.out << run.err);
  CHECK(run.rc == 0);
  auto amp = runWeft("run " WEFT_SOURCE_DIR "/examples/graphs/layer_norm.json --bind B=5 --amp bf16 --check");
  INFO(amp.out << amp.err);
  CHECK(amp.rc == 0);
  for (const std::string& cmd : {"grad " + kExample + " --loss loss --print --amp f8",
                                "compile " + kExample + " --emit plan --amp fp16",
                                "run " + kExample + " --bind B=2 --amp f32"}) {
    auto bad = runWeft(cmd);
    INFO(cmd << "\n" << bad.err);
    CHECK(bad.rc == 2);
    CHECK(oneLine(bad.err));
    CHECK(bad.err.find("use f16 or bf16") != std::string::npos);
  }
}

TEST_CASE("weft grad --sgd and --adam write one training step: updated parameters as outputs") {
  const std::string mlp = WEFT_SOURCE_DIR "/examples/graphs/mlp_train.json";
  fs::path sgd = weft::testing::scratchDir() / "mlp_sgd.json";
  auto r = runWeft("grad " + mlp + " --loss loss --wrt w1,b1,gamma,beta,w2,b2 --sgd 0.5 -o " +
                   sgd.string());
  INFO(r.err);
  REQUIRE(r.rc == 0);
  auto g = weft::frontend::readGraphFile(sgd.string());
  CHECK(g.name == "mlp_train_sgd");
  std::vector<std::string> outputs;
  for (auto id : g.graph.outputs()) outputs.push_back(g.graph.node(id).name);
  CHECK(outputs == std::vector<std::string>{"loss", "new_w1", "new_b1", "new_gamma", "new_beta",
                                            "new_w2", "new_b2"});
  auto run = runWeft("run " + sgd.string() + " --bind B=5 --check");
  INFO(run.out << run.err);
  CHECK(run.rc == 0);

  fs::path adam = weft::testing::scratchDir() / "ln_adam.json";
  r = runWeft("grad " + kExample + " --loss loss --wrt gamma,beta --adam --lr 0.01 --beta2 0.99 "
              "--amp bf16 -o " + adam.string());
  INFO(r.err);
  REQUIRE(r.rc == 0);
  g = weft::frontend::readGraphFile(adam.string());
  std::vector<std::string> inputs;
  outputs.clear();
  for (auto id : g.graph.inputs()) inputs.push_back(g.graph.node(id).name);
  for (auto id : g.graph.outputs()) outputs.push_back(g.graph.node(id).name + ": " + g.graph.node(id).type.str());
  CHECK(inputs == std::vector<std::string>{"x", "gamma", "beta", "dy", "m_gamma", "m_beta", "v_gamma",
                                           "v_beta", "adam_step"});
  CHECK(outputs == std::vector<std::string>{"loss: f32[]", "new_gamma: f32[768]", "new_beta: f32[768]",
                                            "new_m_gamma: f32[768]", "new_m_beta: f32[768]",
                                            "new_v_gamma: f32[768]", "new_v_beta: f32[768]",
                                            "new_adam_step: i32[]"});
  // The update runs on the f32 master weights: AMP lowered the backward, not the step.
  CHECK(g.graph.node(*g.graph.find("new_gamma")).type.dtype == weft::DType::f32);
  run = runWeft("run " + adam.string() + " --bind B=3 --check");
  INFO(run.out << run.err);
  CHECK(run.rc == 0);
}

TEST_CASE("weft grad's optimizer flags: a bad value or combination is one line, exit 2") {
  std::string out = (weft::testing::scratchDir() / "bad_step.json").string();
  struct Case {
    std::string flags, message;
  };
  std::vector<Case> cases = {
      {"--sgd abc", "--sgd \"abc\": not a decimal number (e.g. 0.01)"},
      {"--sgd 0", "--sgd 0: must be a finite number greater than 0"},
      {"--sgd -0.5", "--sgd -0.5: must be a finite number greater than 0"},
      {"--sgd inf", "--sgd inf: must be a finite number greater than 0"},
      {"--sgd 0.1 --adam", "--sgd and --adam: give one optimizer, not both"},
      {"--sgd 0.1 --lr 0.2", "--lr, --beta1, --beta2 and --eps are Adam's; --sgd takes its learning "
                             "rate as its value (--sgd LR)"},
      {"--beta1 0.5", "--lr, --beta1, --beta2 and --eps need --adam"},
      {"--adam --beta1 1", "--beta1 1: must be in [0, 1)"},
      {"--adam --beta2 -0.1", "--beta2 -0.1: must be in [0, 1)"},
      {"--adam --eps 0", "--eps 0: must be a finite number greater than 0"},
      {"--adam --lr 1e-3x", "--lr \"1e-3x\": not a decimal number (e.g. 0.01)"},
      {"--adam", "--adam updates the inputs named by --wrt: give --wrt with the parameters (the "
                 "default, every float input, includes the data)"},
      {"--adam --wrt dy,gamma", ""}, // fine: dy is a float input
  };
  for (const Case& c : cases) {
    std::string wrt = c.flags.find("--wrt") == std::string::npos && c.flags != "--adam" ? " --wrt gamma" : "";
    auto r = runWeft("grad " + kExample + " --loss loss " + c.flags + wrt + " -o " + out);
    INFO(c.flags << "\n" << r.err);
    if (c.message.empty()) {
      CHECK(r.rc == 0);
      continue;
    }
    CHECK(r.rc == 2);
    CHECK(oneLine(r.err));
    CHECK(r.err == "weft: error: " + c.message + "\n");
  }
}

TEST_CASE("weft grad's numbers are decimal: an empty, hex or padded value is one line, exit 2") {
  // --sgd "" wrote no SGD step (exit 0) and --sgd 0x10 ran with a learning rate of 16.
  std::string out = (weft::testing::scratchDir() / "decimal_step.json").string();
  struct Case {
    std::string flags, message;
  };
  std::vector<Case> cases = {
      {"--sgd ''", "--sgd: give a decimal number (e.g. 0.01), not an empty value"},
      {"--sgd 0x10", "--sgd \"0x10\": not a decimal number (e.g. 0.01)"},
      {"--sgd ' 1'", "--sgd \" 1\": not a decimal number (e.g. 0.01)"},
      {"--sgd nan", "--sgd \"nan\": not a decimal number (e.g. 0.01)"},
      {"--sgd 1e", "--sgd \"1e\": not a decimal number (e.g. 0.01)"},
      {"--adam --lr ''", "--lr: give a decimal number (e.g. 0.01), not an empty value"},
      {"--adam --eps ''", "--eps: give a decimal number (e.g. 0.01), not an empty value"},
      {"--adam --beta1 0x0", "--beta1 \"0x0\": not a decimal number (e.g. 0.01)"},
      {"--adam --eps 0x1p-3", "--eps \"0x1p-3\": not a decimal number (e.g. 0.01)"},
  };
  for (const Case& c : cases) {
    auto r = runWeft("grad " + kExample + " --loss loss --wrt gamma " + c.flags + " -o " + out);
    INFO(c.flags << "\n" << r.err);
    CHECK(r.rc == 2);
    CHECK(r.err == "weft: error: " + c.message + "\n");
  }
  // Decimal forms that are numbers still write the step: .5, 5e-1, +0.5.
  for (const char* lr : {".5", "5e-1", "+0.5", "1."}) {
    fs::remove(out);
    auto r = runWeft("grad " + kExample + " --loss loss --wrt gamma --sgd " + lr + " -o " + out);
    INFO(lr << "\n" << r.err);
    REQUIRE(r.rc == 0);
    auto g = weft::frontend::readGraphFile(out);
    std::vector<std::string> outputs;
    for (auto id : g.graph.outputs()) outputs.push_back(g.graph.node(id).name);
    CHECK(outputs == std::vector<std::string>{"loss", "new_gamma"});
  }
}

TEST_CASE("weft grad keeps the graph's weights and their values in a weights file beside it") {
  fs::path dir = weft::testing::scratchDir() / "grad_weights";
  fs::create_directories(dir);
  weft::HostTensor s(weft::DType::f32, {3});
  for (int64_t i = 0; i < 3; ++i) s.set(i, 0.25 * double(i + 1));
  weft::frontend::writeWeightsFile((dir / "mixed.safetensors").string(), {{"s", s}});
  std::string graph = kMixed;
  graph.replace(graph.find(R"(, {"name": "s")"), std::string(R"(, {"name": "s", "dtype": "f32", "shape": [3]}])").size(),
                R"(], "weights_file": "mixed.safetensors", "weights": [{"name": "s", "dtype": "f32", "shape": [3]}])");
  std::ofstream(dir / "mixed.json") << graph;
  fs::path out = dir / "train" / "mixed_sgd.json";
  fs::create_directories(out.parent_path());
  auto r = runWeft("grad " + (dir / "mixed.json").string() + " --loss loss --wrt x,s --sgd 0.5 -o " +
                   out.string());
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK(fs::exists(dir / "train" / "mixed_sgd.safetensors"));
  auto g = weft::frontend::readGraphFile(out.string());
  CHECK(g.weightNames == std::vector<std::string>{"s"});
  REQUIRE(g.weights.count("s"));
  CHECK(g.weights.at("s").bytes == s.bytes);
  // The step runs with the weights' values, the other inputs random.
  auto run = runWeft("run " + out.string() + " --bind B=2 --check");
  INFO(run.out << run.err);
  CHECK(run.rc == 0);
  // The weights file may not overwrite the graph read.
  auto same = runWeft("grad " + (dir / "mixed.json").string() + " --loss loss -o " + out.string() +
                      " --weights " + (dir / "mixed.json").string());
  CHECK(same.rc == 2);
  CHECK(same.err.find("the same file as the input") != std::string::npos);
}
