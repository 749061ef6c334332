"""A trace guards the modules, parameters and buffers it read: replacing one (`setattr`, `m[0] = ...`,
`load_state_dict(assign=True)`, `del`) makes the next call trace again, with the reason in `trace_history()`;
in-place updates (`load_state_dict` without assign, `p.data.copy_`) are read by reference and need none.

Each case runs eagerly and through the `ta.function` on the same module, over several calls.
"""

import pytest
import torch
import torch.nn as nn

import torch_autograph as ta


def _reasons(f):
    return [r for e in f.trace_history() for r in e.reasons]


def _same(f, fn, x):
    torch.testing.assert_close(f(x), fn(x), rtol=0, atol=0)


X = torch.ones(3, 2)


def test_replacing_a_submodule_of_a_sequential_traces_again():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    fn = lambda x: m(x)  # noqa: E731
    f = ta.function(fn)
    _same(f, fn, X)
    _same(f, fn, X)
    m[0] = nn.Linear(2, 2)
    _same(f, fn, X)
    _same(f, fn, X)
    assert f.experimental_get_tracing_count() == 2
    assert any("Sequential" in r and "'0'" in r and "replaced" in r for r in _reasons(f)), _reasons(f)


def test_replacing_a_parameter_or_a_buffer_by_setattr_traces_again():
    torch.manual_seed(0)
    bn = nn.BatchNorm1d(2).eval()
    lin = nn.Linear(2, 2)
    fn = lambda x: bn(lin(x))  # noqa: E731
    f = ta.function(fn)
    _same(f, fn, X)
    lin.weight = nn.Parameter(torch.randn(2, 2))
    _same(f, fn, X)
    assert f.experimental_get_tracing_count() == 2
    assert any("Linear" in r and "'weight'" in r for r in _reasons(f)), _reasons(f)
    bn.running_mean = torch.full((2,), 5.0)
    _same(f, fn, X)
    assert f.experimental_get_tracing_count() == 3
    assert any("BatchNorm1d" in r and "'running_mean'" in r for r in _reasons(f)), _reasons(f)
    _same(f, fn, X)
    assert f.experimental_get_tracing_count() == 3


def test_load_state_dict_with_assign_traces_again_and_in_place_loads_do_not():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 1))
    fn = lambda x: m(x)  # noqa: E731
    f = ta.function(fn)
    _same(f, fn, X)
    sd = {k: torch.randn_like(v) for k, v in m.state_dict().items()}
    m.load_state_dict(sd)  # in place: the graph reads the same tensors
    _same(f, fn, X)
    with torch.no_grad():
        m[0].weight.data.copy_(torch.randn(3, 2))
    _same(f, fn, X)
    assert f.experimental_get_tracing_count() == 1
    sd = {k: torch.randn_like(v) for k, v in m.state_dict().items()}
    m.load_state_dict(sd, assign=True)
    _same(f, fn, X)
    _same(f, fn, X)
    assert f.experimental_get_tracing_count() == 2
    assert "replaced" in f.trace_history()[-1].reasons[0]


def test_deleting_a_submodule_or_a_parameter_traces_again_and_fails_as_eager():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2))
    fn = lambda x: m(x)  # noqa: E731
    f = ta.function(fn)
    _same(f, fn, X)
    del m[2]
    _same(f, fn, X)
    assert f.experimental_get_tracing_count() == 2
    lin = m[0]
    del lin.bias
    with pytest.raises(AttributeError, match="bias"):
        fn(X)
    with pytest.raises(AttributeError, match="bias"):
        f(X)


def test_a_submodule_called_by_index_and_a_parameter_read_directly_are_guarded():
    torch.manual_seed(0)
    m = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])
    w = nn.Linear(2, 2)
    fn = lambda x: m[1](x) @ w.weight.T  # noqa: E731
    f = ta.function(fn)
    _same(f, fn, X)
    m[1] = nn.Linear(2, 2)
    _same(f, fn, X)
    assert f.experimental_get_tracing_count() == 2
    w.weight = nn.Parameter(torch.randn(2, 2))
    _same(f, fn, X)
    assert f.experimental_get_tracing_count() == 3
    m[0] = nn.Linear(2, 2)  # not read by the trace: no retrace needed, but one is allowed; values must agree
    _same(f, fn, X)


def test_a_method_of_a_module_is_guarded_and_the_old_trace_returns_when_the_module_does():
    torch.manual_seed(0)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(2, 2)

        @ta.function
        def run(self, x):
            return self.body(x).relu()

        def eager(self, x):
            return self.body(x).relu()

    net = Net()
    torch.testing.assert_close(net.run(X), net.eager(X))
    old = net.body
    net.body = nn.Linear(2, 2)
    torch.testing.assert_close(net.run(X), net.eager(X))
    net.body = old
    torch.testing.assert_close(net.run(X), net.eager(X))
    assert net.run.experimental_get_tracing_count() == 2


def test_a_module_as_the_function_or_as_an_argument_is_guarded():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    f = ta.function(m)
    _same(f, m, X)
    m[0] = nn.Linear(2, 2)
    _same(f, m, X)
    assert f.experimental_get_tracing_count() == 2

    g = ta.function(lambda model, x: model(x))
    torch.testing.assert_close(g(m, X), m(X), rtol=0, atol=0)
    m[0].weight = nn.Parameter(torch.randn(2, 2))
    torch.testing.assert_close(g(m, X), m(X), rtol=0, atol=0)
    assert g.experimental_get_tracing_count() == 2


def test_a_module_held_by_a_plain_object_is_guarded():
    torch.manual_seed(0)

    class Holder:
        pass

    h = Holder()
    h.net = nn.Linear(2, 2)
    fn = lambda x: h.net(x)  # noqa: E731
    f = ta.function(fn)
    _same(f, fn, X)
    h.net.bias = nn.Parameter(torch.randn(2))
    _same(f, fn, X)
    assert f.experimental_get_tracing_count() == 2


def test_a_one_element_parameter_replaced_by_an_equal_one_traces_again():
    # (entries are compared by identity: a new parameter holding the same value is another parameter, which an
    # optimizer may then update in place)
    lin = nn.Linear(2, 1)
    fn = lambda x: lin(x)  # noqa: E731
    f = ta.function(fn)
    _same(f, fn, X)
    lin.bias = nn.Parameter(lin.bias.detach().clone())
    _same(f, fn, X)
    assert f.experimental_get_tracing_count() == 2
    with torch.no_grad():
        lin.bias.add_(1.0)
    _same(f, fn, X)
    assert f.experimental_get_tracing_count() == 2


class _EqualToAll(nn.Linear):
    def __eq__(self, other):
        return True

    __hash__ = nn.Linear.__hash__


def test_a_submodule_whose_class_defines_eq_is_still_compared_by_identity():
    torch.manual_seed(0)
    m = nn.Sequential(_EqualToAll(2, 2), nn.ReLU())
    fn = lambda x: m(x)  # noqa: E731
    f = ta.function(fn)
    _same(f, fn, X)
    m[0] = _EqualToAll(2, 2)
    _same(f, fn, X)
    assert f.experimental_get_tracing_count() == 2

