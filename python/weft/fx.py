"""weft.fx: a torch.fx front end.

    fn = weft.fx.compile(module, (x,))      # trace, map to a weft graph, compile
    y = fn(x)                               # runs on weft's device (sim by default)

The module is traced with torch.fx.symbolic_trace and its shapes propagated with the example
inputs, so the graph is compiled for those static shapes. The memory-intensive ops are mapped
to weft ops through weft.GraphBuilder: elementwise arithmetic and math, relu/gelu/silu/
sigmoid/tanh, layer_norm, softmax/log_softmax, sum/mean/amax/amin, view/reshape/permute/
transpose/expand/flatten/contiguous, matmul and linear (weft's dot, a library kernel), and
lookups, onto weft's take and take_along_axis (a gather): nn.Embedding and F.embedding
(padding_idx is accepted, as it only affects gradients; max_norm, which renormalizes the
weight in place, is refused), torch.gather, index_select, take_along_dim and indexing with one
integer tensor (x[idx], x[:, idx], x[..., idx]). Indices torch refuses are not errors here: a
negative index counts from the end, once (as x[idx] does in torch), and one out of range gives
0. The parameters and buffers a module reads (nn.Linear's, nn.LayerNorm's and nn.Embedding's
weights, get_attr tensors) become graph inputs named after them, fed from the module on every
call, so updated weights are picked up. Any other node is an error naming the node and its
target.
"""
import math
import operator

import numpy as np

import weft

_DTYPES = {
    "torch.float32": "f32", "torch.float16": "f16", "torch.bfloat16": "bf16",
    "torch.float64": "f64", "torch.int8": "i8", "torch.int32": "i32", "torch.int64": "i64",
    "torch.bool": "bool",
}


class UnsupportedNode(weft.InputError):
    """A node of the traced module that weft.fx cannot map to weft ops."""


def _to_numpy(t):
    import torch
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:  # numpy has no bf16: raw bits, as weft's .npy files
        return t.view(torch.int16).numpy().view(np.uint16)
    return t.numpy()


def _to_torch(a, dtype):
    import torch
    if dtype == torch.bfloat16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


