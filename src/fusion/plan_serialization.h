#pragma once
// A FusionPlan as bytes and back, losslessly: the compile cache keeps each version's plan
// beside its PTX (runtime/compile_cache.h), so that a warm process skips planning as well as
// codegen. The format is binary and versioned (plan_serialization.cc): a header with the byte
// count and a checksum, then every field of the plan, its graph and its steps in a fixed order.
// Reading what serializePlan wrote gives a plan that prints, compiles and serialises exactly as
// the original; anything else (truncated, a flipped bit, another format version) throws.
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>

#include "fusion/fusion_plan.h"
#include "ir/symbol_ranges.h"

namespace weft::fusion {

std::string serializePlan(const FusionPlan& plan);
/// Throws std::runtime_error naming what is malformed (and where) for bytes serializePlan did
/// not write; never returns a plan that differs from the one written.
FusionPlan deserializePlan(std::string_view bytes);

/// A generic version's guard (fusion/plan_versions.h), in the same format.
std::string serializeGuard(const ir::ShapeGuard& guard);
ir::ShapeGuard deserializeGuard(std::string_view bytes);

/// For tests: how many fields the format holds of each struct it covers, by struct name
/// ("KernelPlan" → 15), to be checked against the structs themselves.
std::map<std::string, size_t> serializedFieldCounts();

} // namespace weft::fusion
