#pragma once
// Test support: runs the built `weft` program (WEFT_BINARY_DIR/tools/weft, the definition
// weft_add_test gives every test) through the shell and returns its exit code and output.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace weft::testing {

struct WeftResult {
  int rc;
  std::string out, err;
};

/// The whole content of a file ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// A scratch folder of this test process, created on first use.
inline std::filesystem::path scratchDir() {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("weft_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

/// `env weft args` run from `workDir` ("" = the current folder); rc -1 if it did not exit.
inline WeftResult runWeft(const std::string& args, const std::string& env = "",
                          const std::string& workDir = "") {
  std::filesystem::path dir = scratchDir();
  std::string cmd = (workDir.empty() ? "" : "cd " + workDir + " && ") + env +
                    " " WEFT_BINARY_DIR "/tools/weft " + args + " > " + (dir / "out").string() +
                    " 2> " + (dir / "err").string();
  int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "out"), slurp(dir / "err")};
}

} // namespace weft::testing
