"""Graph lists: Python lists of tensors that grow inside graph loops (TensorFlow refuses them; we stage them).

TensorFlow raises InaccessibleTensorError when a Python list is appended to
inside a graph loop. Here such a list becomes a graph value: at run time it is
an ordinary Python list that the graph appends to, so `torch.stack(lst)` after
the loop sees every element::

    %acc: list[float32[3]] = new_list()
    %acc_1 = while(...)                    # body: %acc_2 = append(%acc, %y)
    %stack: float32[u0, 3] = torch.stack(%acc_1)

Elements share a dtype; their shape is merged (dims that differ are unknown,
None in the list value's element shape; an element read from the list gets a
fresh size symbol for each).
"""

from __future__ import annotations

import operator
from typing import Any

import torch

from ..errors import InaccessibleTensorError
from ..graph import Effect, Op, OpKind, Value, ValueKind, list_ops
from .context import Traced, current
from .locations import user_location
from .messages import not_allowed
from .meta import ListMeta, TensorMeta
from .recording import CONTROL_FLOW_FIX, record, record_with_meta
from .symbols import SYMBOLIC, InputDim, ScalarMeta, same_dim


class GraphList(Traced):
    """A list of tensors that exists only in the graph being traced.

    Supports `len`, indexing, `append`/`pop` (through AutoGraph's list
    operators or directly), iteration in converted `for` loops, and torch
    functions taking tensor lists (`torch.stack`, `torch.cat`). AutoGraph
    turns `lst.extend(items)` and `lst += [...]` into appends.

    A graph list stored in an attribute or global while tracing stays there
    after the trace (Python side effects run at trace time only); touching it
    then raises InaccessibleTensorError saying so (`left_over_error`).
    """

    __slots__ = ("_value", "_trace", "__weakref__")
    _is_tensor = False

    def __init__(self, value: Value, trace: Any) -> None:
        self._value = value
        self._trace = trace

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
        for a in args:
            if isinstance(a, GraphList):
                _check_live(a, f"{getattr(func, '__name__', func)}() of")
        return record(func, args, kwargs or {})

    def append(self, x: Any) -> "GraphList":
        _check_live(self, "append() on")
        return append(self, x)

    def pop(self, index: int = -1) -> Any:
        _check_live(self, "pop() on")
        _, item = pop(self, index)
        return item

    def __setitem__(self, index: Any, item: Any) -> None:
        # `lst[i] = x` mutates the list: this object takes the list value after the write, so that every
        # Python reference to it (the state a loop or branch returns) sees the new element.
        _check_live(self, "item assignment on")
        if isinstance(index, slice):
            raise not_allowed(self, "assigning a slice of a graph list", "assign one element at a time")
        self._value = setitem(self, index, item)._value

    def assign(self, other: "GraphList") -> None:
        """Hold what `other` holds: a statement that wrote elements of a copy of this list made `other`."""
        self._value = other._value

    def extend(self, items: Any) -> None:
        _check_live(self, "extend() on")
        raise _grow_error(self, "lst.extend(...)")

    def __iadd__(self, other: Any) -> "GraphList":
        _check_live(self, "`+=` on")
        raise _grow_error(self, "lst += ...")

    def __add__(self, other: Any) -> Any:
        _check_live(self, "`+` on")
        raise _grow_error(self, "lst + ...")

    def __radd__(self, other: Any) -> Any:
        _check_live(self, "`+` on")
        raise _grow_error(self, "... + lst")

    def __len__(self) -> int:
        _check_live(self, "len() of")
        raise not_allowed(self, "len() of a graph list", "use ta's converted code (len(lst) there gives a "
                                 "run-time value) or torch.stack(lst).size(0)", error=TypeError)

    def __getitem__(self, index: Any) -> Any:
        return getitem(self, index)

    def __iter__(self) -> Any:
        _check_live(self, "iterating over")
        raise not_allowed(self, "iterating over a graph list", CONTROL_FLOW_FIX, TypeError)

    def __bool__(self) -> bool:
        _check_live(self, "bool() of")
        raise not_allowed(self, "using a graph list as a Python bool", CONTROL_FLOW_FIX)

    def __repr__(self) -> str:
        return f"GraphList({self._value.name!r}, element={_elem_words(self._value)})"

    __str__ = __repr__


