"""`ta.Variable`: mutable state that graphs read and update by reference at every call.

A Variable wraps one real `torch.Tensor` (it requires grad when trainable and
floating). Graphs capture that tensor by reference, like a module parameter;
`assign`, `assign_add` and `assign_sub` update it in place under `no_grad` and,
inside a trace, are recorded as stateful nodes that run at every call in
program order::

    v = ta.Variable(0.0)

    @ta.function
    def f():
        v.assign(1.0)
        v.assign_add(10.0)
        return v.read_value()   # 11.0 at every call

Creation inside a `ta.function` follows TensorFlow's singleton rule: Variables
may be created on the first call only (create them when an attribute is None).
"""

from __future__ import annotations

import contextvars
import itertools
import weakref
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import torch

from ..backends import compile_graph
from ..errors import OperatorNotAllowedInGraphError
from ..graph import Effect, Graph, Op, OpKind, iter_leaves, map_nest
from ..tracing import ACCESS_WATCHERS, GraphTensor, current, is_symbolic, outside_trace, run_or_record, user_location

_creation_ids = itertools.count()


# ----- leaving the trace -------------------------------------------------------------------
@contextmanager
def init_scope() -> Iterator[None]:
    """Run the enclosed code eagerly, outside any trace (TensorFlow's `tf.init_scope`).

    Inside a `ta.function` the code runs once, at trace time, on real tensors
    (e.g. to build initial values); outside one it changes nothing.
    """
    with outside_trace():
        yield


def _evaluate_now(g: GraphTensor, what: str) -> torch.Tensor:
    """The value of graph tensor `g` computed now, from the ops and captures it depends on."""
    state = g._trace
    if state is None or state.closed or state.parent is not None:
        raise ValueError(f"{what}: the initial value {g!r} is a graph tensor of a finished trace or of a branch or "
                         f"loop body; pass a real tensor or a callable returning one")
    graph = state.graph
    needed, nodes = {id(g._value)}, []
    for node in reversed(graph.nodes):
        if any(id(v) in needed for v in node.outputs):
            nodes.append(node)
            needed.update(id(v) for v in node.input_values())
            for sub in node.subgraphs:
                needed.update(id(v) for v, _ in sub.captures)
    if any(id(v) in needed for v in graph.inputs):
        loc = user_location()
        raise ValueError(f"{what}: the initial value depends on the function's arguments{_at(loc)}, but a "
                         f"Variable is created once, outside the graph. Compute the initial value from "
                         f"constants, or create the Variable outside the ta.function.")
    nodes.reverse()
    part = Graph(f"{graph.name}_initial_value", captures=[(v, t) for v, t in graph.captures if id(v) in needed],
                 nodes=nodes, outputs=[g._value])
    fn = compile_graph(part, return_tuple=False)
    with init_scope():
        value = fn()
    # Random and in-place ops of the initialiser ran now; they must not run again at every call.
    ran = {id(n) for n in nodes if n.stateful}
    graph.nodes = [n for n in graph.nodes if id(n) not in ran]
    return value


def _at(loc: Any) -> str:
    return f" at {loc}" if loc else ""


# ----- the singleton-on-first-call rule -----------------------------------------------------
class _CreationScope:
    """What the trace of one Function may do about creating Variables."""

    def __init__(self, function: Any, first: bool, singleton_check: bool) -> None:
        self.function = function
        self.first = first
        self.singleton_check = singleton_check
        self.created = 0

    def check(self, name: str) -> None:
        loc = user_location()
        fname = getattr(self.function, "name", "?")
        if self.singleton_check:
            raise ValueError(
                f"ta.function only supports singleton ta.Variables created on the first call. Make sure the "
                f"ta.Variable is only created once or created outside ta.function. Variable {name!r} is created "
                f"again when {fname} is traced a second time{_at(loc)}. Fix: create it only when it does not "
                f"exist yet (`if self.v is None: self.v = ta.Variable(...)`), or outside the function.")
        if not self.first:
            raise ValueError(
                f"Creating variables on a non-first call to a function decorated with ta.function: Variable "
                f"{name!r} is created while tracing {fname} for a new signature{_at(loc)}. Create all "
                f"Variables on the first call (or outside the function); e.g. build a ta.optimizers optimizer "
                f"or a model with one Function per optimizer/model.")
        self.created += 1


