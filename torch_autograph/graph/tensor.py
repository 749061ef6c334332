"""GraphTensor: the symbolic tensor user code sees while a function is traced.

It is not a `torch.Tensor`. Torch functions reach it through
`__torch_function__`; Python operators, indexing and tensor methods are
defined here and recorded as graph nodes. Metadata (`shape`, `dtype`,
`device`, `dim()`, ...) is answered statically, because modules such as
`nn.BatchNorm1d` branch on it in Python. A dim that is unknown while tracing
is None in `x.shape`; `x.size(i)` gives a run-time value usable in `view`,
`reshape`, `zeros` and arithmetic.
"""

from __future__ import annotations

from typing import Any

import torch

from .graph import Value, ValueKind


# Subclasses of GraphTensor for other value kinds (graph lists), registered by their modules.
KIND_CLASSES: dict[ValueKind, type] = {}


def make_graph_tensor(value: Value, trace: Any) -> "GraphTensor":
    """The user-facing object for a graph value: a GraphTensor, or e.g. a GraphList for a LIST value."""
    return KIND_CLASSES.get(value.kind, GraphTensor)(value, trace)


class GraphShape(tuple):
    """`x.shape` of a graph tensor: a tuple whose unknown dims are None."""

    def __repr__(self) -> str:
        return f"GraphShape({list(self)})"

    def numel(self) -> int | None:
        n = 1
        for d in self:
            if d is None:
                return None
            n *= d
        return n


# Tensor attributes that are values computed from the tensor (recorded), not metadata.
_RECORDED_ATTRS = frozenset({"T", "mT", "H", "mH", "real", "imag", "data"})


class GraphTensor:
    """A tensor that exists only in the graph being traced."""

    __slots__ = ("_value", "_trace", "__weakref__")

    def __init__(self, value: Value, trace: Any) -> None:
        self._value = value
        self._trace = trace

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return tracer.record(func, args, kwargs or {})

    # ----- static metadata -------------------------------------------------------------
    @property
    def shape(self) -> GraphShape | None:
        s = self._value.shape
        return None if s is None else GraphShape(s)

    @property
    def dtype(self) -> torch.dtype:
        return self._value.dtype

    @property
    def device(self) -> torch.device:
        return self._value.device

    @property
    def ndim(self) -> int:
        return self.dim()

    @property
    def is_cuda(self) -> bool:
        return self._value.device is not None and self._value.device.type == "cuda"

    @property
    def layout(self) -> torch.layout:
        return torch.strided

    def dim(self) -> int:
        s = self._value.shape
        if s is None:
            raise tracer.not_allowed(self, "asking for the rank of a tensor of unknown rank",
                                     "give the input a TensorSpec with a known rank")
        return len(s)

    ndimension = dim

    def size(self, dim: int | None = None) -> Any:
        s = self._value.shape
        if dim is None:
            if s is None:
                raise tracer.not_allowed(self, "x.size() of a tensor of unknown rank", "use x.size(i) per dim")
            return tuple(d if d is not None else tracer.record(torch.Tensor.size, (self, i), {})
                         for i, d in enumerate(s))
        if s is not None and -len(s) <= dim < len(s) and s[dim] is not None:
            return s[dim]
        return tracer.record(torch.Tensor.size, (self, dim), {})

    def numel(self) -> Any:
        s = self._value.shape
        if s is not None and None not in s:
            n = 1
            for d in s:
                n *= d
            return n
        return tracer.record(torch.Tensor.numel, (self,), {})

    nelement = numel

    def is_floating_point(self) -> bool:
        return self._value.dtype.is_floating_point

    def is_complex(self) -> bool:
        return self._value.dtype.is_complex

    def element_size(self) -> int:
        return torch.empty((), dtype=self._value.dtype, device="meta").element_size()

    def __len__(self) -> int:
        s = self._value.shape
        if s is None or not s or s[0] is None:
            what = "a scalar tensor" if s == () else "a tensor whose first dim is unknown"
            raise tracer.not_allowed(self, f"len() of {what}", "use x.size(0) (a run-time value) instead of len(x)",
                                     error=TypeError)
        return s[0]

    # ----- values Python would need now ------------------------------------------------
    def __bool__(self) -> bool:
        raise tracer.not_allowed(self, "using a graph tensor as a Python bool", _CONTROL_FLOW_FIX)

    def __iter__(self):
        raise tracer.not_allowed(self, "iterating over a graph tensor", _CONTROL_FLOW_FIX)

    def __int__(self) -> int:
        raise tracer.not_allowed(self, "int() of a graph tensor", "use x.to(torch.int64) to stay in the graph")

    def __float__(self) -> float:
        raise tracer.not_allowed(self, "float() of a graph tensor", "use x.to(torch.float32) to stay in the graph")

    def __index__(self) -> int:
        if self._value.kind is ValueKind.SCALAR and self._trace is not None:
            self._trace.root.refused_index = self._value  # torch's parser asks, then swallows our error
        raise tracer.not_allowed(self, "using a graph tensor as a Python index", _VALUE_FIX)

    def item(self) -> Any:
        raise tracer.not_allowed(self, "x.item()", _VALUE_FIX)

    def tolist(self) -> Any:
        raise tracer.not_allowed(self, "x.tolist()", _VALUE_FIX)

    def numpy(self) -> Any:
        raise tracer.not_allowed(self, "x.numpy()", _VALUE_FIX)

    def __array__(self, *args: Any) -> Any:
        raise tracer.not_allowed(self, "converting a graph tensor to a numpy array", _VALUE_FIX)

    # ----- indexing and in-place -----------------------------------------------------
    def __getitem__(self, idx: Any) -> Any:
        return tracer.record(torch.Tensor.__getitem__, (self, idx), {})

    def __setitem__(self, idx: Any, value: Any) -> None:
        tracer.record(torch.Tensor.__setitem__, (self, idx, value), {})

    def __getattr__(self, name: str) -> Any:
        attr = getattr(torch.Tensor, name, None)
        if attr is None or name.startswith("__"):
            raise AttributeError(f"'GraphTensor' object has no attribute {name!r} (a torch.Tensor has none either)")
        if name in _RECORDED_ATTRS:
            return tracer.record(attr.__get__, (self,), {})
        if callable(attr):
            return _BoundMethod(attr, self)
        raise tracer.not_allowed(self, f"reading x.{name}", f"{name} is not known while tracing", error=AttributeError)

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        v = self._value
        shape = "<unknown>" if v.shape is None else tuple(v.shape)
        if v.kind is ValueKind.SCALAR:
            return f"GraphTensor({v.name!r}, run-time {v.type_str()})"
        return f"GraphTensor({v.name!r}, shape={shape}, dtype={v.dtype}, device={v.device})"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return format(repr(self), spec)


