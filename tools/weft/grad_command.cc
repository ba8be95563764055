// weft grad G.json --loss NAME [--wrt A,B,...] [--amp f16|bf16] [--sgd LR | --adam [--lr ..
// --beta1 .. --beta2 .. --eps ..]] -o OUT.json: differentiate a forward graph (src/autodiff)
// and write the training graph as weft JSON: G's inputs; G's outputs, then grad_<input> per
// wrt input. With an optimizer, the gradients give way to the updated parameters (and Adam's
// moments and step count), named new_<input> (autodiff/optimizer.h): one graph, one step.
// G's weights (an ONNX model's initializers, a JSON graph's weights file) stay weights, their
// values written beside OUT.json as for `weft import`.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <memory>

#include "autodiff/grad.h"
#include "autodiff/optimizer.h"
#include "cli_support.h"
#include "commands.h"
#include "frontend/json_writer.h"
#include "ir/printer.h"
#include "passes/amp.h"
#include "weft/error.h"

namespace weft::tools {
namespace {

struct GradOptions {
  std::string file, loss, wrt, output, weights, amp;
  bool print = false;
  // The optimizer: --sgd LR, or --adam with its hyperparameters (as given, checked by
  // optimizerOption so that a bad value is one line naming the flag).
  std::string sgd, lr, beta1, beta2, eps;
  bool adam = false;
};

/// --wrt A,B,C: the names in order; empty for the default (every float input).
std::vector<std::string> splitNames(const std::string& text) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    size_t comma = text.find(',', start);
    std::string name = text.substr(start, comma == std::string::npos ? comma : comma - start);
    if (name.empty()) throw InputError(fmt::format("--wrt \"{}\": an empty name", text));
    names.push_back(name);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return names;
}

/// A decimal number: [+-] digits [. digits] [e [+-] digits], at least one digit before the
/// exponent, nothing else (strtod also reads hex "0x10", " 1", "nan"), or inf / infinity
/// (which optimizerOption's range checks then refuse by name).
bool isDecimalNumber(const std::string& text) {
  size_t i = 0;
  auto digits = [&] {
    size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    return i - start;
  };
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  std::string word = text.substr(i);
  std::transform(word.begin(), word.end(), word.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (word == "inf" || word == "infinity") return true;
  size_t mantissa = digits();
  if (i < text.size() && text[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == text.size();
}

/// A flag's number: the whole text must be a decimal number (InputError naming the flag
/// otherwise).
double number(const char* flag, const std::string& text) {
  if (!isDecimalNumber(text))
    throw InputError(fmt::format("{} \"{}\": not a decimal number (e.g. 0.01)", flag, text));
  return std::strtod(text.c_str(), nullptr);
}

/// The optimizer the flags ask for, checked (InputError naming the flag).
struct Optimizer {
  std::optional<autodiff::SgdOptions> sgd;
  std::optional<autodiff::AdamOptions> adam;
};
Optimizer optimizerOption(const GradOptions& o) {
  bool adamFlags = !o.lr.empty() || !o.beta1.empty() || !o.beta2.empty() || !o.eps.empty();
  if (!o.sgd.empty() && o.adam) throw InputError("--sgd and --adam: give one optimizer, not both");
  if (adamFlags && !o.adam)
    throw InputError(!o.sgd.empty() ? "--lr, --beta1, --beta2 and --eps are Adam's; --sgd takes "
                                      "its learning rate as its value (--sgd LR)"
                                    : "--lr, --beta1, --beta2 and --eps need --adam");
  Optimizer opt;
  if (!o.sgd.empty()) {
    opt.sgd.emplace();
    opt.sgd->lr = number("--sgd", o.sgd);
    autodiff::checkOptions(*opt.sgd);
  }
  if (o.adam) {
    opt.adam.emplace();
    if (!o.lr.empty()) opt.adam->lr = number("--lr", o.lr);
    if (!o.beta1.empty()) opt.adam->beta1 = number("--beta1", o.beta1);
    if (!o.beta2.empty()) opt.adam->beta2 = number("--beta2", o.beta2);
    if (!o.eps.empty()) opt.adam->eps = number("--eps", o.eps);
    autodiff::checkOptions(*opt.adam);
  }
  return opt;
}

void runGrad(const GradOptions& o) {
  std::optional<DType> amp = ampOption(o.amp);
  Optimizer optimizer = optimizerOption(o); // checked before any file is read
  // An update of every float input would update the data too (x, targets): name the parameters.
  if ((optimizer.sgd || optimizer.adam) && o.wrt.empty())
    throw InputError(fmt::format("{} updates the inputs named by --wrt: give --wrt with the "
                                 "parameters (the default, every float input, includes the data)",
                                 optimizer.sgd ? "--sgd" : "--adam"));
  if (!o.output.empty()) checkOutputFile("-o", o.output);
  frontend::ParsedGraph g = loadGraph(o.file);
  std::vector<std::string> wrt = splitNames(o.wrt);
  if (wrt.empty()) wrt = autodiff::floatInputs(g.graph);
  if (wrt.empty()) // a training graph with no gradient would silently be the forward graph
    throw InputError(fmt::format("{}: the graph has no floating-point input to differentiate "
                                 "with respect to (integer and bool inputs have no gradient)",
                                 o.file));
  ir::Graph training;
  try {
    training = autodiff::grad(g.graph, o.loss, wrt);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", o.file, e.what()));
  }
  // AMP on the whole forward and backward: the backward's casts fuse like the forward's. The
  // optimizer comes after it, so that the update runs on f32 master weights.
  if (amp) training = passes::autoMixedPrecision(training, *amp);
  try {
    if (optimizer.sgd) training = autodiff::sgdStep(training, wrt, *optimizer.sgd);
    if (optimizer.adam) training = autodiff::adamStep(training, wrt, *optimizer.adam);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", o.file, e.what()));
  }
  std::string name = g.name + (optimizer.sgd ? "_sgd" : optimizer.adam ? "_adam" : "_grad");
  if (o.print) fmt::print("{}", ir::printGraph(training, name));
  if (o.output.empty()) return;
  // The forward graph's weights stay the training graph's, with their values (the parameters
  // a step starts from), in a weights file beside it.
  std::vector<std::string> weights;
  for (const std::string& w : g.weightNames)
    if (std::optional<ir::NodeId> id = training.find(w);
        id && training.node(*id).kind == ir::OpKind::Parameter)
      weights.push_back(w);
  writeGraphWithWeights(o.output, o.weights, training, name, weights, g.weights, o.file);
}

} // namespace

void addGradCommand(CLI::App& app) {
  auto o = std::make_shared<GradOptions>();
  CLI::App* cmd = app.add_subcommand(
      "grad", "Differentiate a graph: write its training graph (outputs, then gradients) as JSON");
  cmd->add_option("graph", o->file, "Forward graph (JSON, docs/graph-format.md, or ONNX)")->required();
  cmd->add_option("--loss", o->loss, "The output to differentiate: a scalar floating-point output")
      ->required();
  cmd->add_option("--wrt", o->wrt,
                  "Inputs to differentiate with respect to, comma-separated, in the order of the "
                  "gradient outputs (default: every floating-point input, in graph order)");
  cmd->add_option("-o,--output", o->output, "JSON graph to write");
  cmd->add_option("--weights", o->weights,
                  "Weights file to write when the graph has weights (safetensors layout; "
                  "default: the -o file with the extension .safetensors)");
  addAmpOption(cmd, o->amp);
  cmd->add_option("--sgd", o->sgd,
                  "Append an SGD step with this learning rate: outputs G's outputs, then "
                  "new_<input> = input - LR * gradient per wrt input");
  cmd->add_flag("--adam", o->adam,
                "Append an Adam step: inputs m_<p>, v_<p> and adam_step (i32, 1 for the first "
                "step) added; outputs G's outputs, new_<p>, new_m_<p>, new_v_<p>, new_adam_step");
  cmd->add_option("--lr", o->lr, "Adam's learning rate (default 0.001)");
  cmd->add_option("--beta1", o->beta1, "Adam's first-moment decay (default 0.9)");
  cmd->add_option("--beta2", o->beta2, "Adam's second-moment decay (default 0.999)");
  cmd->add_option("--eps", o->eps, "Adam's epsilon (default 1e-8)");
  cmd->add_flag("--print", o->print, "Print the training graph's IR with shapes");
  cmd->callback([o, cmd] {
    // Given with an empty value, a flag would read as not given: no step, or Adam's default.
    for (auto [flag, value] : {std::pair{"--sgd", &o->sgd}, std::pair{"--lr", &o->lr},
                               std::pair{"--beta1", &o->beta1}, std::pair{"--beta2", &o->beta2},
                               std::pair{"--eps", &o->eps}})
      if (cmd->count(flag) > 0 && value->empty())
        throw InputError(fmt::format("{}: give a decimal number (e.g. 0.01), not an empty value",
                                     flag));
    if (o->output.empty() && !o->print)
      throw InputError("weft grad: give -o OUT.json, --print, or both");
    runGrad(*o);
  });
}

} // namespace weft::tools
