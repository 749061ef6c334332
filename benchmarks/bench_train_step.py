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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Candidate, Settings, run_interleaved  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import torch_autograph as ta  # noqa: E402

NAME = "P4 training step (MLP 20-64-3, batch 32, Adam)"
SPEEDUP_TARGET = 1.2


def make_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 3))


def graph_step_fn(model: torch.nn.Module):
    opt = ta.optimizers.Adam(learning_rate=1e-3)

    @ta.function
    def train_step(x, y):
        with ta.GradientTape() as tape:
            loss = F.cross_entropy(model(x), y)
        params = list(model.parameters())
        opt.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss

    return train_step


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


def main() -> int:
    settings = Settings.from_argv(description=__doc__)
    x, y = torch.randn(32, 20), torch.randint(0, 3, (32,))
    graph_step, eager_step = graph_step_fn(make_model()), eager_step_fn(make_model())
    t0 = time.perf_counter()
    first_graph = graph_step(x, y)  # traces (twice: the first trace creates the optimizer's slots)
    trace_ms = (time.perf_counter() - t0) * 1e3
    first = first_graph, eager_step(x, y)
    torch.testing.assert_close(first[0], first[1])  # the same first step
    res = run_interleaved([Candidate("eager", "e(x, y)", {"e": eager_step, "x": x, "y": y}),
                           Candidate("ta.function", "g(x, y)", {"g": graph_step, "x": x, "y": y})],
                          settings, baseline="eager")
    assert graph_step.experimental_get_tracing_count() == 1
    eager_us, ours_us = res["eager"].median_us, res["ta.function"].median_us
    ratio = res["ta.function"].ratio or ours_us / eager_us
    speedup = 1 / ratio
    print(f"{NAME}")
    print(f"  eager (torch.optim.Adam)      {eager_us:9.1f} us/step")
    print(f"  ta.function (tape + ta Adam)  {ours_us:9.1f} us/step   ours/eager {ratio:.3f}  "
          f"speedup {speedup:.2f}x (target >= {SPEEDUP_TARGET}x: {'PASS' if speedup >= SPEEDUP_TARGET else 'MISS'})")
    print(f"  first call of the graph step (tracing included): {trace_ms:.0f} ms")

    mem_step = graph_step_fn(make_model())
    for _ in range(50):
        mem_step(x, y)
    after_50 = rss_mib()
    for _ in range(950):
        mem_step(x, y)
    after_1000 = rss_mib()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    grew = after_1000 - after_50
    ok = grew <= 2.0
    print(f"  memory: RSS after 50 steps {after_50:.1f} MiB, after 1000 steps {after_1000:.1f} MiB "
          f"(growth {grew:+.2f} MiB: {'PASS' if ok else 'FAIL'}), peak RSS {peak:.1f} MiB")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
