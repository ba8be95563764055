#include "progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace weft::tools {
namespace {

// WEFT_PROGRESS=0 silences progress; =1 draws in place even when stderr is not a terminal.
int progressSetting() {
  const char* v = std::getenv("WEFT_PROGRESS");
  if (!v || !*v) return -1;
  return v[0] == '0' ? 0 : 1;
}

bool isTerminal(std::FILE* out) {
  int setting = progressSetting();
  if (setting >= 0) return setting == 1;
  return ::isatty(::fileno(out)) == 1;
}

/// The terminal's width less one, so a redrawn line never wraps (80 when unknown).
size_t lineWidth(std::FILE* out) {
  winsize w{};
  if (::ioctl(::fileno(out), TIOCGWINSZ, &w) == 0 && w.ws_col > 1) return size_t(w.ws_col) - 1;
  return 79;
}

void redraw(std::FILE* out, const std::string& text) {
  std::string line = text.substr(0, lineWidth(out));
  std::fprintf(out, "\r%s\x1b[K", line.c_str());
  std::fflush(out);
}

constexpr std::chrono::seconds kPlainInterval{5};

} // namespace

ProgressLine::ProgressLine(std::FILE* out) : out_(out), tty_(isTerminal(out)) {}

ProgressLine::~ProgressLine() {
  if (drawn_) std::fprintf(out_, "\n");
}

void ProgressLine::update(const std::string& text, bool force) {
  if (progressSetting() == 0) return;
  if (tty_) {
    redraw(out_, text);
    drawn_ = true;
    return;
  }
  auto now = std::chrono::steady_clock::now();
  if (!force && printed_ && now - lastPrint_ < kPlainInterval) return;
  std::fprintf(out_, "%s\n", text.c_str());
  std::fflush(out_);
  lastPrint_ = now;
  printed_ = true;
}

void ProgressLine::finish(const std::string& text) {
  if (progressSetting() == 0) return;
  if (tty_) {
    redraw(out_, text);
    std::fprintf(out_, "\n");
    drawn_ = false;
  } else {
    std::fprintf(out_, "%s\n", text.c_str());
  }
  std::fflush(out_);
}

ElapsedProgress::ElapsedProgress(std::string what, double delaySeconds, std::FILE* out)
    : what_(std::move(what)), out_(out), tty_(isTerminal(out)),
      start_(std::chrono::steady_clock::now()) {
  if (progressSetting() != 0) thread_ = std::thread([this, delaySeconds] { loop(delaySeconds); });
}

ElapsedProgress::~ElapsedProgress() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (drawn_) { // leave the terminal as it was: the line erased
    std::fprintf(out_, "\r\x1b[K");
    std::fflush(out_);
  }
}

void ElapsedProgress::loop(double delaySeconds) {
  std::unique_lock<std::mutex> lock(mu_);
  // In a log, nothing before 10 s: short runs (every test) leave stderr as it was.
  auto wait = std::chrono::duration<double>(tty_ ? delaySeconds : std::max(delaySeconds, 10.0));
  const auto tick = tty_ ? std::chrono::duration<double>(0.2) : std::chrono::duration<double>(10);
  while (!cv_.wait_for(lock, wait, [this] { return done_; })) {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    char buf[32];
    std::snprintf(buf, sizeof buf, ": %.1f s", s);
    if (tty_) {
      redraw(out_, what_ + buf);
      drawn_ = true;
    } else {
      std::fprintf(out_, "%s%s\n", what_.c_str(), buf);
      std::fflush(out_);
    }
    wait = tick;
  }
}

} // namespace weft::tools
