"""A graph call has the effects the eager call has on Python objects that outlive it (dicts, lists, objects).

Each program runs eagerly and as a `ta.function` on copies of the same state, for several calls; after each
call the results and the objects' contents must agree, and no graph tensor is left in them.
"""

import copy
import types

import pytest
import torch

import torch_autograph as ta
from tests.eager_reference import line_of
from torch_autograph.state.python_state import StateEffectError
from torch_autograph.tracing.context import Traced


def _no_graph_values(x):
    if isinstance(x, Traced):
        return False
    if isinstance(x, (list, tuple)):
        return all(_no_graph_values(v) for v in x)
    if isinstance(x, dict):
        return all(_no_graph_values(v) for v in x.values())
    if isinstance(x, types.SimpleNamespace):
        return _no_graph_values(vars(x))
    return True


def _assert_same_state(got, want):
    assert _no_graph_values(got)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-6)


def body(x, s):
    s["a"] = s["a"] * 2
    s["log"].append(x.sum())
    s["cache"] = torch.cat([s["cache"], x[None]])
    return x + 1


def test_dict_argument_items_and_nested_list_appends_are_replayed_at_every_call():
    st = {"a": torch.ones(2), "log": [], "cache": torch.zeros(0, 2)}
    ref = copy.deepcopy(st)
    f = ta.function(body)
    for i in range(3):
        x = torch.full((2,), float(i + 1))
        torch.testing.assert_close(f(x, st), body(x, ref))
        _assert_same_state(st, ref)
    assert st["a"].tolist() == [8.0, 8.0] and len(st["log"]) == 3 and st["cache"].shape == (3, 2)


def list_ops(x, xs):
    xs.append(x * 2)
    xs.extend([x + 1, x - 1])
    xs.insert(0, x.sum())
    xs.pop(1)
    del xs[-1]
    xs[0] = xs[0] * 10
    xs[1:2] = [x * 3, x * 4]
    return torch.stack([v.sum() for v in xs])


def test_list_argument_methods_and_item_writes_are_replayed_in_order():
    got, want = [torch.ones(2)], [torch.ones(2)]
    f = ta.function(list_ops)
    for i in range(3):
        x = torch.tensor([1.0, float(i)])
        torch.testing.assert_close(f(x, got), list_ops(x, want))
        _assert_same_state(got, want)


def test_clearing_an_argument_list_and_a_dict_is_replayed():
    def reset(x, xs, d):
        xs.clear()
        d.pop("old")
        d["new"] = x * 2
        return x + len(xs)

    for _ in range(2):
        xs, d = [torch.ones(1), torch.ones(1)], {"old": torch.zeros(1), "keep": 3}
        rxs, rd = copy.deepcopy(xs), copy.deepcopy(d)
        f = ta.function(reset)
        x = torch.tensor([2.0])
        torch.testing.assert_close(f(x, xs, d), reset(x, rxs, rd))
        _assert_same_state((xs, d), (rxs, rd))
        assert list(d) == list(rd)


def test_attribute_of_a_plain_object_argument_holds_the_call_s_value():
    def remember(x, obj):
        obj.last = x * 2
        obj.history = obj.history + [x.sum()]
        return x + 1

    obj, ref = types.SimpleNamespace(history=[]), types.SimpleNamespace(history=[])
    f = ta.function(remember)
    for i in range(3):
        x = torch.tensor([float(i), 1.0])
        torch.testing.assert_close(f(x, obj), remember(x, ref))
        _assert_same_state(vars(obj), vars(ref))


def test_captured_list_read_and_cleared_sees_its_contents_at_each_call():
    # pytorch/examples reinforcement_learning/reinforce.py, finish_episode (BSD-3-Clause): the rewards of an
    # episode are read into the loss, then the list is cleared for the next episode.
    torch.manual_seed(0)
    lin = torch.nn.Linear(2, 1)
    rewards = []

    def finish():
        loss = (lin(torch.ones(len(rewards), 2)).squeeze(-1) * torch.tensor(rewards)).sum()
        rewards.clear()
        return loss

    f = ta.function(finish)
    for episode in ([1.0, 1.0], [5.0, 5.0], [2.0, 2.0, 2.0], [5.0, 5.0]):
        rewards.extend(episode)
        want = finish()
        rewards.extend(episode)
        torch.testing.assert_close(f(), want)
        assert rewards == []
    reasons = " ".join(r for e in f.trace_history() for r in e.reasons)
    assert "list the trace changed holds other contents than when it was traced" in reasons


