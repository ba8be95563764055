#pragma once
// The logging setup of weft's programs: spdlog to stderr, level from the environment variable
// WEFT_LOG (error, warn, info, debug, trace, off; default warn).
#include <optional>
#include <string>

namespace weft::runtime {

/// Sets spdlog's default logger to stderr at the WEFT_LOG level. An unknown level is an
/// InputError naming the variable and the allowed values.
void setupLogging();
/// The spdlog level name for a WEFT_LOG value ("warn" for unset or empty), nullopt if unknown.
std::optional<std::string> logLevelName(const char* value);

} // namespace weft::runtime
