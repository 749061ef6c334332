"""Run every benchmark and print one table (benchmark, candidate, median µs, ratio vs baseline, target, pass).

    python benchmarks/run_all.py            # full (~2-4 min, most of it torch.compile's cold compiles)
    python benchmarks/run_all.py --quick    # smoke test: few short rounds, noisier figures
    TA_BENCH_NO_COMPILE=1 python benchmarks/run_all.py   # skip the torch.compile candidates

Exit status 0 even when a target fails (figures on a shared machine are noisy;
read the ratios), 1 when a benchmark itself errors (e.g. a result differs from eager).
"""

from __future__ import annotations

import os
import platform
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_autograph  # noqa: E402
import bench_call_overhead  # noqa: E402
import bench_ddp  # noqa: E402
import bench_elementwise_chain  # noqa: E402
import bench_export  # noqa: E402
import bench_gpt_train  # noqa: E402
import bench_gpu  # noqa: E402
import bench_hf  # noqa: E402
import bench_import  # noqa: E402
import bench_jit  # noqa: E402
import bench_mlp  # noqa: E402
import bench_models  # noqa: E402
import bench_module_guards  # noqa: E402
import bench_tracing  # noqa: E402
import bench_train_step  # noqa: E402
import torch  # noqa: E402
from harness import Row, Settings, print_rows  # noqa: E402  (sets OMP_NUM_THREADS before torch loads)

# bench_gpu (P8) needs a CUDA device; elsewhere it prints its skip line and adds one row saying so.
BENCHMARKS = [bench_call_overhead, bench_elementwise_chain, bench_mlp, bench_module_guards, bench_tracing, bench_autograph, bench_train_step,
              bench_jit, bench_gpt_train, bench_models, bench_hf, bench_export, bench_ddp, bench_gpu, bench_import]


def main() -> int:
    s = Settings.from_argv(description=__doc__)
    print(f"torch {torch.__version__}, Python {platform.python_version()}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs, torch threads {torch.get_num_threads()}, "
          f"{'quick' if s.quick else 'full'}: {s.rounds} interleaved rounds x ~{s.round_s * 1e3:.0f} ms per candidate",
          flush=True)
    rows: list[Row] = []
    failed = False
    t_all = time.perf_counter()
    for b in BENCHMARKS:
        t0 = time.perf_counter()
        try:
            got = b.run(s)
        except Exception:  # noqa: BLE001 - report and go on with the others
            traceback.print_exc()
            got = [Row(getattr(b, "NAME", b.__name__), "ERROR", None, None, "", False, "see traceback above")]
            failed = True
        rows += got
        print(f"  {getattr(b, 'NAME', b.__name__)}: {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    print()
    print_rows(rows)
    checked = [r for r in rows if r.passed is not None]
    n_pass = sum(r.passed for r in checked)
    print(f"\n{n_pass}/{len(checked)} targets met; ratio = median over rounds of (candidate / baseline) per round; "
          f"total {time.perf_counter() - t_all:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
