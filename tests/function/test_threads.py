"""One Function called from many threads: correct results, one trace per distinct signature."""

import threading
from concurrent.futures import ThreadPoolExecutor

import torch

import torch_autograph as ta


def test_eight_threads_mixed_signatures():
    lin = torch.nn.Linear(4, 4)
    started = threading.Barrier(8, timeout=60)

    def body(x, scale):
        return torch.tanh(lin(x)) * scale

    f = ta.function(body, autograph=False)
    inputs = [(torch.randn(n, 4, dtype=dt), s) for n in (1, 2, 3) for dt in (torch.float32,) for s in (1, 2)]

    def worker(i):
        started.wait()
        out = []
        for k in range(40):
            x, s = inputs[(i + k) % len(inputs)]
            out.append((f(x, s), body(x, s)))
        return out

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(worker, range(8)))
    for per_thread in results:
        for got, expected in per_thread:
            torch.testing.assert_close(got, expected)
    assert f.experimental_get_tracing_count() == len(inputs)
    assert sorted(e.signature for e in f.trace_history()) == sorted(set(e.signature for e in f.trace_history()))


def test_threads_tracing_different_functions_do_not_mix_graphs():
    barrier = threading.Barrier(4, timeout=60)

    def make(k):
        def fn(x):
            barrier.wait()  # all four traces are open at once
            return x * k + torch.ones_like(x) * k  # not torch.ones(1) * k, which constant folding folds

        return ta.function(fn, autograph=False)

    fns = [make(k) for k in range(4)]
    x = torch.randn(3)
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda k: fns[k](x), range(4)))
    for k, out in enumerate(outs):
        torch.testing.assert_close(out, x * k + k)
        assert len(fns[k].get_concrete_function(x).graph.get_operations()) == 4
