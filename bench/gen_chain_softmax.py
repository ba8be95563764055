#!/usr/bin/env python3
"""Writes a JSON graph (docs/graph-format.md) of N chained softmaxes over axis 1 of
x: f32[rows, cols]: s_0 = x, s_{i+1} = softmax(s_i), output s_N. Each softmax is spelled in
IR primitives: m = max(s, axis 1); e = exp(s - broadcast(m)); y = e / broadcast(sum(e, axis 1)).

  bench/gen_chain_softmax.py N [--rows R] [--cols C] [-o FILE]   (default 4 x 8, stdout)

The compile-time scaling of issue #13 (item 9) runs it at 16 ... 200; the suite's
chain_softmax_64 workload builds the same graph in C++ (bench/synthetic_graphs.h)."""
import argparse
import json
import sys


def chain(n, rows, cols):
    ops = []
    prev = "x"
    full = [rows, cols]
    for i in range(n):
        p = f"s{i}"
        ops += [
            {"name": f"{p}_max", "op": "reduce", "kind": "max", "axes": [1], "inputs": [prev]},
            {"name": f"{p}_maxb", "op": "broadcast_in_dim", "shape": full, "dims": [0],
             "inputs": [f"{p}_max"]},
            {"name": f"{p}_sub", "op": "sub", "inputs": [prev, f"{p}_maxb"]},
            {"name": f"{p}_exp", "op": "exp", "inputs": [f"{p}_sub"]},
            {"name": f"{p}_sum", "op": "reduce", "kind": "sum", "axes": [1],
             "inputs": [f"{p}_exp"]},
            {"name": f"{p}_sumb", "op": "broadcast_in_dim", "shape": full, "dims": [0],
             "inputs": [f"{p}_sum"]},
            {"name": f"{p}_out", "op": "div", "inputs": [f"{p}_exp", f"{p}_sumb"]},
        ]
        prev = f"{p}_out"
    return {
        "name": f"chain_softmax_{n}",
        "doc": f"{n} chained softmaxes over axis 1 of f32[{rows}, {cols}] (bench/gen_chain_softmax.py)",
        "inputs": [{"name": "x", "dtype": "f32", "shape": full}],
        "ops": ops,
        "outputs": [prev],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", type=int, help="number of chained softmaxes (>= 1)")
    ap.add_argument("--rows", type=int, default=4)
    ap.add_argument("--cols", type=int, default=8)
    ap.add_argument("-o", "--output", help="output file (default stdout)")
    a = ap.parse_args()
    if a.n < 1 or a.rows < 0 or a.cols < 0:
        ap.error("N must be >= 1 and rows, cols >= 0")
    text = json.dumps(chain(a.n, a.rows, a.cols), indent=1) + "\n"
    if a.output:
        with open(a.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