class _Builder:
    """Maps fx nodes to weft values; every value's static shape is kept alongside."""

    def __init__(self, name):
        self.g = weft.GraphBuilder(name)
        self.shape = {}  # Value id -> tuple of ints
        self.dtype = {}  # Value id -> weft dtype name

    def add(self, v, shape, dtype):
        self.shape[v.id] = tuple(int(d) for d in shape)
        self.dtype[v.id] = dtype
        return v

    def param(self, name, shape, dtype):
        return self.add(self.g.parameter(name, dtype, list(shape)), shape, dtype)

    def scalar_like(self, value, shape, dtype):
        s = self.g.scalar(dtype, float(value))
        return self.add(self.g.broadcast_in_dim(s, list(shape), []), shape, dtype)

    def broadcast_to(self, v, shape):
        have = self.shape[v.id]
        if have == tuple(shape):
            return v
        dims = list(range(len(shape) - len(have), len(shape)))
        return self.add(self.g.broadcast_in_dim(v, list(shape), dims), shape, self.dtype[v.id])

    def binary(self, op, a, b):
        if not isinstance(a, weft.Value) and not isinstance(b, weft.Value):
            raise TypeError("two constants")
        ref = a if isinstance(a, weft.Value) else b
        dtype = self.dtype[ref.id]
        shapes = [self.shape[x.id] for x in (a, b) if isinstance(x, weft.Value)]
        out = tuple(np.broadcast_shapes(*shapes))
        a = self.broadcast_to(a, out) if isinstance(a, weft.Value) else self.scalar_like(a, out, dtype)
        b = self.broadcast_to(b, out) if isinstance(b, weft.Value) else self.scalar_like(b, out, dtype)
        if self.dtype[a.id] != self.dtype[b.id]:
            raise weft.InputError(f"operands of {op} have dtypes {self.dtype[a.id]} and {self.dtype[b.id]}")
        return self.add(getattr(self.g, op)(a, b), out, dtype)

    def unary(self, op, x):
        return self.add(getattr(self.g, op)(x), self.shape[x.id], self.dtype[x.id])

    def axes(self, x, dim):
        rank = len(self.shape[x.id])
        if dim is None:
            return list(range(rank))
        dims = dim if isinstance(dim, (list, tuple)) else [dim]
        return sorted(d % rank for d in dims)

    def reduce(self, op, x, dim, keepdim=False):
        axes = self.axes(x, dim)
        shape = self.shape[x.id]
        kept = tuple(n for i, n in enumerate(shape) if i not in axes)
        r = self.add(getattr(self.g, op)(x, axes), kept, self.dtype[x.id])
        if keepdim:
            r = self.reshape(r, tuple(1 if i in axes else n for i, n in enumerate(shape)))
        return r

    def mean(self, x, dim, keepdim=False):
        axes = self.axes(x, dim)
        count = math.prod(self.shape[x.id][a] for a in axes)
        s = self.reduce("reduce_sum", x, dim, keepdim)
        return self.binary("div", s, float(count))

    def stretch(self, r, axes, shape):
        """A reduction's result `r` (axes dropped) broadcast back over `shape`."""
        dims = [i for i in range(len(shape)) if i not in axes]
        return self.add(self.g.broadcast_in_dim(r, list(shape), dims), shape, self.dtype[r.id])

    def reshape(self, x, shape):
        shape = tuple(int(d) for d in shape)
        if self.shape[x.id] == shape:
            return x
        return self.add(self.g.reshape(x, list(shape)), shape, self.dtype[x.id])

    def transpose(self, x, perm):
        shape = self.shape[x.id]
        perm = [p % len(shape) for p in perm]
        if perm == list(range(len(shape))):
            return x
        return self.add(self.g.transpose(x, perm), tuple(shape[p] for p in perm), self.dtype[x.id])

    def softmax(self, x, dim, log=False):
        shape = self.shape[x.id]
        axes = self.axes(x, dim)
        m = self.stretch(self.reduce("reduce_max", x, axes), axes, shape)
        shifted = self.binary("sub", x, m)
        e = self.unary("exp", shifted)
        s = self.stretch(self.reduce("reduce_sum", e, axes), axes, shape)
        if log:
            return self.binary("sub", shifted, self.unary("log", s))
        return self.binary("div", e, s)

    def layer_norm(self, x, normalized_shape, weight, bias, eps):
        shape = self.shape[x.id]
        axes = list(range(len(shape) - len(normalized_shape), len(shape)))
        mean = self.stretch(self.mean(x, axes), axes, shape)
        centered = self.binary("sub", x, mean)
        var = self.stretch(self.mean(self.binary("mul", centered, centered), axes), axes, shape)
        y = self.binary("mul", centered, self.unary("rsqrt", self.binary("add", var, float(eps))))
        if weight is not None:
            y = self.binary("mul", y, weight)
        if bias is not None:
            y = self.binary("add", y, bias)
        return y

    def gelu(self, x, approximate="none"):
        if approximate == "tanh":
            cube = self.binary("mul", self.binary("mul", x, x), x)
            inner = self.binary("mul", self.binary("add", x, self.binary("mul", cube, 0.044715)),
                                math.sqrt(2.0 / math.pi))
            t = self.unary("tanh", inner)
        else:
            t = self.unary("erf", self.binary("mul", x, 1.0 / math.sqrt(2.0)))
        return self.binary("mul", self.binary("mul", x, 0.5), self.binary("add", t, 1.0))

    def matmul(self, a, b):
        """torch.matmul for rank >= 2 operands: leading dims of `a` folded into rows when `b`
        is a matrix, otherwise batched (batch dims broadcast)."""
        sa, sb = self.shape[a.id], self.shape[b.id]
        if len(sa) < 2 or len(sb) < 2:
            raise weft.InputError("weft.fx: matmul of vectors is not supported")
        if len(sb) == 2:
            rows = math.prod(sa[:-1])
            a2 = self.reshape(a, (rows, sa[-1]))
            r = self.add(self.g.dot(a2, b), (rows, sb[1]), self.dtype[a.id])
            return self.reshape(r, tuple(sa[:-1]) + (sb[1],))
        batch = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
        a = self.broadcast_to(a, batch + sa[-2:])
        b = self.broadcast_to(b, batch + sb[-2:])
        return self.add(self.g.dot(a, b), batch + (sa[-2], sb[-1]), self.dtype[a.id])

    def take(self, x, indices, axis):
        """numpy's take (weft's): x with `axis` replaced by the indices' shape."""
        self.require_integer(indices)
        v = self.g.take(x, indices, axis)
        return self.add(v, self.g.shape(v), self.dtype[x.id])

    def take_along_axis(self, x, indices, axis):
        """One index per result element (torch.gather): indices have x's rank and along the
        other axes x's size or less."""
        self.require_integer(indices)
        v = self.g.take_along_axis(x, indices, axis)
        return self.add(v, self.g.shape(v), self.dtype[x.id])

    def require_integer(self, indices):
        if not isinstance(indices, weft.Value):
            raise UnsupportedNode(f"indices are {type(indices).__name__}; weft.fx takes a tensor")
        if self.dtype[indices.id] == "bool":
            raise UnsupportedNode("indexing with a bool mask is not supported (the result's "
                                  "shape depends on the mask's values)")

    def take_along_dim(self, x, indices, dim):
        """torch.take_along_dim: dim None reads the flattened x; otherwise x and indices
        broadcast against each other along every other dim first."""
        if dim is None:
            flat = self.reshape(x, (math.prod(self.shape[x.id]),))
            return self.take_along_axis(
                flat, self.reshape(indices, (math.prod(self.shape[indices.id]),)), 0)
        sx, si = self.shape[x.id], self.shape[indices.id]
        if len(sx) != len(si):
            raise UnsupportedNode(f"take_along_dim: indices have rank {len(si)} but input has "
                                  f"rank {len(sx)}")
        dim %= len(sx)
        out = np.broadcast_shapes(tuple(n for d, n in enumerate(sx) if d != dim),
                                  tuple(n for d, n in enumerate(si) if d != dim))
        out_x, out_i = list(out), list(out)
        out_x.insert(dim, sx[dim])
        out_i.insert(dim, si[dim])
        return self.take_along_axis(self.broadcast_to(x, out_x), self.broadcast_to(indices, out_i),
                                    dim)

    def embedding(self, indices, weight, padding_idx=None, max_norm=None):
        """F.embedding's forward: weight's rows at `indices`. padding_idx changes only the
        gradient; max_norm would renormalize weight's rows in place, which weft does not do."""
        if max_norm is not None:
            raise UnsupportedNode(f"embedding with max_norm={max_norm} is not supported (it "
                                  "renormalizes the weight in place); use max_norm=None")
        return self.take(weight, indices, 0)

    def getitem(self, x, index):
        """x[idx], x[:, idx], x[..., idx]: one integer tensor index, other entries full slices
        (numpy: the result has that axis replaced by the index's shape)."""
        if isinstance(index, weft.Value):
            return self.take(x, index, 0)
        if not isinstance(index, tuple):
            raise UnsupportedNode(f"indexing with {type(index).__name__} is not supported")
        rank = len(self.shape[x.id])
        entries = []
        for e in index:
            if e is Ellipsis:
                entries += [slice(None)] * (rank - (len(index) - 1))
            else:
                entries.append(e)
        tensors = [i for i, e in enumerate(entries) if isinstance(e, weft.Value)]
        full = all(e == slice(None) for i, e in enumerate(entries) if i not in tensors)
        if len(tensors) != 1 or not full or len(entries) > rank:
            raise UnsupportedNode("indexing is supported with one integer tensor and full "
                                  "slices (x[idx], x[:, idx], x[..., idx]), not "
                                  f"{_index_text(index)}")
        return self.take(x, entries[tensors[0]], tensors[0])

    def linear(self, x, weight, bias):
        y = self.matmul(x, self.transpose(weight, [1, 0]))
        return self.binary("add", y, bias) if bias is not None else y