_creation: contextvars.ContextVar[_CreationScope | None] = contextvars.ContextVar("torch_autograph_creation",
                                                                                 default=None)
_traced_functions: "weakref.WeakSet[Any]" = weakref.WeakSet()


@contextmanager
def creation_rules(function: Any, singleton_check: bool) -> Iterator[Callable[[], bool]]:
    """The rules for creating Variables while `function` traces; yields whether this trace created any.

    As TensorFlow does: the first trace may create Variables; if it did, the
    function is traced again (`function/pipeline.py`, told by a `Retrace`),
    and creating any Variable in that second trace means the function creates
    one per call (ValueError).
    """
    scope = _CreationScope(function, function not in _traced_functions or singleton_check, singleton_check)
    token = _creation.set(scope)
    try:
        yield lambda: bool(scope.created) and not singleton_check
    finally:
        _creation.reset(token)
    if function is not None:
        _traced_functions.add(function)


# ----- run-time updates (called by generated graph code, or directly when eager) --------------
def assign(t: torch.Tensor, value: Any) -> None:
    with torch.no_grad():
        if isinstance(value, torch.Tensor) and value.shape != t.shape and value.dim() == t.dim():
            t.data = value.detach().to(t.dtype, copy=True)  # a Variable declared with None dims
        else:
            t.copy_(value)


def assign_add(t: torch.Tensor, value: Any) -> None:
    with torch.no_grad():
        t.add_(value)


def assign_sub(t: torch.Tensor, value: Any) -> None:
    with torch.no_grad():
        t.sub_(value)


def assign_index(t: torch.Tensor, index: Any, value: Any) -> None:
    with torch.no_grad():
        t[index] = value


def assign_add_index(t: torch.Tensor, index: Any, value: Any) -> None:
    with torch.no_grad():
        t[index] += value


def assign_sub_index(t: torch.Tensor, index: Any, value: Any) -> None:
    with torch.no_grad():
        t[index] -= value


_UPDATES = {"assign": (assign, assign_index), "assign_add": (assign_add, assign_add_index),
            "assign_sub": (assign_sub, assign_sub_index)}


# ----- tensor-like behaviour shared by Variable and its slices ---------------------------------
def _unwrap(obj: Any) -> Any:
    return map_nest(lambda x: x._read() if isinstance(x, _TensorLike) else x, obj)


class _TensorLike:
    """Torch functions, operators and tensor methods apply to `self._read()`."""

    __slots__ = ()

    def _read(self) -> Any:
        raise NotImplementedError

    def _ta_graph_value(self) -> Any:
        """What the tracer records when this object is an argument of a torch call (its tensor, captured)."""
        return self._read()

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return func(*_unwrap(args), **_unwrap(kwargs or {}))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(self._read(), name)

    def __setitem__(self, index: Any, value: Any) -> None:
        raise TypeError(f"{type(self).__name__!r} object does not support item assignment; use "
                        f"v[index].assign(value)")

    def __getitem__(self, index: Any) -> "_VariableSlice":
        return _VariableSlice(self._variable(), self._index_in_variable(index))

    def __len__(self) -> int:
        return len(self._read())

    def __bool__(self) -> bool:
        return bool(self._read())

    def __float__(self) -> float:
        return float(self._read())

    def __int__(self) -> int:
        return int(self._read())

    def __index__(self) -> int:
        return self._read().__index__()

    def __iter__(self):
        return iter(self._read())

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        return self.numpy() if dtype is None else self.numpy().astype(dtype)

    __hash__ = object.__hash__


def _binary(name: str) -> Callable:
    def method(self: _TensorLike, other: Any) -> Any:
        return getattr(self._read(), name)(_unwrap(other))

    method.__name__ = name
    return method


