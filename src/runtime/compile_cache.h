#pragma once
// The on-disk compile cache: a CompiledModule stored under a key that names everything the
// PTX depends on (the bound, canonical graph, policy, DeviceSpec, codegen options and weft's
// version — the plan is a deterministic function of these). Entries (`<hash of the key>.entry`)
// are length-prefixed sections holding the PTX as it is (compile_cache.cc), written atomically
// (temp file + rename) with a checksum; an entry whose key or checksum does not match, or that
// is not of this format, is ignored and overwritten, never loaded.
#include <optional>
#include <string>
#include <vector>

#include "codegen/compile.h"
#include "runtime/fnv1a64.h"

namespace weft::runtime {

class CompileCache {
public:
  /// `dir` = "" picks $XDG_CACHE_HOME/weft or $HOME/.cache/weft; "off" disables the cache.
  explicit CompileCache(std::string dir);
  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }

  std::optional<codegen::CompiledModule> load(const std::string& key) const;
  /// Best effort: a cache that cannot be written is logged at warn level and skipped.
  void store(const std::string& key, const codegen::CompiledModule& module) const;
  /// A generic program's versions (fusion/plan_versions.h), one module each, in one entry: a
  /// graph leaves one entry however many versions it has. nullopt unless the entry holds
  /// exactly `count` modules.
  std::optional<std::vector<codegen::CompiledModule>> loadVersions(const std::string& key,
                                                                   size_t count) const;
  void storeVersions(const std::string& key,
                     const std::vector<codegen::CompiledModule>& modules) const;
  std::string pathFor(const std::string& key) const;

private:
  std::optional<std::string> loadPayload(const std::string& key) const;
  void storePayload(const std::string& key, const std::string& payload) const;
  std::string dir_;
};

std::string serializeModule(const codegen::CompiledModule& module);
/// Throws weft::Error on malformed text.
codegen::CompiledModule deserializeModule(const std::string& text);

} // namespace weft::runtime
