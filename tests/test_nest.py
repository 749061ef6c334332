"""nest: flatten / pack of tuple, list, dict, namedtuple, dataclass."""

import collections
import dataclasses

import pytest
import torch

import torch_autograph as ta
from torch_autograph import nest

NT = collections.namedtuple("NT", "x y")


@dataclasses.dataclass
class DC:
    a: int
    b: list


def test_flatten_and_pack_round_trip():
    s = {"b": [1, (2, 3)], "a": NT(4, DC(5, [6])), "c": None}
    flat = nest.flatten(s)
    assert flat == [4, 5, 6, 1, 2, 3, None]  # dict keys in sorted order
    packed = nest.pack_sequence_as(s, [v if v is None else v * 10 for v in flat])
    assert packed == {"b": [10, (20, 30)], "a": NT(40, DC(50, [60])), "c": None}
    assert list(packed) == ["b", "a", "c"]  # packed back in the original key order


def test_dict_key_order_is_irrelevant_to_flatten():
    assert nest.flatten({1: "a", 3: "b"}) == nest.flatten({3: "b", 1: "a"})
    assert nest.flatten({"a": 1, 2: "b"}) in ([1, "b"], ["b", 1])  # mixed key types still sort


def test_leaves():
    t = torch.ones(2)
    for leaf in (t, "str", torch.Size([1, 2]), 3, None, ta.TensorSpec([None])):
        assert nest.flatten(leaf) == [leaf]
        assert nest.map_structure(lambda v: "leaf", leaf) == "leaf"


def test_map_structure_and_paths():
    s = [NT(1, 2), {"k": 3}]
    assert nest.map_structure(lambda v: v + 1, s) == [NT(2, 3), {"k": 4}]
    assert list(nest.iter_with_paths(s)) == [((0, "x"), 1), ((0, "y"), 2), ((1, "k"), 3)]


def test_pack_with_too_many_leaves():
    with pytest.raises(ValueError, match="1 leaves left over"):
        nest.pack_sequence_as([1, 2], [1, 2, 3])