def _index_text(index):
    """x[...]'s index as torch code would spell it ("tensor" for a tensor)."""
    def one(e):
        if isinstance(e, weft.Value):
            return "tensor"
        if e is Ellipsis:
            return "..."
        if isinstance(e, slice):
            text = lambda v: "" if v is None else str(v)  # noqa: E731
            return f"{text(e.start)}:{text(e.stop)}" + ("" if e.step is None else f":{e.step}")
        return repr(e)
    return "[" + ", ".join(one(e) for e in index) + "]"


def _arg(args, kwargs, i, name, default=None):
    if len(args) > i:
        return args[i]
    return kwargs.get(name, default)


def _target_name(node):
    t = node.target
    if isinstance(t, str):
        return t
    return getattr(t, "__module__", "") + "." + getattr(t, "__name__", repr(t))


class Compiled:
    """A traced module compiled by weft: call it with tensors like the module."""

    def __init__(self, gm, compiled, exe, input_names, weights, outputs, out_dtypes, tree):
        self.graph_module = gm
        self.compiled = compiled
        self.executable = exe
        self._inputs = input_names
        self._weights = weights  # graph input name -> (module, attribute path)
        self._outputs = outputs
        self._out_dtypes = out_dtypes
        self._tree = tree

    def _feed(self, args):
        if len(args) != len(self._inputs):
            raise TypeError(f"expected {len(self._inputs)} inputs, got {len(args)}")
        feed = {name: _to_numpy(a) for name, a in zip(self._inputs, args)}
        for name, tensor_of in self._weights.items():
            feed[name] = _to_numpy(tensor_of())
        return feed

    def __call__(self, *args):
        out = self.executable.run(self._feed(args))
        tensors = [_to_torch(out[n], d) for n, d in zip(self._outputs, self._out_dtypes)]
        return tensors[0] if self._tree == "single" else type(self._tree)(tensors)

    def plan(self, format="text"):
        return self.compiled.plan({}, format)

    def counters(self):
        return self.executable.counters()


