// weft._weft: the pybind11 extension behind the `weft` Python package (python/weft). It wraps
// the public C++ API (include/weft) one to one; the Python layer (weft/__init__.py, weft/fx.py)
// adds keyword defaults and the torch.fx front end. Arrays cross as numpy arrays: inputs are
// copied straight from the array's memory to the device and outputs straight from the device
// into a fresh array, with no host-side staging copy (a C-contiguous array of the graph's
// dtype is used as is; anything else is made so first). bf16 travels as raw uint16.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "compile.h"                    // publicGraph: an ONNX model's IR as a weft::Graph
#include "frontend/onnx/load_graph.h"   // ONNX or JSON by the file's contents
#include "weft/weft.h"

namespace py = pybind11;

namespace {

using weft::DType;

py::dtype numpyDType(DType t) {
  switch (t) {
  case DType::f32: return py::dtype("float32");
  case DType::f16: return py::dtype("float16");
  case DType::bf16: return py::dtype("uint16"); // raw bits, the .npy convention
  case DType::f64: return py::dtype("float64");
  case DType::i8: return py::dtype("int8");
  case DType::i32: return py::dtype("int32");
  case DType::i64: return py::dtype("int64");
  case DType::boolean: return py::dtype("bool");
  }
  throw weft::Error("unknown dtype");
}

DType parseDType(const std::string& s) {
  if (auto t = weft::parseDType(s == "bool_" ? "bool" : s)) return *t;
  throw weft::InputError("unknown dtype \"" + s + "\" (f32, f16, bf16, f64, i8, i32, i64, bool)");
}

/// A Python shape: ints and strings ("B", "2*B").
/// The Python type name of `h` for an error message ("int", "NoneType", "numpy.ndarray").
std::string typeName(py::handle h) {
  return py::str(py::type::handle_of(h).attr("__name__")).cast<std::string>();
}

/// `key` as a name: a str, else a TypeError naming `what` and what was given.
std::string nameOf(py::handle key, const std::string& what) {
  if (!py::isinstance<py::str>(key))
    throw py::type_error(what + ": expected a str, got " + typeName(key));
  return key.cast<std::string>();
}

/// A shape from a sequence of ints (numpy's too) and strings ("B", "2*B"); TypeError for any
/// other element (a float, None, a bool), InputError for an int past int64.
weft::Shape toShape(const py::sequence& dims) {
  weft::Shape shape;
  for (py::handle d : dims) {
    if (py::isinstance<py::str>(d)) {
      shape.emplace_back(d.cast<std::string>());
      continue;
    }
    if (py::isinstance<py::bool_>(d) || !PyIndex_Check(d.ptr()))
      throw py::type_error("shape element " + py::repr(d).cast<std::string>() +
                           ": expected an int or a str such as \"B\", got " + typeName(d));
    int overflow = 0;
    py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(d.ptr()));
    long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    if (overflow)
      throw weft::InputError("shape element " + py::repr(d).cast<std::string>() +
                             " does not fit in int64");
    shape.emplace_back(static_cast<int64_t>(v));
  }
  return shape;
}

py::list fromShape(const weft::Shape& shape) {
  py::list out;
  for (const weft::Dim& d : shape) {
    if (d.isStatic())
      out.append(d.size());
    else
      out.append(d.str());
  }
  return out;
}

/// Takes `m` with the GIL released (a thread holding `m` may be waiting for the GIL), then
/// holds it: one call at a time on an Executable, whose buffers and caches are not shared
/// between concurrent runs.
std::unique_lock<std::mutex> lockReleasingGil(std::mutex& m) {
  std::unique_lock<std::mutex> lock(m, std::defer_lock);
  py::gil_scoped_release unlocked;
  lock.lock();
  return lock;
}

/// The graph plus what it is compiled with; Python's `weft.Compiled`.
struct Compiled {
  std::shared_ptr<weft::CompiledGraph> graph;
  /// The weights of the graph file it was compiled from (its "weights_file"): every
  /// Executable of it starts with them set. Empty for a GraphBuilder's graph or an ONNX model
  /// (whose initializers the compile makes weights of itself).
  std::map<std::string, weft::HostTensor> fileWeights = {};

  weft::Program program(const weft::Binding& binding) { return graph->program(binding); }
};

