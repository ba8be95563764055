#include "codegen/parallel_compile.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>
#include <llvm/IR/Module.h>

#include "codegen/compile_stack.h"
#include "weft/error.h"

namespace weft::codegen {

int compileThreads(int requested) {
  if (requested > 0) return requested;
  if (const char* env = std::getenv("WEFT_COMPILE_THREADS"); env && *env) {
    char* end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (*end != '\0' || n < 1 || n > 4096)
      throw InputError(fmt::format(
          "WEFT_COMPILE_THREADS=\"{}\": expected a whole number of threads from 1 to 4096 "
          "(1 compiles the plan as one LLVM module on the calling thread), or unset it for one "
          "thread per hardware thread",
          env));
    return int(n);
  }
  return int(std::max(1u, std::thread::hardware_concurrency()));
}

std::vector<StepRange> partitionSteps(int steps) {
  if (steps < kMinStepsToSplit) return {{0, steps}};
  int chunks = std::min(kMaxChunks, steps / kMinStepsPerChunk);
  std::vector<StepRange> out;
  out.reserve(size_t(chunks));
  // The first `steps % chunks` chunks take one step more than the others.
  int base = steps / chunks, longer = steps % chunks, begin = 0;
  for (int c = 0; c < chunks; ++c) {
    int end = begin + base + (c < longer ? 1 : 0);
    out.push_back({begin, end});
    begin = end;
  }
  return out;
}

void parallelFor(int threads, size_t count, const std::function<void(size_t)>& body) {
  std::vector<std::exception_ptr> errors(count);
  std::atomic<size_t> next{0};
  std::atomic<size_t> firstFailed{count};
  auto work = [&] {
    for (size_t i = next++; i < count; i = next++) {
      if (i > firstFailed.load()) continue;
      try {
        body(i);
      } catch (...) {
        errors[i] = std::current_exception();
        size_t seen = firstFailed.load();
        while (i < seen && !firstFailed.compare_exchange_weak(seen, i)) {
        }
      }
    }
  };
  size_t helpers = std::min(count, size_t(std::max(threads, 1))) - (count > 0 ? 1 : 0);
  std::vector<CompileThread> pool; // deep graphs recurse deeply: compile_stack.h
  pool.reserve(helpers);
  for (size_t t = 0; t < helpers; ++t) {
    pool.emplace_back(work);
    if (!pool.back().joinable()) break; // no more threads to be had: the others take the rest
  }
  work();
  for (CompileThread& t : pool)
    t.join();
  if (size_t f = firstFailed.load(); f < count) std::rethrow_exception(errors[f]);
}

void uniquifyLocalSymbols(const std::vector<llvm::Module*>& modules) {
  // Every name any module gives a symbol, and the modules giving it external linkage.
  std::set<std::string> taken;
  std::unordered_map<std::string, std::vector<size_t>> externalIn;
  for (size_t k = 0; k < modules.size(); ++k)
    for (const llvm::GlobalValue& gv : modules[k]->global_values()) {
      if (!gv.hasName()) continue;
      taken.insert(gv.getName().str());
      if (!gv.hasLocalLinkage()) externalIn[gv.getName().str()].push_back(k);
    }
  auto externalElsewhere = [&](const std::string& name, size_t k) {
    auto it = externalIn.find(name);
    if (it == externalIn.end()) return false;
    return std::any_of(it->second.begin(), it->second.end(), [&](size_t m) { return m != k; });
  };
  std::set<std::string> definedLocally; // by an earlier module, under the name it keeps
  for (size_t k = 0; k < modules.size(); ++k) {
    std::vector<llvm::GlobalValue*> locals;
    for (llvm::GlobalValue& gv : modules[k]->global_values())
      if (gv.hasLocalLinkage()) locals.push_back(&gv);
    int unnamed = 0;
    for (llvm::GlobalValue* gv : locals) {
      std::string name =
          gv->hasName() ? gv->getName().str() : fmt::format("weft_unnamed_c{}_{}", k, unnamed++);
      if (definedLocally.count(name) || externalElsewhere(name, k) || !gv->hasName()) {
        std::string fresh = gv->hasName() ? fmt::format("{}_c{}", name, k) : name;
        while (taken.count(fresh))
          fresh += "_";
        taken.insert(fresh);
        gv->setName(fresh);
        name = fresh;
      }
      definedLocally.insert(name);
    }
  }
}

} // namespace weft::codegen
