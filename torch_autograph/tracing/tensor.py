"""GraphTensor: the tensor user code sees while a function is traced — a real `torch.Tensor` subclass.

A GraphTensor has the dtype, device, sizes and strides of the value it stands
for (sizes known only when the graph runs are `torch.SymInt`s: `x.shape` is
`torch.Size([s0, 3])`), and no data. `isinstance(x, torch.Tensor)`,
`x.is_nested`, `x.layout`, `x.dim()`, `B, T, C = x.size()` answer as on a real
tensor; torch calls on it are recorded (`recording.handle_graph_call`);
reading a value it will only have when the graph runs (`bool(x)`, `x.item()`,
iterating it) raises `OperatorNotAllowedInGraphError` naming it and the user's
line. Autograd facts (`requires_grad`, `is_leaf`, `grad_fn`) are answered
where the trace knows them: an input's depend on the caller's tensor.
"""

from __future__ import annotations

from typing import Any

import torch

from ..errors import OperatorNotAllowedInGraphError
from ..graph import Value
from .context import Traced
from .messages import not_allowed
from .recording import handle_graph_call, record


def _from_template(cls: type, templates: dict, shape: tuple, stride: tuple | None, dtype: torch.dtype,
                   device: torch.device, requires_grad: bool) -> torch.Tensor:
    """A wrapper with symbolic sizes. Making one computes its contiguity and numel in sympy (slow); an
    alias of an earlier wrapper of the same metadata copies them."""
    key = (tuple(_expr(d) for d in shape), None if stride is None else tuple(_expr(d) for d in stride), dtype, device)
    template = templates.get(key)
    if template is None:
        template = templates[key] = torch.Tensor._make_wrapper_subclass(cls, shape, strides=stride, dtype=dtype,
                                                                        device=device)
    with torch._C._DisableTorchDispatch():  # the alias is made by the CPU kernel, not recorded
        return torch.Tensor._make_subclass(cls, template, requires_grad)


def _expr(d: Any) -> Any:
    return d.node.expr if isinstance(d, torch.SymInt) else d


class GraphTensor(torch.Tensor, Traced):
    """A tensor that exists only in the graph being traced."""

    _is_tensor = True

    @staticmethod
    def __new__(cls, value: Value, trace: Any, requires_grad: bool = False, origin: str = "node",
                unknown_grad: bool = False) -> "GraphTensor":
        ex = value.example
        stride = tuple(ex.stride()) if ex is not None else None
        device = value.device or torch.device("cpu")
        requires_grad = requires_grad and (value.dtype.is_floating_point or value.dtype.is_complex)
        if trace is not None and any(type(d) is not int for d in value.shape):
            self = _from_template(cls, trace.trace.symbols.templates, value.shape, stride, value.dtype, device, requires_grad)
        else:
            self = torch.Tensor._make_wrapper_subclass(cls, value.shape, strides=stride, dtype=value.dtype,
                                                       device=device, requires_grad=requires_grad)
        self._value = value
        self._trace = trace
        self._origin = origin  # "input", "capture" or "node"
        self._rg_unknown = unknown_grad
        self._grad_hint = None  # an input's (input Value id, requires_grad, is_leaf) of the call's tensor
        self._maybe_number = False  # stands for a Python number on some path (promoted.py)
        return self

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    __torch_function__ = classmethod(lambda cls, func, types, args=(), kwargs=None:
                                     handle_graph_call(func, args, kwargs or {}))

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
        # Reached by calls that skip __torch_function__ (torch.autograd.Variable(x) is aten.detach): recorded
        # as the aten op.
        return record(func, args, kwargs or {})

    # `torch.nn.Parameter(t)` of a tensor subclass marks the detached tensor with `_is_param`: a Parameter
    # made while tracing (`nn.Linear(...)` inside the function) would be new at every eager call but frozen
    # into the graph, the case TensorFlow's rule (Variables are created on the first trace only) is for.
    @property
    def _is_param(self) -> bool:
        return False

    @_is_param.setter
    def _is_param(self, value: bool) -> None:
        raise not_allowed(self, "creating a torch.nn.Parameter (e.g. constructing an nn.Module) inside the "
                          "function", "create the module or Parameter once, outside the function (in the "
                          "module's __init__, or before the first call), and call or read it inside: a function "
                          "creates no Parameters, as a tf.function creates Variables only on its first trace, "
                          "because each eager call would make new ones", ValueError)

    def raw_requires_grad(self) -> bool:
        """The requires_grad flag this graph value was made with (no question asked of the trace)."""
        with torch._C.DisableTorchFunction():
            return self.requires_grad

    # ----- what cannot be known while tracing --------------------------------------------------
    def not_allowed(self, what: str, fix: str, error: type | None = None, lacks: str = "value") -> Exception:
        return not_allowed(self, what, fix, error or OperatorNotAllowedInGraphError, lacks)

    def autograd_fact(self, attr: str) -> Any:
        """`requires_grad`, `is_leaf`, `grad_fn`, `grad` ... of this value when the graph runs, if the trace knows."""
        name = self._value.name
        if self._origin == "input" and self._rg_unknown and self._grad_hint is not None \
                and attr in ("requires_grad", "is_leaf", "grad_fn"):
            # As the call's tensor is; the trace serves only the calls whose tensor agrees.
            input_id, requires_grad, is_leaf = self._grad_hint
            self._trace.trace.assumed.grad[input_id] = (requires_grad, is_leaf)
            if attr == "requires_grad":
                return requires_grad
            if attr == "is_leaf":
                return is_leaf
            return None if is_leaf else TracedGradFn(self)
        if self._origin == "input" or self._rg_unknown:
            if attr == "requires_grad" and not self._rg_unknown:
                return self.raw_requires_grad()
            raise not_allowed(self, f"reading {name}.{attr} of a function input" if self._origin == "input" else
                              f"reading {name}.{attr}",
                              "it depends on the tensors passed at each call: decide outside the function, or "
                              "read it on the function's own argument in a trace made from a call (not from an "
                              "input_signature alone): the trace then assumes the call's answer and checks it "
                              "at every call", AttributeError)
        requires_grad = self.raw_requires_grad()
        if attr == "requires_grad":
            return requires_grad
        if attr == "is_leaf":
            return not requires_grad or self._origin == "capture"
        if attr == "grad_fn":
            return TracedGradFn(self) if requires_grad and self._origin == "node" else None
        if attr == "grad":
            return None
        raise not_allowed(self, f"reading {name}.{attr}", f"{attr} is not known while tracing", AttributeError)

    def __len__(self) -> int:
        shape = self._value.shape
        if not shape or type(shape[0]) is not int:
            what = "a scalar tensor" if shape == () else "a tensor whose first dim is known only when the graph runs"
            raise not_allowed(self, f"len() of {what}", "use x.size(0) (a run-time number) instead of len(x)",
                              error=TypeError)
        return shape[0]

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        v = self._value
        return f"GraphTensor({v.name!r}, shape={tuple(v.shape)}, dtype={v.dtype}, device={v.device})"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if spec:
            raise not_allowed(self, f"formatting a graph tensor with {spec!r}",
                              "its value exists only when the graph runs: format it outside the function, or "
                              "print it with ta.print at every call", TypeError)
        return repr(self)


class TracedGradFn:
    """`x.grad_fn` of a graph value that will have one when the graph runs (not the node itself)."""

    def __init__(self, tensor: GraphTensor) -> None:
        self._name = tensor._value.name

    def name(self) -> str:
        return f"<graph value %{self._name}>"

    def __repr__(self) -> str:
        return f"<grad_fn of graph value %{self._name}, made when the graph runs>"