/// A Compiled bound to a device; Python's `weft.Executable`.
class PyExecutable {
public:
  PyExecutable(std::shared_ptr<Compiled> compiled, const std::string& device)
      : compiled_(std::move(compiled)),
        device_(weft::makeDevice(device, compiled_->graph->options().device)),
        exe_(compiled_->graph, *device_) {
    if (!compiled_->fileWeights.empty()) exe_.setWeights(compiled_->fileWeights);
  }

  std::string deviceName() const { return device_->name(); }

  /// inputs: a dict name → array (or a list in graph input order). Returns name → array.
  py::dict run(const py::object& inputs, const weft::Binding& given) {
    auto lock = lockReleasingGil(mutex_);
    const weft::Graph& g = compiled_->graph->graph();
    std::vector<py::array> arrays = inputArrays(inputs);
    weft::Binding binding = bindFromShapes(arrays, given);
    std::vector<weft::DevicePtr> in, out;
    std::vector<py::array> results;
    auto freeAll = [&] {
      for (weft::DevicePtr p : in) device_->free(p);
      for (weft::DevicePtr p : out) device_->free(p);
    };
    try {
      for (py::array& a : arrays) {
        weft::DevicePtr p = device_->allocate(std::max<size_t>(a.nbytes(), 1));
        in.push_back(p);
        device_->copyToDevice(p, a.data(), size_t(a.nbytes()));
      }
      for (weft::Value v : g.outputs()) {
        std::vector<int64_t> shape;
        for (const weft::Dim& d : g.shape(v)) shape.push_back(d.evaluate(binding));
        py::array r(numpyDType(g.dtype(v)), shape);
        out.push_back(device_->allocate(std::max<size_t>(r.nbytes(), 1)));
        results.push_back(std::move(r));
      }
      {
        py::gil_scoped_release unlocked;
        exe_.run(in, out, binding);
      }
      for (size_t i = 0; i < results.size(); ++i)
        device_->copyToHost(results[i].mutable_data(), out[i], size_t(results[i].nbytes()));
    } catch (...) {
      freeAll();
      throw;
    }
    freeAll();
    py::dict named;
    std::vector<weft::Value> outs = g.outputs();
    for (size_t i = 0; i < outs.size(); ++i) named[py::str(g.valueName(outs[i]))] = results[i];
    return named;
  }

  /// Counters of the launches since the last call, one dict per launch (sim; [] on cuda).
  py::list counters() {
    auto lock = lockReleasingGil(mutex_);
    py::list out;
    for (const weft::LaunchCounters& c : exe_.takeCounters()) {
      py::dict d;
      d["kernel"] = c.kernel;
      d["warp_instructions"] = c.warpInstructions;
      d["thread_instructions"] = c.threadInstructions;
      d["global_load_requests"] = c.globalLoadRequests;
      d["global_store_requests"] = c.globalStoreRequests;
      d["global_sectors_read"] = c.globalSectorsRead;
      d["global_sectors_written"] = c.globalSectorsWritten;
      d["global_bytes"] = c.globalBytes();
      d["shared_loads"] = c.sharedLoads;
      d["shared_stores"] = c.sharedStores;
      d["block_barriers"] = c.blockBarriers;
      d["grid_barriers"] = c.gridBarriers;
      d["atomics"] = c.atomics;
      d["blocks"] = c.blocks;
      d["simulated_blocks"] = c.simulatedBlocks;
      out.append(d);
    }
    return out;
  }

  py::dict time(const py::object& inputs, int repeats, const weft::Binding& given) {
    auto lock = lockReleasingGil(mutex_);
    std::vector<py::array> arrays = inputArrays(inputs);
    std::vector<weft::HostTensor> hosts;
    const weft::Graph& g = compiled_->graph->graph();
    std::vector<weft::Value> ins = callInputs();
    for (size_t i = 0; i < arrays.size(); ++i) {
      weft::HostTensor t(g.dtype(ins[i]), {arrays[i].shape(), arrays[i].shape() + arrays[i].ndim()});
      std::memcpy(t.bytes.data(), arrays[i].data(), t.bytes.size());
      hosts.push_back(std::move(t));
    }
    weft::Binding binding = bindFromShapes(arrays, given);
    weft::Executable::Timing timing;
    {
      py::gil_scoped_release unlocked;
      timing = exe_.time(hosts, repeats, binding);
    }
    py::dict d;
    py::list kernels;
    for (const auto& k : timing.kernels) kernels.append(py::make_tuple(k.name, k.ms));
    d["kernels"] = kernels;
    d["total_ms"] = timing.totalMs;
    d["runs"] = timing.runs;
    d["device_clock"] = timing.deviceClock;
    return d;
  }

