"""Exported programs take and return the function's own structures, as torch.export does (eager is the truth)."""

import collections
import dataclasses

import pytest
import torch
import torch.utils._pytree as pytree

import torch_autograph as ta
from torch_autograph.errors import GraphLoweringError

NT = collections.namedtuple("NT", "a b")


@dataclasses.dataclass
class DC:
    x: torch.Tensor
    y: torch.Tensor


pytree.register_dataclass(DC)

ROWS = ta.TensorSpec([None, 3])
OUTPUTS = {
    "tensor": lambda x: x * 2,
    "tuple": lambda x: (x + 1, x * 3),
    "dict": lambda x: {"b": x + 1, "a": x.sum(0)},
    "namedtuple": lambda x: NT(x, x.cos()),
    "nested": lambda x: {"p": [x, (x * 2, NT(x + 1, x.sum()))], "q": None},
    "dataclass": lambda x: DC(x, x - 1),
}


def assert_same(got, want):
    assert pytree.tree_structure(got) == pytree.tree_structure(want), (got, want)
    for g, w in zip(pytree.tree_leaves(got), pytree.tree_leaves(want)):
        if isinstance(w, torch.Tensor):
            torch.testing.assert_close(g, w)
        else:
            assert g == w


@pytest.mark.parametrize("kind", sorted(OUTPUTS))
def test_the_program_returns_what_the_function_returns(kind):
    fn = OUTPUTS[kind]
    ep = ta.function(fn, input_signature=[ROWS], autograph=False).get_concrete_function().export()
    module = ep.module()
    for n in (2, 5):
        x = torch.randn(n, 3)
        assert_same(module(x), fn(x))


def test_structured_arguments_and_a_python_argument_fixed_to_its_traced_value():
    def fn(d, pair, n=2):
        return {"s": d["a"] * n + d["b"], "t": pair.a - pair.b}

    d = {"b": torch.ones(4, 3), "a": torch.randn(4, 3)}
    pair = NT(torch.randn(4, 3), torch.randn(4, 3))
    ep = ta.export(ta.function(fn, autograph=False), d, pair)
    assert_same(ep.module()(d, pair), fn(d, pair))
    other = {"b": torch.randn(4, 3), "a": torch.randn(4, 3)}
    assert_same(ep.module()(other, pair), fn(other, pair))


def test_python_numbers_in_the_result():
    def fn(x):
        return x + 1, x.size(0), 7

    f = ta.function(fn, input_signature=[ROWS], autograph=False)
    ep = f.get_concrete_function().export()
    x = torch.randn(4, 3)
    assert_same(ep.module()(x), f(x))  # as a call: numbers come back as tensors
    got = ep.module()(x)
    assert int(got[1]) == 4 and int(got[2]) == 7


def test_flat_export_keeps_the_flat_tuple():
    fn = OUTPUTS["dict"]
    ep = ta.function(fn, input_signature=[ROWS], autograph=False).get_concrete_function().export(flat=True)
    x = torch.randn(3, 3)
    got = ep.module()(x)
    assert isinstance(got, tuple) and len(got) == 2
    want = fn(x)
    torch.testing.assert_close(got[0], want["b"])
    torch.testing.assert_close(got[1], want["a"])


def test_a_saved_program_keeps_the_structure(tmp_path):
    ep = ta.function(lambda x: {"p": [x, (x * 2,)], "q": None}, input_signature=[ROWS],
                     autograph=False).get_concrete_function().export()
    torch.export.save(ep, tmp_path / "p.pt2")
    x = torch.randn(5, 3)
    assert_same(torch.export.load(tmp_path / "p.pt2").module()(x), {"p": [x, (x * 2,)], "q": None})


def test_a_function_changing_python_objects_is_refused_unless_flat():
    seen = []

    def fn(x):
        seen.append(x * 2)
        return x + 1

    cf = ta.function(fn, input_signature=[ROWS], autograph=False).get_concrete_function()
    assert cf.effects is not None  # the append to the captured list is replayed at every call
    with pytest.raises(GraphLoweringError, match="changes Python objects"):
        cf.export()


def test_a_model_output_a_library_registers_with_pytree():
    outputs = pytest.importorskip("transformers.modeling_outputs")

    def fn(x):
        return outputs.BaseModelOutput(last_hidden_state=x * 2, hidden_states=None, attentions=(x.sum(),))

    ep = ta.function(fn, input_signature=[ROWS], autograph=False).get_concrete_function().export()
    x = torch.randn(4, 3)
    got, want = ep.module()(x), fn(x)
    assert type(got) is type(want) and list(got.keys()) == list(want.keys())
    assert_same(got, want)