def _check_live(lst: GraphList, what: str) -> None:
    """Raise `left_over_error` if the trace that made `lst` has ended."""
    trace = lst._trace
    if trace is not None and trace.root.closed:
        raise left_over_error(lst, what)


def left_over_error(lst: GraphList, what: str) -> InaccessibleTensorError:
    """The error for a graph list used after its trace ended (e.g. left in `self.out` by the call)."""
    loc = user_location()
    where = f" at {loc}" if loc else ""
    code = f"\n    {loc.line}" if loc and loc.line else ""
    owner = lst._trace.root.graph.name
    return InaccessibleTensorError(
        f"{what} {lst!r}{where}: this is the graph list that stood for a Python list while {owner!r} was "
        f"traced, left behind in an attribute, global or closure.{code}\n"
        "Why: a list grown inside a tensor loop or `if` becomes a graph list while the function is traced, and "
        "AutoGraph stores it back where the list was. Its elements exist only while the graph runs, and Python "
        "side effects such as that store happen once, at trace time, not at every call: what stays behind is "
        "this placeholder, not the list of tensors eager PyTorch would leave.\n"
        "Fix: return the list (or torch.stack(lst)) from the function and use the returned value (a returned "
        "graph list comes back as a list of tensors); e.g. `self.out = f(x)` outside the traced function.")


def _grow_error(lst: GraphList, what: str) -> TypeError:
    return not_allowed(
        lst, f"`{what}` on a graph list",
        "in converted code AutoGraph handles `lst.extend(items)` and `lst += [a, b]` (a list display or "
        "comprehension on the right); write it that way, or append the elements one by one with "
        "`lst.append(t)`", error=TypeError)


def _elem_words(v: Value) -> str:
    if v.dtype is None:
        return "<unknown>"
    return Value("_", v.dtype, v.shape, v.device).type_str()


def is_list_value(v: Any) -> bool:
    return isinstance(v, Value) and v.kind is ValueKind.LIST


def merge_elements(a: Value | None, b: Any, what: str) -> tuple[torch.dtype | None, Any, Any]:
    """(dtype, shape, device) of list elements after adding `b` (a Value) to elements like `a`.

    A dim stays known where both agree and it is an int or a size of the function's inputs; a size made
    inside a branch or loop body is not visible where the list is read, so it becomes None (unknown).
    """
    if a is None or a.dtype is None:
        shape = None if b.shape is None else tuple(_visible(d) for d in b.shape)
        return b.dtype, shape, b.device
    if b.dtype != a.dtype:
        raise TypeError(f"{what}: a graph list holds tensors of one dtype; it has {a.dtype} elements and got "
                        f"{b.dtype}")
    if a.shape is not None and b.shape is not None and len(a.shape) != len(b.shape):
        # Reading an element needs its rank: a list whose element rank is known only at run time is no graph list.
        raise TypeError(f"{what}: a graph list holds tensors of one rank; it has elements of shape "
                        f"{_shape_text(a.shape)} and got one of shape {_shape_text(b.shape)}. Give every element "
                        f"the same number of dims (reshape it), or keep separate lists")
    if a.shape is None or b.shape is None:
        return a.dtype, None, a.device
    return a.dtype, tuple(_visible(x) if same_dim(x, y) else None for x, y in zip(a.shape, b.shape)), a.device


def _shape_text(shape: tuple) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _user_words(what: str) -> str:
    """`what` a graph list op does, at the user's line (its internal name would mean nothing to the user)."""
    loc = user_location()
    return f"{what} a graph list at {loc} (`{loc.line}`)" if loc is not None else f"{what} a graph list"


