"""nest: torch's pytree walks the structures (tuple, list, dict, namedtuple, registered dataclasses, ModelOutput)."""

import collections
import dataclasses

import pytest
import torch
import torch.utils._pytree as pytree

import torch_autograph as ta
from torch_autograph import nest

NT = collections.namedtuple("NT", "x y")


@dataclasses.dataclass
class DC:
    a: int
    b: list


pytree.register_dataclass(DC)


@dataclasses.dataclass
class Unregistered:
    a: int


def test_flatten_and_pack_round_trip_as_pytree():
    s = {"b": [1, (2, 3)], "a": NT(4, DC(5, [6])), "c": None}
    flat = nest.flatten(s)
    assert flat == pytree.tree_leaves(s) == [1, 2, 3, 4, 5, 6, None]  # insertion order, None a leaf
    packed = nest.pack_sequence_as(s, [v if v is None else v * 10 for v in flat])
    assert packed == {"b": [10, (20, 30)], "a": NT(40, DC(50, [60])), "c": None}
    assert list(packed) == ["b", "a", "c"]


def test_children_sort_a_mapping_and_rebuild_keeps_its_order():
    assert nest.children({3: "b", 1: "a"}) == [(1, "a"), (3, "b")]
    assert [k for k, _ in nest.children({"a": 1, 2: "b"})] in (["a", 2], [2, "a"])  # mixed key types still sort
    rebuilt = nest.rebuild({3: "b", 1: "a"}, {1: "A", 3: "B"})
    assert rebuilt == {3: "B", 1: "A"} and list(rebuilt) == [3, 1]
    assert nest.children(NT(1, 2)) == [("x", 1), ("y", 2)]
    assert nest.children(DC(1, [2])) == [("a", 1), ("b", [2])]
    assert nest.rebuild(DC(1, [2]), {"a": 5, "b": 6}) == DC(5, 6)


def test_structure_signature_ignores_dict_order_only():
    assert nest.same_structure({"a": 1, "b": (2,)}, {"b": (3,), "a": 4})
    assert not nest.same_structure([1, 2], (1, 2))
    assert not nest.same_structure(NT(1, 2), (1, 2))
    assert nest.leaves_like({"a": 1, "b": (2,)}, {"b": (3,), "a": 4}) == [4, 3]
    hash(nest.structure_signature({"a": [1, NT(2, 3)], "d": DC(1, 2)}))


def test_leaves():
    t = torch.ones(2)
    for leaf in (t, "str", 3, None, ta.TensorSpec([None]), Unregistered(1)):
        assert nest.flatten(leaf) == [leaf]
        assert nest.map_structure(lambda v: "leaf", leaf) == "leaf"


def test_model_output_is_a_structure():
    transformers = pytest.importorskip("transformers")
    out = transformers.modeling_outputs.BaseModelOutput(last_hidden_state=torch.ones(1), hidden_states=None)
    assert nest.flatten(out) == pytree.tree_leaves(out)
    packed = nest.pack_sequence_as(out, [torch.zeros(1)])
    assert type(packed) is type(out) and torch.equal(packed.last_hidden_state, torch.zeros(1))


def test_map_structure_and_paths():
    s = [NT(1, 2), {"k": 3}]
    assert nest.map_structure(lambda v: v + 1, s) == [NT(2, 3), {"k": 4}]
    assert list(nest.iter_with_paths(s)) == [((0, "x"), 1), ((0, "y"), 2), ((1, "k"), 3)]


def test_pack_with_too_many_leaves():
    with pytest.raises(ValueError, match="3 values for a structure of 2 leaves"):
        nest.pack_sequence_as([1, 2], [1, 2, 3])


def test_branches_and_loop_bodies_may_list_a_dicts_keys_in_another_order():
    def branch(x):
        if x.sum() > 0:
            d = {"a": x + 1, "b": x * 2}
        else:
            d = {"b": x - 1, "a": x * 3}
        return d["a"] - d["b"]

    def loop(x, n):
        d = {"a": x, "b": x * 0}
        for _ in range(n):
            d = {"b": d["b"] + d["a"], "a": d["a"] * 2}
        return d

    f, g = ta.function(branch), ta.function(loop)
    for x in (torch.ones(2), -torch.ones(2)):
        torch.testing.assert_close(f(x), branch(x))
    n = torch.tensor(3)
    want = loop(torch.ones(2), 3)
    got = g(torch.ones(2), n)
    assert set(got) == set(want)  # the keys in the order before the loop (the graph cannot know if it ran)
    for k in want:
        torch.testing.assert_close(got[k], want[k])


def test_a_tensor_array_is_a_pytree_node():
    arr = ta.TensorArray(torch.float32, size=2).write(0, torch.ones(1)).write(1, torch.zeros(1))
    leaves, spec = pytree.tree_flatten(arr)
    assert len(leaves) == 2
    torch.testing.assert_close(pytree.tree_unflatten(leaves, spec).stack(), arr.stack())


class Scaled:
    """A container registered with pytree whose context (its mode) is not a child."""

    def __init__(self, t, mode):
        self.t, self.mode = t, mode


pytree.register_pytree_node(Scaled, lambda s: ([s.t], s.mode), lambda kids, mode: Scaled(kids[0], mode))


def test_a_registered_containers_context_is_part_of_the_trace_type():
    def fn(s):
        return s.t * 2 if s.mode == "double" else s.t

    f = ta.function(fn, autograph=False)
    x = torch.randn(3)
    torch.testing.assert_close(f(Scaled(x, "double")), x * 2)
    torch.testing.assert_close(f(Scaled(x, "same")), x)  # another context: another trace, not the first one's
    assert f.experimental_get_tracing_count() == 2
    cf = f.get_concrete_function(Scaled(x, "double"))
    with pytest.raises(TypeError, match="structure"):
        cf(Scaled(x, "same"))


@pytest.mark.parametrize("obj", [(), [], (1, 2.0, None), [torch.ones(2), True, "a"], (torch.zeros(()),)])
def test_plain_tuples_and_lists_take_the_short_path_to_the_same_answers(obj):
    # the short path for tuples and lists of plain leaves gives what torch's pytree gives
    spec = pytree.tree_structure(obj)
    assert nest.structure_signature(obj) == nest._canonical(spec)
    assert nest.flatten(obj) == pytree.tree_leaves(obj)
    assert type(nest.pack_sequence_as(obj, nest.flatten(obj))) is type(pytree.tree_unflatten(pytree.tree_leaves(obj), spec))
    assert nest.leaves_like(obj, obj) == pytree.tree_leaves(obj)
    with pytest.raises(ValueError, match="values for a structure of"):
        nest.pack_sequence_as(obj, [1] * (len(obj) + 1))
