#pragma once
// Helpers shared by the subcommands of `weft`.
#include <string>
#include <vector>

#include "frontend/json_reader.h"
#include "ir/shape.h"
#include "weft/tensor.h"

namespace weft::tools {

/// Reads a graph file (InputError naming the file on any problem).
frontend::ParsedGraph loadGraph(const std::string& path);

/// --bind B=16,S=128 ("" for none).
ir::Binding parseBindOption(const std::string& text);

/// Binds the symbols still unbound in `binding` from the inputs' shapes where a graph input's
/// dim is a lone symbol ("B"), then checks that every symbol of the graph is bound; InputError
/// naming the file, the symbols and the flag to use otherwise.
ir::Binding completeBinding(const frontend::ParsedGraph& g, const std::string& file,
                            ir::Binding binding, const std::vector<HostTensor>* inputs);

/// Reads DIR/<input name>.npy for every graph input, with the dtype the graph declares.
std::vector<HostTensor> readInputsDir(const ir::Graph& g, const std::string& dir);

/// Writes DIR/<output name>.npy for every output (the directory is created when missing);
/// characters other than letters, digits, '.', '_' and '-' become '_' in file names.
void saveOutputs(const ir::Graph& g, const std::vector<HostTensor>& outputs,
                 const std::string& dir);

} // namespace weft::tools
