"""weft: a JIT fusion compiler for GPUs, from Python.

    import weft, numpy as np
    compiled = weft.compile("examples/graphs/layer_norm.json")      # or an .onnx, or a GraphBuilder
    exe = weft.Executable(compiled, device="sim")                    # "sim" | "cuda" | "auto"
    out = exe.run({"x": x, "gamma": g, "beta": b})                   # {"y": np.ndarray}
    print(compiled.plan({"B": 64}))                                  # the fusion plan; format="dot"
    print(exe.counters())                                            # what the simulator counted

Arrays are numpy arrays of the graph's dtypes (bf16 as raw uint16, as weft's .npy files hold
it); symbols are bound from the input shapes. weft's errors are Python exceptions carrying its
one-line message: weft.InputError (what was given is wrong), weft.DeviceError, both weft.Error.
weft.GraphBuilder builds a graph op by op, a method per op of docs/graph-format.md (add,
reduce_sum, dot, ...; the lookups gather(operand, indices, axes, dims), take(x, indices, axis=0)
and take_along_axis(x, indices, axis)), each with name="" last.
weft.fx compiles a torch.fx-traceable torch.nn.Module.
"""
import os as _os

from ._weft import (Compiled, DeviceError, Error, GraphBuilder, InputError, Value,
                    load_graph, load_weights, parse_graph_json)
from ._weft import Executable as _Executable
from ._weft import compile as _compile
from ._weft import compile_file as _compile_file

__all__ = ["compile", "Executable", "GraphBuilder", "Compiled", "Value", "Error", "InputError",
           "DeviceError", "load_graph", "load_weights", "parse_graph_json"]


def compile(graph, policy="astitch", device_spec="h100", shapes="generic", cache_dir="",
            amp=None, ranges=None, tf32=False):
    """Compiles `graph`: a path to a weft JSON graph or an ONNX model, or a GraphBuilder.

    policy: "astitch" (default), "xla" or "none"; device_spec: "h100", "a100" or "v100";
    shapes: "generic" (the default, as in C++: one program for every binding of the symbols)
            or "specialized" (a program per binding);
    cache_dir: "" for weft's disk cache ($XDG_CACHE_HOME/weft), "off" for none;
    amp: None, "f16" or "bf16" (automatic mixed precision);
    tf32: True runs f32 dots on TF32 tensor cores (sm_80+; operands rounded to 10-bit
          significands, sums in f32); False (default): exact f32;
    ranges: {"B": (1, 4096)} declares the sizes a symbol takes (the CLI's --bind B=1..4096): the
            generic program is planned for them only and a size outside is weft.InputError.
    Programs are compiled when a binding is first run (or planned); a graph without symbols
    is compiled at once. A JSON graph file's weights (its "weights_file", docs/graph-format.md)
    come with it: compiled.weights, set on every Executable of it (runs take the other inputs).
    """
    ranges = {k: tuple(v) for k, v in (ranges or {}).items()}
    if isinstance(graph, (str, _os.PathLike)):
        return _compile_file(_os.fspath(graph), policy, device_spec, shapes, cache_dir,
                             amp or "", ranges, tf32)
    if not isinstance(graph, GraphBuilder):
        raise TypeError("weft.compile: graph must be a path (JSON or ONNX) or a weft.GraphBuilder, "
                        f"not {type(graph).__name__}")
    return _compile(graph, policy, device_spec, shapes, cache_dir, amp or "", ranges, tf32)


class Executable(_Executable):
    """A compiled graph on a device: run(), time(), counters(), set_weights().

    run(inputs, binding={}) takes a dict name -> array (or a list in graph input order) and
    returns a dict output name -> numpy array, in graph output order.
    A graph file's weights (compiled.weights) are set when the Executable is made.
    set_weights({name: array}) uploads a model's parameters once; later runs take only the
    other inputs (call_input_names), and another set_weights replaces them without a recompile.
    """

    def __init__(self, compiled, device="sim"):
        super().__init__(compiled, device)

from . import fx  # noqa: E402  (torch is imported only when weft.fx.compile is called)
