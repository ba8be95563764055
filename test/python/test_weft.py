"""The weft Python module: compile, run, plan, counters, errors, dtypes (issue 19 part 2)."""
import os

import numpy as np
import pytest

import weft

SOURCE = os.environ.get("WEFT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
LAYER_NORM = os.path.join(SOURCE, "examples", "graphs", "layer_norm.json")
SOFTMAX = os.path.join(SOURCE, "examples", "graphs", "softmax.json")


def scale_graph():
    g = weft.GraphBuilder("scale")
    x = g.parameter("x", "f32", ["B", 8])
    two = g.broadcast_in_dim(g.scalar("f32", 2.0), ["B", 8], [])
    g.add_output(g.mul(x, two, "y"))
    return g


def test_builder_compile_run_binds_symbols_from_shapes():
    exe = weft.Executable(weft.compile(scale_graph()), device="sim")
    for rows in (3, 5):
        x = np.arange(rows * 8, dtype=np.float32).reshape(rows, 8)
        out = exe.run({"x": x})
        assert list(out) == ["y"]
        assert out["y"].dtype == np.float32 and out["y"].shape == (rows, 8)
        np.testing.assert_array_equal(out["y"], 2 * x)


def test_one_generic_program_serves_every_binding_by_default():
    compiled = weft.compile(scale_graph(), cache_dir="off")
    exe = weft.Executable(compiled, device="sim")
    for rows in (1, 3, 17):
        x = np.ones((rows, 8), dtype=np.float32)
        np.testing.assert_array_equal(exe.run({"x": x})["y"], 2 * x)
    assert compiled.program_count() == 1
    specialized = weft.compile(scale_graph(), shapes="specialized", cache_dir="off")
    exe = weft.Executable(specialized, device="sim")
    for rows in (1, 3):
        exe.run({"x": np.ones((rows, 8), dtype=np.float32)})
    assert specialized.program_count() == 2


def test_json_graph_matches_numpy_layer_norm():
    compiled = weft.compile(LAYER_NORM)
    exe = weft.Executable(compiled, device="sim")
    rng = np.random.default_rng(0)
    graph = compiled.graph
    names = [graph.value_name(v) for v in graph.inputs]
    shapes = {n: graph.shape(v) for n, v in zip(names, graph.inputs)}
    feed = {}
    for n in names:
        shape = [4 if isinstance(d, str) else d for d in shapes[n]]
        feed[n] = rng.standard_normal(shape).astype(np.float32)
    out = exe.run(feed)
    assert list(out) == ["y"]
    x = feed["x"].astype(np.float64)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    want = (x - mean) / np.sqrt(var + 1e-12) * feed["gamma"] + feed["beta"]
    assert out["y"].shape == (4, 768)
    np.testing.assert_allclose(out["y"], want, rtol=1e-4, atol=1e-4)


def test_non_contiguous_and_float64_inputs_are_accepted():
    exe = weft.Executable(weft.compile(scale_graph()), device="sim")
    x = np.arange(16 * 4, dtype=np.float64).reshape(8, 8).T[:, :]  # Fortran order, f64
    out = exe.run([x])
    np.testing.assert_allclose(out["y"], 2 * x)


def test_plan_text_and_dot_and_counters_and_time():
    compiled = weft.compile(SOFTMAX)
    text = compiled.plan({"B": 4})
    dot = compiled.plan({"B": 4}, format="dot")
    assert "kernel" in text.lower()
    assert dot.lstrip().startswith("digraph")
    assert compiled.kernel_count({"B": 4}) >= 1
    exe = weft.Executable(compiled)
    graph = compiled.graph
    feed = {}
    for v in graph.inputs:
        shape = [4 if isinstance(d, str) else d for d in graph.shape(v)]
        dtype = {"f32": np.float32, "bool": np.bool_, "f16": np.float16}[graph.dtype(v)]
        feed[graph.value_name(v)] = np.ones(shape, dtype=dtype)
    exe.run(feed)
    counters = exe.counters()
    assert counters and counters[0]["global_bytes"] > 0 and counters[0]["kernel"]
    t = exe.time(feed, repeats=2)
    assert t["runs"] == 2 and t["total_ms"] >= 0


def test_bf16_travels_as_uint16():
    g = weft.GraphBuilder("bf16")
    x = g.parameter("x", "bf16", [4])
    g.add_output(g.add(x, x, "y"))
    exe = weft.Executable(weft.compile(g))
    bits = np.array([0x3F80, 0x4000, 0xBF80, 0x0000], dtype=np.uint16)  # 1, 2, -1, 0
    out = exe.run({"x": bits})["y"]
    assert out.dtype == np.uint16
    np.testing.assert_array_equal(out, np.array([0x4000, 0x4080, 0xC000, 0x0000], dtype=np.uint16))


def test_errors_are_exceptions_with_weft_message():
    g = weft.GraphBuilder()
    x = g.parameter("x", "f32", [4])
    y = g.parameter("y", "f32", [5])
    with pytest.raises(weft.InputError) as e:
        g.add(x, y)
    assert "\n" not in str(e.value) and str(e.value)
    with pytest.raises(weft.InputError, match="missing"):
        weft.Executable(weft.compile(scale_graph())).run({})
    with pytest.raises(weft.InputError, match="dim 1"):
        weft.Executable(weft.compile(scale_graph())).run({"x": np.zeros((2, 7), np.float32)})
    with pytest.raises(weft.InputError):
        weft.compile(os.path.join(SOURCE, "no-such-graph.json"))
    with pytest.raises(weft.InputError, match="policy"):
        weft.compile(scale_graph(), policy="fastest")
    assert issubclass(weft.InputError, weft.Error)


def test_onnx_model_loads(tmp_path):
    onnx_dir = "/usr/share/libonnx-testdata/data/node/test_softmax_axis_1"
    if not os.path.exists(os.path.join(onnx_dir, "model.onnx")):
        pytest.skip("libonnx-testdata is not installed")
    compiled = weft.compile(os.path.join(onnx_dir, "model.onnx"))
    assert compiled.kernel_count() >= 1


def test_set_weights_uploads_once_and_runs_take_the_other_inputs():
    g = weft.GraphBuilder("scaled")
    x = g.parameter("x", "f32", ["B", 4])
    w = g.parameter("w", "f32", [4])
    g.add_output(g.mul(x, g.broadcast_in_dim(w, ["B", 4], [1]), "y"))
    exe = weft.Executable(weft.compile(g, cache_dir="off"), device="sim")
    assert exe.call_input_names == ["x", "w"]
    exe.set_weights({"w": np.array([1, 2, 3, 4], dtype=np.float32)})
    assert exe.call_input_names == ["x"]
    x = np.ones((3, 4), dtype=np.float32)
    np.testing.assert_array_equal(exe.run({"x": x})["y"], np.tile([1, 2, 3, 4], (3, 1)))
    np.testing.assert_array_equal(exe.run([x])["y"], np.tile([1, 2, 3, 4], (3, 1)))
    # Replaced in place: the next run sees the new values, nothing is recompiled.
    exe.set_weights({"w": np.array([0.5, 0, 0, 2], dtype=np.float64)})  # converted to f32
    np.testing.assert_array_equal(exe.run({"x": x})["y"], np.tile([0.5, 0, 0, 2], (3, 1)))
    with pytest.raises(weft.InputError, match="set_weights bound it"):
        exe.run({"x": x, "w": np.zeros(4, dtype=np.float32)})
    with pytest.raises(weft.InputError, match="not an input"):
        exe.set_weights({"v": np.zeros(4, dtype=np.float32)})
    with pytest.raises(weft.InputError):
        exe.set_weights({"w": np.zeros(5, dtype=np.float32)})
    with pytest.raises(weft.InputError, match="expected f32"):
        exe.set_weights({"w": np.zeros(4, dtype=np.int32)})


def test_declared_ranges_bound_the_sizes_a_program_runs():
    compiled = weft.compile(scale_graph(), cache_dir="off", ranges={"B": (1, 16)})
    exe = weft.Executable(compiled, device="sim")
    x = np.ones((16, 8), dtype=np.float32)
    np.testing.assert_array_equal(exe.run({"x": x})["y"], 2 * x)
    with pytest.raises(weft.InputError, match="outside the range 1..16"):
        exe.run({"x": np.ones((17, 8), dtype=np.float32)})
    with pytest.raises(weft.InputError, match="lo <= hi"):
        weft.compile(scale_graph(), ranges={"B": (9, 3)})


def write_safetensors(path, tensors):
    """A safetensors file of float32 arrays (the layout of docs/graph-format.md, "Weights")."""
    import json
    import struct
    header, data = {}, b""
    for name, a in tensors.items():
        raw = np.ascontiguousarray(a, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def test_a_json_graph_file_brings_its_weights_file(tmp_path):
    w = np.arange(12, dtype=np.float32).reshape(4, 3) - 5.5
    b = np.array([0.5, -1, 2], dtype=np.float32)
    write_safetensors(tmp_path / "lin.safetensors", {"w": w, "b": b})
    (tmp_path / "lin.json").write_text("""{
      "name": "lin",
      "inputs": [{"name": "x", "dtype": "f32", "shape": ["B", 4]}],
      "weights_file": "lin.safetensors",
      "weights": [{"name": "w", "dtype": "f32", "shape": [4, 3]},
                  {"name": "b", "dtype": "f32", "shape": [3]}],
      "ops": [{"name": "m", "op": "dot", "inputs": ["x", "w"]},
              {"name": "y", "op": "add", "inputs": ["m", "b"]}],
      "outputs": ["y"]}""")
    loaded = weft.load_weights(str(tmp_path / "lin.json"))
    assert sorted(loaded) == ["b", "w"]
    np.testing.assert_array_equal(loaded["w"], w)
    compiled = weft.compile(tmp_path / "lin.json", cache_dir="off")
    np.testing.assert_array_equal(compiled.weights["b"], b)
    exe = weft.Executable(compiled, device="sim")
    assert exe.call_input_names == ["x"]  # the file's weights are already on the device
    x = np.linspace(-1, 1, 20, dtype=np.float32).reshape(5, 4)
    np.testing.assert_allclose(exe.run({"x": x})["y"], x @ w + b, rtol=1e-6, atol=1e-6)
    # Replacing them is set_weights, as for any weights.
    exe.set_weights({"b": np.zeros(3, dtype=np.float32)})
    np.testing.assert_allclose(exe.run({"x": x})["y"], x @ w, rtol=1e-6, atol=1e-6)
    # A graph file without weights has none; a weights file that disagrees is an InputError.
    assert weft.compile(LAYER_NORM, cache_dir="off").weights == {}
    write_safetensors(tmp_path / "lin.safetensors", {"w": w[:3], "b": b})
    with pytest.raises(weft.InputError, match="lin.safetensors"):
        weft.compile(tmp_path / "lin.json", cache_dir="off")


def test_tf32_runs_f32_dots_on_tensor_cores_only_when_asked():
    g = weft.GraphBuilder("mm")
    a = g.parameter("a", "f32", [37, 64])
    b = g.parameter("b", "f32", [64, 20])
    g.add_output(g.dot(a, b, "c"))
    exact = weft.compile(g, cache_dir="off")
    tf32 = weft.compile(g, cache_dir="off", tf32=True)
    assert "tensor cores tf32" not in exact.plan()
    assert "mma m16n8k8 (tensor cores tf32)" in tf32.plan()
    rng = np.random.default_rng(1)
    x = rng.uniform(-2, 2, (37, 64)).astype(np.float32)
    y = rng.uniform(-2, 2, (64, 20)).astype(np.float32)
    want = x.astype(np.float64) @ y.astype(np.float64)
    got = weft.Executable(tf32, device="sim").run({"a": x, "b": y})["c"]
    bound = 2.0**-10 * (np.abs(x).astype(np.float64) @ np.abs(y).astype(np.float64))
    assert np.all(np.abs(got - want) <= bound)  # tf32's rounding, no more
    assert np.max(np.abs(got - want) / bound) > 0.01  # and not exact f32


def test_reduce_logsumexp_matches_numpy_without_overflow():
    g = weft.GraphBuilder("lse")
    x = g.parameter("x", "f32", [4, 6])
    g.add_output(g.reduce_logsumexp(x, [1], "lse"))
    exe = weft.Executable(weft.compile(g, cache_dir="off"), device="sim")
    x = np.linspace(-3, 3, 24, dtype=np.float32).reshape(4, 6)
    x[1] += 1000  # exp would overflow f32; logsumexp does not
    got = exe.run({"x": x})["lse"]
    m = x.astype(np.float64).max(axis=1, keepdims=True)
    want = (m + np.log(np.exp(x.astype(np.float64) - m).sum(axis=1, keepdims=True)))[:, 0]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_an_input_returned_as_an_output_comes_back_with_its_values():
    # The device-buffer run wrote no kernel into such an output's buffer: it came back zeros.
    g = weft.GraphBuilder("passthrough")
    x = g.parameter("x", "f32", ["B", 4])
    g.add_output(x)
    g.add_output(g.mul(x, x, "sq"))
    for policy in ("none", "xla", "astitch"):
        exe = weft.Executable(weft.compile(g, policy=policy, cache_dir="off"), device="sim")
        v = np.arange(12, dtype=np.float32).reshape(3, 4)
        out = exe.run({"x": v})
        np.testing.assert_array_equal(out["x"], v)
        np.testing.assert_array_equal(out["sq"], v * v)


def test_a_weight_with_symbolic_dims_must_fit_the_binding():
    # Kernels index a weight by the binding: 3 rows set, 5 bound, would be read past its end.
    g = weft.GraphBuilder("rows")
    x = g.parameter("x", "f32", ["B", 4])
    w = g.parameter("w", "f32", ["B", 4])
    g.add_output(g.add(x, w, "y"))
    exe = weft.Executable(weft.compile(g, cache_dir="off"), device="sim")
    exe.set_weights({"w": np.ones((3, 4), dtype=np.float32)})
    np.testing.assert_array_equal(exe.run({"x": np.ones((3, 4), dtype=np.float32)})["y"], 2)
    for rows in (2, 5):
        with pytest.raises(weft.InputError, match='weight "w": dim 0 is 3'):
            exe.run({"x": np.ones((rows, 4), dtype=np.float32)})


def test_a_symbol_only_a_weight_has_is_bound_by_the_weight():
    g = weft.GraphBuilder("weight_symbol")
    x = g.parameter("x", "f32", [4])
    w = g.parameter("w", "f32", ["K"])
    g.add_output(g.reduce_sum(w, [0], "total"))
    g.add_output(g.exp(x, "ex"))
    exe = weft.Executable(weft.compile(g, cache_dir="off"), device="sim")
    exe.set_weights({"w": np.arange(5, dtype=np.float32)})
    out = exe.run({"x": np.zeros(4, dtype=np.float32)})
    assert out["total"] == 10.0
    with pytest.raises(weft.InputError, match='weight "w": dim 0 is 5, the graph says K = 3'):
        exe.run({"x": np.zeros(4, dtype=np.float32)}, binding={"K": 3})


def test_hostile_arguments_raise_instead_of_crashing():
    with pytest.raises(TypeError):
        weft.Executable(None)
    g = weft.GraphBuilder("out_only")
    x = g.parameter("x", "f32", ["N"])
    g.add_output(g.broadcast_in_dim(g.reduce_sum(x, [0]), ["N*M"], []))
    exe = weft.Executable(weft.compile(g, cache_dir="off"), device="sim")
    with pytest.raises(weft.InputError, match="size overflow"):
        exe.run({"x": np.ones(4, dtype=np.float32)}, binding={"M": 2**62})
    with pytest.raises(weft.InputError):
        exe.run({"x": np.ones(4, dtype=np.float32)}, binding={"M": -3})
    with pytest.raises(weft.InputError):
        g.concatenate([], 0)
    # Bad names and shape elements are TypeErrors that say what was given.
    with pytest.raises(TypeError, match="expected a str, got int"):
        exe.set_weights({1: np.ones(4, dtype=np.float32)})
    for bad, kind in ((1.5, "float"), (None, "NoneType"), (True, "bool")):
        with pytest.raises(TypeError, match="shape element .*got " + kind):
            g.parameter("bad", "f32", [bad])
    with pytest.raises(weft.InputError, match="does not fit in int64"):
        g.parameter("huge", "f32", [2**70])
    assert g.shape(g.parameter("np_dim", "f32", [np.int64(3), "K"])) == [3, "K"]
    # A Value of another builder is refused, even where its id names a value of this one.
    other = weft.GraphBuilder("other")
    foreign = other.parameter("a", "f32", [4])
    with pytest.raises(weft.InputError, match="made by another graph"):
        g.exp(foreign)


def test_concurrent_runs_on_one_executable_are_serialised_and_right():
    import threading
    exe = weft.Executable(weft.compile(scale_graph(), cache_dir="off"), device="sim")
    errors = []

    def work(rows):
        try:
            for _ in range(3):
                x = np.full((rows, 8), rows, dtype=np.float32)
                np.testing.assert_array_equal(exe.run({"x": x})["y"], 2 * x)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(r,)) for r in range(1, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_gather_take_and_take_along_axis_read_what_their_indices_name():
    g = weft.GraphBuilder("indexing")
    x = g.parameter("x", "f32", [3, 4])
    rows = g.parameter("rows", "i64", [2, 2])
    cols = g.parameter("cols", "i32", [3, 2])
    k = g.parameter("k", "i32", [4, 2])
    taken = g.take(x, rows, name="taken")  # axis 0 by default
    along = g.take_along_axis(x=x, indices=cols, axis=-1, name="along")
    raw = g.gather(operand=x, indices=[k], axes=[0], dims=[0], name="raw")
    assert g.shape(taken) == [2, 2, 4] and g.shape(along) == [3, 2] and g.shape(raw) == [4, 2]
    g.set_outputs([taken, along, raw])
    exe = weft.Executable(weft.compile(g, cache_dir="off"), device="sim")
    xv = (1 + 10 * np.arange(3)[:, None] + np.arange(4)[None, :]).astype(np.float32)
    out = exe.run({"x": xv,
                   "rows": np.array([[2, -3], [-4, 0]], dtype=np.int64),
                   "cols": np.array([[3, -1], [0, -5], [4, 1]], dtype=np.int32),
                   "k": np.array([[0, 2], [1, 1], [2, -1], [3, 0]], dtype=np.int32)})
    # Rows 2 and -3 (= 0); -4 is below -3: out of range, zeros; row 0.
    np.testing.assert_array_equal(out["taken"], [[[21, 22, 23, 24], [1, 2, 3, 4]],
                                                 [[0, 0, 0, 0], [1, 2, 3, 4]]])
    # Per row: columns 3, -1 (= 3); 0, -5 (out); 4 (out), 1.
    np.testing.assert_array_equal(out["along"], [[4, 4], [11, 0], [0, 22]])
    # raw[c][j] = x[k[c][j]][c]; the gather op does not wrap: -1 and 3 are out of range.
    np.testing.assert_array_equal(out["raw"], [[1, 21], [12, 12], [23, 0], [0, 4]])


def test_indexing_errors_name_the_op():
    g = weft.GraphBuilder()
    x = g.parameter("x", "f32", [3, 4])
    i = g.parameter("i", "i32", [2])
    f = g.parameter("f", "f32", [2])
    with pytest.raises(weft.InputError, match=r'^op "y" \(take\): axis 2 is out of range for rank 2'):
        g.take(x, i, axis=2, name="y")
    with pytest.raises(weft.InputError, match=r'^op "y" \(take\): .*indices must be integers, got f32'):
        g.take(x, f, name="y")
    with pytest.raises(weft.InputError,
                       match=r'^op "y" \(take_along_axis\): indices have rank 1 but the data has rank 2'):
        g.take_along_axis(x, i, 0, name="y")
    with pytest.raises(weft.InputError, match=r'^op "y" \(gather\): index operand 1 has dtype f32'):
        g.gather(x, [f], [0], [0], name="y")
    with pytest.raises(TypeError):
        g.gather(x, i, [0], [])  # indices is a list of values
