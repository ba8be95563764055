#include "codegen/ptxas.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <unistd.h>

#include "weft/error.h"

namespace weft::codegen {

bool PtxasReport::spills() const {
  for (const auto& f : functions)
    if (f.spillLoads > 0 || f.spillStores > 0) return true;
  return false;
}

std::string findPtxas() {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (const char* home = std::getenv("CUDA_HOME");
      home && fs::exists(std::string(home) + "/bin/ptxas", ec))
    return std::string(home) + "/bin/ptxas";
  if (fs::exists("/usr/local/cuda/bin/ptxas", ec)) return "/usr/local/cuda/bin/ptxas";
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    std::string dir;
    while (std::getline(ss, dir, ':'))
      if (!dir.empty() && fs::exists(dir + "/ptxas", ec)) return dir + "/ptxas";
  }
  return "";
}

std::vector<PtxasFunctionReport> parsePtxasLog(const std::string& log) {
  std::vector<PtxasFunctionReport> out;
  static const std::regex props(R"(Function properties for (\S+))");
  static const std::regex entry(R"(Compiling entry function '([^']+)')");
  static const std::regex frame(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex regs(R"(Used (\d+) registers)");
  auto current = [&](const std::string& name) -> PtxasFunctionReport& {
    for (auto& f : out)
      if (f.name == name) return f;
    out.push_back({name});
    return out.back();
  };
  std::string cur;
  std::istringstream in(log);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, entry) || std::regex_search(line, m, props)) {
      cur = m[1];
      current(cur);
    } else if (!cur.empty() && std::regex_search(line, m, frame)) {
      auto& f = current(cur);
      f.stackFrame = std::stoll(m[1]);
      f.spillStores = std::stoll(m[2]);
      f.spillLoads = std::stoll(m[3]);
    } else if (!cur.empty() && std::regex_search(line, m, regs)) {
      current(cur).registers = std::stoi(m[1]);
    }
  }
  return out;
}

PtxasReport runPtxas(const std::string& ptxasPath, const std::string& ptx,
                     const std::string& arch) {
  namespace fs = std::filesystem;
  std::string dir = (fs::temp_directory_path() / "weft-ptxas-XXXXXX").string();
  if (!mkdtemp(dir.data())) throw Error("cannot create a temporary directory for ptxas");
  std::string in = dir + "/kernels.ptx";
  std::ofstream(in) << ptx;
  // PTX for an architecture-specific target (.target sm_90a: wgmma) assembles only for that
  // target: `arch` sm_90 then means sm_90a.
  std::string target = arch;
  if (ptx.find(".target " + arch + "a") != std::string::npos) target = arch + "a";
  std::string cmd =
      "'" + ptxasPath + "' -arch=" + target + " -v -o '" + dir + "/kernels.cubin' '" + in + "' 2>&1";
  PtxasReport r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw Error("cannot run " + ptxasPath);
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0)
    r.log.append(buf.data(), n);
  int status = pclose(p);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.functions = parsePtxasLog(r.log);
  std::error_code ec;
  fs::remove_all(dir, ec);
  return r;
}

} // namespace weft::codegen