def test_captured_dict_of_tensors_updated_every_call():
    state = {"h": torch.zeros(2), "steps": []}

    def step(x):
        state["h"] = state["h"] * 0.5 + x
        state["steps"].append(state["h"].sum())
        return state["h"]

    ref = copy.deepcopy(state)

    def eager(x):
        ref["h"] = ref["h"] * 0.5 + x
        ref["steps"].append(ref["h"].sum())
        return ref["h"]

    f = ta.function(step)
    for i in range(4):
        x = torch.tensor([1.0, float(i)])
        torch.testing.assert_close(f(x), eager(x))
        _assert_same_state(state, ref)


def test_captured_list_appended_inside_a_tensor_if_is_refused_at_the_user_line():
    log = []

    def f(x):
        if x.sum() > 0:
            log.append(x * 2)  # marker: append in branch
        return x + 1

    with pytest.raises(TypeError, match=r"list that outlives the call is changed inside a tensor `if` or loop "
                                         r"\(.*test_python_state.py:\d+") as e:
        ta.function(f)(torch.ones(2))
    line = next(i for i, l in enumerate(open(__file__), 1) if "marker: append in branch" in l)
    assert f"test_python_state.py:{line}" in str(e.value) or f"test_python_state.py:{line - 1}" in str(e.value)
    assert log == []


HIDDEN = {"n": torch.tensor(0.0)}
HIDDEN_LOG = []


def _note(v):
    HIDDEN["n"] = HIDDEN["n"] + v
    HIDDEN_LOG.append(v * 2)


def calls_a_function_changing_globals_it_never_names(x):
    _note(x.sum())
    return x + 1


def test_a_called_function_changing_objects_the_traced_function_never_names_is_replayed():
    f = ta.function(calls_a_function_changing_globals_it_never_names)
    for i in range(3):
        f(torch.full((2,), float(i + 1)))
        assert not isinstance(HIDDEN["n"], Traced) and all(not isinstance(v, Traced) for v in HIDDEN_LOG)
    torch.testing.assert_close(HIDDEN["n"], torch.tensor(12.0))
    torch.testing.assert_close(HIDDEN_LOG, [torch.tensor(4.0), torch.tensor(8.0), torch.tensor(12.0)])


TOTALS = {"n": torch.tensor(0.0)}


def _add_to_totals(v):
    TOTALS["n"] = TOTALS["n"] + v


def loop_calls_a_function_changing_a_global_dict(x, n):
    i = torch.tensor(0)
    while i < n:  # a tensor loop: the entry the callee changes is carried through it
        _add_to_totals(x.sum() * i)
        i = i + 1
    return x * 2


def test_a_called_function_changing_a_global_dict_inside_a_tensor_loop_matches_eager():
    f = ta.function(loop_calls_a_function_changing_a_global_dict)
    want = torch.tensor(0.0)
    for n in (3, 1, 4):
        x = torch.tensor([1.0, 2.0])
        torch.testing.assert_close(f(x, torch.tensor(n)), x * 2)
        want = want + sum(x.sum() * i for i in range(n))
        assert not isinstance(TOTALS["n"], Traced)
        torch.testing.assert_close(TOTALS["n"], want)


class Box:
    def __init__(self, v, w):
        self.v, self.w = v, w


def returns_an_object_holding_tensors(x):
    return Box(x * 2, [x.sum(), 3])


def test_a_returned_object_holding_tensors_is_new_at_each_call_with_its_values():
    f = ta.function(returns_an_object_holding_tensors)
    seen = []
    for i in range(3):
        x = torch.full((2,), float(i))
        got, want = f(x), returns_an_object_holding_tensors(x)
        assert type(got) is Box and got not in seen
        seen.append(got)
        torch.testing.assert_close(got.v, want.v)
        torch.testing.assert_close(got.w, want.w)


def _changes_one_entry(d, o):
    def f(x):
        d["a"] = x * 2
        o.a = x * 3
        return x + 1
    return f


