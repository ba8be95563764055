// tools/weft/progress.h: what reaches stderr on a terminal and in a log (issue 19 part 4).
// A temporary file is not a terminal; WEFT_PROGRESS=1 draws in place anyway, =0 silences.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "progress.h"

namespace {

/// Runs `body` with a temporary file as the progress stream; returns what it wrote.
template <class F> std::string captured(const char* setting, F body) {
  if (setting)
    ::setenv("WEFT_PROGRESS", setting, 1);
  else
    ::unsetenv("WEFT_PROGRESS");
  std::FILE* f = std::tmpfile();
  body(f);
  std::fflush(f);
  std::string out;
  std::rewind(f);
  for (int c; (c = std::fgetc(f)) != EOF;)
    out += char(c);
  std::fclose(f);
  ::unsetenv("WEFT_PROGRESS");
  return out;
}

} // namespace

TEST_CASE("progress in a log: plain lines, the forced ones and the last, never \\r") {
  std::string out = captured(nullptr, [](std::FILE* f) {
    weft::tools::ProgressLine line(f);
    CHECK_FALSE(line.onTerminal());
    line.update("[1/4] a");
    line.update("[2/4] b"); // within the interval: dropped
    line.update("[3/4] c", true);
    line.finish("[4/4] d");
  });
  CHECK(out == "[1/4] a\n[3/4] c\n[4/4] d\n");
}

TEST_CASE("progress on a terminal: one line redrawn in place, ended once") {
  std::string out = captured("1", [](std::FILE* f) {
    weft::tools::ProgressLine line(f);
    CHECK(line.onTerminal());
    line.update("[1/2] a");
    line.finish("[2/2] b");
  });
  CHECK(out == "\r[1/2] a\x1b[K\r[2/2] b\x1b[K\n");
}

TEST_CASE("progress off, and a short step shows nothing") {
  CHECK(captured("0", [](std::FILE* f) {
          weft::tools::ProgressLine line(f);
          line.update("x", true);
          line.finish("y");
          weft::tools::ElapsedProgress step("compiling", 0.0, f);
        }).empty());
  CHECK(captured(nullptr, [](std::FILE* f) { weft::tools::ElapsedProgress step("compiling", 0.0, f); })
            .empty());
}
