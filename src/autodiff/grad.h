#pragma once
// Reverse-mode automatic differentiation by source transformation on the IR (RAF §4): the
// forward graph is kept as it is and the backward is appended to it, op by op in reverse
// order, each op's adjoint written as IR primitives (adjoints.h) so that the backward goes
// through the same stitcher as any other graph. The result is one graph: a training step's
// forward and backward, which the planner stitches together.
//
// What it guarantees:
//  - the result's inputs are forward's inputs (same names, order, types); its outputs are
//    forward's outputs followed by one gradient per `wrt` name, in the order given, named
//    gradName(input) and typed like that input;
//  - the gradients that meet at one value are summed once, by one balanced add tree, before
//    that value's own adjoint runs (so a value used k times costs k - 1 adds, not k adjoints);
//  - only values on a path from a wrt input to the loss get adjoints; compare, iota, the
//    integer and bool ops and the piecewise-constant ops (floor, ceil, sign) pass none;
//  - symbolic dims stay symbolic (a symbolic graph gives a symbolic training graph).
#include <string>
#include <vector>

#include "ir/graph.h"

namespace weft::autodiff {

/// "grad_" + input: the name of the output holding the gradient with respect to `input`.
std::string gradName(const std::string& input);

/// The names of g's floating-point inputs in graph order: what `weft grad` differentiates
/// with respect to when no --wrt is given.
std::vector<std::string> floatInputs(const ir::Graph& g);

/// One graph computing `forward`'s outputs and the gradient of the output named `loss` with
/// respect to each input named in `wrt`. An input the loss does not depend on gets zeros.
/// Throws InputError (one line, naming the value) when `loss` is not an output of forward or
/// not a scalar floating-point value, when a wrt name is not an input, is repeated or names an
/// integer or bool input, when gradName(input) is already a value's name, or when an op's
/// adjoint cannot be written for its shapes (concatenate along unequal symbolic sizes).
ir::Graph grad(const ir::Graph& forward, const std::string& loss,
               const std::vector<std::string>& wrt);

} // namespace weft::autodiff
