#pragma once
// Reading the files a user names (graphs, models, tensors): one place that turns "missing",
// "a directory", "not a regular file" and "unreadable" into an InputError with the OS's reason.
#include <string>

namespace weft::frontend {

/// Throws InputError "PATH: cannot open the WHAT: REASON" unless `path` names a regular file
/// (after symlinks): missing, a directory, a device such as /dev/zero, a FIFO or a socket are
/// refused before anything opens them (opening a FIFO would wait for a writer; reading a
/// device may never end).
void requireRegularFile(const std::string& path, const std::string& what);

/// The bytes of the regular file at `path`. Throws InputError "PATH: cannot open the WHAT:
/// REASON" when it does not exist, is not a regular file or cannot be read (REASON is the OS's
/// words, e.g. "No such file or directory", or "it is a directory").
std::string readFileBytes(const std::string& path, const std::string& what);

} // namespace weft::frontend
