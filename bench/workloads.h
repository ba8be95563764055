#pragma once
// The benchmark suite's workloads: JSON graphs in bench/workloads/ (production shapes, static)
// and the generated ones of synthetic_graphs.h, by name. A workload can also be any graph
// file (JSON or ONNX) given by path, its symbols bound with `binding`.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace weft::bench {

struct SymbolicGraph;

struct Workload {
  std::string name;
  std::string summary; // one line for the report
  std::function<ir::Graph()> build;
  /// The same workload with symbols, and the binding that gives build()'s shapes: what
  /// `weft bench --shapes generic` compiles once and runs. Unset for static-only workloads
  /// (the generated ones), which run their static graph in both modes.
  std::function<SymbolicGraph()> buildSymbolic;
};

/// The whole suite, in report order; JSON workloads are read from `workloadsDir`.
std::vector<Workload> suiteWorkloads(const std::string& workloadsDir);
/// The default workloads directory: PREFIX/share/weft/workloads beside an installed
/// PREFIX/bin/weft, else the source tree's bench/workloads.
std::string defaultWorkloadsDir();

/// A suite workload by name, or a graph file when `nameOrPath` ends in .json or .onnx or
/// names an existing file. InputError naming it and listing the suite's names otherwise.
Workload findWorkload(const std::string& nameOrPath, const std::string& workloadsDir,
                      const ir::Binding& binding = {});

/// A JSON workload of production shapes with its leading dim made a symbol, for shape-generic
/// compiles (ShapeMode::Generic): every "shape" array of the file (inputs and op attributes)
/// whose first entry equals the first input's first dim N gets "B" there instead (a rank-1 [N]
/// stays when N is also the first input's last dim: a square [N, N]'s weight). The suite's
/// workloads all scale this way (rows, or batch); `production` receives {B: N}.
struct SymbolicGraph {
  std::string name;
  ir::Graph graph;
  ir::Binding production;
};
SymbolicGraph symbolicWorkload(const std::string& jsonPath);

/// Inputs read once plus outputs written once, in bytes: the least any schedule moves. An
/// input that only gathers read counts the elements they gather (at most the input).
uint64_t compulsoryBytes(const ir::Graph& g);

/// Whether every row a reduce needs fits on chip: for each reduce, the reduced elements of
/// one output element times 4 bytes (f32 accumulation) fit in one block's shared memory.
/// False for graphs with compute-intensive ops (their library kernels are not stitched).
bool rowsFitOnChip(const ir::Graph& g, int64_t sharedMemoryPerBlock);

} // namespace weft::bench
