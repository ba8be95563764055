#pragma once
// Helpers shared by the subcommands of `weft`.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "frontend/json_reader.h"
#include "fusion/fusion_plan.h"
#include "fusion/plan_versions.h"
#include "ir/shape.h"
#include "weft/compile_options.h"
#include "weft/device_spec.h"
#include "weft/tensor.h"

namespace CLI {
class App;
}

namespace weft::tools {

/// Reads a graph file, weft JSON or ONNX (InputError naming the file on any problem), with
/// its weights: a JSON graph's weights file, an ONNX model's large initializers (hoisted into
/// weights by withWeightsHoisted).
frontend::ParsedGraph loadGraph(const std::string& path);
/// Makes every large constant of g.graph a weight (passes/hoist_weights.h): the graph takes
/// it as an input after its own, its values go to g.weights and its name to g.weightNames.
void withWeightsHoisted(frontend::ParsedGraph& g);
/// `inputs` (graph input order) without the weights: what an Executable that holds g.weights
/// (setWeights) takes per call.
std::vector<HostTensor> callInputs(const frontend::ParsedGraph& g,
                                   const std::vector<HostTensor>& inputs);

/// --device-spec NAME and --policy NAME: the profile or policy, or InputError listing the
/// allowed names.
DeviceSpec deviceSpecOption(const std::string& name);
fusion::Policy policyOption(const std::string& name);

/// The plan weft::compile would make for a graph file: bound under `binding` (symbols left
/// unbound stay symbolic), canonicalized by src/passes, planned under `policy` for `spec`.
fusion::FusionPlan planGraphFile(const frontend::ParsedGraph& g, const ir::Binding& binding,
                                 const DeviceSpec& spec, fusion::Policy policy);

/// The options of the commands that plan a graph file (plan, compile): the graph, --policy,
/// --device-spec and --bind (unbound symbols stay symbolic).
struct PlanOptions {
  std::string file;
  std::string policy = "astitch";
  std::string deviceSpec = "h100";
  std::string bind;
  std::string shapes = "generic"; // --shapes: generic plans with every symbol symbolic
  bool tf32 = false;              // --tf32 (CompileOptions::tf32)
};
void addPlanOptions(CLI::App* cmd, PlanOptions& o);
/// --shapes specialized|generic (CompileOptions::shapes), and its check: InputError naming
/// the allowed values.
void addShapesOption(CLI::App* cmd, std::string& shapes);
ShapeMode shapeModeOption(const std::string& name);
/// --amp f16|bf16: automatic mixed precision (CompileOptions::amp, passes/amp.h); "" is off.
/// ampOption checks it: InputError naming the allowed values.
void addAmpOption(CLI::App* cmd, std::string& amp);
/// --tf32: f32 dots on TF32 tensor cores (CompileOptions::tf32).
void addTf32Option(CLI::App* cmd, bool& tf32);
std::optional<DType> ampOption(const std::string& text);
/// The plans the options ask for: one (specialized, or no symbols), or a generic program's
/// versions (fusion/plan_versions.h) with the one --bind selects (the last without --bind).
struct PlanVersions {
  std::vector<fusion::PlanVersion> plans;
  size_t selected = 0;
  bool bound = false; // --bind named sizes: `selected` is the version they run
};
PlanVersions plansFromOptions(const PlanOptions& o, const frontend::ParsedGraph& g);
/// plansFromOptions' selected plan, for `g` loaded from o.file.
fusion::FusionPlan planFromOptions(const PlanOptions& o, const frontend::ParsedGraph& g);

/// The options every command that runs a graph shares: --bind, --inputs DIR or --random
/// --seed N, and --save-outputs DIR.
struct InputOptions {
  std::string bind, inputsDir, saveDir;
  bool random = false;
  uint64_t seed = 0;
};
void addInputOptions(CLI::App* cmd, InputOptions& o);
/// A whole number from 0 to 2^64 - 1 written in decimal digits only; nullopt for anything
/// else ("", "-1", "1e3", a number past 2^64 - 1): what --seed and --sample-blocks take.
std::optional<uint64_t> parseUint64(const std::string& text);

/// A graph's inputs as the user asked for them: --inputs DIR (symbols bound from the .npy
/// shapes where --bind leaves them open) or seeded random inputs under --bind. Checks the
/// sizes under the binding first (checkBoundSizes, against this machine's memory) and creates
/// the --save-outputs directory, so that both fail before anything runs.
struct GraphInputs {
  ir::Binding binding;
  std::vector<HostTensor> inputs;
};
GraphInputs prepareInputs(const frontend::ParsedGraph& g, const std::string& file,
                          const InputOptions& o);

/// Checks the size of every value of `g` under `binding` before anything is allocated: each
/// dim, element count and byte size must fit in int64 (symbols left unbound are skipped).
/// With `hostBytes` > 0, the graph's inputs and outputs together (what the host holds for a
/// run) must fit in it too. InputError naming the file, the --bind text, the value, its type
/// and what it would need otherwise.
/// `flag` names the option the sizes come from in the message (--max-bind checks its own).
void checkBoundSizes(const ir::Graph& g, const std::string& file, const ir::Binding& binding,
                     const std::string& bindText, uint64_t hostBytes,
                     const std::string& flag = "--bind");
/// This machine's physical memory in bytes (0 when unknown).
uint64_t hostMemoryBytes();

/// Runs `work`, turning a host allocation failure into an InputError that names the file and
/// the sizes asked for under --bind.
void withHostMemoryCheck(const std::string& file, const InputOptions& o,
                         const std::function<void()>& work);

/// The sizes of --bind B=16,S=128 ("" for none); range items (B=1..4096) are checked
/// (parseBindRanges) and skipped. Every command reads --bind through this one parser.
ir::Binding parseBindOption(const std::string& text);
/// The sizes of a flag that takes sizes only (--max-bind B=4096, --bind's size items):
/// InputError naming `flag` on a range, a malformed item or a symbol given twice.
ir::Binding parseSizesOption(const std::string& flag, const std::string& text);
/// The ranges of --bind B=1..4096,S=64..512 (CompileOptions::symbolRanges); sizes are skipped.
/// A symbol may have both: B=1..4096,B=16 runs B = 16 with a program planned for 1..4096.
std::map<std::string, SizeRange> parseBindRanges(const std::string& text);

/// Binds the symbols still unbound in `binding` from the inputs' shapes where a graph input's
/// dim is a lone symbol ("B"), then checks that every symbol of the graph is bound; InputError
/// naming the file, the symbols and the flag to use otherwise.
ir::Binding completeBinding(const frontend::ParsedGraph& g, const std::string& file,
                            ir::Binding binding, const std::vector<HostTensor>* inputs);

/// Checks the ranges of --bind (B=1..64) against the symbols the graph unified (S = B), as
/// ir::checkBinding checks sizes: a unified symbol's size or range must meet the sizes its
/// value can take under the other sizes and ranges of --bind. InputError naming the file and
/// --bind otherwise (B=2,S=3..4 where S = B; B=5..6,S=3..4 too).
void checkBindRanges(const ir::Graph& g, const std::string& file, const std::string& bindText);

/// Warns of sizes in `binding` (given by `flag`: --bind, --max-bind) that the graph has no
/// symbol for (a typo, most likely). Called once the inputs are ready, so that a command that
/// fails on them prints its one error line alone.
void warnUnusedBindings(const frontend::ParsedGraph& g, const ir::Binding& binding,
                        const std::string& flag = "--bind");

/// The file name (without ".npy") that --inputs and --save-outputs use for a graph value:
/// letters, digits, '.', '_' and '-' are kept and every other byte becomes %XX (two upper-case
/// hex digits), so distinct names never share a file and no name leaves the folder ("a/b" is
/// "a%2Fb", "../x" is "..%2Fx").
std::string valueFileName(const std::string& name);

/// Reads DIR/<valueFileName(input name)>.npy for every graph input, with the dtype the graph
/// declares; an input found in `weights` takes its value from there instead.
std::vector<HostTensor> readInputsDir(const ir::Graph& g, const std::string& dir,
                                      const ir::Weights* weights = nullptr);

/// Creates `dir` and its parents when missing; InputError "FLAG DIR: cannot create the
/// directory: <the OS's reason>" (also when DIR exists as a file).
void makeOutputDir(const std::string& flag, const std::string& dir);
/// Fails early, before long work, when `path` cannot be a file weft writes: it is a directory,
/// or its folder is missing, not a directory or not writable. InputError "FLAG PATH: cannot
/// write the file: <reason>". (writeOutputFile still reports what only the write finds.)
void checkOutputFile(const std::string& flag, const std::string& path);
/// Writes `text` to `path` (replacing it); InputError "FLAG PATH: cannot write the file: <the
/// OS's reason>" when it cannot be opened or written.
void writeOutputFile(const std::string& flag, const std::string& path, const std::string& text);

/// Writes `g` as a JSON graph to `output` (flag -o). With weights (`weightNames`, values in
/// `weights`): their values go to a safetensors file, `weightsPath` or by default the -o file
/// with the extension .safetensors, named relative to the graph in its "weights_file"; that
/// file must be neither -o nor `source` (the file the graph was read from).
void writeGraphWithWeights(const std::string& output, const std::string& weightsPath,
                           const ir::Graph& g, const std::string& name,
                           const std::vector<std::string>& weightNames,
                           const ir::Weights& weights, const std::string& source);

/// Writes DIR/<valueFileName(output name)>.npy for every output (the directory is created
/// when missing).
void saveOutputs(const ir::Graph& g, const std::vector<HostTensor>& outputs,
                 const std::string& dir);

} // namespace weft::tools
