#pragma once
// Reading the files a user names (graphs, models, tensors): one place that turns "missing",
// "a directory" and "unreadable" into an InputError with the OS's reason.
#include <string>

namespace weft::frontend {

/// The bytes of the file at `path`. Throws InputError "PATH: cannot open the WHAT: REASON"
/// when it does not exist, is a directory or cannot be read (REASON is the OS's words, e.g.
/// "No such file or directory", or "it is a directory").
std::string readFileBytes(const std::string& path, const std::string& what);

} // namespace weft::frontend
