"""Python objects a tensor loop or `if` changes through code that does not name them (a cache's `update`),
carried through the graph like loop variables: values, and the objects' state, equal plain Python's."""

import pytest
import torch

import torch_autograph as ta
from torch_autograph.state.python_state import StateEffectError


class Cache:
    """A key/value cache as libraries write it: `update` grows a tensor and counts, out of the caller's sight."""

    def __init__(self, k):
        self.k = k
        self.n = 0
        self.store = {"last": k}

    def update(self, x):
        self.k = torch.cat([self.k, x])
        self.n += 1
        self.store["last"] = x
        return self.k


def decode(x, steps: int = 5):
    cache = Cache(x)
    for _ in range(steps):
        y = cache.update(x * 2)
        if (y.sum() > 10).all():
            break
    return cache.k, cache.n, cache.store["last"]


def decode_while(x):
    cache = Cache(x)
    while cache.k.sum() < 6:
        cache.update(x)
    return cache.k * 1, cache.n


def maybe_update(x):
    cache = Cache(x)
    if (x.sum() > 0).all():
        cache.update(x + 1)
    return cache.k * 1, cache.n


def nested(x):
    cache = Cache(x)
    for i in range(4):
        if (x.sum() > i).all():
            cache.update(x * i)
        if (cache.k.sum() > 20).all():
            break
    return cache.k, cache.n


def _same(a, b):
    assert type(a) is type(b) or isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor)
    if isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert torch.equal(torch.as_tensor(a), torch.as_tensor(b)), (a, b)


@pytest.mark.parametrize("fn, inputs", [
    (decode, [torch.ones(2), torch.full((2,), 0.1), torch.full((2,), 3.0)]),
    (decode_while, [torch.ones(2), torch.full((2,), 0.5)]),
    (maybe_update, [torch.ones(2), -torch.ones(2)]),
    (nested, [torch.ones(2), torch.full((2,), 2.0), -torch.ones(2)]),
], ids=["for-break", "while", "if", "if-in-loop"])
def test_an_object_changed_by_library_code_in_a_tensor_loop_or_if_equals_python(fn, inputs):
    f = ta.function(fn)
    for x in inputs:
        _same(f(x), fn(x))


def test_a_captured_cache_changed_in_a_tensor_loop_is_written_back_at_every_call():
    cache = Cache(torch.zeros(1))

    def step(x):
        for _ in range(3):
            cache.update(x)
            if (cache.k.sum() > 4).all():
                break
        return cache.k.sum()

    eager = Cache(torch.zeros(1))

    def eager_step(x):
        for _ in range(3):
            eager.update(x)
            if (eager.k.sum() > 4).all():
                break
        return eager.k.sum()

    f = ta.function(step)
    for x in (torch.ones(1), torch.ones(1), torch.full((1,), 3.0)):
        assert torch.equal(f(x), eager_step(x))
        assert torch.equal(cache.k, eager.k) and cache.n == eager.n
        assert type(cache.k) is torch.Tensor and type(cache.store["last"]) is torch.Tensor
        assert torch.equal(cache.store["last"], eager.store["last"])


def test_a_python_loop_changing_an_object_runs_its_changes_once_per_iteration():
    def f(x):
        cache = Cache(x)
        for _ in range(3):  # not a graph loop: plain Python, three updates
            cache.update(x)
        return cache.k, cache.n

    _same(ta.function(f)(torch.ones(2)), f(torch.ones(2)))


def test_an_attribute_first_set_in_a_tensor_loop_is_refused_at_the_loop():
    class Box:
        pass

    def fill(box, x):
        box.value = x * 2

    def f(x):
        box = Box()
        while (x.sum() < 10).all():
            fill(box, x)
            x = x + 1
        return x

    with pytest.raises(StateEffectError, match=r"box\.value is first set inside the loop or `if` at "
                                               r".*test_object_state\.py:\d+ \(`while"):
        ta.function(f)(torch.ones(2))


