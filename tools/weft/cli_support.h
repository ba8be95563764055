#pragma once
// Helpers shared by the subcommands of `weft`.
#include <functional>
#include <string>
#include <vector>

#include "frontend/json_reader.h"
#include "fusion/fusion_plan.h"
#include "ir/shape.h"
#include "weft/device_spec.h"
#include "weft/tensor.h"

namespace CLI {
class App;
}

namespace weft::tools {

/// Reads a graph file, weft JSON or ONNX (InputError naming the file on any problem).
frontend::ParsedGraph loadGraph(const std::string& path);

/// --device-spec NAME and --policy NAME: the profile or policy, or InputError listing the
/// allowed names.
DeviceSpec deviceSpecOption(const std::string& name);
fusion::Policy policyOption(const std::string& name);

/// The plan weft::compile would make for a graph file: bound under --bind (symbols left
/// unbound stay symbolic), canonicalized by src/passes, planned under `policy` for `spec`.
fusion::FusionPlan planGraphFile(const frontend::ParsedGraph& g, const std::string& bind,
                                 const DeviceSpec& spec, fusion::Policy policy);

/// The options of the commands that plan a graph file (plan, compile): the graph, --policy,
/// --device-spec and --bind (unbound symbols stay symbolic).
struct PlanOptions {
  std::string file;
  std::string policy = "astitch";
  std::string deviceSpec = "h100";
  std::string bind;
};
void addPlanOptions(CLI::App* cmd, PlanOptions& o);
/// planGraphFile for the options (profile and policy checked) and `g`, loaded from o.file.
fusion::FusionPlan planFromOptions(const PlanOptions& o, const frontend::ParsedGraph& g);

/// The options every command that runs a graph shares: --bind, --inputs DIR or --random
/// --seed N, and --save-outputs DIR.
struct InputOptions {
  std::string bind, inputsDir, saveDir;
  bool random = false;
  uint64_t seed = 0;
};
void addInputOptions(CLI::App* cmd, InputOptions& o);

/// A graph's inputs as the user asked for them: --inputs DIR (symbols bound from the .npy
/// shapes where --bind leaves them open) or seeded random inputs under --bind.
struct GraphInputs {
  ir::Binding binding;
  std::vector<HostTensor> inputs;
};
GraphInputs prepareInputs(const frontend::ParsedGraph& g, const std::string& file,
                          const InputOptions& o);

/// Runs `work`, turning a host allocation failure into an InputError that names the file and
/// the sizes asked for under --bind.
void withHostMemoryCheck(const std::string& file, const InputOptions& o,
                         const std::function<void()>& work);

/// --bind B=16,S=128 ("" for none).
ir::Binding parseBindOption(const std::string& text);

/// Binds the symbols still unbound in `binding` from the inputs' shapes where a graph input's
/// dim is a lone symbol ("B"), then checks that every symbol of the graph is bound; InputError
/// naming the file, the symbols and the flag to use otherwise.
ir::Binding completeBinding(const frontend::ParsedGraph& g, const std::string& file,
                            ir::Binding binding, const std::vector<HostTensor>* inputs);

/// Reads DIR/<input name>.npy for every graph input, with the dtype the graph declares.
std::vector<HostTensor> readInputsDir(const ir::Graph& g, const std::string& dir);

/// Writes DIR/<output name>.npy for every output (the directory is created when missing);
/// characters other than letters, digits, '.', '_' and '-' become '_' in file names.
void saveOutputs(const ir::Graph& g, const std::vector<HostTensor>& outputs,
                 const std::string& dir);

} // namespace weft::tools
