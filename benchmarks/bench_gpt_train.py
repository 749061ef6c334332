"""P10: the GPT training step of examples/train_gpt.py as one graph, vs eager and vs torch.compile.

The step (2 layers, width 64, block 64, batch 16, 2 micro-batches, bf16 autocast around the call, dropout off
so every candidate computes the same thing): model.train(), zero_grad, 2 x (forward, loss.backward()),
clip_grad_norm_ (ta.py_function), torch.optim.AdamW step, LambdaLR step.

Candidates (each trains its own copy of the model from the same initialisation, on the same batch; interleaved
rounds, per-step medians):
  eager          the step as plain PyTorch (baseline)
  ta.function    the default backend: the graph's ops as straight-line Python, staged calls in between
  ta.function jit  jit_compile=True: the two forward regions compiled by inductor (AOT autograd), the staged
                 calls (backward, clipping, optimizer and scheduler steps) run as Python between them
  torch.compile  torch.compile(step) of the same eager function (dynamo: graph breaks at backward; it
                 compiles the forward passes and the optimizer step)
Targets: ta.function <= 0.9x eager; jit <= 1.0x torch.compile. Full runs repeat it all in float32 (no autocast).
Compile latency (full runs only, bf16): the first call in a fresh process with an empty inductor cache (cold) and
again reusing it (warm), for jit_compile=True and for torch.compile.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
from harness import (  # noqa: E402
    Candidate,
    Row,
    Settings,
    check_no_retrace,
    cold_and_warm,
    compile_fn,
    main_for,
    run_interleaved,
    torch_compile_available,
)

import torch_autograph as ta  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
import train_gpt  # noqa: E402

NAME = "P10 GPT training step (2x64, bf16 autocast)"
DEFAULT_TARGET, JIT_VS_COMPILE_TARGET = 0.9, 1.0


def workload() -> tuple[Callable[[], tuple[Any, Any]], tuple[list[torch.Tensor], list[torch.Tensor]]]:
    """(a factory of fresh (model, plain step function) pairs, all from one initialisation; a batch)."""
    data, model = train_gpt.build(dropout=0.0)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    h = train_gpt.Hyper(steps=10_000)

    def fresh() -> tuple[Any, Any]:
        _, m = train_gpt.build(dropout=0.0)
        m.load_state_dict(state)
        return m, train_gpt.make_trainer(m, h)[0]

    return fresh, data.sample(h.micro_batches)


def under_autocast(step: Callable) -> Callable:
    def call(xs: list[torch.Tensor], ys: list[torch.Tensor]) -> torch.Tensor:
        with train_gpt.autocast():
            return step(xs, ys)
    return call


_LATENCY_SCRIPT = """
import sys, time
t0 = time.perf_counter()
import torch
sys.path.insert(0, {bench_dir!r})
from bench_gpt_train import workload, under_autocast
import torch_autograph as ta
torch.set_num_threads(1)
fresh, (xs, ys) = workload()
model, step = fresh()
# From the wrapping on: `torch.compile(step)` imports dynamo there, `ta.function` imports inductor at the first call.
t1 = time.perf_counter()
fn = ta.function(step, jit_compile=True) if {which!r} == "jit" else torch.compile(step)
under_autocast(fn)(xs, ys)
t2 = time.perf_counter()
print(f"{{t1 - t0:.3f}} {{t2 - t1:.3f}}")
"""


def compile_latency(which: str) -> tuple[float, float]:
    """(cold, warm) seconds of the first call of the step compiled by `which` ("jit" or "torch.compile"), each
    in a fresh process: with an empty inductor cache directory, then reusing it."""
    cold, warm = cold_and_warm(_LATENCY_SCRIPT.format(bench_dir=os.path.dirname(os.path.abspath(__file__)),
                                                      which=which))
    return cold[-1], warm[-1]


def run(settings: Settings) -> list[Row]:
    """The example's configuration (bf16 autocast); full runs also float32, and the compile latencies."""
    threads, autocast = torch.get_num_threads(), train_gpt.AUTOCAST
    torch.set_num_threads(1)
    rows: list[Row] = []
    try:
        for train_gpt.AUTOCAST in (True,) if settings.quick else (True, False):
            rows += _run(settings, NAME if train_gpt.AUTOCAST else NAME.replace("bf16 autocast", "float32"))
    finally:
        torch.set_num_threads(threads)
        train_gpt.AUTOCAST = autocast
    if settings.quick:
        rows.append(Row(NAME, "compile latency", None, None, "", None, "skipped with --quick"))
    else:
        for which in ("jit", "torch.compile") if torch_compile_available()[0] else ("jit",):
            cold, warm = compile_latency(which)
            rows.append(Row(NAME, f"{which} compile latency", None, None, "", None,
                            f"wrap + first call in a fresh process: cold cache {cold:.1f} s, warm cache {warm:.1f} s"))
    return rows


