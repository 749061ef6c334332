"""Quick performance check of the transformer (run by hand, not collected by pytest).

    .venv/bin/python tests/autograph/bench_autograph.py

Prints (1) the time to convert a 12-line function with an `if`, a `for` and a
`break` (target <= 5 ms) and (2) the run time of the converted code against
the original on plain Python ints, with no backend registered and with the
fake backend registered (target <= 3x; see the printed figures).
"""

from __future__ import annotations

import os
import sys
import time
import timeit

sys.path.insert(0, os.path.dirname(__file__))

import fake_backend  # noqa: E402

from torch_autograph.autograph import api, to_graph  # noqa: E402
from torch_autograph.autograph.operators import dispatch  # noqa: E402


def collatz_like(x, n):
    total = 0
    for i in range(n):
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
        if x == 1:
            break
        total += x
    return total


def scale(v, k):
    return v * k + 1


def with_calls(xs, k):
    out = []
    acc = 0
    for x in xs:
        if x > 0:
            acc += scale(x, k)
        else:
            acc -= abs(x)
        out.append(acc)
    return out, len(out)


def main() -> None:
    previous = dispatch.register_backend(None)
    to_graph(collatz_like)  # warm up imports and template caches
    times, cpu = [], []
    for _ in range(50):
        api.clear_cache()
        start, start_cpu = time.perf_counter(), time.process_time()
        to_graph(collatz_like)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    times.sort()
    cpu.sort()
    # CPU time too: wall time is noisy on a shared machine.
    print(f"conversion of collatz_like (12 lines: if, for, break): "
          f"median {times[len(times) // 2] * 1e3:.2f} ms wall, "
          f"{cpu[len(cpu) // 2] * 1e3:.2f} ms CPU; best {times[0] * 1e3:.2f} ms")
    cases = [("collatz_like (tight loop, trivial body)", collatz_like, (27, 200)),
             ("with_calls (calls, builtins, list.append)", with_calls,
              (list(range(-50, 50)), 3))]
    for label, fn, args in cases:
        converted = to_graph(fn)
        assert converted(*args) == fn(*args)
        original = min(timeit.repeat(lambda: fn(*args), number=500, repeat=5)) / 500
        plain = min(timeit.repeat(lambda: converted(*args), number=500, repeat=5)) / 500
        with fake_backend.installed():
            staged_ready = min(timeit.repeat(lambda: converted(*args), number=500,
                                             repeat=5)) / 500
        print(f"{label}: original {original * 1e6:.1f} us; converted {plain * 1e6:.1f} us "
              f"({plain / original:.1f}x) with no backend, {staged_ready * 1e6:.1f} us "
              f"({staged_ready / original:.1f}x) with a backend registered")
    dispatch.register_backend(previous)


if __name__ == "__main__":
    main()
