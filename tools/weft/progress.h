#pragma once
// Progress of long runs on stderr (issue 19 part 4), never on stdout, which tests parse.
// On a terminal a single line is redrawn in place (\r, cleared to the end); when stderr is a
// file or a pipe, plain lines, at most one every few seconds, so logs stay short.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace weft::tools {

/// A status line for a loop with known steps: update() per step, finish() once.
class ProgressLine {
public:
  explicit ProgressLine(std::FILE* out = stderr);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  bool onTerminal() const { return tty_; }
  /// Shows `text`: redrawn at once on a terminal; otherwise printed when `force` or when the
  /// last printed line is older than the interval.
  void update(const std::string& text, bool force = false);
  /// The final line, always printed (and the in-place line ended).
  void finish(const std::string& text);

private:
  std::FILE* out_;
  bool tty_;
  bool drawn_ = false; // an unterminated in-place line is on the terminal
  std::chrono::steady_clock::time_point lastPrint_{};
  bool printed_ = false;
};

/// Elapsed time of one long step with no steps of its own (a compile): from a background
/// thread, after `delay` with nothing shown (short steps stay silent), "<what>: 3.2 s" redrawn
/// on a terminal, or a plain line every 10 s otherwise (the first after 10 s). The line is cleared when it ends.
class ElapsedProgress {
public:
  explicit ElapsedProgress(std::string what, double delaySeconds = 1.0, std::FILE* out = stderr);
  ~ElapsedProgress();
  ElapsedProgress(const ElapsedProgress&) = delete;
  ElapsedProgress& operator=(const ElapsedProgress&) = delete;

private:
  void loop(double delaySeconds);

  std::string what_;
  std::FILE* out_;
  bool tty_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::thread thread_;
};

} // namespace weft::tools
