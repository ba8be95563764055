#pragma once
// Where weft keeps its on-disk caches unless told otherwise: the compile cache's entries
// (compile_cache.h) and, in its `cubins` folder, the cuda device's cubins. Header-only, so
// that weft_cuda (which weft_runtime links, not the other way round) reads the same rule.
#include <cstdlib>
#include <string>

namespace weft::runtime {

/// $XDG_CACHE_HOME/weft, else $HOME/.cache/weft; "" when neither is set (no disk cache).
inline std::string defaultCacheBaseDir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/weft";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/weft";
  return "";
}

} // namespace weft::runtime
