"""The trace cache under load: many threads, many retraces, many shapes; what it keeps alive, and for how long."""

from __future__ import annotations

import gc
import linecache
import logging
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

import torch_autograph as ta
from torch_autograph.tracing.meta import memo


@pytest.fixture(autouse=True)
def quiet_retracing_warnings():
    logger = logging.getLogger("torch_autograph")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


def test_eight_threads_on_a_full_reduce_retracing_cache():
    f = ta.function(lambda x, k: x * k + 1, reduce_retracing=True, max_traces=4)
    for k in range(4):
        f(torch.ones(3), k)  # the cache is full: every new k evicts
    start = threading.Barrier(8, timeout=60)

    def worker(i):
        start.wait()
        for j in range(60):
            k, n = (i * 7 + j) % 10, 1 + (i + j) % 5
            x = torch.full((n,), float(j))
            torch.testing.assert_close(f(x, k), x * k + 1)
        return True

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(worker, range(8)))
    assert len(f.concrete_functions) <= 4


def test_concurrent_first_calls_of_one_signature_trace_once():
    start = threading.Barrier(8, timeout=60)
    traced = []

    def body(x):
        traced.append(1)
        return torch.sin(x) + 1

    f = ta.function(body, autograph=False)
    x = torch.randn(4)

    def worker(_):
        start.wait()
        return f(x)

    with ThreadPoolExecutor(8) as pool:
        outs = list(pool.map(worker, range(8)))
    for out in outs:
        torch.testing.assert_close(out, torch.sin(x) + 1)
    assert len(traced) == 1 and f.experimental_get_tracing_count() == 1


def _retrace(n_calls: int) -> tuple[ta.Function, int]:
    f = ta.function(lambda x, n: x * n + 1, autograph=False)
    x = torch.ones(3)
    for n in range(n_calls):
        f(x, n)  # a new Python int: a new trace every call, 64 kept
    gc.collect()
    return f, _generated_in_linecache()


def _generated_in_linecache() -> int:
    # Generated code only: a warning at a line of a real file adds that file to linecache too.
    return sum(1 for name in linecache.cache if name.startswith("<"))


def _check_bounded_after_retraces(n_calls: int) -> None:
    before = _generated_in_linecache()
    f, after = _retrace(n_calls)
    assert f.experimental_get_tracing_count() == n_calls
    assert len(f.concrete_functions) == 64
    assert after - before <= 64, "generated code of evicted traces must leave linecache"
    cache = f._cache
    assert len(cache.fast) <= 128 and len(cache._by_key) <= 128
    assert len(f.trace_history()) <= 1000
    assert len(memo) <= memo.max_entries


def test_retraces_leave_no_growing_structure():
    # 1,200: past every bound checked (64 traces kept, 128-entry tables, 1,000 history entries).
    _check_bounded_after_retraces(1_200)


@pytest.mark.slow
def test_ten_thousand_retraces_leave_no_growing_structure():
    _check_bounded_after_retraces(10_000)


def test_ten_thousand_shapes_under_reduce_retracing_keep_the_lookup_tables_small():
    f = ta.function(lambda x: x * 2, reduce_retracing=True)
    for n in range(1, 10_001):
        f(torch.ones(n))
    assert f.experimental_get_tracing_count() == 2
    assert len(f._cache.fast) <= 128 and len(f._cache._by_key) <= 128


def test_dropped_functions_free_what_their_closures_captured():
    refs = []
    for _ in range(100):
        big = torch.ones(64 * 1024)  # 256 KB
        refs.append(weakref.ref(big))

        def closure(x, big=None, _big=big):
            return x + _big[:3]

        f = ta.function(closure)
        f(torch.ones(3))
        del f, closure, big
    gc.collect()
    assert sum(r() is not None for r in refs) == 0


def test_dropped_functions_free_closure_cells():
    refs = []
    for _ in range(20):
        big = torch.ones(64 * 1024)
        refs.append(weakref.ref(big))

        def make(t):
            def f(x):
                if x.sum() > 0:  # converted by AutoGraph: the conversion cache must not keep `t`
                    return x + t[:3]
                return x - t[:3]
            return f

        g = ta.function(make(big))
        g(torch.ones(3))
        del g, big
    gc.collect()
    assert sum(r() is not None for r in refs) == 0


class _Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)

    @ta.function
    def predict(self, x):
        return self.lin(x) * 2


def test_a_bound_method_of_a_temporary_instance_keeps_it_alive():
    m = _Model().predict  # nothing else refers to the model
    gc.collect()
    x = torch.randn(4, 3)
    out = m(x)
    torch.testing.assert_close(out, m._instance.lin(x) * 2)
    assert m.experimental_get_tracing_count() == 1


def test_instances_are_collected_once_their_methods_are_dropped():
    model = _Model()
    model.predict(torch.randn(2, 3))
    ref = weakref.ref(model)
    del model
    gc.collect()
    assert ref() is None
