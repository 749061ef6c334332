"""Variables updated with numbers known only when the graph runs (a `range(tensor)` counter, `int(t)`), vs eager."""

import torch

import torch_autograph as ta


def make_programs(v):
    def add_counter(n):
        for i in range(n):  # the guide's pattern: `n` a tensor, `i` a run-time int
            v.assign_add(i)
        return v.read_value()

    def sub_scaled_counter(n):
        for i in range(1, n, 2):
            v.assign_sub(i * 2)
        return v.read_value()

    def assign_from_int_and_float(t):
        k = int(t)
        v.assign(k * 3)
        v.assign_add(float(t) / 2)
        return v.read_value()

    def while_counter(n):
        i = 0
        while i < n:
            v.assign_add(i)
            i += 1
        return v.read_value()

    return add_counter, sub_scaled_counter, assign_from_int_and_float, while_counter


def test_variable_updates_with_run_time_numbers_match_eager():
    eager_v, graph_v = ta.Variable(torch.zeros(())), ta.Variable(torch.zeros(()))
    for eager, graph in zip(make_programs(eager_v), make_programs(graph_v)):
        traced = ta.function(graph)
        for n in (torch.tensor(4), torch.tensor(1), torch.tensor(7)):
            expected, got = eager(n), traced(n)
            torch.testing.assert_close(got, expected, rtol=0, atol=0)
            torch.testing.assert_close(graph_v.read_value(), eager_v.read_value(), rtol=0, atol=0)
