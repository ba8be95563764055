#include "runtime/logging.h"

#include <cstdlib>
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "weft/error.h"

namespace weft::runtime {

std::optional<std::string> logLevelName(const char* value) {
  std::string v = value ? value : "";
  if (v.empty()) return "warn";
  for (const char* level : {"error", "warn", "info", "debug", "trace", "off"})
    if (v == level) return v;
  if (v == "warning") return "warn";
  return std::nullopt;
}

void setupLogging() {
  const char* env = std::getenv("WEFT_LOG");
  auto level = logLevelName(env);
  if (!level)
    throw InputError(fmt::format(
        "WEFT_LOG=\"{}\": unknown log level; use one of error, warn, info, debug, trace, off",
        env));
  auto logger = spdlog::get("weft");
  if (!logger) logger = spdlog::stderr_color_mt("weft");
  logger->set_pattern("weft: %l: %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(*level));
}

} // namespace weft::runtime
