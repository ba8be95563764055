#pragma once
// Splitting one PTX module into several that the driver can compile to cubins in parallel
// (issue 17: the driver's JIT took about a minute for graph_10000's single module). Text only:
// no CUDA, no LLVM.
#include <cstddef>
#include <string>
#include <vector>

namespace weft::runtime::cuda {

struct PtxPart {
  std::string ptx;
  std::vector<std::string> entries; // the kernels (.entry) this part defines
};

/// `ptx` as at most `parts` modules, each a valid module on its own: every part repeats what is
/// not a function (the header, prototypes, globals, .extern shared memory) and every .func
/// definition (helpers such as the grid barrier), and takes a contiguous run of the entries,
/// balanced by their length in lines. Top-level comments are left out. One part (the module
/// unchanged) when `parts` <= 1 or the module has fewer than two entries.
std::vector<PtxPart> splitPtxModule(const std::string& ptx, size_t parts);

} // namespace weft::runtime::cuda