class _BoundMethod:
    """`x.view` on a graph tensor: records `torch.Tensor.view` when called."""

    __slots__ = ("_fn", "_self")

    def __init__(self, fn: Any, obj: GraphTensor) -> None:
        self._fn = fn
        self._self = obj

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return tracer.record(self._fn, (self._self,) + args, kwargs)

    def __repr__(self) -> str:
        return f"<graph method {self._fn.__name__} of {self._self!r}>"


_CONTROL_FLOW_FIX = (
    "let AutoGraph convert this code (the default with ta.function(autograph=True)) so that `if`/`while`/`for` "
    "over tensors become graph control flow, or use ta.cond / ta.while_loop; if the code is in a function "
    "AutoGraph did not convert (autograph=False, do_not_convert, or source not available), that is the cause")
_VALUE_FIX = ("the value is only known when the graph runs; keep the computation in torch ops, "
              "or pass the value in as a Python argument")


def _binary(name: str):
    dunder = getattr(torch.Tensor, name)

    def method(self, other):
        return tracer.record(dunder, (self, other), {})

    method.__name__ = name
    return method


_BINARY = [
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift", "rshift",
]
for _op in _BINARY:
    for _name in (f"__{_op}__", f"__r{_op}__", f"__i{_op}__"):
        if hasattr(torch.Tensor, _name):
            setattr(GraphTensor, _name, _binary(_name))
for _name in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
    setattr(GraphTensor, _name, _binary(_name))


def _unary(name: str):
    dunder = getattr(torch.Tensor, name)

    def method(self):
        return tracer.record(dunder, (self,), {})

    method.__name__ = name
    return method


for _name in ("__neg__", "__pos__", "__invert__", "__abs__"):
    setattr(GraphTensor, _name, _unary(_name))

from . import tracer  # noqa: E402  (tracer imports GraphTensor; imported last to break the cycle)
