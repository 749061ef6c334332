"""ta.Variable: creation, reads, assign* eagerly and in graphs (program order), errors, singleton rule."""

import re

import numpy as np
import pytest
import torch

import torch_autograph as ta
from torch_autograph.errors import OperatorNotAllowedInGraphError

HERE = __file__.rsplit("/", 1)[-1]


def test_attributes_and_tensor_behaviour():
    v = ta.Variable([1.0, 2.0], name="a")
    assert v.name == "a:0" and ta.Variable(1).name == "Variable:0"
    assert v.shape == torch.Size([2]) and v.dtype == torch.float32 and v.device == torch.device("cpu")
    assert v.trainable and not ta.Variable(1.0, trainable=False).trainable
    ref = torch.tensor([1.0, 2.0])
    torch.testing.assert_close(v + 1, ref + 1)
    torch.testing.assert_close(1 - v, 1 - ref)
    torch.testing.assert_close(torch.exp(v), torch.exp(ref))
    torch.testing.assert_close(v @ v, ref @ ref)
    torch.testing.assert_close(v.sum(), ref.sum())
    torch.testing.assert_close(torch.stack([v, ref]), torch.stack([ref, ref]))
    np.testing.assert_allclose(v.numpy(), [1.0, 2.0])
    assert ta.Variable(3).dtype == torch.int64
    assert ta.Variable(3, dtype=torch.float64).dtype == torch.float64


def test_copy_is_independent_and_read_value_is_a_snapshot():
    v = ta.Variable([1.0, 2.0])
    w = ta.Variable(v)
    snap = v.read_value()
    v.assign([5.0, 6.0])
    torch.testing.assert_close(w.read_value(), torch.tensor([1.0, 2.0]))
    torch.testing.assert_close(snap, torch.tensor([1.0, 2.0]))
    torch.testing.assert_close(v.read_value(), torch.tensor([5.0, 6.0]))


def test_assign_family_eager():
    v = ta.Variable([1.0, 2.0])
    assert v.assign_add([1, 1]) is v  # ints into a float Variable are cast
    torch.testing.assert_close(v.read_value(), torch.tensor([2.0, 3.0]))
    v.assign_sub(torch.tensor(1.0))  # broadcast scalar delta
    torch.testing.assert_close(v.read_value(), torch.tensor([1.0, 2.0]))
    assert v.assign([0.0, 0.0], read_value=False) is None
    v[1].assign(7.0)
    v[0].assign_add(2.0)
    torch.testing.assert_close(v.read_value(), torch.tensor([2.0, 7.0]))
    with pytest.raises(TypeError, match=r"v\[index\]\.assign"):
        v[0] = 1.0


def test_assign_errors_name_shapes_dtypes_and_line():
    v = ta.Variable([1.0, 2.0], name="a")
    with pytest.raises(ValueError, match=re.escape("Cannot assign value to variable 'a:0': Shape mismatch. The "
                                                   "variable shape (2,), and the assigned value shape (3,) are "
                                                   "incompatible")):
        v.assign([1.0, 2.0, 3.0])
    n = ta.Variable(3, name="n")
    with pytest.raises(TypeError, match=r"Cannot convert 1\.5 to a tensor of dtype torch\.int64"):
        n.assign(1.5)
    with pytest.raises(TypeError, match=r"torch\.float32 to Variable 'n:0' of dtype torch\.int64"):
        n.assign(torch.tensor(2.0))
    with pytest.raises(TypeError, match=r"Cannot convert \['x', 'y'\]"):
        v.assign(["x", "y"])

    @ta.function
    def bad():
        v.assign(torch.zeros(3))
        return v.read_value()

    with pytest.raises(ValueError, match=rf"shape \(3,\) are incompatible at .*{HERE}:\d+"):
        bad()


def test_none_dims_allow_shape_change():
    v = ta.Variable([1.0, 2.0], shape=[None])
    v.assign([1.0, 2.0, 3.0])
    torch.testing.assert_close(v.read_value(), torch.tensor([1.0, 2.0, 3.0]))


