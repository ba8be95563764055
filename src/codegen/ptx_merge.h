#pragma once
// Joins the PTX of LLVM modules compiled apart for the same target into one PTX module, the
// way a linker would: one header (.version, .target, .address_size), then each module's
// module-scope statements in order, without the repeats of symbols several modules declare or
// define (weft_grid_barrier, weft_last_block, weft_dynamic_shared). Local symbols must already have names unique
// across the modules (uniquifyLocalSymbols, parallel_compile.h).
#include <string>
#include <vector>

namespace weft::codegen {

/// Drops a declaration of a symbol declared or defined above it, and a definition of a function
/// defined above it (which must have the same text up to the numbering of its labels). Throws
/// weft::Error (a weft bug) when the headers differ, a variable is defined twice or two
/// definitions of a function differ. A single module comes back unchanged.
std::string mergePtxModules(const std::vector<std::string>& modules);

/// `ptx` with its call sequences numbered 0, 1, 2... in text order. LLVM 19's NVPTX backend
/// numbers them (in "// callseq N" comments) from one counter shared by every compile in the
/// process, so without this the PTX of a plan would depend on what the process compiled before
/// and, with modules printed on several threads, on which thread came first. (The counter also
/// names the prototypes of indirect calls, which weft does not make.)
std::string numberCallSequences(std::string ptx);

} // namespace weft::codegen
