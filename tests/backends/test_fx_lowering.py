"""`ConcreteFunction.to_fx()`: a torch.fx.GraphModule that matches eager, keeps captures by reference, and exports."""

import pytest
import torch

import torch_autograph as ta
from torch_autograph.errors import GraphLoweringError

torch.manual_seed(0)
LIN = torch.nn.Linear(4, 3)
SCALE = torch.full((3,), 2.0)
X = torch.randn(2, 4)


def _mlp(x):
    return torch.relu(LIN(x)) * SCALE


def _branchy(x):
    y = LIN(x)
    if y.sum() > 0:
        z = y * 2
    else:
        z = torch.sin(y)
    with torch.no_grad():
        w = z + 1
    return z, w


def test_placeholders_are_the_inputs_and_captures_are_parameters_and_buffers():
    gm = ta.function(_mlp).get_concrete_function(X).to_fx()
    assert isinstance(gm, torch.fx.GraphModule)
    assert [n.target for n in gm.graph.nodes if n.op == "placeholder"] == ["x"]
    assert dict(gm.named_parameters()) == {"linear_weight": LIN.weight, "linear_bias": LIN.bias}
    assert [t is SCALE for t in dict(gm.named_buffers()).values()] == [True]
    torch.testing.assert_close(gm(X)[0], _mlp(X))
    with torch.no_grad():
        SCALE.mul_(3)  # captured by reference: the module sees the update
    try:
        torch.testing.assert_close(gm(X)[0], _mlp(X))
    finally:
        with torch.no_grad():
            SCALE.div_(3)


def test_gradients_flow_to_inputs_and_parameters():
    gm = ta.function(_mlp).get_concrete_function(X).to_fx()
    x = X.clone().requires_grad_()
    gm(x)[0].sum().backward()
    got = x.grad, LIN.weight.grad.clone()
    x.grad = None
    LIN.weight.grad = None
    _mlp(x).sum().backward()
    torch.testing.assert_close(got[0], x.grad)
    torch.testing.assert_close(got[1], LIN.weight.grad)
    LIN.weight.grad = None


def test_torch_export_accepts_it():
    gm = ta.function(_mlp).get_concrete_function(X).to_fx()
    ep = torch.export.export(gm, (X,))
    torch.testing.assert_close(ep.module()(X)[0], _mlp(X))


def test_cond_becomes_the_cond_higher_order_op_and_grad_regions_are_kept():
    cf = ta.function(_branchy).get_concrete_function(X)
    gm = cf.to_fx()
    # The op torch.cond records: calling torch.cond itself would run dynamo, whose process-wide cache made a
    # compile depend on earlier ones (tests/backends/test_jit_fallback.py).
    assert torch.ops.higher_order.cond in [n.target for n in gm.graph.nodes]
    for x in (X, -X, X * 10, -X * 10):
        got, want = gm(x), _branchy(x)
        torch.testing.assert_close(got, want)
        assert got[1].requires_grad is False and got[0].requires_grad is True
    ep = torch.export.export(gm, (X,))
    assert "torch.ops.higher_order.cond" in str(ep.graph_module.code)
    torch.testing.assert_close(ep.module()(-X)[0], _branchy(-X)[0])


def test_multiple_outputs_of_one_call_are_unpacked():
    def f(x):
        values, indices = torch.max(x, dim=1)
        a, b = torch.split(x, 2, dim=1)
        return values, indices, a * b

    gm = ta.function(f).get_concrete_function(X).to_fx()
    for got, want in zip(gm(X), f(X)):
        torch.testing.assert_close(got, want)


def _counting(x, n):
    i = 0
    while i < n:
        x = x * 2
        i += 1
    return x


def test_a_while_loop_is_a_clear_error_naming_the_node_and_line():
    cf = ta.function(_counting).get_concrete_function(X, torch.tensor(3))
    line = _counting.__code__.co_firstlineno + 2
    with pytest.raises(GraphLoweringError) as e:
        cf.to_fx()
    msg = str(e.value)
    assert "`while` loop has no torch.fx lowering" in msg
    assert f'test_fx_lowering.py", line {line}' in msg
    assert "Fix:" in msg


def test_a_branch_with_an_update_is_a_clear_error():
    v = ta.Variable(0.0, trainable=False)

    def f(x):
        if x.sum() > 0:
            v.assign_add(1.0)
        return x + v

    cf = ta.function(f).get_concrete_function(X)
    with pytest.raises(GraphLoweringError, match=r"stateful op assign_add .*torch.cond branches cannot mutate"):
        cf.to_fx()


class _KeepsAMask(torch.nn.Module):
    """pytorch/examples' TransformerModel: the first call stores `mask.to(device)` on the module, the second
    trace captures it under the name of the op that made it."""

    def __init__(self):
        super().__init__()
        self.src_mask = None

    def forward(self, x):
        if self.src_mask is None:
            self.src_mask = torch.tril(torch.ones(3, 3)).to(x.device)
        return x @ self.src_mask


def test_captures_named_like_module_attributes_get_their_own_names():
    m = _KeepsAMask()
    f = ta.function(m)
    x = torch.randn(2, 3)
    f(x)
    cf = f.get_concrete_function(x)
    gm = cf.to_fx()
    torch.testing.assert_close(gm(x)[0], x @ torch.tril(torch.ones(3, 3)))
    assert [t is cf.graph.captures[0][1] for t in dict(gm.named_buffers()).values()] == [True]
    # The module's tensor is now read at each call, and its capture in the kept graph need not be named `to`;
    # the name a capture gets on the fx module never takes one of nn.Module's own (register_buffer raised KeyError).
    from torch_autograph.backends.fx_lowering import _fresh_attr

    root = torch.nn.Module()
    assert _fresh_attr(root, "to") == "to_1" and _fresh_attr(root, "train") == "train_1"
    assert _fresh_attr(root, "x.0") == "x_0"