  /// Weights (a dict input name -> array): uploaded once, left out of every later run's
  /// inputs; a later call replaces the ones it names (Executable::setWeights).
  void setWeights(const py::dict& weights) {
    auto lock = lockReleasingGil(mutex_);
    const weft::Graph& g = compiled_->graph->graph();
    std::map<std::string, weft::HostTensor> tensors;
    for (auto item : weights) {
      std::string name = nameOf(item.first, "set_weights: a weight's name");
      std::optional<weft::Value> v = g.find(name);
      if (!v) throw weft::InputError("weight \"" + name + "\" is not an input of the graph");
      py::array a = arrayOf(py::reinterpret_borrow<py::object>(item.second), g.dtype(*v),
                            "weight \"" + name + "\"");
      weft::HostTensor t(g.dtype(*v), {a.shape(), a.shape() + a.ndim()});
      std::memcpy(t.bytes.data(), a.data(), t.bytes.size());
      tensors.emplace(name, std::move(t));
    }
    {
      py::gil_scoped_release unlocked;
      exe_.setWeights(tensors);
    }
    for (const auto& [name, t] : tensors)
      weightDims_[name] = t.shape;
  }

  std::vector<std::string> callInputNames() {
    auto lock = lockReleasingGil(mutex_);
    return exe_.callInputNames();
  }

  void setGraphMode(const std::string& mode) {
    auto lock = lockReleasingGil(mutex_);
    if (mode == "off") exe_.setGraphMode(weft::GraphMode::Off);
    else if (mode == "on") exe_.setGraphMode(weft::GraphMode::On);
    else if (mode == "auto") exe_.setGraphMode(weft::GraphMode::Auto);
    else throw weft::InputError("graph mode \"" + mode + "\": expected off, on or auto");
  }

private:
  /// The graph inputs a run takes: every input but those set_weights bound, in graph order.
  std::vector<weft::Value> callInputs() const {
    const weft::Graph& g = compiled_->graph->graph();
    std::vector<std::string> names = exe_.callInputNames();
    std::vector<weft::Value> out;
    for (weft::Value v : g.inputs())
      if (std::find(names.begin(), names.end(), g.valueName(v)) != names.end()) out.push_back(v);
    return out;
  }

  /// A C-contiguous array of `t`'s numpy dtype for `what` (a float array of another precision
  /// converts; anything else is an InputError naming `what`).
  static py::array arrayOf(const py::object& given, DType t, const std::string& what) {
    py::dtype want = numpyDType(t);
    py::array a = py::array::ensure(given);
    if (!a) throw weft::InputError(what + " is not an array");
    if (!a.dtype().equal(want)) {
      // A float array for a float input converts (as torch's .numpy() of another precision
      // would); anything else is the caller's mistake.
      bool floatToFloat = weft::isFloat(t) && t != DType::bf16 && a.dtype().kind() == 'f';
      if (!floatToFloat)
        throw weft::InputError(what + ": expected " + std::string(weft::dtypeName(t)) +
                               " (numpy " + py::str(want).cast<std::string>() + "), got numpy " +
                               py::str(a.dtype()).cast<std::string>());
      a = py::array::ensure(a.attr("astype")(want));
    }
    // No copy when the array is already C-contiguous.
    return py::array::ensure(a, py::array::c_style);
  }