def _module_handlers():
    """torch.nn class -> handler(builder, module, x, weight_of)."""
    import torch.nn as nn
    return {
        nn.Linear: lambda b, m, x, w: b.linear(x, w("weight"), w("bias") if m.bias is not None else None),
        nn.LayerNorm: lambda b, m, x, w: b.layer_norm(
            x, m.normalized_shape, w("weight") if m.elementwise_affine else None,
            w("bias") if m.elementwise_affine and m.bias is not None else None, m.eps),
        nn.GELU: lambda b, m, x, w: b.gelu(x, m.approximate),
        nn.Softmax: lambda b, m, x, w: b.softmax(x, m.dim),
        nn.LogSoftmax: lambda b, m, x, w: b.softmax(x, m.dim, log=True),
        nn.ReLU: lambda b, m, x, w: b.binary("max", x, 0.0),
        nn.Sigmoid: lambda b, m, x, w: b.unary("sigmoid", x),
        nn.Tanh: lambda b, m, x, w: b.unary("tanh", x),
        nn.SiLU: lambda b, m, x, w: b.binary("mul", x, b.unary("sigmoid", x)),
        nn.Embedding: lambda b, m, x, w: b.embedding(x, w("weight"), m.padding_idx, m.max_norm),
        nn.Identity: lambda b, m, x, w: x,
        nn.Dropout: lambda b, m, x, w: x,  # inference: weft runs the module in eval semantics
    }