def _unary(name: str) -> Callable:
    def method(self: _TensorLike) -> Any:
        return getattr(self._read(), name)()

    method.__name__ = name
    return method


for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor"):
    for _name in (f"__{_op}__", f"__r{_op}__"):
        if hasattr(torch.Tensor, _name):
            setattr(_TensorLike, _name, _binary(_name))
for _name in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
    setattr(_TensorLike, _name, _binary(_name))
for _name in ("__neg__", "__pos__", "__abs__", "__invert__"):
    setattr(_TensorLike, _name, _unary(_name))


# ----- Variable -----------------------------------------------------------------------------
class Variable(_TensorLike):
    """A tensor whose value persists across calls and that graphs update in place.

    Args:
        initial_value: a tensor, Python number or nested list, numpy array,
            Variable (its value is copied), or a callable returning one.
        trainable: watched automatically by `ta.GradientTape` and given
            gradients (floating dtypes only).
        name: shown as `name:0`; duplicates are allowed.
        dtype: the dtype (default: the initial value's).
        shape: the declared shape; None dims may change through `assign`
            (default: the initial value's shape, fixed).

    Torch functions, operators and tensor methods accept a Variable wherever a
    tensor goes. Inside a `ta.function` a Variable is captured by reference:
    reads see every earlier `assign*` of the same call.
    """

    __slots__ = ("_tensor", "_trainable", "_name", "_shape", "_creation_id", "__weakref__")
    _ta_keyed_by_identity = True

    def __init__(self, initial_value: Any, trainable: bool = True, name: str | None = None,
                 dtype: torch.dtype | None = None, shape: Any = None) -> None:
        shown = f"{name or 'Variable'}:0"
        scope = _creation.get()
        tracing = current() is not None
        if tracing and scope is not None:
            scope.check(shown)
        with init_scope() if tracing else _nothing():
            value = self._initial_tensor(initial_value, dtype, shown)
            t = value.detach().clone().contiguous()
            if trainable and (t.is_floating_point() or t.is_complex()):
                t.requires_grad_(True)
        self._tensor = t
        self._trainable = bool(trainable)
        self._name = shown
        self._creation_id = next(_creation_ids)
        if shape is None:
            self._shape = tuple(t.shape)
        else:
            self._shape = tuple(None if d is None else int(d) for d in shape)
            if len(self._shape) != t.dim() or any(d is not None and d != s for d, s in zip(self._shape, t.shape)):
                raise ValueError(f"Variable {shown!r}: the initial value's shape {tuple(t.shape)} does not fit the "
                                 f"declared shape {self._shape}")

    @staticmethod
    def _initial_tensor(initial_value: Any, dtype: torch.dtype | None, shown: str) -> torch.Tensor:
        if callable(initial_value) and not isinstance(initial_value, (torch.Tensor, _TensorLike, GraphTensor)):
            initial_value = initial_value()
        if isinstance(initial_value, _TensorLike):
            initial_value = initial_value._read().detach()
        if isinstance(initial_value, GraphTensor):
            initial_value = _evaluate_now(initial_value, f"ta.Variable {shown!r}")
        if initial_value is None:
            raise ValueError(f"ta.Variable {shown!r}: initial_value must be given (got None)")
        try:
            value = torch.as_tensor(initial_value)
        except (TypeError, ValueError, RuntimeError) as e:
            raise TypeError(f"ta.Variable {shown!r}: cannot convert {initial_value!r} to a tensor: {e}") from None
        return value if dtype is None else value.to(dtype)

    # ----- reading -----------------------------------------------------------------------
    def _read(self) -> torch.Tensor:
        for watcher in ACCESS_WATCHERS.get():
            watcher._variable_accessed(self)
        state = current()
        if state is not None:
            state.capture(self._tensor, self._name[:-2].replace("/", "_"))  # names the capture after the Variable
        return self._tensor

    def _variable(self) -> "Variable":
        return self

    def _index_in_variable(self, index: Any) -> Any:
        return index

    def read_value(self) -> Any:
        """The current value as a new tensor (a snapshot: later assigns do not change it)."""
        return self._read().clone()

    value = read_value

    def numpy(self) -> Any:
        """The value as a numpy array (eager only: inside a graph the value changes from call to call)."""
        self._refuse_in_graph("numpy()")
        return self._tensor.detach().cpu().numpy().copy()

    def item(self) -> Any:
        self._refuse_in_graph("item()")
        return self._tensor.item()

    def tolist(self) -> Any:
        self._refuse_in_graph("tolist()")
        return self._tensor.tolist()

    def _refuse_in_graph(self, what: str) -> None:
        if current() is not None:
            loc = user_location()
            code = f"\n    {loc.line}" if loc and loc.line else ""
            raise OperatorNotAllowedInGraphError(
                f"{self._name[:-2]}.{what} is not allowed while tracing{_at(loc)}: inside a ta.function the "
                f"Variable {self._name!r} has no fixed value (it can change at every call).{code}\nFix: keep "
                f"the computation in torch ops (v.read_value(), v * 2, ...) or use ta.print(v) to show it.")

    # ----- metadata ------------------------------------------------------------------------
    @property
    def shape(self) -> torch.Size:
        return self._tensor.shape

    @property
    def dtype(self) -> torch.dtype:
        return self._tensor.dtype

    @property
    def device(self) -> torch.device:
        return self._tensor.device

    @property
    def name(self) -> str:
        return self._name

    @property
    def trainable(self) -> bool:
        return self._trainable

    @property
    def ndim(self) -> int:
        return self._tensor.dim()

    # ----- updating ------------------------------------------------------------------------
    def assign(self, value: Any, use_locking: bool = False, name: str | None = None, read_value: bool = True) -> Any:
        """Set the value (same shape; compatible values are cast). Returns the Variable, or None with read_value=False."""
        self._update("assign", None, value)
        return self if read_value else None

    def assign_add(self, delta: Any, use_locking: bool = False, name: str | None = None,
                   read_value: bool = True) -> Any:
        """Add `delta` in place."""
        self._update("assign_add", None, delta)
        return self if read_value else None

    def assign_sub(self, delta: Any, use_locking: bool = False, name: str | None = None,
                   read_value: bool = True) -> Any:
        """Subtract `delta` in place."""
        self._update("assign_sub", None, delta)
        return self if read_value else None

    def _update(self, kind: str, index: Any, value: Any) -> None:
        target_shape = self._shape if index is None else _indexed_shape(self._tensor, index)
        value = _check_value(self, kind, value, target_shape)
        whole, part = _UPDATES[kind]
        args = (self._tensor, value) if index is None else (self._tensor, index, value)
        fn = whole if index is None else part
        run_or_record(Op(OpKind.FUNCTION, fn, kind, effects=Effect.WRITES_FIRST_ARG), args, {}, None)

    def __repr__(self) -> str:
        head = f"<ta.Variable {self._name!r} shape={tuple(self.shape)} dtype={self.dtype}"
        if current() is not None:
            return head + ">"
        return f"{head}, value={self._tensor.detach()!r}>"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return format(repr(self), spec)

    def __deepcopy__(self, memo: dict) -> "Variable":
        return Variable(self._tensor.detach(), trainable=self._trainable, name=self._name[:-2],
                        shape=self._shape)


