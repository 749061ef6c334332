"""P5-P7: AutoGraph loops as graphs, conversion cost, converted code on Python values.

P5  a tensor loop of 1000 iterations of small ops (`for _ in range(n)` with `n`
    a tensor: a graph while loop) vs the same function run eagerly with
    `n = 1000`, a plain Python loop of the same torch ops. Two bodies: `x * 0.99 + 0.01` (Python constants, which our generated
    code binds once as 0-dim tensors) and `x * a + b` (tensors only: no
    constant to hoist, the pure loop overhead). Target <= 1.1x.
P6  converting a 12-line function with an if, a for and a break (conversion
    cache cleared each time): target <= 5 ms; the first call including the
    conversion and the trace: target <= 20 ms. Both also as a ratio to
    `compile(ast.parse(source))` of the same source, timed in the same loop.
P7  the converted code run on plain Python ints vs the original function:
    target <= 3x.
"""

from __future__ import annotations

import ast
import inspect
import logging
import os
import statistics
import sys
import textwrap
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
from harness import Candidate, Row, Settings, check_equal, main_for, run_interleaved  # noqa: E402

import torch_autograph as ta  # noqa: E402
from torch_autograph.autograph import api as ag_api  # noqa: E402

NAME5 = "P5 tensor loop, 1000 iterations"
NAME6 = "P6 conversion (12-line function)"
NAME7 = "P7 converted code on Python ints"


def loop_const(x, n):
    for _ in range(n):
        x = x * 0.99 + 0.01
    return x


def loop_tensor(x, n, a, b):
    for _ in range(n):
        x = x * a + b
    return x


def twelve_lines(xs, limit):
    total = 0
    found = -1
    for i, x in enumerate(xs):
        if x > limit:
            found = i
            break
        total += x
    if total > 100:
        total = 100
    scaled = total * 2
    return found, scaled


def run(settings: Settings) -> list[Row]:
    rows: list[Row] = []
    x = torch.randn(16)
    n = torch.tensor(1000)
    a, b = torch.full((16,), 0.99), torch.full((16,), 0.01)
    F = ta.function(loop_const)
    G = ta.function(loop_tensor)
    check_equal("P5 const", F(x, n), loop_const(x, 1000))
    check_equal("P5 tensor", G(x, n, a, b), loop_tensor(x, 1000, a, b))
    assert any(node.op.name == "while" for node in F.get_concrete_function(x, n).graph.nodes), "not a graph loop"
    cands = [
        Candidate("by hand (consts)", "h(x, 1000)", {"h": loop_const, "x": x}),
        Candidate("ta.function (consts)", "F(x, n)", {"F": F, "x": x, "n": n}),
        Candidate("by hand (tensors)", "h(x, 1000, a, b)", {"h": loop_tensor, "x": x, "a": a, "b": b}),
        Candidate("ta.function (tensors)", "G(x, n, a, b)", {"G": G, "x": x, "n": n, "a": a, "b": b}),
    ]
    res = run_interleaved(cands, settings)
    for base, ours in (("by hand (consts)", "ta.function (consts)"), ("by hand (tensors)", "ta.function (tensors)")):
        ratio = res[ours].median_us / res[base].median_us
        rows.append(Row(NAME5, base, res[base].median_us, None, "", None, "the same torch ops in a Python loop"))
        rows.append(Row(NAME5, ours, res[ours].median_us, ratio, "<= 1.1x", ratio <= 1.1, "graph while loop"))

    # P6: conversion and first call, fresh each time; next to them, Python's own parse + compile of the same
    # source, a fixed pure-Python baseline timed in the same loop (the ratio holds on a loaded machine).
    conv, first, base = [], [], []
    source = textwrap.dedent(inspect.getsource(twelve_lines))
    logging.getLogger("torch_autograph").setLevel(logging.ERROR)  # fresh Functions on purpose: no retrace warning
    for _ in range(7 if settings.quick else 21):
        t0 = time.perf_counter()
        compile(ast.parse(source), "<P6 baseline>", "exec")
        base.append((time.perf_counter() - t0) * 1e3)
        ag_api.clear_cache()
        t0 = time.perf_counter()
        ta.autograph.to_graph(twelve_lines)
        conv.append((time.perf_counter() - t0) * 1e3)
        ag_api.clear_cache()
        f = ta.function(twelve_lines)
        t0 = time.perf_counter()
        f(torch.tensor([1.0, 2.0, 5.0, 1.0]), torch.tensor(3.0))
        first.append((time.perf_counter() - t0) * 1e3)
    c_ms, f_ms, b_ms = statistics.median(conv), statistics.median(first), statistics.median(base)
    rows.append(Row(NAME6, "ast.parse + compile of the source", b_ms * 1e3, None, "", None, "baseline"))
    rows.append(Row(NAME6, "to_graph (convert)", c_ms * 1e3, c_ms / b_ms, "<= 5 ms", c_ms <= 5, f"{c_ms:.2f} ms"))
    rows.append(Row(NAME6, "first call (convert+trace+run)", f_ms * 1e3, f_ms / b_ms, "<= 20 ms", f_ms <= 20,
                    f"{f_ms:.2f} ms"))

    # P7: converted code vs original on plain Python values.
    converted = ta.autograph.to_graph(twelve_lines)
    data = [1, 2, 3, 4, 5, 6, 7, 8, 50, 1]
    assert converted(data, 40) == twelve_lines(data, 40)
    res7 = run_interleaved([
        Candidate("original", "f(d, 40)", {"f": twelve_lines, "d": data}),
        Candidate("converted", "g(d, 40)", {"g": converted, "d": data}),
    ], settings)
    r7 = res7["converted"].median_us / res7["original"].median_us
    rows.append(Row(NAME7, "original", res7["original"].median_us, None, "", None, ""))
    rows.append(Row(NAME7, "converted", res7["converted"].median_us, r7, "<= 3x", r7 <= 3, ""))
    return rows


if __name__ == "__main__":
    main_for(run, __doc__)
