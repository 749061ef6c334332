"""Ours vs TensorFlow's tf.function on P2 (200-op chain) and P5 (1000-iteration tensor loop), also with jit_compile=True.

TensorFlow cannot share a process with this venv's torch, so its figures come
from `tf_workloads.py` run by the TF venv (`make bench-tf-setup` creates
`.venv-bench-tf`). Rounds alternate: TF subprocess, then ours in this process,
on the same computations with the same sizes; medians over rounds.

    .venv/bin/python benchmarks/bench_vs_tensorflow.py [--rounds N]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import timeit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
from bench_autograph import loop_const, loop_tensor  # noqa: E402
from bench_elementwise_chain import chain  # noqa: E402
from harness import Row, print_rows  # noqa: E402

import torch_autograph as ta  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TF_PYTHON = os.path.join(HERE, "..", ".venv-bench-tf", "bin", "python")


def _median_us(fn, number: int) -> float:
    fn()
    return statistics.median(timeit.repeat(fn, number=number, repeat=7)) / number * 1e6


def ours() -> dict[str, float]:
    x, n = torch.randn(16), torch.tensor(1000)
    a, b = torch.full((16,), 0.99), torch.full((16,), 0.01)
    f2, f2j = ta.function(chain), ta.function(chain, jit_compile=True)
    f5t, f5c = ta.function(loop_tensor), ta.function(loop_const)
    f5tj, f5cj = ta.function(loop_tensor, jit_compile=True), ta.function(loop_const, jit_compile=True)
    return {
        "P2 chain": _median_us(lambda: f2(x), 2000),
        "P2 chain (jit_compile=True)": _median_us(lambda: f2j(x), 2000),
        "P5 loop (tensors)": _median_us(lambda: f5t(x, n, a, b), 20),
        "P5 loop (consts)": _median_us(lambda: f5c(x, n), 20),
        "P5j loop (tensors, jit_compile=True)": _median_us(lambda: f5tj(x, n, a, b), 20),
        "P5j loop (consts, jit_compile=True)": _median_us(lambda: f5cj(x, n), 20),
    }


def run(rounds: int = 3) -> list[Row]:
    if not os.path.exists(TF_PYTHON):
        return [Row("vs TensorFlow", "skipped", None, None, "", None, "no .venv-bench-tf: run make bench-tf-setup")]
    tf_runs, our_runs = [], []
    for _ in range(rounds):
        out = subprocess.run([TF_PYTHON, os.path.join(HERE, "tf_workloads.py"), "5"], capture_output=True,
                             text=True, check=True)
        tf_runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        our_runs.append(ours())
    version = tf_runs[0]["tf"]
    rows = []
    for ours_key, tf_key in (("P2 chain", "P2 chain"), ("P2 chain (jit_compile=True)", "P2 chain"),
                             ("P5 loop (tensors)", "P5 loop (tensors)"), ("P5 loop (consts)", "P5 loop (consts)"),
                             ("P5j loop (tensors, jit_compile=True)", "P5 loop (tensors)"),
                             ("P5j loop (consts, jit_compile=True)", "P5 loop (consts)")):
        t = statistics.median(r[tf_key] for r in tf_runs)
        o = statistics.median(r[ours_key] for r in our_runs)
        rows.append(Row(f"vs TensorFlow {version}", f"TF tf.function: {tf_key}", t, None, "", None,
                        "separate process (alternating rounds)"))
        # Issue #5's target: the P5 loop with jit_compile=True faster than TF's tf.function.
        target = ours_key.startswith("P5j")
        rows.append(Row(f"vs TensorFlow {version}", f"ours: {ours_key}", o, o / t, "< 1.0x TF" if target else "",
                        o < t if target else None, "ratio = ours / TF"))
    return rows


if __name__ == "__main__":
    n = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 3
    print_rows(run(n), title=__doc__.splitlines()[0])
