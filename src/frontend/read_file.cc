#include "frontend/read_file.h"

#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

#include "weft/error.h"

namespace weft::frontend {

void requireRegularFile(const std::string& path, const std::string& what) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    throw InputError(fmt::format("{}: cannot open the {}: {}", path, what, std::strerror(errno)));
  if (S_ISDIR(st.st_mode))
    throw InputError(fmt::format("{}: cannot open the {}: it is a directory", path, what));
  if (!S_ISREG(st.st_mode))
    throw InputError(fmt::format("{}: cannot open the {}: it is not a regular file (a device, "
                                 "FIFO or socket); give a file",
                                 path, what));
}

std::string readFileBytes(const std::string& path, const std::string& what) {
  requireRegularFile(path, what);
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
