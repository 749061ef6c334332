"""Tracing cost: µs per recorded op for the 200-op elementwise chain.

  cold trace      the first trace of this function in the process, on a shape no
                  earlier trace used: AutoGraph conversion + shape-inference memo
                  misses (one-time imports already paid by earlier benchmarks in
                  run_all are not included when run from there).
  new-shape trace a fresh ta.function on a shape not traced before: memo misses,
                  conversion already cached (what a retrace on a new shape costs).
  warm trace      a fresh ta.function on an already-traced shape: the memo hits
                  (the steady-state cost of recording); median over several.
  symbolic trace  a fresh ta.function with input_signature [TensorSpec([None, 16])]:
                  every op's metadata comes from a FakeTensor with a size symbol
                  (no memo for symbolic shapes); median over several.

Each trace is `ta.function(chain).get_concrete_function(x)` timed end to end
(tracing, dead-code elimination, verification, code generation) and divided by
`len(cf.graph.nodes)`. No target is set; the eager call of the same function
is shown for scale (a trace costs about as much as N eager calls).
"""

from __future__ import annotations

import logging
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
from bench_elementwise_chain import N_OPS, chain  # noqa: E402
from harness import Row, Settings, check_equal, main_for  # noqa: E402

import torch_autograph as ta  # noqa: E402
from torch_autograph.autograph import api as ag_api  # noqa: E402

NAME = "tracing (200-op chain)"


def _trace(x: torch.Tensor, symbolic: bool = False) -> tuple[float, int]:
    F = ta.function(chain, input_signature=[ta.TensorSpec([None, x.shape[1]])] if symbolic else None)
    t0 = time.perf_counter()
    cf = F.get_concrete_function(*([] if symbolic else [x]))
    dt = time.perf_counter() - t0
    n = len(cf.graph.nodes)
    if n != N_OPS:
        raise AssertionError(f"{NAME}: the graph has {n} nodes, expected {N_OPS}")
    check_equal("traced chain", cf(x), chain(x))
    return dt * 1e6, n


def run(settings: Settings) -> list[Row]:
    # Re-creating ta.function(chain) is the point here: silence the "frequent retracing" warning.
    log = logging.getLogger("torch_autograph")
    level, log.level = log.level, logging.ERROR
    try:
        return _run(settings)
    finally:
        log.setLevel(level)


def _run(settings: Settings) -> list[Row]:
    torch.manual_seed(0)
    reps = 5 if settings.quick else 15
    base = torch.randn(3, 16)  # a shape the other benchmarks do not trace
    ag_api.clear_cache()  # the P2 chain, converted again: the cold trace pays the AutoGraph conversion
    cold_us, n = _trace(base)
    new_shape = [_trace(torch.randn(3, 17 + i))[0] for i in range(reps)]
    warm = [_trace(base)[0] for _ in range(reps)]
    _trace(base, symbolic=True)  # the first symbolic trace of the process imports sympy / the ShapeEnv
    symbolic = [_trace(base, symbolic=True)[0] for _ in range(reps)]

    t0 = time.perf_counter()
    k = 20
    for _ in range(k):
        chain(base)
    eager_us = (time.perf_counter() - t0) / k * 1e6

    w = statistics.median(warm)
    ns = statistics.median(new_shape)
    sym = statistics.median(symbolic)
    return [
        Row(NAME, "eager call (scale)", eager_us, None, "", None, f"{eager_us / n:.2f} µs/op"),
        Row(NAME, "cold trace", cold_us, cold_us / eager_us, "", None,
            f"{cold_us / n:.1f} µs/op; ratio = trace / eager call"),
        Row(NAME, "new-shape trace", ns, ns / eager_us, "", None, f"{ns / n:.1f} µs/op (median of {reps})"),
        Row(NAME, "warm trace", w, w / eager_us, "", None,
            f"{w / n:.1f} µs/op (median of {reps}; min {min(warm) / n:.1f})"),
        Row(NAME, "symbolic trace", sym, sym / eager_us, "", None,
            f"{sym / n:.1f} µs/op (median of {reps}); input_signature [None, 16]"),
    ]


if __name__ == "__main__":
    main_for(run, __doc__)
