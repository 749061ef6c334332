"""Interleaved micro-benchmark timer shared by every benchmark in this folder.

Each candidate is a statement (e.g. ``"f(x)"`` or ``"x + 1"``) compiled by
`timeit` into a tight loop, so the statement itself is inline in the timing
loop and every candidate pays the same loop overhead. Candidates are timed in
rounds, interleaved: round 1 runs A, B, C; round 2 runs C, B, A; ... so slow
drift of a noisy machine (other processes, frequency changes) hits every
candidate alike. Per candidate we report the median per-call time over the
rounds; ratios are the median over rounds of the per-round ratio
(candidate / baseline), which cancels drift better than a ratio of medians.

Usage::

    cands = [Candidate("eager", "f(x)", {"f": f, "x": x}), Candidate("ours", "g(x)", {"g": g, "x": x})]
    res = run_interleaved(cands, Settings.from_argv())
    print_table("P2", res, baseline="eager")
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from dataclasses import dataclass, field
from typing import Any, Callable

# The default of 2-core machines: keep torch's intra-op pool from fighting the timer.
os.environ.setdefault("OMP_NUM_THREADS", "1")


@dataclass
class Settings:
    rounds: int = 31  # interleaved rounds; one timing per candidate per round
    round_s: float = 0.02  # target wall time of one timing (calls per timing are calibrated to this)
    warmup_s: float = 0.2  # per candidate, before calibration
    quick: bool = False

    @staticmethod
    def quick_settings() -> "Settings":
        return Settings(rounds=9, round_s=0.008, warmup_s=0.05, quick=True)

    @staticmethod
    def from_argv(argv: list[str] | None = None, description: str = "") -> "Settings":
        p = argparse.ArgumentParser(description=description)
        p.add_argument("--quick", action="store_true", help="few short rounds (smoke test, noisier figures)")
        p.add_argument("--rounds", type=int, default=None)
        a = p.parse_args(argv)
        s = Settings.quick_settings() if a.quick else Settings()
        if a.rounds:
            s.rounds = a.rounds
        return s


@dataclass
class Candidate:
    """One thing to time: `stmt` runs in a loop with `env` as its globals; `setup` runs once per timing."""

    name: str
    stmt: str
    env: dict[str, Any]
    setup: str = "pass"
    _timer: Any = field(default=None, repr=False)
    number: int = 1

    def timer(self) -> timeit.Timer:
        if self._timer is None:
            self._timer = timeit.Timer(self.stmt, self.setup, globals=self.env)
        return self._timer


@dataclass
class Result:
    name: str
    median_us: float
    samples_us: list[float]
    number: int
    ratio: float | None = None  # median per-round ratio vs the baseline
    ratio_iqr: tuple[float, float] | None = None  # 25th and 75th percentiles of the per-round ratios
    extra: dict[str, Any] = field(default_factory=dict)

    def spread(self) -> str:
        """The middle half of the per-round ratios, e.g. "IQR 0.98-1.02x": how much to trust a close call."""
        return "" if self.ratio_iqr is None else f"IQR {self.ratio_iqr[0]:.3f}-{self.ratio_iqr[1]:.3f}x"

    @property
    def iqr_us(self) -> tuple[float, float]:
        q = statistics.quantiles(self.samples_us, n=4)
        return q[0], q[2]


def _calibrate(c: Candidate, round_s: float, warmup_s: float) -> int:
    t = c.timer()
    # warm up for ~warmup_s, estimating the per-call time as we go
    n, spent, calls = 1, 0.0, 0
    start = time.perf_counter()
    while time.perf_counter() - start < warmup_s:
        spent += t.timeit(n)
        calls += n
        n = min(n * 2, 1 << 20)
    per_call = spent / max(calls, 1)
    return max(1, int(round_s / max(per_call, 1e-9)))


def run_interleaved(cands: list[Candidate], settings: Settings, baseline: str | None = None) -> dict[str, Result]:
    """Time every candidate in interleaved rounds; returns name -> Result (ratio vs `baseline`)."""
    for c in cands:
        c.number = _calibrate(c, settings.round_s, settings.warmup_s)
    samples: dict[str, list[float]] = {c.name: [] for c in cands}
    gc.collect()
    for r in range(settings.rounds):
        order = cands if r % 2 == 0 else cands[::-1]
        for c in order:
            samples[c.name].append(c.timer().timeit(c.number) / c.number * 1e6)
    out = {c.name: Result(c.name, statistics.median(samples[c.name]), samples[c.name], c.number) for c in cands}
    base = baseline or cands[0].name
    for name, res in out.items():
        ratios = [a / b for a, b in zip(samples[name], samples[base])]
        res.ratio = statistics.median(ratios)
        if len(ratios) >= 2:
            q = statistics.quantiles(ratios, n=4)
            res.ratio_iqr = (q[0], q[2])
    return out


# ----- results checking --------------------------------------------------------------
def check_equal(name: str, got: Any, want: Any, exact: bool = True) -> None:
    """Raise if `got` differs from the eager result `want` (bitwise when `exact`)."""
    import torch

    if exact:
        if not (got.shape == want.shape and got.dtype == want.dtype and torch.equal(got, want)):
            raise AssertionError(f"{name}: result differs from eager (max abs diff "
                                 f"{(got.double() - want.double()).abs().max().item():.3g})")
    else:
        torch.testing.assert_close(got, want, msg=lambda m: f"{name}: result differs from eager: {m}")


# ----- reporting ---------------------------------------------------------------------
@dataclass
class Row:
    """One line of the combined table (see run_all.py)."""

    benchmark: str
    candidate: str
    median_us: float | None
    ratio: float | None = None  # vs the benchmark's baseline
    target: str = ""
    passed: bool | None = None  # None: no target
    note: str = ""


def fmt_us(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:,.3f}" if v < 10 else f"{v:,.1f}" if v < 1000 else f"{v:,.0f}"


def print_rows(rows: list[Row], title: str = "", file: Any = None) -> None:
    file = file or sys.stdout
    head = ("benchmark", "candidate", "median µs", "ratio", "target", "pass", "note")
    cells = [head]
    for r in rows:
        cells.append((r.benchmark, r.candidate, fmt_us(r.median_us),
                      "-" if r.ratio is None else f"{r.ratio:.3f}x",
                      r.target or "-", "-" if r.passed is None else ("PASS" if r.passed else "FAIL"), r.note))
    widths = [max(len(str(c[i])) for c in cells) for i in range(len(head))]
    if title:
        print(title, file=file)
    for i, c in enumerate(cells):
        print("  ".join(str(x).ljust(w) if j != 2 and j != 3 else str(x).rjust(w)
                        for j, (x, w) in enumerate(zip(c, widths))).rstrip(), file=file)
        if i == 0:
            print("  ".join("-" * w for w in widths), file=file)
    file.flush()


def rows_from_results(benchmark: str, res: dict[str, Result], baseline: str,
                      targets: dict[str, tuple[str, Callable[[Result], bool]]] | None = None) -> list[Row]:
    """One Row per result; `targets` maps candidate -> (target text, predicate on its Result)."""
    rows = []
    for name, r in res.items():
        t = (targets or {}).get(name)
        rows.append(Row(benchmark, name, r.median_us, None if name == baseline else r.ratio,
                        t[0] if t else "", t[1](r) if t else None))
    return rows


def torch_compile_available() -> tuple[bool, str]:
    """Whether torch.compile (inductor, CPU: needs a C++ compiler) can be used here."""
    import shutil

    if os.environ.get("TA_BENCH_NO_COMPILE"):
        return False, "TA_BENCH_NO_COMPILE set"
    if sys.version_info >= (3, 14):
        return False, "dynamo unsupported on this Python"
    if not (shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++") or shutil.which("clang++")):
        return False, "no C++ compiler for inductor"
    return True, ""


def compile_fn(fn: Callable, example: Any, label: str) -> tuple[Callable | None, float, str]:
    """torch.compile(fn), compiled here by a first call on `example` (unless None) under the current grad
    mode; returns (compiled, seconds the first call took, why it is unavailable). Compile time is reported,
    never part of the timed figures."""
    ok, why = torch_compile_available()
    if not ok:
        return None, 0.0, why
    import torch

    try:
        c = torch.compile(fn)
        t0 = time.perf_counter()
        if example is not None:
            c(example)
        return c, time.perf_counter() - t0, ""
    except Exception as e:  # noqa: BLE001 - report, don't die: the other candidates still count
        return None, 0.0, f"torch.compile failed: {type(e).__name__}: {str(e).splitlines()[0][:100]}"


class NoRecompile:
    """Context: fail loudly if dynamo recompiles while timing (a recompile would be measured)."""

    def __enter__(self) -> "NoRecompile":
        import torch

        self._cfg = torch._dynamo.config.patch(error_on_recompile=True)
        self._cfg.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._cfg.__exit__(*exc)


def check_no_retrace(fn: Any, expected: int, label: str) -> None:
    """A ta.Function must not have traced during timing (a trace would be measured, or the fast path missed)."""
    n = fn.experimental_get_tracing_count()
    if n != expected:
        raise AssertionError(f"{label}: ta.function traced {n} times, expected {expected}")


def main_for(run: Callable[[Settings], list[Row]], doc: str) -> None:
    """The `__main__` of a benchmark module: parse the flags, run, print the table."""
    print_rows(run(Settings.from_argv(description=doc)), title=doc.splitlines()[0])


def cold_and_warm(script: str) -> list[list[float]]:
    """The numbers on the last line `script` prints, from two fresh processes sharing a new inductor cache
    directory: the first starts with it empty (cold), the second reuses it (warm)."""
    with tempfile.TemporaryDirectory(prefix="ta_inductor_cache_") as cache:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache, PYTHONPATH=os.pathsep.join(sys.path))
        runs = []
        for _ in range(2):
            out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
            runs.append([float(x) for x in out.stdout.strip().splitlines()[-1].split()])
    return runs
