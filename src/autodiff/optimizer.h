#pragma once
// An optimizer step appended to a training graph (issue 18 item 4): the graph grad() makes
// (forward outputs, then grad_<p>) becomes one whole training step whose outputs are the
// forward's outputs and the updated parameters (and Adam's updated moments). The update is
// elementwise over each parameter and its gradient, so it stitches with the backward's tail.
//
// Naming, one rule for every piece of state: the output new_<name> is what the input <name>
// takes at the next step.
//  - SGD:  outputs: G's outputs, then new_<p> per parameter p (in the order given).
//  - Adam: inputs:  G's inputs, then m_<p> per p, v_<p> per p, then adam_step (i32 scalar:
//                   the number of this step, 1 for the first);
//          outputs: G's outputs, then new_<p>, new_m_<p>, new_v_<p> (each group in parameter
//                   order), then new_adam_step = adam_step + 1.
// The gradients are not outputs (nothing reads them after the update).
//
// Arithmetic (PyTorch's SGD without momentum and Adam without weight decay):
//  - SGD:  p' = p - lr g
//  - Adam: m' = b1 m + (1 - b1) g,  v' = b2 v + (1 - b2) g^2,
//          p' = p - (lr / (1 - b1^t)) m' / (sqrt(v') / sqrt(1 - b2^t) + eps), t = adam_step.
// The moments have their parameter's dtype; the bias corrections are scalars computed in f32
// (f64 for f64 parameters). The update runs in the parameter's dtype: give it f32 parameters
// and run --amp on the training graph before the step is appended (weft grad does), so that
// the update keeps f32 master weights.
#include <string>
#include <vector>

#include "ir/graph.h"

namespace weft::autodiff {

struct SgdOptions {
  double lr = 0.01;
};

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};

/// "new_" + name: the output that holds the next step's value of the input `name`.
std::string updatedName(const std::string& name);
/// Adam's first and second moments of parameter `param`: inputs "m_<param>", "v_<param>".
std::string firstMomentName(const std::string& param);
std::string secondMomentName(const std::string& param);
/// Adam's step-count input, "adam_step".
extern const char* const kAdamStep;

/// Checks the hyperparameters: InputError naming the flag (SGD's learning rate is --sgd's
/// value; Adam's --lr, --beta1, --beta2, --eps) and the allowed range when one is out of it
/// (lr > 0, 0 <= beta < 1, eps > 0, all finite).
void checkOptions(const SgdOptions& o);
void checkOptions(const AdamOptions& o);

/// The training step: `training` as grad() made it for `params` (its outputs end with
/// gradName(p) for each p), with the gradients replaced by the updated state as the header
/// says. Throws InputError when a gradient output is missing, when a name the step adds is
/// already a value's name, or when an option is out of range.
ir::Graph sgdStep(const ir::Graph& training, const std::vector<std::string>& params,
                  const SgdOptions& options);
ir::Graph adamStep(const ir::Graph& training, const std::vector<std::string>& params,
                   const AdamOptions& options);

} // namespace weft::autodiff