def _run(settings: Settings, NAME: str) -> list[Row]:  # noqa: N803 - the row label
    fresh, (xs, ys) = workload()
    steps: dict[str, Callable] = {}
    models: dict[str, torch.nn.Module] = {}
    for name in ("eager", "ta.function", "ta.function jit", "torch.compile"):
        models[name], steps[name] = fresh()
    D = ta.function(steps["ta.function"])
    J = ta.function(steps["ta.function jit"], jit_compile=True)
    fns = {"eager": under_autocast(steps["eager"]), "ta.function": under_autocast(D),
           "ta.function jit": under_autocast(J)}
    first = {}
    for name in ("eager", "ta.function", "ta.function jit"):
        t0 = time.perf_counter()
        first[name] = fns[name](xs, ys)
        first[name + " s"] = time.perf_counter() - t0
    if not torch.equal(first["ta.function"], first["eager"]):
        raise AssertionError(f"{NAME}: the default backend's loss differs from eager's")
    torch.testing.assert_close(first["ta.function jit"], first["eager"], rtol=5e-3, atol=1e-3)
    compiled_ok, why = torch_compile_available()
    compile_s = 0.0
    if compiled_ok:
        C, compile_s, why = compile_fn(steps["torch.compile"], None, NAME)
        if C is not None:
            fns["torch.compile"] = under_autocast(C)
            t0 = time.perf_counter()
            torch.testing.assert_close(fns["torch.compile"](xs, ys), first["eager"], rtol=5e-3, atol=1e-3)
            compile_s = time.perf_counter() - t0  # the first call compiles (under autocast, as timed)
    cands = [Candidate(name, "f(xs, ys)", {"f": fn, "xs": xs, "ys": ys}) for name, fn in fns.items()]
    res = run_interleaved(cands, settings, baseline="eager")
    check_no_retrace(D, 1, NAME)
    check_no_retrace(J, 1, NAME)
    e, d, j = res["eager"], res["ta.function"], res["ta.function jit"]
    rows = [Row(NAME, "eager", e.median_us, None, "", None, "plain PyTorch step (baseline)"),
            Row(NAME, "ta.function", d.median_us, d.ratio, f"<= {DEFAULT_TARGET}x", d.ratio <= DEFAULT_TARGET,
                f"first call (trace) {first['ta.function s']:.2f} s; {d.spread()}"),
            Row(NAME, "ta.function jit", j.median_us, j.ratio, "", None,
                f"first call (trace + compile) {first['ta.function jit s']:.1f} s; {j.spread()}")]
    if "torch.compile" in res:
        c = res["torch.compile"]
        vs = j.ratio / c.ratio
        rows.append(Row(NAME, "torch.compile", c.median_us, c.ratio, "", None, f"first call (compile) {compile_s:.1f} s"))
        rows.append(Row(NAME, "jit / torch.compile", None, vs, f"<= {JIT_VS_COMPILE_TARGET}x",
                        vs <= JIT_VS_COMPILE_TARGET, "per-step ratio, same rounds"))
    else:
        rows.append(Row(NAME, "torch.compile", None, None, "", None, f"skipped: {why}"))
    return rows


if __name__ == "__main__":
    main_for(run, __doc__)
