"""P2: a 200-op elementwise chain on 16 floats (per-op dispatch cost, no call overhead to hide behind).

The function body is a Python loop (25 iterations x 8 ops: add, mul, sin,
tanh, sub, sigmoid, exp-free cos, div), so eager pays the loop; the traced
graph is 200 straight-line torch calls.

Candidates (same input tensor, results checked equal to eager before timing):
  eager         `chain(x)` (baseline)
  eager unrolled  the same 200 calls as straight-line Python (exec'd), no loop:
                the best plain Python can do (information, no target)
  ta.function   `F(x)`, F = ta.function(chain), traced once
  torch.compile `C(x)`, C = torch.compile(chain), compiled once

Target: ta.function / eager <= 1.0x.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
from harness import (  # noqa: E402
    Candidate,
    NoRecompile,
    Row,
    Settings,
    check_equal,
    check_no_retrace,
    compile_fn,
    main_for,
    run_interleaved,
)

import torch_autograph as ta  # noqa: E402

NAME = "P2 elementwise chain (200 ops, 16 floats)"
N_OPS = 200
TARGET = 1.0


def chain(x):
    for _ in range(N_OPS // 8):
        x = x + 0.5
        x = x * 0.9
        x = torch.sin(x)
        x = torch.tanh(x)
        x = x - 0.1
        x = torch.sigmoid(x)
        x = torch.cos(x)
        x = x / 1.1
    return x


_UNROLLED_BODY = ["x = x + 0.5", "x = x * 0.9", "x = torch.sin(x)", "x = torch.tanh(x)", "x = x - 0.1",
                  "x = torch.sigmoid(x)", "x = torch.cos(x)", "x = x / 1.1"]


def make_unrolled():
    src = "def chain_unrolled(x):\n" + "".join(f"    {line}\n" for line in _UNROLLED_BODY * (N_OPS // 8))
    src += "    return x\n"
    ns = {"torch": torch}
    exec(compile(src, "<chain_unrolled>", "exec"), ns)
    return ns["chain_unrolled"]


def run(settings: Settings) -> list[Row]:
    torch.manual_seed(0)
    x = torch.randn(16)
    want = chain(x)
    unrolled = make_unrolled()
    check_equal("eager unrolled", unrolled(x), want)

    F = ta.function(chain)
    check_equal("ta.function", F(x), want)
    n_nodes = len(F.concrete_functions[0].graph.nodes)
    if n_nodes != N_OPS:
        raise AssertionError(f"{NAME}: the graph has {n_nodes} nodes, expected {N_OPS}")
    cands = [
        Candidate("eager", "chain(x)", {"chain": chain, "x": x}),
        Candidate("eager unrolled", "u(x)", {"u": unrolled, "x": x}),
        Candidate("ta.function", "F(x)", {"F": F, "x": x}),
    ]
    C, compile_s, why = compile_fn(chain, x, "P2")
    if C is not None:
        check_equal("torch.compile", C(x), want, exact=False)
        cands.append(Candidate("torch.compile", "C(x)", {"C": C, "x": x}))

    with NoRecompile():
        res = run_interleaved(cands, settings, baseline="eager")
    check_no_retrace(F, 1, NAME)

    e = res["eager"].median_us
    rows = [Row(NAME, "eager", e, None, "", None, f"{e / N_OPS:.2f} µs/op (baseline)")]
    u = res["eager unrolled"]
    rows.append(Row(NAME, "eager unrolled", u.median_us, u.ratio, "", None, "same ops, straight-line, no loop"))
    o = res["ta.function"]
    rows.append(Row(NAME, "ta.function", o.median_us, o.ratio, f"<= {TARGET}x", o.ratio <= TARGET,
                    f"{o.median_us / N_OPS:.2f} µs/op; {o.spread()}; {o.median_us / u.median_us:.3f}x unrolled"))
    if C is not None:
        c = res["torch.compile"]
        rows.append(Row(NAME, "torch.compile", c.median_us, c.ratio, "", None,
                        f"{e / c.median_us:.1f}x faster than eager; first call (compile) {compile_s:.1f} s"))
    else:
        rows.append(Row(NAME, "torch.compile", None, None, "", None, f"skipped: {why}"))
    return rows


if __name__ == "__main__":
    main_for(run, __doc__)