def _function_handlers():
    import torch
    import torch.nn.functional as F
    B = "binary"
    table = {
        operator.add: (B, "add"), torch.add: (B, "add"), operator.sub: (B, "sub"),
        torch.sub: (B, "sub"), operator.mul: (B, "mul"), torch.mul: (B, "mul"),
        operator.truediv: (B, "div"), torch.div: (B, "div"), torch.pow: (B, "pow"),
        operator.pow: (B, "pow"), torch.maximum: (B, "max"), torch.minimum: (B, "min"),
    }
    unary = {torch.exp: "exp", torch.log: "log", torch.tanh: "tanh", torch.sigmoid: "sigmoid",
             torch.sqrt: "sqrt", torch.rsqrt: "rsqrt", torch.abs: "abs", torch.neg: "neg",
             operator.neg: "neg", torch.erf: "erf", torch.sin: "sin", torch.cos: "cos",
             torch.reciprocal: "reciprocal", F.sigmoid: "sigmoid", F.tanh: "tanh"}
    for f, op in unary.items():
        table[f] = ("unary", op)
    return table


_METHOD_UNARY = {"exp": "exp", "log": "log", "tanh": "tanh", "sigmoid": "sigmoid", "sqrt": "sqrt",
                 "rsqrt": "rsqrt", "abs": "abs", "neg": "neg", "erf": "erf", "reciprocal": "reciprocal"}
_METHOD_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "pow": "pow"}


def _convert(gm, example_inputs, name):
    import torch
    from torch.fx.passes.shape_prop import ShapeProp

    ShapeProp(gm).propagate(*example_inputs)
    b = _Builder(name)
    env = {}
    input_names = []
    weights = {}  # graph input name -> callable returning the current tensor
    weight_values = {}
    modules = dict(gm.named_modules())
    mod_handlers = _module_handlers()
    fn_handlers = _function_handlers()

    def meta(node):
        tm = node.meta.get("tensor_meta")
        if tm is None:
            raise UnsupportedNode(f"weft.fx: node \"{node.name}\" ({_target_name(node)}) has no tensor shape")
        return tuple(tm.shape), _DTYPES.get(str(tm.dtype))

    def weight(qualified):
        if qualified not in weight_values:
            owner, _, attr = qualified.rpartition(".")
            def tensor_of(owner=owner, attr=attr):
                return getattr(gm.get_submodule(owner) if owner else gm, attr)
            t = tensor_of()
            dtype = _DTYPES.get(str(t.dtype))
            if dtype is None:
                raise UnsupportedNode(f"weft.fx: parameter \"{qualified}\" has dtype {t.dtype}")
            weight_values[qualified] = b.param(qualified, tuple(t.shape), dtype)
            weights[qualified] = tensor_of
        return weight_values[qualified]

    def val(a):
        if isinstance(a, torch.fx.Node):
            return env[a.name]
        if isinstance(a, (list, tuple)):
            return type(a)(val(x) for x in a)
        return a

    for node in gm.graph.nodes:
        what = f"weft.fx: node \"{node.name}\" ({node.op} {_target_name(node)})"
        args, kwargs = val(node.args), {k: val(v) for k, v in node.kwargs.items()}
        try:
            if node.op == "placeholder":
                shape, dtype = meta(node)
                if dtype is None:
                    raise UnsupportedNode(f"{what}: unsupported dtype")
                env[node.name] = b.param(node.name, shape, dtype)
                input_names.append(node.name)
            elif node.op == "get_attr":
                env[node.name] = weight(node.target)
            elif node.op == "call_module":
                m = modules[node.target]
                handler = next((h for cls, h in mod_handlers.items() if type(m) is cls), None)
                if handler is None:
                    raise UnsupportedNode(f"{what}: module {type(m).__name__} is not supported")
                env[node.name] = handler(b, m, args[0], lambda p, t=node.target: weight(f"{t}.{p}"))
            elif node.op == "call_function":
                env[node.name] = _call_function(b, node, args, kwargs, fn_handlers, what, meta)
            elif node.op == "call_method":
                env[node.name] = _call_method(b, node, args, kwargs, what, meta)
            elif node.op == "output":
                out = args[0]
                tree = "single" if isinstance(out, weft.Value) else out
                outs = [out] if tree == "single" else list(out)
                return b, input_names, weights, outs, tree
        except UnsupportedNode as e:
            if str(e).startswith("weft.fx"):
                raise
            raise UnsupportedNode(f"{what}: {e}") from None
        except weft.InputError as e:
            raise weft.InputError(f"{what}: {e}") from None
    raise UnsupportedNode("weft.fx: the traced graph has no output")


