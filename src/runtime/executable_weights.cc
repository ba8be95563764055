// Executable's weights (weft.h, setWeights): graph inputs whose values the Executable uploads
// once and owns, so that a run takes only the per-call inputs and a new set of weights never
// recompiles (ir/weights.h).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "compile.h"
#include "frontend/json_reader.h"

namespace weft {

namespace {
std::string shapeText(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}
} // namespace

InputError Executable::countError(size_t graphInputs, size_t given) const {
  return InputError(fmt::format(
      "the graph takes {} input(s) but {} were given{}", graphInputs - weights_.size(), given,
      weights_.empty() ? ""
                       : fmt::format(" (besides the {} weight(s) set by setWeights)",
                                     weights_.size())));
}

void Executable::setWeights(const std::map<std::string, HostTensor>& weights) {
  const ir::Graph& g = irGraph(compiled_->graph());
  // Check them all before uploading any, so that a bad set leaves the old one in place.
  std::vector<std::pair<size_t, const HostTensor*>> checked;
  for (const auto& [name, t] : weights) {
    std::optional<ir::NodeId> id = g.find(name);
    const ir::Node* n = id ? &g.node(*id) : nullptr;
    if (!n || n->kind != ir::OpKind::Parameter)
      throw InputError(fmt::format("weight \"{}\": the graph has no input of that name", name));
    const size_t index = static_cast<size_t>(n->attr<ir::ParameterAttrs>().index);
    if (t.dtype != n->type.dtype)
      throw InputError(fmt::format("weight \"{}\": expected dtype {} ({}), got {}", name,
                                   ir::dtypeName(n->type.dtype), n->type.str(),
                                   ir::dtypeName(t.dtype)));
    bool sameShape = t.shape.size() == n->type.shape.size();
    for (size_t d = 0; sameShape && d < t.shape.size(); ++d)
      sameShape = t.shape[d] >= 0 && (!n->type.shape[d].isStatic() ||
                                        n->type.shape[d].size() == t.shape[d]);
    if (!sameShape)
      throw InputError(fmt::format("weight \"{}\": expected shape {} ({}), got {}", name,
                                   ir::shapeStr(n->type.shape), n->type.str(),
                                   shapeText(t.shape)));
    if (t.byteSize() != static_cast<size_t>(t.numElements()) * ir::dtypeBytes(t.dtype))
      throw InputError(fmt::format("weight \"{}\": holds {} bytes, {} needs {}", name,
                                   t.byteSize(), t.typeStr(),
                                   static_cast<size_t>(t.numElements()) * ir::dtypeBytes(t.dtype)));
    checked.emplace_back(index, &t);
  }
  for (const auto& [index, t] : checked) {
    Weight& w = weights_[index];
    if (!w.ptr || w.capacity < t->byteSize()) {
      if (w.ptr) device_.free(w.ptr);
      w.capacity = std::max<size_t>(t->byteSize(), 1);
      w.ptr = device_.allocate(w.capacity);
    }
    if (t->byteSize()) device_.copyToDevice(w.ptr, t->bytes.data(), t->byteSize());
    w.shape.dtype = t->dtype;
    w.shape.shape = t->shape;
    ++stats_.weightUploads;
  }
  spdlog::debug("weights: {} uploaded, {} held", checked.size(), weights_.size());
}

std::vector<std::string> Executable::callInputNames() const {
  const ir::Graph& g = irGraph(compiled_->graph());
  std::vector<std::string> names;
  for (size_t i = 0; i < g.inputs().size(); ++i)
    if (!weights_.count(i)) names.push_back(g.node(g.inputs()[i]).name);
  return names;
}

std::vector<DevicePtr> Executable::withWeights(const std::vector<DevicePtr>& callInputs) const {
  const size_t count = irGraph(compiled_->graph()).inputs().size();
  if (callInputs.size() + weights_.size() != count)
    throw countError(count, callInputs.size());
  std::vector<DevicePtr> all;
  all.reserve(count);
  size_t next = 0;
  for (size_t i = 0; i < count; ++i) {
    auto w = weights_.find(i);
    all.push_back(w != weights_.end() ? w->second.ptr : callInputs[next++]);
  }
  return all;
}

std::vector<HostTensor> Executable::inputShapes(const std::vector<HostTensor>& callInputs) const {
  const size_t count = irGraph(compiled_->graph()).inputs().size();
  if (callInputs.size() + weights_.size() != count)
    throw countError(count, callInputs.size());
  std::vector<HostTensor> all(count);
  size_t next = 0;
  for (size_t i = 0; i < count; ++i) {
    auto w = weights_.find(i);
    const HostTensor& t = w != weights_.end() ? w->second.shape : callInputs[next++];
    all[i].dtype = t.dtype;
    all[i].shape = t.shape;
  }
  return all;
}

std::map<std::string, HostTensor> loadGraphWeights(const std::string& path) {
  return frontend::readGraphFile(path).weights;
}

void Executable::freeWeights() {
  for (auto& [index, w] : weights_) {
    try {
      if (w.ptr) device_.free(w.ptr);
    } catch (const std::exception& e) {
      spdlog::warn("freeing a weight's device buffer failed: {}", e.what());
    }
  }
  weights_.clear();
}

} // namespace weft
