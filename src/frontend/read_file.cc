#include "frontend/read_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "weft/error.h"

namespace weft::frontend {

std::string readFileBytes(const std::string& path, const std::string& what) {
  std::error_code ec;
  // An ifstream opens a directory without complaint and then reads nothing.
  if (std::filesystem::is_directory(path, ec))
    throw InputError(fmt::format("{}: cannot open the {}: it is a directory", path, what));
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(fmt::format("{}: cannot open the {}: {}", path, what,
                                 errno ? std::strerror(errno) : "unknown reason"));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad())
    throw InputError(fmt::format("{}: cannot read the {}: {}", path, what,
                                 errno ? std::strerror(errno) : "unknown reason"));
  return buffer.str();
}

} // namespace weft::frontend
