"""What a torch callable is, as a graph op: its kind, the function shape inference runs, and its effects.

`classify(func)` maps `torch.add`, `Tensor.add_`, `Tensor.__radd__`, `x.T`
(a getset descriptor), `Tensor.__getitem__` ... to an `Op`: FUNCTION,
METHOD, GETATTR or OPERATOR, whether it writes its first argument in place,
draws random numbers or runs autograd, and whether it is pure.
"""

from __future__ import annotations

import operator
import types
from typing import Any, Callable

import torch

from ..graph import Effect, Op, OpKind, Trait, Value
from ..op_facts import facts_of
from .meta import TensorMeta, like_example

# ----- classification of torch callables ------------------------------------------------
_DUNDER_OPS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow, "matmul": operator.matmul,
    "and": operator.and_, "or": operator.or_, "xor": operator.xor, "lshift": operator.lshift,
    "rshift": operator.rshift, "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
    "eq": operator.eq, "ne": operator.ne, "neg": operator.neg, "pos": operator.pos, "invert": operator.invert,
    "abs": abs, "getitem": operator.getitem, "setitem": operator.setitem,
}
INPLACE_DUNDERS = {
    "iadd": "add_", "isub": "sub_", "imul": "mul_", "itruediv": "div_", "ifloordiv": "floor_divide_",
    "imod": "remainder_", "ipow": "pow_", "iand": "bitwise_and_", "ior": "bitwise_or_", "ixor": "bitwise_xor_",
    "ilshift": "bitwise_left_shift_", "irshift": "bitwise_right_shift_",
}
# The Python operator of an in-place tensor method: what `n += t` means while `n` is still a number.
INPLACE_OPERATORS = {
    "add_": operator.add, "sub_": operator.sub, "mul_": operator.mul, "div_": operator.truediv,
    "floor_divide_": operator.floordiv, "remainder_": operator.mod, "pow_": operator.pow,
    "bitwise_and_": operator.and_, "bitwise_or_": operator.or_, "bitwise_xor_": operator.xor,
    "bitwise_left_shift_": operator.lshift, "bitwise_right_shift_": operator.rshift,
}
# Tensor dunders whose functions carry another name (`Tensor.__pow__.__name__ == "pow"`,
# `Tensor.__rtruediv__` is `__rdiv__`): classified by the operator they implement.
_DUNDER_ALIASES = {getattr(torch.Tensor, n): n for n in ("__pow__", "__ipow__", "__rtruediv__", "__itruediv__")}
# Calls on real tensors that read metadata or values: run now, frozen into the trace.
RUN_NOW = frozenset({
    "dim", "size", "numel", "nelement", "ndimension", "is_floating_point", "is_complex", "element_size", "stride",
    "is_contiguous", "get_device", "item", "tolist", "numpy", "__bool__", "__int__", "__float__", "__index__",
    "__len__", "__iter__", "__repr__", "__format__", "__str__", "__hash__", "__reduce_ex__", "__array__",
    "data_ptr", "__deepcopy__", "storage", "untyped_storage", "is_nonzero", "equal", "allclose", "__contains__",
    "has_names", "is_signed", "type", "is_pinned", "is_shared", "__dlpack__", "__dlpack_device__", "_is_view",
    "is_set_to", "__array_wrap__", "__reversed__", "register_hook", "retain_grad", "requires_grad_",
    "_record_function_enter_new", "_record_function_exit", "_record_function_exit._RecordFunction",  # profiler ranges
})
_FunctionType = types.FunctionType
# Torch's callables are classified once each: a bounded set (torch's API and the library's helpers).
_CLASSIFY_CACHE_SIZE = 8192
_classify_cache: dict[Any, tuple[Op, Callable, bool]] = {}


def _autograd_grad_meta(args: tuple, kwargs: dict) -> tuple[TensorMeta, ...]:
    inputs = kwargs["inputs"] if "inputs" in kwargs else args[1]
    inputs = (inputs,) if isinstance(inputs, Value) else tuple(inputs)
    return tuple(TensorMeta(like_example(v), v.device, False) for v in inputs)