class _VariableSlice(_TensorLike):
    """`v[index]`: reads as the tensor slice; `.assign*` updates that part of the Variable."""

    __slots__ = ("_var", "_index")

    def __init__(self, var: Variable, index: Any) -> None:
        self._var = var
        self._index = index

    def _read(self) -> Any:
        return self._var._read()[self._index]

    def _variable(self) -> Variable:
        return self._var

    def _index_in_variable(self, index: Any) -> Any:
        raise TypeError(f"indexing a slice of Variable {self._var.name!r} again is not supported; index the "
                        f"Variable once, e.g. v[i, j]")

    def assign(self, value: Any, use_locking: bool = False, name: str | None = None, read_value: bool = True) -> Any:
        self._var._update("assign", self._index, value)
        return self._var if read_value else None

    def assign_add(self, delta: Any, use_locking: bool = False, name: str | None = None,
                   read_value: bool = True) -> Any:
        self._var._update("assign_add", self._index, delta)
        return self._var if read_value else None

    def assign_sub(self, delta: Any, use_locking: bool = False, name: str | None = None,
                   read_value: bool = True) -> Any:
        self._var._update("assign_sub", self._index, delta)
        return self._var if read_value else None

    def __repr__(self) -> str:
        return f"<slice {self._index!r} of {self._var!r}>"


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def _indexed_shape(t: torch.Tensor, index: Any) -> tuple | None:
    if any(isinstance(x, GraphTensor) for x in iter_leaves(index)):
        return None  # a run-time index: the slice's shape is checked when the graph runs
    return tuple(torch.empty(t.shape, device="meta")[index].shape)