def test_entries_the_trace_did_not_change_keep_what_the_caller_put_there_between_calls():
    # The write-back replaced the whole dict and every attribute with their contents at the end of the trace:
    # `d["b"] = 2` by the caller between two calls was undone by the second call, silently.
    states = [({"a": torch.zeros(2), "b": 1}, types.SimpleNamespace(a=torch.zeros(2), b=1)) for _ in range(2)]
    fns = [_changes_one_entry(*states[0]), ta.function(_changes_one_entry(*states[1]))]
    for i in range(3):
        for (d, o), fn in zip(states, fns):
            d["b"], o.b, o.c = i + 2, [i], i
            fn(torch.full((2,), float(i)))
        _assert_same_state(states[1][0], states[0][0])
        _assert_same_state(vars(states[1][1]), vars(states[0][1]))
    assert states[1][0]["b"] == 4 and states[1][1].c == 2


class Holder:
    def __init__(self, cache):
        self.cache = cache
        self.state = {"h": torch.zeros(())}


def _replaces_containers(m, lst, d):
    def f(x):
        m.cache = [x * 2, m.cache[1] + x]
        m.state = {"h": x.sum() + m.state["h"]}
        lst[0] = lst[0] + x
        d["sub"] = {"a": d["sub"]["a"] + x}
        return x + 1
    return f


def _containers(cache):
    return Holder(cache), [torch.zeros(2)], {"sub": {"a": torch.zeros(2)}}


@pytest.mark.parametrize("cache, traces", [([torch.zeros(2), torch.ones(2)], 1), ([0, torch.ones(2)], 2)])
def test_a_container_the_trace_itself_replaces_at_every_call_does_not_trace_again(cache, traces):
    # Each call writes new containers (and a new tensor into a list item); they were guarded by identity, so
    # every call traced again. What the trace could see of them is checked instead: their structure, Python
    # values and tensor types (the tensors it reads are read at each call). A first trace that saw another
    # structure (a Python 0 where each call then stores a tensor) traces once more.
    states = [_containers(list(cache)) for _ in range(2)]
    eager, f = _replaces_containers(*states[0]), ta.function(_replaces_containers(*states[1]))
    for i in range(4):
        x = torch.full((2,), float(i))
        torch.testing.assert_close(f(x), eager(x))
        for got, want in zip(states[1], states[0]):
            _assert_same_state(vars(got) if isinstance(got, Holder) else got,
                               vars(want) if isinstance(want, Holder) else want)
    assert f.experimental_get_tracing_count() == traces


def test_a_container_the_caller_replaces_with_other_contents_traces_again_naming_it():
    states = [_containers([torch.zeros(2), torch.ones(2)]) for _ in range(2)]
    eager, f = _replaces_containers(*states[0]), ta.function(_replaces_containers(*states[1]))
    three = [torch.zeros(2), torch.ones(2), torch.zeros(2)]
    for i, new in enumerate((None, three, three, [0, torch.ones(2)])):
        for m, _, _ in states:
            if new is not None:  # (one more item; the same structure again; a Python number for a tensor)
                m.cache = list(new)
        x = torch.full((2,), float(i))
        torch.testing.assert_close(f(x), eager(x))
        _assert_same_state(vars(states[1][0]), vars(states[0][0]))
    assert f.experimental_get_tracing_count() == 3
    reasons = [" ".join(e.reasons) for e in f.trace_history()]
    assert "Holder.cache holds other contents than when it was traced" in reasons[1], reasons


def _logs_then_fails(log):
    def f(x, i):
        log.append(x.sum())
        return x + torch.arange(3)[i]  # fails for i out of range, as the graph runs
    return f


def test_effects_made_before_a_run_time_error_stay_as_eagerly():
    logs = [[], []]
    fns = [_logs_then_fails(logs[0]), ta.function(_logs_then_fails(logs[1]))]
    for i in (1, 5):
        for fn in fns:
            try:
                fn(torch.ones(()), torch.tensor(i))
            except IndexError:
                pass
        assert len(logs[1]) == len(logs[0]), i


# ----- effects made before an op that fails as the graph runs ---------------------------------------------------
class Last:
    def __init__(self):
        self.last = torch.zeros(())


