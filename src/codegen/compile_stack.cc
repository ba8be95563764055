#include "codegen/compile_stack.h"

#include <exception>
#include <memory>

#include <pthread.h>

namespace weft::codegen {

struct CompileThread::Start {
  std::function<void()> fn;
  static void* run(void* p) {
    std::unique_ptr<Start> start(static_cast<Start*>(p));
    start->fn();
    return nullptr;
  }
};

CompileThread::CompileThread(std::function<void()> fn) {
  static_assert(sizeof(pthread_t) <= sizeof(handle_));
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return;
  auto start = std::make_unique<Start>(Start{std::move(fn)});
  pthread_t t;
  if (pthread_attr_setstacksize(&attr, kCompileStackBytes) == 0 &&
      pthread_create(&t, &attr, &Start::run, start.get()) == 0) {
    start.release(); // the thread owns it
    handle_ = static_cast<unsigned long>(t);
    started_ = true;
  }
  pthread_attr_destroy(&attr);
}

CompileThread::CompileThread(CompileThread&& other) noexcept
    : handle_(other.handle_), started_(other.started_) {
  other.started_ = false;
}

CompileThread::~CompileThread() { join(); }

void CompileThread::join() {
  if (!started_) return;
  pthread_join(static_cast<pthread_t>(handle_), nullptr);
  started_ = false;
}

void runOnCompileStack(const std::function<void()>& fn) {
  std::exception_ptr error;
  CompileThread t([&] {
    try {
      fn();
    } catch (...) {
      error = std::current_exception();
    }
  });
  if (!t.joinable()) return fn(); // no thread to be had: the caller's stack
  t.join();
  if (error) std::rethrow_exception(error);
}

} // namespace weft::codegen
