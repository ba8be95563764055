#pragma once
// The adjoint of each op of the IR: given a node y = op(x0, x1, ...) and the adjoint dy of
// its result (same type as y), the contributions dy makes to the adjoints of its operands,
// built as IR primitives in the graph that holds y (grad.h appends the backward to a copy of
// the forward graph, so y and its operands are values of that graph).
//
// Choices, after RAF §4: an adjoint uses the forward value y where that is the cheap form
// (exp: dy * y; tanh: dy * (1 - y^2); sigmoid: dy * y * (1 - y)) and otherwise recomputes
// elementwise values from the operands (sin: dy * cos(x)) instead of asking the forward to keep
// more; every adjoint is elementwise, broadcast, reduce, layout or dot, so the backward stitches
// like a forward graph. Reductions: max and min share dy evenly among the elements equal to
// the result (ties included); prod divides y by each element (undefined where one is 0).
#include <string>
#include <vector>

#include "ir/graph.h"

namespace weft::autodiff {

/// The contribution to each operand's adjoint, or -1 where none is passed. `want[i]` says
/// whether operand i needs one (it is floating-point and on a path from a wrt input); an
/// unwanted operand gets -1 and costs nothing. `y` is a copy (the graph grows as this runs).
/// Throws InputError naming y when its adjoint cannot be written for its shapes.
std::vector<ir::NodeId> adjoint(ir::Graph& g, const ir::Node& y, ir::NodeId dy,
                                const std::vector<bool>& want);

/// `base` where the graph has no value of that name, else the first of base.1, base.2, ...
/// that is free: the names the training graph adds for itself ("d_loss.seed", Adam's
/// "adam_step.f32.t") must not refuse a forward graph that already uses them.
std::string unusedName(const ir::Graph& g, const std::string& base);

/// Whether any operand of an op of this kind can receive a gradient (false for sources,
/// compare, the logical ops and the piecewise-constant ones).
bool passesGradient(ir::OpKind k);

} // namespace weft::autodiff