def _effects_program(kind):
    """(a function changing objects it captures around ops that fail for i out of range, those objects)."""
    log, table, box = [torch.zeros(())], {}, Last()  # (not empty: the trace of `clear_then_append` sees its clear)

    def appends(x, i):
        log.append(x.sum())
        log.append(x * 2)
        y = x + torch.arange(3)[i]  # fails for i > 2
        log.append(y)
        z = y + torch.arange(3)[i + 1]  # fails for i > 1
        log.append(z)
        return z

    def dict_entries(x, i):
        table["a"] = x + 1
        y = x + torch.arange(3)[i]
        table["a"] = y
        table["b"] = y * 2
        return y

    def attribute(x, i):
        box.last = x * 3
        y = x + torch.arange(3)[i]
        box.last = y
        return y

    def clear_then_append(x, i):
        log.clear()
        log.append(x)
        y = x + torch.arange(3)[i]
        log.append(y)
        return y

    def around_a_tensor_if(x, i):
        log.append(x + 1)
        if x.sum() > 0:
            y = x + torch.arange(3)[i]  # fails inside the `if`: only the first append stays
        else:
            y = x - 1
        log.append(y)
        return y

    def around_a_caught_failure(x, i):
        log.append(x + 1)
        try:
            y = x + torch.arange(3)[i]
        except IndexError:
            y = x * 0
        log.append(y)
        z = y + torch.arange(3)[i + 1]
        log.append(z)
        return z

    return {f.__name__: f for f in (appends, dict_entries, attribute, clear_then_append, around_a_tensor_if,
                                    around_a_caught_failure)}[kind], (log, table, box)


@pytest.mark.parametrize("kind", ["appends", "dict_entries", "attribute", "clear_then_append", "around_a_tensor_if",
                                  "around_a_caught_failure"])
def test_effects_before_the_failing_op_stay_and_those_after_it_are_not_made(kind):
    (eager, want), (fn, got) = _effects_program(kind), _effects_program(kind)
    f = ta.function(fn)
    for i in (1, 5, 0, 2, 9, 1):  # (some calls fail at the first guarded op, some at the second, some not at all)
        outcomes = []
        for g in (eager, f):
            try:
                outcomes.append(("value", g(torch.ones(()), torch.tensor(i))))
            except IndexError as e:
                outcomes.append(("raised", str(e)))
        assert [o[0] for o in outcomes] == [outcomes[0][0]] * 2, (i, outcomes)
        _assert_same_state(got[0], want[0])
        _assert_same_state(got[1], want[1])
        _assert_same_state(vars(got[2]), vars(want[2]))


def _appends_to_an_argument(log, x, i):
    log.append(x * 2)
    return x + torch.arange(3)[i]


def test_an_argument_s_list_keeps_what_was_appended_before_the_failing_op():
    want, got = [], []
    f = ta.function(_appends_to_an_argument)
    for i in (1, 5, 1):
        for fn, log in ((_appends_to_an_argument, want), (f, got)):
            try:
                fn(log, torch.ones(()), torch.tensor(i))
            except IndexError:
                pass
        _assert_same_state(got, want)


def _loop_changes_a_dict(table):
    def f(x, n):
        for j in range(n):  # the changing loop
            table["s"] = table["s"] + torch.arange(3)[j]  # fails at j == 3
        return x
    return f


def test_a_tensor_loop_changing_an_object_that_fails_inside_is_refused_at_run_time():
    # Eagerly the loop's changes before its failing iteration stay; the graph writes the entry back after the
    # loop: refused, naming the loop's line, chained to the user's error (never a silent old value).
    table = {"s": torch.zeros(())}
    f = ta.function(_loop_changes_a_dict(table))
    f(torch.ones(()), torch.tensor(2))
    torch.testing.assert_close(table["s"], torch.tensor(1.0))
    with pytest.raises(StateEffectError, match=r"raised IndexError .* inside the tensor loop at .*which changes a "
                                               r"dict that outlives the call") as info:
        f(torch.ones(()), torch.tensor(5))
    assert line_of(_loop_changes_a_dict, "# the changing loop") in str(info.value)
    assert isinstance(info.value.__cause__, IndexError)


RUNS = torch.zeros(())


class Remembers(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)
        self.seen = torch.zeros(2)

    def forward(self, x, i):
        global RUNS
        self.seen = self.lin(x).detach()
        RUNS = RUNS + 1
        y = self.seen + torch.arange(3)[i]  # fails for i > 2
        self.seen = y
        return y


def test_a_module_attribute_and_a_global_set_before_the_failing_op_stay():
    global RUNS
    torch.manual_seed(0)
    eager, staged = Remembers(), Remembers()
    staged.load_state_dict(eager.state_dict())
    f = ta.function(staged.forward)
    for i in (1, 5, 0, 7):
        for fn, m in ((eager.forward, eager), (f, staged)):
            before = RUNS.clone()
            try:
                fn(torch.ones(2), torch.tensor(i))
            except IndexError:
                pass
            m.runs = RUNS - before
        _assert_same_state(staged.seen, eager.seen)
        _assert_same_state(staged.runs, eager.runs)
