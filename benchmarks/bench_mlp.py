"""P3: an 8-layer MLP (nn.Sequential of 8 x Linear(32,32)+ReLU), batch 8, inference.

Measured twice: under `torch.no_grad()` and with grad enabled (the parameters
require grad, so both eager and ours build the autograd graph). Each mode is a
separate interleaved run; the whole timing loop runs inside the mode.

Candidates (same model, same input, results checked equal to eager):
  eager          `model(x)`: nn.Module calls (baseline)
  ta.function    `F(x)`, F = ta.function(lambda x: model(x)), traced once per grad mode
  torch.compile  `C(x)`, C = torch.compile(lambda x: model(x)), compiled once per grad mode

Target: ta.function >= 1.3x faster than eager, i.e. ours / eager <= 0.769x.
"""

from __future__ import annotations

import os
import sys
import time

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

NAME = "P3 MLP 8x(Linear 32+ReLU), batch 8"
SPEEDUP_TARGET = 1.3


def make_model() -> torch.nn.Module:
    torch.manual_seed(0)
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(32, 32), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers)


def run(settings: Settings) -> list[Row]:
    model = make_model()
    x = torch.randn(8, 32)
    F = ta.function(lambda x: model(x))
    C, _, why = compile_fn(lambda x: model(x), None, "P3")  # compiled lazily, per grad mode, below
    rows: list[Row] = []
    traces = 0
    for mode, ctx in (("no_grad", torch.no_grad), ("grad", torch.enable_grad)):
        label = f"{NAME} [{mode}]"
        with ctx():
            want = model(x)
            traces += 1
            check_equal("ta.function", F(x), want)
            cands = [
                Candidate("eager", "model(x)", {"model": model, "x": x}),
                Candidate("ta.function", "F(x)", {"F": F, "x": x}),
            ]
            if C is not None:
                t0 = time.perf_counter()
                try:
                    got = C(x)  # compiles for this grad mode (dynamo guards on it): here, not while timing
                except Exception as e:  # noqa: BLE001
                    C, why = None, f"torch.compile failed: {type(e).__name__}: {str(e).splitlines()[0][:100]}"
                compile_s = time.perf_counter() - t0
            if C is not None:
                check_equal("torch.compile", got, want, exact=False)
                if got.requires_grad != want.requires_grad:
                    raise AssertionError(f"{label}: torch.compile result requires_grad={got.requires_grad}")
                cands.append(Candidate("torch.compile", "C(x)", {"C": C, "x": x}))
            out = F(x)
            if out.requires_grad != want.requires_grad:
                raise AssertionError(f"{label}: ta.function result requires_grad={out.requires_grad}")
            with NoRecompile():
                res = run_interleaved(cands, settings, baseline="eager")
        check_no_retrace(F, traces, label)
        e = res["eager"]
        o = res["ta.function"]
        rows.append(Row(label, "eager", e.median_us, None, "", None, "nn.Module calls (baseline)"))
        rows.append(Row(label, "ta.function", o.median_us, o.ratio, f"<= {1 / SPEEDUP_TARGET:.3f}x",
                        o.ratio <= 1 / SPEEDUP_TARGET, f"{1 / o.ratio:.2f}x faster (target >= {SPEEDUP_TARGET}x); {o.spread()}"))
        if C is not None:
            c = res["torch.compile"]
            rows.append(Row(label, "torch.compile", c.median_us, c.ratio, "", None,
                            f"{1 / c.ratio:.2f}x faster; compile {compile_s:.1f} s"))
        else:
            rows.append(Row(label, "torch.compile", None, None, "", None, f"skipped: {why}"))
    return rows


if __name__ == "__main__":
    main_for(run, __doc__)