  /// The inputs as C-contiguous arrays of each call input's dtype, in graph input order.
  std::vector<py::array> inputArrays(const py::object& inputs) {
    const weft::Graph& g = compiled_->graph->graph();
    std::vector<weft::Value> ins = callInputs();
    std::vector<py::object> given;
    if (py::isinstance<py::dict>(inputs)) {
      py::dict d = inputs.cast<py::dict>();
      for (weft::Value v : ins) {
        std::string name = g.valueName(v);
        if (!d.contains(name)) throw weft::InputError("input \"" + name + "\" is missing");
        given.push_back(d[py::str(name)]);
      }
      if (d.size() != ins.size())
        for (auto item : d) {
          std::string name = nameOf(item.first, "run: an input's name");
          if (std::none_of(ins.begin(), ins.end(),
                           [&](weft::Value v) { return g.valueName(v) == name; }))
            throw weft::InputError("\"" + name + "\" is not an input of the graph" +
                                   (g.find(name) ? " a run takes (set_weights bound it)" : ""));
        }
    } else {
      for (py::handle h : inputs) given.push_back(py::reinterpret_borrow<py::object>(h));
      if (given.size() != ins.size())
        throw weft::InputError("expected " + std::to_string(ins.size()) + " inputs, got " +
                               std::to_string(given.size()));
    }
    std::vector<py::array> arrays;
    for (size_t i = 0; i < ins.size(); ++i) {
      py::array a = arrayOf(given[i], g.dtype(ins[i]), "input \"" + g.valueName(ins[i]) + "\"");
      weft::Shape shape = g.shape(ins[i]);
      if (size_t(a.ndim()) != shape.size())
        throw weft::InputError("input \"" + g.valueName(ins[i]) + "\": expected rank " +
                               std::to_string(shape.size()) + ", got " + std::to_string(a.ndim()));
      arrays.push_back(std::move(a));
    }
    return arrays;
  }

  /// An input's declared shape and the size of each of its dims in this run.
  struct Sized {
    std::string what; // "input \"x\"" or "weight \"w\""
    weft::Shape declared;
    std::vector<int64_t> dims;
  };

  /// Binds each symbol from the first dim that is a multiple of it alone, among the call's
  /// inputs and then the weights set_weights gave (a symbol only a weight has is bound by it),
  /// then checks every dim against the binding.
  weft::Binding bindFromShapes(const std::vector<py::array>& arrays, weft::Binding binding) {
    const weft::Graph& g = compiled_->graph->graph();
    std::vector<weft::Value> ins = callInputs();
    std::vector<Sized> sized;
    for (size_t i = 0; i < ins.size(); ++i)
      sized.push_back({"input \"" + g.valueName(ins[i]) + "\"", g.shape(ins[i]),
                       {arrays[i].shape(), arrays[i].shape() + arrays[i].ndim()}});
    for (const auto& [name, dims] : weightDims_)
      sized.push_back({"weight \"" + name + "\"", g.shape(*g.find(name)), dims});
    for (const Sized& s : sized)
      for (size_t k = 0; k < s.declared.size(); ++k) {
        const weft::Dim& d = s.declared[k];
        if (d.symbols().size() == 1 && !binding.count(d.symbols()[0]) && s.dims[k] % d.factor() == 0)
          binding[d.symbols()[0]] = s.dims[k] / d.factor();
      }
    for (const Sized& s : sized)
      for (size_t k = 0; k < s.declared.size(); ++k)
        if (s.declared[k].evaluate(binding) != s.dims[k])
          throw weft::InputError(s.what + ": dim " + std::to_string(k) + " is " +
                                 std::to_string(s.dims[k]) + ", the graph says " +
                                 s.declared[k].str() + " = " +
                                 std::to_string(s.declared[k].evaluate(binding)));
    return binding;
  }

  std::shared_ptr<Compiled> compiled_;
  std::unique_ptr<weft::Device> device_;
  weft::Executable exe_;
  std::map<std::string, std::vector<int64_t>> weightDims_; // the weights set_weights gave
  std::mutex mutex_; // one call at a time (lockReleasingGil)
};

using Ranges = std::map<std::string, std::pair<int64_t, int64_t>>;

std::shared_ptr<Compiled> compileGraph(const weft::Graph& graph, const std::string& policy,
                                       const std::string& deviceSpec, const std::string& shapes,
                                       const std::string& cacheDir, const std::string& amp,
                                       const Ranges& ranges, bool tf32) {
  weft::CompileOptions o;
  o.tf32 = tf32;
  for (const auto& [symbol, r] : ranges) {
    if (r.first < 1 || r.first > r.second)
      throw weft::InputError("ranges[\"" + symbol + "\"] = (" + std::to_string(r.first) + ", " +
                             std::to_string(r.second) + "): need 1 <= lo <= hi");
    o.symbolRanges[symbol] = weft::SizeRange{r.first, r.second};
  }
  auto p = weft::parsePolicy(policy);
  if (!p) throw weft::InputError("policy \"" + policy + "\": expected none, xla or astitch");
  o.policy = *p;
  auto spec = weft::deviceSpecProfile(deviceSpec);
  if (!spec) throw weft::InputError("device spec \"" + deviceSpec + "\": expected v100, a100 or h100");
  o.device = *spec;
  auto s = weft::parseShapeMode(shapes);
  if (!s) throw weft::InputError("shapes \"" + shapes + "\": expected specialized or generic");
  o.shapes = *s;
  o.cacheDir = cacheDir;
  if (!amp.empty()) o.amp = parseDType(amp);
  std::shared_ptr<weft::CompiledGraph> compiled;
  {
    py::gil_scoped_release unlocked;
    compiled = weft::compile(graph, o);
  }
  return std::make_shared<Compiled>(Compiled{std::move(compiled)});
}