def _shape_str(shape: Any) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _check_value(var: Variable, kind: str, value: Any, target_shape: tuple | None) -> Any:
    """`value` as a tensor (or graph tensor) of a dtype and shape `var` accepts, or a clear error."""
    loc = user_location()
    if isinstance(value, _TensorLike):
        value = value._read()
    if is_symbolic(value) and current() is not None:
        # A number known only when the graph runs (`for i in range(n)` over a tensor `n`): a graph tensor.
        value = torch.as_tensor(value, dtype=var.dtype)
    if not isinstance(value, (torch.Tensor, GraphTensor)):
        with init_scope():  # a Python value becomes a constant tensor, not graph ops
            value = _python_value_as_tensor(var, kind, value, loc)
    elif _kind_rank(value.dtype) > _kind_rank(var.dtype):
        raise TypeError(f"Cannot {kind} a tensor of dtype {value.dtype} to Variable {var.name!r} of dtype "
                        f"{var.dtype}{_at(loc)}: the cast would lose information. Cast it explicitly, e.g. "
                        f"value.to({var.dtype}).")
    shape = value.shape
    if target_shape is not None and not _shape_fits(kind, tuple(shape), target_shape):
        raise ValueError(f"Cannot assign value to variable '{var.name}': Shape mismatch. The variable shape "
                         f"{_shape_str(target_shape)}, and the assigned value shape {_shape_str(tuple(shape))} "
                         f"are incompatible{_at(loc)}.")
    return value


def _python_value_as_tensor(var: Variable, kind: str, value: Any, loc: Any) -> torch.Tensor:
    if isinstance(value, (bool, int, float, complex)) or _is_number_list(value):
        probe = torch.as_tensor(value)
        if _kind_rank(probe.dtype) > _kind_rank(var.dtype):
            raise TypeError(f"Cannot convert {value!r} to a tensor of dtype {var.dtype} for "
                            f"{var.name[:-2]}.{kind}(){_at(loc)}: the Variable {var.name!r} holds "
                            f"{var.dtype} values")
        return probe.to(var.dtype)
    try:
        return torch.as_tensor(value, dtype=var.dtype)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"Cannot convert {value!r} to a tensor of dtype {var.dtype} for "
                        f"{var.name[:-2]}.{kind}(){_at(loc)}") from None


def _is_number_list(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_is_number_list(v) for v in value)
    return isinstance(value, (bool, int, float, complex))


def _kind_rank(dtype: torch.dtype) -> int:
    """bool < integers < floating < complex: a value may go into a Variable of the same or a higher kind."""
    if dtype == torch.bool:
        return 0
    if dtype.is_complex:
        return 3
    if dtype.is_floating_point:
        return 2
    return 1


def _shape_fits(kind: str, value_shape: tuple, target: tuple) -> bool:
    if kind == "assign":
        return len(value_shape) == len(target) and all(
            t is None or type(v) is not int or v == t for v, t in zip(value_shape, target))
    # assign_add / assign_sub broadcast the delta onto the Variable
    if len(value_shape) > len(target):
        return False
    for v, t in zip(reversed(value_shape), reversed(target)):
        if not (type(v) is not int or t is None or v == 1 or v == t):  # a size known only later: checked then
            return False
    return True
