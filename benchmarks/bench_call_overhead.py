"""P1: per-call overhead of a 1-op function (`x + 1` on 16 floats).

Candidates, all on the same tensor, all timed inline in a `timeit` loop:
  by hand      `x + 1` written in the loop itself: the op alone (baseline)
  eager fn     `f(x)`: the same plain Python function, called eagerly
  ta.function  `F(x)`, F = ta.function(f), already traced (fast path)
  torch.compile `C(x)`, C = torch.compile(f), already compiled

Targets: ta.function / by hand <= 1.7x, and ta.function - by hand <= 1.5 µs.

Our generated code binds the constant 1 as a 0-dim tensor once (torch wraps a
Python scalar into a tensor at every eager call, ~2 µs), so `F(x)` can beat
`x + 1` by hand. To show the pure dispatch overhead as well, a second pair
times `x.neg()` (no constant) by hand and through ta.function.
Also reported: torch.compile's ratio and added µs, and ours-added / compile-added.
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

NAME = "P1 call overhead (x+1, 16 floats)"
RATIO_TARGET = 1.7
ADDED_TARGET_US = 1.5


def f(x):
    return x + 1


def g(x):
    return x.neg()


def run(settings: Settings) -> list[Row]:
    torch.manual_seed(0)
    x = torch.randn(16)
    want = x + 1

    F = ta.function(f)
    check_equal("ta.function", F(x), want)
    F(x)  # second call: the fast-path entry exists from the first
    G = ta.function(g)
    check_equal("ta.function neg", G(x), x.neg())
    G(x)
    cands = [
        Candidate("by hand", "x + 1", {"x": x}),
        Candidate("eager fn", "f(x)", {"f": f, "x": x}),
        Candidate("ta.function", "F(x)", {"F": F, "x": x}),
        Candidate("neg by hand", "x.neg()", {"x": x}),
        Candidate("ta.function neg", "G(x)", {"G": G, "x": x}),
    ]
    C, compile_s, why = compile_fn(f, x, "P1")
    if C is not None:
        check_equal("torch.compile", C(x), want, exact=False)
        cands.append(Candidate("torch.compile", "C(x)", {"C": C, "x": x}))

    with NoRecompile():
        res = run_interleaved(cands, settings, baseline="by hand")
    check_no_retrace(F, 1, NAME)

    base = res["by hand"].median_us
    ours = res["ta.function"]
    added = ours.median_us - base
    rows = [
        Row(NAME, "by hand", base, None, "", None, "the op inline in the loop (baseline)"),
        Row(NAME, "eager fn", res["eager fn"].median_us, res["eager fn"].ratio, "", None,
            f"+{res['eager fn'].median_us - base:.3f} µs"),
        Row(NAME, "ta.function", ours.median_us, ours.ratio, f"<= {RATIO_TARGET}x", ours.ratio <= RATIO_TARGET,
            f"+{added:.3f} µs; {ours.spread()}"),
        Row(NAME, "ta.function added µs", added, None, f"<= {ADDED_TARGET_US} µs", added <= ADDED_TARGET_US,
            "median(ours) - median(by hand)"),
    ]
    neg_base = res["neg by hand"].median_us
    neg = res["ta.function neg"]
    neg_added = neg.median_us - neg_base
    rows += [
        Row(NAME, "neg by hand", neg_base, None, "", None, "x.neg(): no constant to hoist"),
        Row(NAME, "ta.function neg", neg.median_us, neg.median_us / neg_base, f"added <= {ADDED_TARGET_US} µs",
            neg_added <= ADDED_TARGET_US, f"+{neg_added:.3f} µs: the pure per-call dispatch overhead (the "
            f"ratio target is defined on x + 1, a costlier op)"),
    ]
    if C is not None:
        comp = res["torch.compile"]
        c_added = comp.median_us - base
        rows.append(Row(NAME, "torch.compile", comp.median_us, comp.ratio, "", None,
                        f"+{c_added:.3f} µs; first call (compile) {compile_s:.1f} s"))
        rows.append(Row(NAME, "ours added / compile added", None, added / c_added if c_added > 0 else None, "",
                        None, f"{added:.3f} µs vs {c_added:.3f} µs"))
    else:
        rows.append(Row(NAME, "torch.compile", None, None, "", None, f"skipped: {why}"))
    return rows


if __name__ == "__main__":
    main_for(run, __doc__)