/// A fresh numpy array holding `t` (bf16 as uint16).
py::array toArray(const weft::HostTensor& t) {
  py::array a(numpyDType(t.dtype), t.shape);
  std::memcpy(a.mutable_data(), t.bytes.data(), t.bytes.size());
  return a;
}

/// The weights of the graph file at `path` (its "weights_file"), name -> array; {} when it
/// declares none.
py::dict loadWeights(const std::string& path) {
  py::dict out;
  for (const auto& [name, t] : weft::loadGraphWeights(path)) out[py::str(name)] = toArray(t);
  return out;
}

weft::Graph loadGraph(const std::string& path) {
  weft::frontend::ParsedGraph parsed = weft::frontend::loadGraphAnyFormat(path);
  return weft::publicGraph(std::move(parsed.graph), std::move(parsed.name));
}

/// compileGraph of the graph file at `path`, read once: its weights (a JSON graph's
/// "weights_file") come with the Compiled, for every Executable of it.
std::shared_ptr<Compiled> compileFile(const std::string& path, const std::string& policy,
                                      const std::string& deviceSpec, const std::string& shapes,
                                      const std::string& cacheDir, const std::string& amp,
                                      const Ranges& ranges, bool tf32) {
  weft::frontend::ParsedGraph parsed = weft::frontend::loadGraphAnyFormat(path);
  std::map<std::string, weft::HostTensor> weights = std::move(parsed.weights);
  std::shared_ptr<Compiled> c =
      compileGraph(weft::publicGraph(std::move(parsed.graph), std::move(parsed.name)), policy,
                   deviceSpec, shapes, cacheDir, amp, ranges, tf32);
  c->fileWeights = std::move(weights);
  return c;
}

using Unary = weft::Value (weft::Graph::*)(weft::Value, std::string);
using Binary = weft::Value (weft::Graph::*)(weft::Value, weft::Value, std::string);
using Reduce = weft::Value (weft::Graph::*)(weft::Value, std::vector<int64_t>, std::string);

} // namespace

