"""Run a function in N spawned processes joined in a gloo process group, and collect what each returns.

Each test module has a `worker` that runs every scenario of the module and returns their results; one spawn
serves several modules (`run_modules`, from the session fixture `spawned_results` of tests/conftest.py: each
process imports torch once, not once per module), and the tests then assert on their module's results. A hang
(a collective one process never joins) fails after `timeout` seconds instead of blocking the suite.
"""

from __future__ import annotations

import datetime
import gc
import os
import queue as queue_module
import socket
import time
import traceback
from typing import Any, Callable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _entry(worker: Callable, rank: int, world: int, port: int, out: Any, args: tuple) -> None:
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    try:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=120))
        try:
            out.put((rank, "ok", worker(rank, world, *args)))
        finally:
            gc.collect()  # free the DDP/FSDP models that hold the group, so that destroying it shuts gloo down
            dist.destroy_process_group()
    except BaseException:  # reported to the parent, which fails the test with it
        out.put((rank, "error", traceback.format_exc()))


def run_spawned(worker: Callable, nprocs: int = 2, timeout: float = 240.0, args: tuple = ()) -> list[Any]:
    """`worker(rank, world_size, *args)` in `nprocs` processes; the list of their results, by rank.

    `worker` must be importable by name (a module-level function); results must be picklable (use lists and
    floats, not tensors). Raises AssertionError with the worker's traceback if one fails, or on a timeout.
    """
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=_entry, args=(worker, r, nprocs, port, out, args), daemon=True) for r in range(nprocs)]
    for p in procs:
        p.start()
    results: dict[int, Any] = {}
    deadline = time.monotonic() + timeout
    try:
        while len(results) < nprocs:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"spawned workers timed out after {timeout:.0f} s (a hang: ranks "
                                     f"{sorted(set(range(nprocs)) - set(results))} never finished)")
            try:
                rank, status, value = out.get(timeout=min(left, 5.0))
            except queue_module.Empty:
                dead = [p for p in procs if p.exitcode not in (None, 0)]
                if dead and len(results) < nprocs:
                    raise AssertionError(f"a spawned worker died with exit code {dead[0].exitcode}") from None
                continue
            if status == "error":
                raise AssertionError(f"rank {rank} failed:\n{value}")
            results[rank] = value
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join(timeout=5)
    return [results[r] for r in range(nprocs)]


def _modules_worker(rank: int, world: int, paths: tuple[str, ...]) -> list[Any]:
    import importlib.util

    out = []
    for i, path in enumerate(paths):
        spec = importlib.util.spec_from_file_location(f"_spawned_module_{i}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        out.append(module.worker(rank, world))
        gc.collect()  # the module's models and groups go before the next module's scenarios start
    return out


def run_modules(paths: list[str], nprocs: int = 2, timeout: float = 900.0) -> dict[str, list[Any]]:
    """The `worker(rank, world_size)` of each test module file in `paths`, in turn, in one spawn of `nprocs`
    processes: {path: the list of that worker's results, by rank}. Fails as `run_spawned` does."""
    if not paths:
        return {}
    by_rank = run_spawned(_modules_worker, nprocs=nprocs, timeout=timeout, args=(tuple(paths),))
    return {path: [by_rank[r][i] for r in range(nprocs)] for i, path in enumerate(paths)}