def test_program_order_in_graph():
    v = ta.Variable(0)

    @ta.function
    def f():
        v.assign(1)
        v.assign_add(10)
        return v.read_value()

    assert f().item() == 11 and f().item() == 11
    g = f.get_concrete_function().graph
    assert [n.op.name for n in g.nodes if n.stateful] == ["assign", "assign_add"]


def test_reads_see_earlier_assigns_and_variables_persist():
    v = ta.Variable(torch.zeros(3))

    @ta.function
    def step(x):
        before = v * 1
        v.assign_add(x)
        v[0].assign(v[0] * 2)
        return before, v.read_value()

    def eager(x, state):
        before = state.clone()
        state += x
        state[0] = state[0] * 2
        return before, state.clone()

    state = torch.zeros(3)
    for i in range(4):
        x = torch.tensor([1.0, 2.0, 3.0]) * (i + 1)
        got, want = step(x), eager(x, state)
        torch.testing.assert_close(got[0], want[0])
        torch.testing.assert_close(got[1], want[1])
    torch.testing.assert_close(v.read_value(), state)
    assert step.experimental_get_tracing_count() == 1


def test_variable_argument_keyed_by_identity_and_returned_as_tensor():
    @ta.function
    def double(var):
        var.assign(var * 2)
        return var

    a, b = ta.Variable(1.0), ta.Variable(5.0)
    out = double(a)
    assert isinstance(out, torch.Tensor) and out.item() == 2.0
    assert double(b).item() == 10.0 and double(a).item() == 4.0
    assert double.experimental_get_tracing_count() == 2


def test_numpy_inside_trace_is_a_clear_error():
    v = ta.Variable(1.0, name="counter")

    @ta.function
    def f():
        return v.numpy()

    with pytest.raises(OperatorNotAllowedInGraphError, match=rf"counter\.numpy\(\) is not allowed while tracing at "
                                                              rf".*{HERE}:\d+"):
        f()


def test_gradient_through_variable_in_graph_matches_eager():
    w = ta.Variable([1.0, -2.0, 3.0])

    @ta.function
    def loss(x):
        return (w * x).pow(2).sum()

    x = torch.tensor([0.5, 1.0, 2.0])
    loss(x).backward()
    ref = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    (ref * x).pow(2).sum().backward()
    torch.testing.assert_close(w.grad, ref.grad)


class Model:
    def __init__(self):
        self.v = None

    @ta.function
    def create_once(self, x):
        if self.v is None:
            self.v = ta.Variable(torch.ones(()) * 3)  # built by graph ops: evaluated once, now
        return self.v.assign_add(x).read_value()


def test_create_when_none_pattern_works():
    m = Model()
    assert m.create_once(torch.tensor(1.0)).item() == 4.0
    assert m.create_once(torch.tensor(1.0)).item() == 5.0
    assert m.create_once(torch.tensor(1.0, dtype=torch.float64)).item() == 6.0  # a new trace creates nothing
    assert m.create_once.experimental_get_tracing_count() == 2


def test_creating_on_every_call_is_the_singleton_error():
    @ta.function
    def f(x):
        v = ta.Variable(1.0)
        return v + x

    with pytest.raises(ValueError, match=r"only supports singleton ta\.Variables created on the first call.*"
                                         rf"{HERE}:\d+"):
        f(torch.tensor(1.0))


def test_creating_on_a_later_trace_is_an_error():
    holder = {}

    @ta.function
    def f(x):
        if x.shape[0] == 2 and "v" not in holder:
            holder["v"] = ta.Variable(0.0)
        return x * 2

    f(torch.ones(1))
    with pytest.raises(ValueError, match=rf"Creating variables on a non-first call to a function decorated with "
                                         rf"ta\.function.*{HERE}:\d+"):
        f(torch.ones(2))