PYBIND11_MODULE(_weft, m) {
  m.doc() = "weft's C++ API (the weft package wraps it)";
  static py::exception<weft::Error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<weft::InputError> inputError(m, "InputError", error.ptr());
  static py::exception<weft::DeviceError> deviceError(m, "DeviceError", error.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const weft::InputError& e) {
      inputError(e.what());
    } catch (const weft::DeviceError& e) {
      deviceError(e.what());
    } catch (const weft::Error& e) {
      error(e.what());
    }
  });

  py::class_<weft::Value>(m, "Value")
      .def_property_readonly("id", &weft::Value::id)
      .def("__repr__", [](const weft::Value& v) { return "<weft.Value " + std::to_string(v.id()) + ">"; });

  py::class_<weft::Graph> graph(m, "GraphBuilder");
  graph.def(py::init<std::string>(), py::arg("name") = "main")
      .def("parameter", [](weft::Graph& g, std::string name, const std::string& dtype,
                           const py::sequence& shape) {
             return g.parameter(std::move(name), parseDType(dtype), toShape(shape));
           }, py::arg("name"), py::arg("dtype"), py::arg("shape"))
      .def("constant", [](weft::Graph& g, const std::string& dtype, const py::sequence& shape,
                          std::vector<double> values, std::string name) {
             return g.constant(parseDType(dtype), toShape(shape), std::move(values), std::move(name));
           }, py::arg("dtype"), py::arg("shape"), py::arg("values"), py::arg("name") = "")
      .def("scalar", [](weft::Graph& g, const std::string& dtype, double v, std::string name) {
             return g.scalar(parseDType(dtype), v, std::move(name));
           }, py::arg("dtype"), py::arg("value"), py::arg("name") = "")
      .def("iota", [](weft::Graph& g, const std::string& dtype, const py::sequence& shape,
                      int64_t axis, std::string name) {
             return g.iota(parseDType(dtype), toShape(shape), axis, std::move(name));
           }, py::arg("dtype"), py::arg("shape"), py::arg("axis"), py::arg("name") = "")
      .def("convert", [](weft::Graph& g, weft::Value x, const std::string& to, std::string name) {
             return g.convert(x, parseDType(to), std::move(name));
           }, py::arg("x"), py::arg("to"), py::arg("name") = "")
      .def("broadcast_in_dim", [](weft::Graph& g, weft::Value x, const py::sequence& shape,
                                  std::vector<int64_t> dims, std::string name) {
             return g.broadcastInDim(x, toShape(shape), std::move(dims), std::move(name));
           }, py::arg("x"), py::arg("shape"), py::arg("dims"), py::arg("name") = "")
      .def("reshape", [](weft::Graph& g, weft::Value x, const py::sequence& shape, std::string name) {
             return g.reshape(x, toShape(shape), std::move(name));
           }, py::arg("x"), py::arg("shape"), py::arg("name") = "")
      .def("transpose", &weft::Graph::transpose, py::arg("x"), py::arg("perm"), py::arg("name") = "")
      .def("slice", &weft::Graph::slice, py::arg("x"), py::arg("starts"), py::arg("limits"),
           py::arg("strides"), py::arg("name") = "")
      .def("concatenate", &weft::Graph::concatenate, py::arg("xs"), py::arg("axis"), py::arg("name") = "")
      .def("pad", &weft::Graph::pad, py::arg("x"), py::arg("low"), py::arg("high"),
           py::arg("value") = 0.0, py::arg("name") = "")
      .def("gather", &weft::Graph::gather, py::arg("operand"), py::arg("indices"),
           py::arg("axes"), py::arg("dims"), py::arg("name") = "")
      .def("take", &weft::Graph::take, py::arg("x"), py::arg("indices"), py::arg("axis") = 0,
           py::arg("name") = "")
      .def("take_along_axis", &weft::Graph::takeAlongAxis, py::arg("x"), py::arg("indices"),
           py::arg("axis"), py::arg("name") = "")
      .def("select", &weft::Graph::select, py::arg("pred"), py::arg("on_true"), py::arg("on_false"),
           py::arg("name") = "")
      .def("clamp", &weft::Graph::clamp, py::arg("lo"), py::arg("x"), py::arg("hi"), py::arg("name") = "")
      .def("dot", &weft::Graph::dot, py::arg("a"), py::arg("b"), py::arg("name") = "")
      .def("add_output", &weft::Graph::addOutput, py::arg("value"))
      .def("set_outputs", &weft::Graph::setOutputs, py::arg("values"))
      .def_property_readonly("name", &weft::Graph::name)
      .def_property_readonly("inputs", &weft::Graph::inputs)
      .def_property_readonly("outputs", &weft::Graph::outputs)
      .def("value_name", &weft::Graph::valueName)
      .def("dtype", [](const weft::Graph& g, weft::Value v) { return std::string(weft::dtypeName(g.dtype(v))); })
      .def("shape", [](const weft::Graph& g, weft::Value v) { return fromShape(g.shape(v)); })
      .def("symbols", &weft::Graph::symbols)
      .def("__len__", &weft::Graph::size)
      .def("__str__", &weft::Graph::str);
  const std::pair<const char*, Unary> unary[] = {
      {"neg", &weft::Graph::neg}, {"abs", &weft::Graph::abs}, {"exp", &weft::Graph::exp},
      {"log", &weft::Graph::log}, {"tanh", &weft::Graph::tanh}, {"sqrt", &weft::Graph::sqrt},
      {"rsqrt", &weft::Graph::rsqrt}, {"erf", &weft::Graph::erf}, {"sigmoid", &weft::Graph::sigmoid},
      {"sin", &weft::Graph::sin}, {"cos", &weft::Graph::cos}, {"floor", &weft::Graph::floor},
      {"ceil", &weft::Graph::ceil}, {"sign", &weft::Graph::sign},
      {"logical_not", &weft::Graph::logicalNot}, {"reciprocal", &weft::Graph::reciprocal}};
  for (const auto& [name, f] : unary)
    graph.def(name, f, py::arg("x"), py::arg("name") = "");
  const std::pair<const char*, Binary> binary[] = {
      {"add", &weft::Graph::add}, {"sub", &weft::Graph::sub}, {"mul", &weft::Graph::mul},
      {"div", &weft::Graph::div}, {"pow", &weft::Graph::pow}, {"max", &weft::Graph::max},
      {"min", &weft::Graph::min}, {"rem", &weft::Graph::rem},
      {"logical_and", &weft::Graph::logicalAnd}, {"logical_or", &weft::Graph::logicalOr},
      {"equal", &weft::Graph::equal}, {"not_equal", &weft::Graph::notEqual},
      {"less", &weft::Graph::less}, {"less_equal", &weft::Graph::lessEqual},
      {"greater", &weft::Graph::greater}, {"greater_equal", &weft::Graph::greaterEqual}};
  for (const auto& [name, f] : binary)
    graph.def(name, f, py::arg("a"), py::arg("b"), py::arg("name") = "");
  const std::pair<const char*, Reduce> reduce[] = {
      {"reduce_sum", &weft::Graph::reduceSum}, {"reduce_max", &weft::Graph::reduceMax},
      {"reduce_min", &weft::Graph::reduceMin}, {"reduce_prod", &weft::Graph::reduceProd},
      {"reduce_any", &weft::Graph::reduceAny}, {"reduce_all", &weft::Graph::reduceAll},
      {"reduce_logsumexp", &weft::Graph::reduceLogSumExp}};
  for (const auto& [name, f] : reduce)
    graph.def(name, f, py::arg("x"), py::arg("axes"), py::arg("name") = "");

  m.def("load_graph", &loadGraph, py::arg("path"),
        "A graph file: ONNX (by content) or weft JSON (docs/graph-format.md)");
  m.def("load_weights", &loadWeights, py::arg("path"),
        "The weights of a JSON graph file (its weights_file), name -> array; {} when none");
  m.def("parse_graph_json", &weft::parseGraphJson, py::arg("json"), py::arg("source_name") = "graph.json");

  py::class_<Compiled, std::shared_ptr<Compiled>>(m, "Compiled")
      .def_property_readonly("graph", [](const Compiled& c) { return c.graph->graph(); })
      .def("plan", [](Compiled& c, const weft::Binding& binding, const std::string& format) {
             weft::Program p = c.program(binding);
             if (format == "dot") return p.plan().dot();
             if (format == "text") return p.plan().str();
             throw weft::InputError("plan format \"" + format + "\": expected text or dot");
           }, py::arg("binding") = weft::Binding{}, py::arg("format") = "text")
      .def("ptx", [](Compiled& c, const weft::Binding& b) { return c.program(b).ptx(); },
           py::arg("binding") = weft::Binding{})
      .def("kernel_count", [](Compiled& c, const weft::Binding& b) {
             return c.program(b).plan().kernelCount();
           }, py::arg("binding") = weft::Binding{})
      .def("program_count", [](const Compiled& c) { return c.graph->programCount(); })
      .def_property_readonly("weights", [](const Compiled& c) {
             py::dict out;
             for (const auto& [name, t] : c.fileWeights) out[py::str(name)] = toArray(t);
             return out;
           }, "The graph file's weights (its weights_file) every Executable starts with");
  m.def("compile", &compileGraph, py::arg("graph"), py::arg("policy"), py::arg("device_spec"),
        py::arg("shapes"), py::arg("cache_dir"), py::arg("amp"), py::arg("ranges"),
        py::arg("tf32") = false);
  m.def("compile_file", &compileFile, py::arg("path"), py::arg("policy"), py::arg("device_spec"),
        py::arg("shapes"), py::arg("cache_dir"), py::arg("amp"), py::arg("ranges"),
        py::arg("tf32") = false);

  py::class_<PyExecutable>(m, "Executable")
      .def(py::init<std::shared_ptr<Compiled>, std::string>(), py::arg("compiled").none(false),
           py::arg("device") = "sim")
      .def_property_readonly("device", &PyExecutable::deviceName)
      .def("run", &PyExecutable::run, py::arg("inputs"), py::arg("binding") = weft::Binding{})
      .def("counters", &PyExecutable::counters)
      .def("time", &PyExecutable::time, py::arg("inputs"), py::arg("repeats") = 10,
           py::arg("binding") = weft::Binding{})
      .def("set_graph_mode", &PyExecutable::setGraphMode, py::arg("mode"))
      .def("set_weights", &PyExecutable::setWeights, py::arg("weights"))
      .def_property_readonly("call_input_names", &PyExecutable::callInputNames);
}
