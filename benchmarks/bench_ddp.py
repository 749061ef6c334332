"""P12: a DistributedDataParallel training step as one graph vs eager DDP, on 2 gloo processes (CPU).

Model: Sequential(8 x (Linear(64, 64), GELU), Linear(64, 10)) in DDP, batch 64 per process, cross-entropy,
torch.optim.Adam. The step: zero_grad(); loss = cross_entropy(model(x), y); loss.backward(); step().

Candidates (each process trains its own copy of the model per candidate; interleaved rounds, medians):
  eager DDP    the step in eager PyTorch (baseline)
  ta.function  the same step in @ta.function (default backend): DDP's pre/post-forward as nodes around
               the traced model; backward all-reduces through DDP's hooks
  jit          the same with jit_compile=True (the model between DDP's halves is one inductor region)

Both processes run the same candidates in the same order and the same number of calls per timing (rank 0
calibrates and broadcasts), with a barrier before each timing; the figures are rank 0's.
Target: ta.function <= 1.0x eager DDP. jit: reported.
"""

from __future__ import annotations

import datetime
import os
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Row, Settings, main_for  # noqa: E402

NAME = "P12 DDP training step (2 gloo processes, MLP 8x64, batch 64, Adam)"
CANDIDATES = ("eager DDP", "ta.function", "jit")


def _model() -> Any:
    import torch

    torch.manual_seed(0)
    layers: list = []
    for _ in range(8):
        layers += [torch.nn.Linear(64, 64), torch.nn.GELU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(64, 10))


def _steps() -> dict[str, Any]:
    import torch
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    import torch_autograph as ta

    def make(model: Any) -> Any:
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)

        def step(x: Any, y: Any) -> Any:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        return step

    base = _model()
    import copy

    models = {name: DDP(copy.deepcopy(base)) for name in CANDIDATES}
    return {"eager DDP": make(models["eager DDP"]), "ta.function": ta.function(make(models["ta.function"])),
            "jit": ta.function(make(models["jit"]), jit_compile=True)}


def _worker(rank: int, world: int, port: int, settings: Settings, out: Any) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=180))
    try:
        out.put((rank, _measure(rank, settings)))
    except BaseException as e:  # noqa: BLE001 - the parent reports it
        import traceback

        out.put((rank, {"error": f"{type(e).__name__}: {e}\n{traceback.format_exc()}"}))
    finally:
        dist.destroy_process_group()


def _measure(rank: int, settings: Settings) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    g = torch.Generator().manual_seed(rank)
    x, y = torch.randn(64, 64, generator=g), torch.randint(0, 10, (64,), generator=g)
    steps = _steps()
    first: dict[str, float] = {}
    losses = {}
    for name in CANDIDATES:  # the first call: traces (and compiles, for jit); each model takes the same step
        t0 = time.perf_counter()
        losses[name] = steps[name](x, y)
        first[name] = time.perf_counter() - t0
    if not torch.equal(losses["ta.function"], losses["eager DDP"]):
        raise AssertionError("the first graph step's loss differs from eager DDP's")
    torch.testing.assert_close(losses["jit"], losses["eager DDP"])
    # Calibration: every process makes the same calls (each is a collective), rank 0's timing decides.
    numbers = []
    for name in CANDIDATES:
        warm = max(3, int(settings.warmup_s / 0.002))
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(warm):
            steps[name](x, y)
        sync = [max(1, int(settings.round_s / ((time.perf_counter() - t0) / warm)))]
        dist.broadcast_object_list(sync, src=0)
        numbers.append(sync[0])
    samples: dict[str, list[float]] = {name: [] for name in CANDIDATES}
    for r in range(settings.rounds):
        order = list(zip(CANDIDATES, numbers))
        for name, number in order if r % 2 == 0 else order[::-1]:
            step = steps[name]
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(number):
                step(x, y)
            samples[name].append((time.perf_counter() - t0) / number * 1e6)
    traces = {name: steps[name].experimental_get_tracing_count() for name in ("ta.function", "jit")}
    return {"samples": samples, "first_s": first, "traces": traces,
            "jit_status": steps["jit"].get_concrete_function(x, y).jit_status}


def run(settings: Settings) -> list[Row]:
    import socket

    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [ctx.Process(target=_worker, args=(r, 2, port, settings, out), daemon=True) for r in range(2)]
    for p in procs:
        p.start()
    results = {}
    try:
        for _ in range(2):
            rank, res = out.get(timeout=600)
            if "error" in res:
                raise AssertionError(f"rank {rank}: {res['error']}")
            results[rank] = res
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    res = results[0]
    for rank, r in results.items():
        if r["traces"] != {"ta.function": 1, "jit": 1}:
            raise AssertionError(f"rank {rank}: a step traced again while timed: {r['traces']}")
    base = res["samples"]["eager DDP"]
    rows = []
    for name in CANDIDATES:
        samples = res["samples"][name]
        ratios = [a / b for a, b in zip(samples, base)]
        q = statistics.quantiles(ratios, n=4)
        ratio = statistics.median(ratios)
        note = f"IQR {q[0]:.3f}-{q[2]:.3f}x; first call {res['first_s'][name]:.2f} s"
        if name == "jit":
            note += f"; {res['jit_status']}"
        target, passed = ("<= 1.0x", ratio <= 1.0) if name == "ta.function" else ("", None)
        rows.append(Row(NAME, name, statistics.median(samples), None if name == "eager DDP" else ratio, target,
                        passed, note))
    return rows


if __name__ == "__main__":
    main_for(run, __doc__)
