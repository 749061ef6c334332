"""P8 (GPU): the 200-op elementwise chain of P2 on a CUDA device, 16 floats: pure launch overhead.

Candidates (each checked against eager before timing, on its first call and on a second one, which
for the CUDA graph candidates is the first replay):
  eager              `chain(x)` (baseline): 200 kernel launches from Python
  ta.function        the default backend: the same 200 launches from generated Python
  cuda_graphs        ta.function(chain, cuda_graphs=True): copy in, one graph replay, one clone out
  jit                ta.function(chain, jit_compile=True): inductor's fused kernel, called directly
  jit + cuda_graphs  both
  torch.compile      torch.compile(chain), compiled once

Every timed statement ends with torch.cuda.synchronize(): a figure is the latency of one call with its
GPU work done (without the sync, launches queued faster than the GPU runs them would go uncounted).
Target: the best of cuda_graphs, jit and jit + cuda_graphs >= 20x faster than eager.
Without a CUDA device it prints "no CUDA device: skipped" and exits 0 (make bench runs it everywhere).
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
from bench_elementwise_chain import N_OPS, chain  # noqa: E402
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
from torch_autograph.backends import cuda_graphs  # noqa: E402

NAME = "P8 GPU chain 200 ops, 16 floats"
SPEEDUP = 20.0
SKIP = "no CUDA device: skipped"
_GRAPHED = ("cuda_graphs", "jit + cuda_graphs")


def _functions() -> dict[str, ta.Function]:
    return {
        "ta.function": ta.function(chain),
        "cuda_graphs": ta.function(chain, cuda_graphs=True),
        "jit": ta.function(chain, jit_compile=True),
        "jit + cuda_graphs": ta.function(chain, jit_compile=True, cuda_graphs=True),
    }


def run(settings: Settings) -> list[Row]:
    if not torch.cuda.is_available():
        print(SKIP, flush=True)
        return [Row(NAME, "-", None, None, f">= {SPEEDUP:.0f}x", None, SKIP)]
    torch.manual_seed(0)
    x = torch.randn(16, device="cuda")
    sync = torch.cuda.synchronize
    want = chain(x)
    fns = _functions()
    first_s: dict[str, float] = {}
    for name, F in fns.items():
        t0 = time.perf_counter()
        got = F(x)
        sync()
        first_s[name] = time.perf_counter() - t0
        # On CUDA `x / 1.1` with a Python divisor multiplies by the reciprocal; the generated code's
        # 0-dim constant divides: last-bit differences, hence a tolerance for every candidate.
        check_equal(f"{name} (first call)", got, want, exact=False)
        check_equal(f"{name} (second call)", F(x), want, exact=False)
    for name in _GRAPHED:
        runner = cuda_graphs.graphed(fns[name].concrete_functions[0]._fn)
        if runner is None or runner.captures_made != 1:
            raise AssertionError(f"{NAME}: {name} did not capture one CUDA graph ({runner and runner.captures_made})")
    cands = [Candidate("eager", "chain(x); sync()", {"chain": chain, "x": x, "sync": sync})]
    cands += [Candidate(name, "F(x); sync()", {"F": F, "x": x, "sync": sync}) for name, F in fns.items()]
    C, compile_s, why = compile_fn(chain, x, NAME)
    if C is not None:
        check_equal("torch.compile", C(x), want, exact=False)
        cands.append(Candidate("torch.compile", "C(x); sync()", {"C": C, "x": x, "sync": sync}))

    with NoRecompile():
        res = run_interleaved(cands, settings, baseline="eager")
    for name, F in fns.items():
        check_no_retrace(F, 1, f"{NAME} {name}")
    return _rows(res, first_s, C is not None, compile_s, why)


def _rows(res: dict, first_s: dict[str, float], compiled: bool, compile_s: float, why: str) -> list[Row]:
    e = res["eager"].median_us
    rows = [Row(NAME, "eager", e, None, "", None, f"{e / N_OPS:.2f} µs/op with the sync (baseline)")]
    for name, s in first_s.items():
        r = res[name]
        rows.append(Row(NAME, name, r.median_us, r.ratio, "", None,
                        f"{1 / r.ratio:.1f}x faster than eager; {r.spread()}; first call {s:.2f} s"))
    if compiled:
        c = res["torch.compile"]
        rows.append(Row(NAME, "torch.compile", c.median_us, c.ratio, "", None,
                        f"{1 / c.ratio:.1f}x faster than eager; first call (compile) {compile_s:.1f} s"))
    else:
        rows.append(Row(NAME, "torch.compile", None, None, "", None, f"skipped: {why}"))
    best = min(("cuda_graphs", "jit", "jit + cuda_graphs"), key=lambda n: res[n].ratio)
    speedup = 1 / res[best].ratio
    rows.append(Row(NAME, f"best: {best}", res[best].median_us, res[best].ratio, f">= {SPEEDUP:.0f}x faster",
                    speedup >= SPEEDUP, f"{speedup:.1f}x faster than eager"))
    return rows


if __name__ == "__main__":
    main_for(run, __doc__)
