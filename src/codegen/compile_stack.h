#pragma once
// The stack compiling a graph runs on. Planning and code generation walk a value's operands
// recursively (ElementalEmitter::emit computes an op from its operands' code), one frame or two
// per op of a chain: a chain of 60,000 elementwise ops overflowed the 8 MiB stack a process's
// main thread gets and crashed the compiler. Compiles run on threads with kCompileStackBytes of
// stack instead, reserved, not committed: only the pages a deep graph touches take memory.
#include <cstddef>
#include <functional>

namespace weft::codegen {

/// 1 GiB: chains of over a million ops (about 400 bytes of stack each at their deepest).
inline constexpr size_t kCompileStackBytes = size_t(1) << 30;

/// Runs `fn` on a new thread with kCompileStackBytes of stack and waits for it; an exception it
/// throws is rethrown here. Where no such thread can be made, `fn` runs on the caller's.
void runOnCompileStack(const std::function<void()>& fn);

/// A started thread with kCompileStackBytes of stack, running `fn` (which must not throw).
/// joinable() false when none could be made.
class CompileThread {
public:
  explicit CompileThread(std::function<void()> fn);
  CompileThread(CompileThread&& other) noexcept;
  CompileThread(const CompileThread&) = delete;
  CompileThread& operator=(const CompileThread&) = delete;
  CompileThread& operator=(CompileThread&&) = delete;
  ~CompileThread(); // joins
  bool joinable() const { return started_; }
  void join();

private:
  struct Start;
  unsigned long handle_ = 0; // pthread_t
  bool started_ = false;
};

} // namespace weft::codegen
