#pragma once
// The on-disk compile cache: a compile's plans and modules stored under a key that names
// everything planning and the PTX depend on (the bound, canonical graph, policy, DeviceSpec,
// codegen options and weft's version — the plans are a deterministic function of these), so
// that a warm process skips planning as well as codegen. Entries (`<hash of the key>.entry`) are
// length-prefixed sections holding each version's guard and plan (fusion/plan_serialization.h)
// beside its PTX as it is (compile_cache.cc), written atomically (temp file + rename) with a
// checksum; an entry whose key or checksum does not match, that does not parse, or that is not
// of this format, is ignored (logged at warn) and overwritten, never loaded.
#include <optional>
#include <string>
#include <vector>

#include "codegen/compile.h"
#include "fusion/plan_versions.h"
#include "ir/fnv1a64.h"

namespace weft::runtime {

/// What one compile leaves in the cache: its versions (one for a specialised binding; a generic
/// program's versions in order, each plan with its guard), one module each.
struct CacheEntry {
  std::vector<fusion::PlanVersion> plans;
  std::vector<codegen::CompiledModule> modules;
};

class CompileCache {
public:
  /// `dir` = "" picks $XDG_CACHE_HOME/weft or $HOME/.cache/weft; "off" disables the cache.
  explicit CompileCache(std::string dir);
  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }

  /// The entry stored under `key`; nullopt when there is none or it cannot be used (logged).
  std::optional<CacheEntry> load(const std::string& key) const;
  /// Best effort: a cache that cannot be written is logged at warn level and skipped.
  /// `plans` and `modules` pair up, one module per version.
  void store(const std::string& key, const std::vector<fusion::PlanVersion>& plans,
             const std::vector<codegen::CompiledModule>& modules) const;
  std::string pathFor(const std::string& key) const;

private:
  std::optional<std::string> loadPayload(const std::string& key) const;
  void storePayload(const std::string& key, const std::string& payload) const;
  std::string dir_;
};

} // namespace weft::runtime
