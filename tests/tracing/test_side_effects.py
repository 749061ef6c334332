"""Python side effects happen at trace time only; ta.print, Variables and in-place ops run at every call."""

import torch

import torch_autograph as ta


def test_print_and_append_run_once_per_trace_ta_print_every_call(capsys):
    seen = []

    @ta.function
    def f(x):
        print("traced")
        seen.append(1)
        ta.print("running", x)
        return x + 1

    for v in (1.0, 2.0, 3.0):
        f(torch.tensor(v))
    out = capsys.readouterr().out
    assert out.count("traced") == 1 and seen == [1]
    assert out.count("running") == 3 and "running tensor(3.)" in out


def test_counter_guard_pitfall_gives_1_2_3():
    v = ta.Variable(0)
    state = {"counter": 0}

    @ta.function
    def f():
        if state["counter"] == 0:  # read at trace time only: the assign is in the graph for good
            state["counter"] += 1
            v.assign_add(1)
        return v.read_value()

    assert [f().item() for _ in range(3)] == [1, 2, 3]


def test_init_scope_lifts_the_guarded_code_out_gives_1_1_1():
    v = ta.Variable(0)
    state = {"counter": 0}

    @ta.function
    def f():
        if state["counter"] == 0:
            state["counter"] += 1
            with ta.init_scope():
                v.assign_add(1)  # runs once, while tracing
        return v.read_value()

    assert [f().item() for _ in range(3)] == [1, 1, 1]


def test_python_iterator_is_frozen_at_trace_time():
    it = iter([1, 2, 3])

    @ta.function
    def f():
        return torch.tensor(next(it))

    assert [f().item() for _ in range(3)] == [1, 1, 1]


def test_in_place_updates_of_captured_tensors_run_every_call():
    total = torch.zeros(())

    @ta.function
    def add(x):
        total.add_(x)
        return total * 1

    results = [add(torch.tensor(float(i))).item() for i in (1, 2, 3)]
    assert results == [1.0, 3.0, 6.0] and total.item() == 6.0


def test_variable_updates_inside_called_functions_keep_program_order():
    v = ta.Variable(1.0)

    def helper():
        v.assign(v * 3)

    @ta.function
    def f():
        v.assign_add(1.0)
        helper()
        return v.read_value()

    assert f().item() == 6.0 and f().item() == 21.0


def test_ta_print_shows_values_of_tensors_that_require_grad(capsys):
    w = torch.ones(2, requires_grad=True)

    @ta.function
    def f(x):
        ta.print("scaled", w * x, [w.sum()], {"w": w})
        return x

    f(torch.full((2,), 3.0))
    assert capsys.readouterr().out == "scaled tensor([3., 3.]) [tensor(2.)] {'w': tensor([1., 1.])}\n"
