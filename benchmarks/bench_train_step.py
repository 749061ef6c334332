"""P4: one training step as a graph vs the same step in eager PyTorch, plus memory over 1,000 steps.

Model: Sequential(Linear(20, 64), ReLU, Linear(64, 3)), batch 32, cross-entropy.

Candidates (each updates its own copy of the model; interleaved rounds, medians):
  eager        tape-free PyTorch: opt.zero_grad(); loss.backward(); opt.step() with torch.optim.Adam (baseline)
  ta.function  GradientTape + ta.optimizers.Adam inside @ta.function, traced once

Target: ta.function >= 1.2x faster than eager (ours / eager <= 0.833x).
Memory: RSS after 1,000 graph steps must not exceed RSS after the first 50 (+2 MiB slack); peak RSS reported.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from harness import Candidate, Row, Settings, print_rows, run_interleaved  # noqa: E402

import torch_autograph as ta  # noqa: E402

NAME = "P4 training step (MLP 20-64-3, batch 32, Adam)"
SPEEDUP_TARGET = 1.2


def make_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 3))


def train_step_fn(model: torch.nn.Module, opt: Any) -> Any:
    """The P4 training step (tape + optimizer) on `model`, as plain Python (P4 and P4j wrap it)."""

    def train_step(x, y):
        with ta.GradientTape() as tape:
            loss = F.cross_entropy(model(x), y)
        params = list(model.parameters())
        opt.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss

    return train_step


def graph_step_fn(model: torch.nn.Module):
    return ta.function(train_step_fn(model, ta.optimizers.Adam(learning_rate=1e-3)))


def eager_step_fn(model: torch.nn.Module):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def train_step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return train_step


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def run(settings: Settings) -> list[Row]:
    x, y = torch.randn(32, 20), torch.randint(0, 3, (32,))
    graph_step, eager_step = graph_step_fn(make_model()), eager_step_fn(make_model())
    t0 = time.perf_counter()
    first_graph = graph_step(x, y)  # traces (twice: the first trace creates the optimizer's slots)
    trace_ms = (time.perf_counter() - t0) * 1e3
    torch.testing.assert_close(first_graph, eager_step(x, y))  # the same first step
    res = run_interleaved([Candidate("eager", "e(x, y)", {"e": eager_step, "x": x, "y": y}),
                           Candidate("ta.function", "g(x, y)", {"g": graph_step, "x": x, "y": y})],
                          settings, baseline="eager")
    assert graph_step.experimental_get_tracing_count() == 1
    eager_us, ours_us = res["eager"].median_us, res["ta.function"].median_us
    ratio = res["ta.function"].ratio or ours_us / eager_us
    rows = [
        Row(NAME, "eager (torch.optim.Adam)", eager_us, None, "", None, "zero_grad/backward/step (baseline)"),
        Row(NAME, "ta.function (tape + ta Adam)", ours_us, ratio, f"<= {1 / SPEEDUP_TARGET:.3f}x",
            ratio <= 1 / SPEEDUP_TARGET, f"{1 / ratio:.2f}x faster; first call (tracing) {trace_ms:.0f} ms; "
            f"{res['ta.function'].spread()}"),
    ]
    mem_step = graph_step_fn(make_model())
    for _ in range(50):
        mem_step(x, y)
    after_50 = rss_mib()
    for _ in range(950):
        mem_step(x, y)
    after_1000 = rss_mib()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    grew = after_1000 - after_50
    rows.append(Row(NAME, "RSS growth, steps 50 -> 1000", None, None, "<= 2 MiB", grew <= 2.0,
                    f"{after_50:.1f} -> {after_1000:.1f} MiB ({grew:+.2f} MiB); peak RSS {peak:.1f} MiB"))
    return rows


def main() -> int:
    rows = run(Settings.from_argv(description=__doc__))
    print_rows(rows, title=__doc__.splitlines()[0])
    return 0 if all(r.passed is not False for r in rows if "RSS" in r.candidate) else 1


if __name__ == "__main__":
    sys.exit(main())