# Autograd entry points cannot run on meta tensors: their output metadata is known without shape
# inference. `backward` accumulates into `.grad` at run time: an effect on tensors it does not take as
# arguments, so it is kept, in order, and may write anything.
AUTOGRAD_META: dict[Callable, Callable[[tuple, dict], Any]] = {
    torch.Tensor.backward: lambda args, kwargs: None,
    torch.autograd.backward: lambda args, kwargs: None,
    torch.autograd.grad: _autograd_grad_meta,
}
BACKWARD_CALLS = frozenset({torch.Tensor.backward, torch.autograd.backward})


def _facts(func: Callable) -> tuple[Effect, Trait]:
    """A torch callable's effects and its outputs' traits (op_facts.py); `backward` may write anything."""
    facts = facts_of(func)
    return facts.effects | (Effect.UNKNOWN if func in BACKWARD_CALLS else Effect.NONE), facts.traits


def _op(kind: OpKind, target: Any, name: str, effects: Effect = Effect.NONE, func: Any = None,
        traits: Trait = Trait.NONE) -> Op:
    autograd = func in AUTOGRAD_META
    return Op(kind, target, name, effects=effects, pure=effects is Effect.NONE and not autograd,
              runs_autograd=autograd, traits=traits)


def classify(func: Callable) -> tuple[Op, Callable, bool]:
    """(Op, function used for shape inference, swap the first two args) for a torch callable."""
    hit = _classify_cache.get(func)
    if hit is not None:
        return hit
    if isinstance(func, torch._ops.OpOverload):  # an aten op that reached __torch_dispatch__ (Variable(x): detach)
        effects, traits = _facts(func)
        effects |= Effect.WRITES_FIRST_ARG if func._schema.is_mutable else Effect.NONE
        return _op(OpKind.FUNCTION, func, func.__name__.split(".")[0], effects, func, traits), func, False
    name = _DUNDER_ALIASES.get(func) or getattr(func, "__name__", "") or ""
    owner = getattr(func, "__objclass__", None) or getattr(func, "__self__", None)
    descriptor = getattr(func, "__self__", None) if name == "__get__" else None  # `x.T` is `Tensor.T.__get__(x)`
    if isinstance(descriptor, types.GetSetDescriptorType):
        attr = descriptor.__name__
        result = (_op(OpKind.GETATTR, attr, attr), func, False)
    elif name.startswith("__") and name.endswith("__"):
        core = name[2:-2]
        if core in INPLACE_DUNDERS:
            method = INPLACE_DUNDERS[core]
            result = (_op(OpKind.METHOD, method, method, Effect.WRITES_FIRST_ARG), getattr(torch.Tensor, method),
                      False)
        elif core in _DUNDER_OPS:
            fn = _DUNDER_OPS[core]
            effects = Effect.WRITES_FIRST_ARG if core == "setitem" else Effect.NONE
            result = (_op(OpKind.OPERATOR, fn, core, effects, traits=facts_of(fn).traits), fn, False)
        elif core.startswith("r") and core[1:] in _DUNDER_OPS:
            fn = _DUNDER_OPS[core[1:]]
            result = (_op(OpKind.OPERATOR, fn, core[1:], traits=facts_of(fn).traits), fn, True)
        else:
            result = (_op(OpKind.METHOD, name, core, traits=facts_of(func).traits), func, False)
    elif owner in (torch.Tensor, torch._C.TensorBase) or (
            isinstance(owner, type) and issubclass(owner, torch._C.TensorBase)):
        effects, traits = _facts(func)
        result = (_op(OpKind.METHOD, name, name.rstrip("_") or name, effects, traits=traits), func, False)
    else:
        effects, traits = _facts(func)
        result = (_op(OpKind.FUNCTION, func, name.rstrip("_") or "call", effects, func, traits), func, False)
    if len(_classify_cache) < _CLASSIFY_CACHE_SIZE:
        try:
            _classify_cache[func] = result
        except TypeError:
            pass
    return result
