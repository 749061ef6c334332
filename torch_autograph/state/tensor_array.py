"""`ta.TensorArray`: TensorFlow's TensorArray, eager and inside graph loops.

`write`, `unstack`, `scatter` and `split` return the array to use next
(TF semantics: always reassign, `arr = arr.write(i, v)`). At run time the
array is a Python list of tensors, so a write costs a list store; inside a
graph it is a graph list value, carried through `cond` and `while` like any
other loop variable. Unlike TensorFlow's graph mode, forgetting to reassign
loses nothing: the old and new objects share the same storage.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
import torch.utils._pytree as pytree

from ..errors import InvalidArgumentError, OutOfRangeError
from ..graph import Effect, Op, OpKind
from ..tracing import (
    GraphList,
    ListMeta,
    ScalarMeta,
    TensorMeta,
    Traced,
    current,
    is_graph_value,
    run_or_record,
    same_dim,
    traits_of,
    user_location,
)


# ----- run-time helpers (called eagerly, or from generated graph code) --------------------------
def ta_new(size: int) -> list:
    return [None] * int(size)


def ta_write(items: list, index: int, value: torch.Tensor, dynamic: bool) -> list:
    index = int(index)
    if index < 0:
        raise OutOfRangeError(f"Tried to write to index {index} of a TensorArray")
    if index >= len(items):
        if not dynamic:
            raise OutOfRangeError(f"Tried to write to index {index} but array is not resizeable and size is: "
                                  f"{len(items)}")
        items.extend([None] * (index + 1 - len(items)))
    items[index] = value
    return items


def ta_read(items: list, index: int, like: tuple) -> torch.Tensor:
    index = int(index)
    if not 0 <= index < len(items):
        raise OutOfRangeError(f"Tried to read from index {index} but array size is: {len(items)}")
    item = items[index]
    if item is None:
        shape, dtype, device = like
        return torch.zeros(shape or (), dtype=dtype, device=device)
    return item


def ta_stack(items: list, like: tuple) -> torch.Tensor:
    shape, dtype, device = like
    present = [t for t in items if t is not None]
    if not present and shape is None:
        raise InvalidArgumentError("Tried to stack elements of an empty list with non-fully-defined element_shape: "
                                   "<unknown>")
    if not items:
        return torch.zeros((0,) + tuple(shape), dtype=dtype, device=device)
    ref = present[0] if present else torch.zeros(shape, dtype=dtype, device=device)
    return torch.stack([t if t is not None else torch.zeros_like(ref) for t in items])


def ta_size(items: list) -> int:
    return len(items)


def ta_from_tensor(value: torch.Tensor) -> list:
    return list(value.unbind(0))


def ta_gather(items: list, indices: torch.Tensor, like: tuple) -> torch.Tensor:
    idx = indices.tolist() if isinstance(indices, torch.Tensor) else list(indices)
    return torch.stack([ta_read(items, i, like) for i in idx])


def ta_concat(items: list, like: tuple) -> torch.Tensor:
    return torch.cat([t for t in items if t is not None])


class TensorArray:
    """A list of tensors of one dtype, written and read by index.

    Args:
        dtype: the element dtype.
        size: the initial number of elements (int or 0-d tensor).
        dynamic_size: allow writes past the end (the array grows).
        clear_after_read: eagerly, reading an element twice is an error (TF's default True).
        element_shape: the elements' shape, if known; otherwise fixed by the first write.
        infer_shape: fix the element shape from the first write.
    """

    def __init__(self, dtype: torch.dtype, size: Any = None, dynamic_size: bool | None = None,
                 clear_after_read: bool | None = None, tensor_array_name: str | None = None,
                 element_shape: Sequence[int] | None = None, infer_shape: bool = True, name: str | None = None,
                 _items: Any = None) -> None:
        if not isinstance(dtype, torch.dtype):
            raise TypeError(f"TensorArray dtype must be a torch.dtype, got {dtype!r}")
        self._dtype = dtype
        self._dynamic = bool(dynamic_size)
        self._clear_after_read = True if clear_after_read is None else bool(clear_after_read)
        self._element_shape = None if element_shape is None else tuple(element_shape)
        self._infer_shape = infer_shape
        self._name = name or tensor_array_name or "TensorArray"
        self._read: set[int] = set()
        if _items is not None:
            self._items = _items
        else:
            if size is None and not self._dynamic:
                raise ValueError("TensorArray needs a size unless dynamic_size=True")
            self._items = _call(ta_new, (0 if size is None else size,), _list_meta(self))

    def _with(self, items: Any) -> "TensorArray":
        new = TensorArray(self._dtype, dynamic_size=self._dynamic, clear_after_read=self._clear_after_read,
                          element_shape=self._element_shape, infer_shape=self._infer_shape, name=self._name,
                          _items=items)
        if isinstance(items, GraphList) and items._value.dtype is not None and new._element_shape is None:
            new._element_shape = items._value.shape
        return new

    # ----- properties ------------------------------------------------------------------
    @property
    def dtype(self) -> torch.dtype:
        return self._dtype

    @property
    def dynamic_size(self) -> bool:
        return self._dynamic

    @property
    def element_shape(self) -> tuple | None:
        return self._element_shape

    def _like(self) -> tuple:
        return (self._element_shape, self._dtype, None)

    # ----- writes return the array to use next ------------------------------------------
    def write(self, index: Any, value: Any) -> "TensorArray":
        """Store `value` at `index`; returns the array (reassign it: `arr = arr.write(i, v)`)."""
        value = _as_tensor(value, self._dtype)
        shape = tuple(value.shape) if value.shape is not None else None
        if self._element_shape is not None and shape is not None and not _compatible(shape, self._element_shape):
            raise ValueError(f"Incompatible shape for value ({shape}), expected ({self._element_shape})")
        new = self._with(_call(ta_write, (self._items, index, value, self._dynamic),
                               _list_meta(self, value), writes=True))
        if self._infer_shape and new._element_shape is None:
            new._element_shape = shape
        return new

    def unstack(self, value: Any) -> "TensorArray":
        """The rows of `value` (split along dim 0) as the elements."""
        value = _as_tensor(value, self._dtype)
        elem = tuple(value.shape[1:]) if value.shape is not None else None
        new = self._with(_call(ta_from_tensor, (value,), _list_meta(self, value, elem)))
        new._element_shape = elem
        return new

    def scatter(self, indices: Any, value: Any) -> "TensorArray":
        out = self
        for k, i in enumerate(indices):
            out = out.write(i, value[k])
        return out

    def split(self, value: Any, lengths: Sequence[int]) -> "TensorArray":
        """Pieces of `value` along dim 0 with the given lengths as the elements (they may differ in dim 0)."""
        out, start = self, 0
        if self._element_shape is None and value.shape is not None:
            out = self._with(self._items)
            out._element_shape = (None,) + tuple(value.shape[1:])
        for k, n in enumerate(lengths):
            out = out.write(k, value[start:start + n])
            start += n
        return out

    # ----- reads ------------------------------------------------------------------------
    def read(self, index: Any) -> Any:
        """The element at `index` (zeros of the element shape if never written)."""
        if not isinstance(self._items, Traced) and self._clear_after_read and not is_graph_value(index):
            i = int(index)
            if i in self._read:
                raise InvalidArgumentError(f"Could not read index {i} twice because it was cleared after a previous "
                                           f"read (perhaps try setting clear_after_read = false?)")
            self._read.add(i)
        return _call(ta_read, (self._items, index, self._like()), lambda: self._element_meta(()))

    def stack(self) -> Any:
        """All elements stacked along a new dim 0."""
        return _call(ta_stack, (self._items, self._like()), lambda: self._element_meta((None,)))

    def gather(self, indices: Any) -> Any:
        return _call(ta_gather, (self._items, indices, self._like()), lambda: self._element_meta((None,)))

    def concat(self) -> Any:
        return _call(ta_concat, (self._items, self._like()), lambda: self._element_meta((None,), skip=1))

    def size(self) -> Any:
        """The number of elements (a run-time int inside a graph)."""
        return _call(ta_size, (self._items,), lambda: ScalarMeta(torch.int64))

    def _element_meta(self, lead: tuple, skip: int = 0) -> TensorMeta:
        """The metadata of what reading the elements gives: `lead` dims, then the element shape from `skip`."""
        if self._element_shape is None:
            # Nothing was written in the graph: when it runs there is no element to take the shape from.
            raise InvalidArgumentError(
                f"TensorArray {self._name}: tried to read elements of a list with non-fully-defined element_shape: "
                f"<unknown> (nothing is written to it in this graph): pass element_shape= when creating it, or "
                f"write before reading{_at_user()}")
        device = self._items._value.device if isinstance(self._items, Traced) else None
        state = current()
        device = device or state.trace.entry.device
        return TensorMeta(state.trace.engine.example(lead + tuple(self._element_shape[skip:]), self._dtype, device), device)

    def identity(self) -> "TensorArray":
        return self._with(self._items)

    def close(self) -> None:
        return None

    def __repr__(self) -> str:
        return f"<ta.TensorArray {self._name} dtype={self._dtype} element_shape={self._element_shape}>"


class _Template:
    """A TensorArray's pytree context: the array its unflattened copies are made like. Every array is the same
    structure (one child, its items), whatever its element shape learnt so far: a loop body's array matches the
    one before the loop."""

    def __init__(self, arr: TensorArray) -> None:
        self.arr = arr

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Template)

    def __hash__(self) -> int:
        return hash(_Template)

    def __repr__(self) -> str:
        return "TensorArray"


# A TensorArray is a structure of its items (a loop variable, a branch output), as torch's pytree sees it.
pytree.register_pytree_node(
    TensorArray, lambda arr: ([arr._items], _Template(arr)), lambda items, t: t.arr._with(items[0]),
    flatten_with_keys_fn=lambda arr: ([(pytree.GetAttrKey("items"), arr._items)], _Template(arr)),
    serialized_type_name="torch_autograph.TensorArray")


def _at_user() -> str:
    loc = user_location()
    return f" (at {loc})" if loc else ""


def _compatible(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is None or y is None or same_dim(x, y) or not (type(x) is int and type(y) is int)
                                    for x, y in zip(a, b))


def _as_tensor(value: Any, dtype: torch.dtype) -> Any:
    if isinstance(value, torch.Tensor):
        if value.dtype != dtype:
            raise TypeError(f"TensorArray dtype is {dtype} but the value has dtype {value.dtype}")
        return value
    return torch.tensor(value, dtype=dtype)


def _list_meta(arr: TensorArray, value: Any = None, elem_shape: Any = ...) -> Any:
    def meta() -> ListMeta:
        shape = arr._element_shape if elem_shape is ... else elem_shape
        if value is not None and elem_shape is ...:
            shape = tuple(value.shape)
            if arr._element_shape is not None:
                shape = tuple(x if same_dim(x, y) else None for x, y in zip(shape, arr._element_shape))
        if shape is None and value is None and arr._element_shape is None:
            return ListMeta(None, None, None)
        return ListMeta(arr._dtype, shape, getattr(value, "device", None))

    return meta


def _call(fn: Any, args: tuple, meta: Callable[[], Any], writes: bool = False) -> Any:
    """Run a helper now (eagerly), or record it as a graph node while tracing (`meta()`: its outputs)."""
    effects = Effect.WRITES_FIRST_ARG if writes else Effect.NONE  # writes: the run-time list of the elements
    op = Op(OpKind.FUNCTION, fn, fn.__name__, effects=effects, traits=traits_of(fn))
    return run_or_record(op, args, {},
                         meta() if current() is not None else None)