def _call_function(b, node, args, kwargs, table, what, meta):
    import torch
    import torch.nn.functional as F
    t = node.target
    if t in table:
        kind, op = table[t]
        if kind == "binary":
            return b.binary(op, args[0], args[1])
        return b.unary(op, args[0])
    if t in (F.relu, torch.relu):
        return b.binary("max", args[0], 0.0)
    if t is F.gelu:
        return b.gelu(args[0], kwargs.get("approximate", "none"))
    if t is F.silu:
        return b.binary("mul", args[0], b.unary("sigmoid", args[0]))
    if t in (F.softmax, torch.softmax):
        return b.softmax(args[0], _arg(args, kwargs, 1, "dim"))
    if t in (F.log_softmax, torch.log_softmax):
        return b.softmax(args[0], _arg(args, kwargs, 1, "dim"), log=True)
    if t is F.layer_norm:
        return b.layer_norm(args[0], _arg(args, kwargs, 1, "normalized_shape"),
                            _arg(args, kwargs, 2, "weight"), _arg(args, kwargs, 3, "bias"),
                            _arg(args, kwargs, 4, "eps", 1e-5))
    if t is F.linear:
        return b.linear(args[0], args[1], _arg(args, kwargs, 2, "bias"))
    if t in (torch.matmul, operator.matmul):
        return b.matmul(args[0], args[1])
    if t is torch.sum:
        return b.reduce("reduce_sum", args[0], _arg(args, kwargs, 1, "dim"), _arg(args, kwargs, 2, "keepdim", False))
    if t is torch.mean:
        return b.mean(args[0], _arg(args, kwargs, 1, "dim"), _arg(args, kwargs, 2, "keepdim", False))
    if t is torch.amax:
        return b.reduce("reduce_max", args[0], _arg(args, kwargs, 1, "dim"), _arg(args, kwargs, 2, "keepdim", False))
    if t is torch.amin:
        return b.reduce("reduce_min", args[0], _arg(args, kwargs, 1, "dim"), _arg(args, kwargs, 2, "keepdim", False))
    if t in (torch.reshape, torch.flatten):
        return b.reshape(args[0], meta(node)[0])
    if t is torch.permute:
        return b.transpose(args[0], list(_arg(args, kwargs, 1, "dims")))
    if t is torch.transpose:
        return _swap(b, args[0], args[1], args[2])
    if t is F.embedding:
        return b.embedding(args[0], _arg(args, kwargs, 1, "weight"),
                           _arg(args, kwargs, 2, "padding_idx"), _arg(args, kwargs, 3, "max_norm"))
    if t is torch.gather:
        return b.take_along_axis(args[0], _arg(args, kwargs, 2, "index"), _arg(args, kwargs, 1, "dim"))
    if t is torch.index_select:
        # A 0-d index selects one element and keeps the dim (size 1), as torch does.
        r = b.take(args[0], _arg(args, kwargs, 2, "index"), _arg(args, kwargs, 1, "dim"))
        return b.reshape(r, meta(node)[0])
    if t is torch.take_along_dim:
        return b.take_along_dim(args[0], _arg(args, kwargs, 1, "indices"), _arg(args, kwargs, 2, "dim"))
    if t is operator.getitem and isinstance(args[0], weft.Value):
        return b.getitem(args[0], args[1])
    if t is getattr and isinstance(args[0], weft.Value) and args[1] == "shape":
        return b.shape[args[0].id]  # static: the graph is compiled for the example shapes
    if t is operator.getitem and not isinstance(args[0], weft.Value):
        return args[0][args[1]]  # an element of a size tuple
    raise UnsupportedNode(f"{what}: not supported by weft.fx")


