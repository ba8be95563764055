#pragma once
// The typing rules of every op: given operand types and attributes (and the declared result
// type for ops that need one), return the result type or throw InputError whose message
// starts with `where` and names the operand and the rule that broke.
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace weft::ir {

TensorType inferType(const std::string& where, OpKind kind,
                     const std::vector<const TensorType*>& operands, const Attrs& attrs,
                     const std::optional<TensorType>& declared);

} // namespace weft::ir