def input_size(d: Any) -> Any:
    """`d` if it is an int or made only from sizes of the function's inputs, else None."""
    return _visible(d)


def _visible(d: Any) -> Any:
    """`d` if it is an int or made only from sizes of the function's inputs, else None."""
    if d is None or type(d) is int:
        return d
    sources = current().trace.symbols.sources
    return d if all(isinstance(sources.get(s), InputDim) for s in d.node.expr.free_symbols) else None


def _list_meta(dtype: Any, shape: Any, device: Any) -> ListMeta:
    return ListMeta(dtype, shape, device)


def element_meta(v: Value) -> TensorMeta:
    """The metadata of one element of graph list `v` (a fresh size symbol per element dim that varies)."""
    return TensorMeta(current().trace.engine.example(v.shape, v.dtype, v.device), v.device)


def _record(op_fn: Any, name: str, args: tuple, meta: Any, writes: bool) -> Any:
    """Record a list op; `writes`: it changes the run-time list it gets (a list the graph itself made)."""
    effects = Effect.WRITES_FIRST_ARG if writes else Effect.NONE
    return record_with_meta(Op(OpKind.FUNCTION, op_fn, name, effects=effects), args, {}, meta)


def _element_meta(x: Any) -> Any:
    """The dtype, shape and device of a tensor element (a Value, or None), recording nothing.

    `x` may come from a branch trace that was abandoned: only its metadata is read.
    """
    v = getattr(x, "_value", None)
    if isinstance(v, Value):
        return v if v.kind is ValueKind.TENSOR else None
    if isinstance(x, torch.Tensor):
        return Value("_", x.dtype, tuple(x.shape), x.device)
    return None


def _is_number(item: Any) -> bool:
    """A Python number, or one known only when the graph runs (a symbolic number)."""
    return type(item) in (int, float, bool) or isinstance(item, SYMBOLIC)


def _number_element(item: Any, like: Any) -> torch.Tensor:
    """A (run-time) Python number as a 0-d tensor element: of the list's dtype when that holds it exactly."""
    dtype = getattr(like, "dtype", None)
    kind = (float if isinstance(item, (float, torch.SymFloat)) else
            bool if isinstance(item, (bool, torch.SymBool)) else int)
    fits = dtype is not None and (dtype.is_floating_point or (kind is not float and dtype != torch.bool)
                                  or (kind is bool and dtype == torch.bool))
    return torch.tensor(item, dtype=dtype) if fits else torch.tensor(item)


def new_list(items: list, like: list = ()) -> GraphList:
    """A graph list holding `items` (tensors, graph tensors or Python numbers), created afresh at every call.

    Python numbers become 0-d tensors of the other elements' dtype (when it
    holds them exactly), as when they are appended. An empty list takes its
    element type from `like` (what a first trace saw it hold), if given.
    """
    state = current()
    elem = None
    metas = [m for m in map(_element_meta, list(items) + list(like)) if m is not None]
    first = metas[0] if metas else None
    items = [_number_element(it, first) if _is_number(it) else it for it in items]
    if not items and like:
        m = first or _element_meta(_number_element(like[0], None) if _is_number(like[0]) else like[0])
        if m is not None:
            return _as_list(_record(list_ops.list_new, "list", (), _list_meta(m.dtype, m.shape, m.device), writes=False))
    for it in items:
        v = state.to_value(it)
        if not isinstance(v, Value) or v.kind is not ValueKind.TENSOR:
            raise TypeError(f"only lists of tensors can become graph lists, got an element {it!r}")
        try:
            dtype, shape, device = merge_elements(elem, v, "list")
        except TypeError as e:  # the user's line: where the Python list had to become a graph list
            raise TypeError(f"a Python list used as a graph value at {user_location()}: {str(e)[len('list: '):]}")\
                from None
        elem = Value("_", dtype, shape, device)
    meta = _list_meta(*(merge_elements(elem, elem, "list") if elem is not None else (None, None, None)))
    return _as_list(_record(list_ops.list_new, "list", tuple(items), meta, writes=False))