def _swap(b, x, d0, d1):
    perm = list(range(len(b.shape[x.id])))
    d0, d1 = d0 % len(perm), d1 % len(perm)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return b.transpose(x, perm)


def _call_method(b, node, args, kwargs, what, meta):
    name, x = node.target, args[0]
    if name in _METHOD_UNARY:
        return b.unary(_METHOD_UNARY[name], x)
    if name in _METHOD_BINARY:
        return b.binary(_METHOD_BINARY[name], x, args[1])
    if name in ("view", "reshape", "flatten", "view_as", "reshape_as"):
        return b.reshape(x, meta(node)[0])
    if name in ("expand", "expand_as", "broadcast_to"):
        return b.broadcast_to(x, meta(node)[0])
    if name == "permute":
        perm = args[1:] if not isinstance(_arg(args, kwargs, 1, "dims"), (list, tuple)) else args[1]
        return b.transpose(x, list(perm))
    if name == "transpose":
        return _swap(b, x, args[1], args[2])
    if name in ("contiguous", "clone", "detach"):
        return x
    if name == "size":
        shape = b.shape[x.id]
        return shape if len(args) < 2 else shape[args[1]]
    if name == "relu":
        return b.binary("max", x, 0.0)
    if name in ("softmax", "log_softmax"):
        return b.softmax(x, _arg(args, kwargs, 1, "dim"), log=name == "log_softmax")
    if name in ("sum", "amax", "amin"):
        op = {"sum": "reduce_sum", "amax": "reduce_max", "amin": "reduce_min"}[name]
        return b.reduce(op, x, _arg(args, kwargs, 1, "dim"), _arg(args, kwargs, 2, "keepdim", False))
    if name == "mean":
        return b.mean(x, _arg(args, kwargs, 1, "dim"), _arg(args, kwargs, 2, "keepdim", False))
    if name == "gather":
        return b.take_along_axis(x, _arg(args, kwargs, 2, "index"), _arg(args, kwargs, 1, "dim"))
    if name == "index_select":
        r = b.take(x, _arg(args, kwargs, 2, "index"), _arg(args, kwargs, 1, "dim"))
        return b.reshape(r, meta(node)[0])
    if name == "take_along_dim":
        return b.take_along_dim(x, _arg(args, kwargs, 1, "indices"), _arg(args, kwargs, 2, "dim"))
    raise UnsupportedNode(f"{what}: not supported by weft.fx")


def compile(module, example_inputs, device="sim", policy="astitch", device_spec="h100",
            cache_dir=""):
    """Traces `module` with torch.fx, maps it to a weft graph for the shapes of
    `example_inputs` and compiles it; returns a callable running it on `device`."""
    import torch
    if isinstance(module, torch.fx.GraphModule):
        gm = module
    else:
        gm = torch.fx.symbolic_trace(module)
    example_inputs = tuple(example_inputs)
    b, input_names, weights, outs, tree = _convert(gm, example_inputs, type(module).__name__)
    out_values = []
    for i, v in enumerate(outs):
        if not isinstance(v, weft.Value):
            raise UnsupportedNode(f"weft.fx: output {i} is not a tensor")
        if v.id in [x.id for x in out_values] or v.id in [x.id for x in b.g.inputs]:
            v = b.unary("neg", b.unary("neg", v))  # a graph output appears once and is computed
        out_values.append(v)
    b.g.set_outputs(out_values)
    compiled = weft.compile(b.g, policy=policy, device_spec=device_spec, cache_dir=cache_dir)
    exe = weft.Executable(compiled, device=device)
    names = [b.g.value_name(v) for v in out_values]
    torch_dtypes = {v: k for k, v in _DTYPES.items()}
    out_dtypes = [getattr(torch, torch_dtypes[b.dtype[v.id]].split(".")[1]) for v in out_values]
    return Compiled(gm, compiled, exe, input_names, weights, names, out_dtypes, tree)