def test_a_list_grown_with_tensors_in_a_tensor_loop_by_a_callee_is_refused():
    class Log:
        def __init__(self):
            self.items = []

    def record(log, x):
        log.items.append(x)

    def f(x):
        log = Log()
        while (x.sum() < 10).all():
            record(log, x)
            x = x + 1
        return x

    with pytest.raises(StateEffectError, match=r"log\.items grows or shrinks inside the loop"):
        ta.function(f)(torch.ones(2))


def test_an_object_the_function_makes_and_returns_is_a_new_one_with_each_calls_values():
    class Layer:
        def __init__(self, k):
            self.k = k

    def f(x):
        cache = Cache(x * 2)
        cache.layers = [Layer(x + 1), Layer(x - 1)]
        return x.sum(), cache

    g = ta.function(f)
    seen = []
    for x in (torch.ones(2), torch.full((2,), 3.0)):
        total, cache = g(x)
        _, want = f(x)
        assert type(cache) is Cache and cache is not want
        assert torch.equal(cache.k, want.k) and type(cache.k) is torch.Tensor
        assert [type(layer.k) for layer in cache.layers] == [torch.Tensor, torch.Tensor]
        assert all(torch.equal(a.k, b.k) for a, b in zip(cache.layers, want.layers))
        seen.append(cache)
    assert seen[0] is not seen[1] and seen[0].layers is not seen[1].layers  # each call its own, as eagerly
    assert torch.equal(seen[0].k, torch.full((2,), 2.0))  # the first call's object keeps its values


class Items:
    pass


def _rebinds_a_list_in_one_branch(holder):
    def f(a):
        local = [a, a]
        if a > 2:
            local = [a + 1, a * 3]
            holder.items = [a + 1, holder.items[1] + a]
        return local[0] + local[1]
    return f


def test_a_list_of_tensors_rebound_to_a_new_list_in_one_branch_of_a_tensor_if():
    # The list was made a graph list for the `if`, and the branch's new Python list was not: "must have the same
    # nested structure" for a program eager runs (a local, and an attribute that outlives the call).
    holders = [Items(), Items()]
    for h in holders:
        h.items = [torch.tensor(0), torch.tensor(0)]
    eager, f = _rebinds_a_list_in_one_branch(holders[0]), ta.function(_rebinds_a_list_in_one_branch(holders[1]))
    for v in (3, 1, 5, -2):
        torch.testing.assert_close(f(torch.tensor(v)), eager(torch.tensor(v)))
        assert type(holders[1].items) is list
        torch.testing.assert_close(holders[1].items, holders[0].items)
    assert f.experimental_get_tracing_count() == 1


class Counter:
    n = 0


COUNTER = Counter()


def _mark(v):
    COUNTER.n = COUNTER.n + v


def _fail(v):
    raise ValueError("fail")


def grows_then_changes_out_of_sight(a, d):
    if a > 2:
        d["k"] = d["k"] + a * 0
    else:
        try:
            return _fail(a)
        except ValueError:  # (raised while tracing: Python catches it)
            d["l"].extend([a * 0, 1])
        _mark(5 - a)  # found changed as the branch ends: the branch is traced again, carrying COUNTER.n
    return a


def test_a_branch_traced_again_to_carry_an_entry_leaves_nothing_of_its_first_trace():
    # The first trace's graph value appended to `d["l"]` stayed there: "out of scope ... which raised Changed".
    f = ta.function(grows_then_changes_out_of_sight)
    for v in (3, 1, 5):
        got, want = {"k": 0, "l": [1]}, {"k": 0, "l": [1]}
        COUNTER.n = 0
        want_out, want_n = grows_then_changes_out_of_sight(torch.tensor(v), want), COUNTER.n
        COUNTER.n = 0
        assert int(f(torch.tensor(v), got)) == int(want_out) and int(COUNTER.n) == int(want_n)
        assert [int(x) for x in got["l"]] == [int(x) for x in want["l"]] and int(got["k"]) == int(want["k"])