def empty_like(v: Value) -> GraphList:
    """An empty graph list whose elements would be like those of graph list `v` (a stand-in never read)."""
    return _as_list(_record(list_ops.list_new, "list", (), _list_meta(v.dtype, v.shape, v.device), writes=False))


def from_rows(t: Any) -> GraphList:
    """A graph list of the rows of `t` (its slices along dim 0), e.g. `sorted(t)` of a run-time length."""
    v = t._value
    return _as_list(_record(list_ops.list_from_rows, "rows", (t,), _list_meta(v.dtype, v.shape[1:], v.device), writes=False))


def _as_list(g: Any) -> GraphList:
    return g if isinstance(g, GraphList) else GraphList(g._value, g._trace)


def append(lst: GraphList, item: Any) -> GraphList:
    """`lst.append(item)`; returns the list value after the append (the same run-time list)."""
    item, meta = _new_element(lst, item, _user_words("appending to"))
    return _as_list(_record(list_ops.list_append, "append", (lst, item), meta, writes=True))


def insert(lst: GraphList, index: Any, item: Any) -> GraphList:
    """`lst.insert(index, item)`; returns the list value after the insertion (the same run-time list)."""
    item, meta = _new_element(lst, item, _user_words("inserting into"))
    return _as_list(_record(list_ops.list_insert, "insert", (lst, index, item), meta, writes=True))


def _new_element(lst: GraphList, item: Any, what: str) -> tuple[Any, ListMeta]:
    """`item` as a tensor element of `lst` (a Python number in the list's dtype), and the list's meta after."""
    state = current()
    if _is_number(item):
        item = _number_element(item, lst._value)
    v = state.to_value(item)
    if not isinstance(v, Value) or v.kind is not ValueKind.TENSOR:
        item = torch.tensor(item)
        v = state.to_value(item)
    return item, _list_meta(*merge_elements(lst._value, v, what))


def setitem(lst: GraphList, index: Any, item: Any) -> GraphList:
    """`lst[index] = item` (an index); returns the list value after it (the same run-time list)."""
    item, meta = _new_element(lst, item, _user_words("assigning an element of"))
    return _as_list(_record(list_ops.list_setitem, "setitem", (lst, index, item), meta, writes=True))


def delitem(lst: GraphList, index: Any) -> GraphList:
    """`del lst[index]` (an index or a slice); returns the list value after it (the same run-time list)."""
    v = lst._value
    return _as_list(_record(list_ops.list_delitem, "delitem", (lst, index), _list_meta(v.dtype, v.shape, v.device),
                            writes=True))


def pop(lst: GraphList, index: Any = -1) -> tuple[GraphList, Any]:
    """`lst.pop(index)`; returns (the list after the pop, the element)."""
    v = lst._value
    if v.dtype is None:
        raise not_allowed(lst, "popping from a graph list whose elements are unknown",
                                 "append to it before popping")
    meta = (_list_meta(v.dtype, v.shape, v.device), element_meta(v))
    out = _record(list_ops.list_pop, "pop", (lst, index), meta, writes=True)
    return _as_list(out[0]), out[1]


def length(lst: GraphList) -> Any:
    """`len(lst)` as a run-time Python int."""
    return _record(list_ops.list_len, "len", (lst,), ScalarMeta(torch.int64), writes=False)


def getitem(lst: GraphList, index: Any) -> Any:
    _check_live(lst, "indexing")
    v = lst._value
    if v.dtype is None:
        raise not_allowed(lst, "indexing a graph list whose elements are unknown", "append to it first")
    if isinstance(index, slice):
        meta = _list_meta(v.dtype, v.shape, v.device)
        return _as_list(record_with_meta(Op(OpKind.OPERATOR, operator.getitem, "getitem"), (lst, index), {}, meta))
    return record_with_meta(Op(OpKind.OPERATOR, operator.getitem, "getitem"), (lst, index), {}, element_meta(v))
