"""What the tracer knows of a torch callable: its effects and its outputs' `Trait`s, from torch's own data.

Passes and backends read the flags on the `Op`; only the recorder, which holds
the callable it records, decides them, here, from the callable object:

- a callable that is torch's binding of an aten op (`torch.add`, `Tensor.add_`,
  `torch._C._nn.gelu`, an `OpOverload`) takes its facts from the op's schema
  and tags: an argument annotated `Tensor(a!)` is written, a return without an
  alias annotation is a new tensor, `nondeterministic_seeded` draws random
  numbers;
- a Python-level callable (`F.softmax`, `nn.init.normal_`, `Tensor.backward`)
  takes them from `_PYTHON_LEVEL`, a table keyed by the callable object;
- anything else has none: a user function named `add` or `conv2d` is neither.

    torch.relu, Tensor.add, operator.mul  ->  Trait.FRESH          (alias analysis: never a view of an input)
    torch.empty, Tensor.data_ptr          ->  Trait.NOT_A_VALUE    (constant folding leaves them alone)
    F.conv2d, torch.convolution           ->  Trait.CONVOLUTION    (jit_compile freezes CPU conv weights)
"""

from __future__ import annotations

import builtins
import operator
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from .graph import Effect, Trait


@dataclass(frozen=True)
class Facts:
    """A callable's effects and the traits of its outputs."""

    effects: Effect = Effect.NONE
    traits: Trait = Trait.NONE

    def __or__(self, other: Facts) -> Facts:
        return Facts(self.effects | other.effects, self.traits | other.traits)


NO_FACTS = Facts()
_aten = torch.ops.aten
# Where torch's generated Python bindings live: each binding there is the aten op of its own name.
_BINDINGS = tuple(ns for ns in (torch._C._VariableFunctions, torch._C.TensorBase, torch._C._nn, torch._C._linalg,
                                torch._C._fft, torch._C._special, getattr(torch._C, "_nested", None),
                                getattr(torch._C, "_sparse", None)) if ns is not None)


def _packets(*names: str) -> frozenset:
    """The aten op packets of these names that this torch has (objects, compared by identity)."""
    return frozenset(p for p in (getattr(_aten, n, None) for n in names) if isinstance(p, torch._ops.OpOverloadPacket))


# Outputs that are uninitialised memory: two calls never give the same values.
_UNINITIALISED = _packets("empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
                          "empty_permuted")
_CONVOLUTION_OPS = _packets("convolution", "_convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                            "conv_transpose2d", "conv_transpose3d")
# Composite ops that always compute a new tensor (checked one by one: `einsum("ij->ji", x)` is a view of `x`).
_FRESH_COMPOSITES = _packets("adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "avg_pool1d",
                             "clip", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                             "conv_transpose3d", "group_norm", "layer_norm", "linear", "log_softmax", "matmul",
                             "max_pool1d", "max_pool2d", "max_pool3d", "nll_loss", "softmax", "square", "std",
                             "var", "true_divide", "where", "cross_entropy_loss", "mse_loss")
# Ops whose outputs are views of their input although their schema returns plain tensors (views torch does not
# track: "unsafe"); the OpInfo sweep of tests/test_op_facts.py finds any other.
_UNTRACKED_VIEWS = _packets("unsafe_split", "unsafe_split_with_sizes", "unsafe_chunk")
_FRESH = Facts(traits=Trait.FRESH)
_WRITES = Facts(Effect.WRITES_FIRST_ARG)
_DRAWS = Facts(Effect.RANDOM)
_NOT_A_VALUE = Facts(traits=Trait.NOT_A_VALUE)


def _table(*entries: tuple[Any, Facts]) -> dict[Any, Facts]:
    return {fn: facts for fn, facts in entries if fn is not None}


_init = torch.nn.init
# Python-level callables of torch (no aten schema of their own), by object.
_PYTHON_LEVEL = _table(
    *((fn, _FRESH) for fn in (
        F.softmax, F.log_softmax, F.softmin, F.layer_norm, F.group_norm, F.instance_norm,
        F.cross_entropy, F.mse_loss, F.nll_loss, F.l1_loss, F.binary_cross_entropy_with_logits, F.relu, F.relu6,
        F.silu, F.elu, F.selu, F.celu, F.leaky_relu, F.hardtanh, F.mish, F.hardswish, F.hardsigmoid, F.normalize,
        F.max_pool1d, F.max_pool2d, F.max_pool3d, F.adaptive_avg_pool1d, F.adaptive_avg_pool2d,
        F.adaptive_avg_pool3d, F.embedding, torch.norm, torch.Tensor.norm)),
    # torch tags batch_norm `maybe_aliasing_or_mutating` for its running statistics; its output is always new.
    *((fn, _FRESH) for fn in (F.batch_norm, torch.batch_norm, torch.instance_norm)),
    # `F.dropout(x, training=False)` returns `x` itself: random, never fresh.
    *((fn, _DRAWS) for fn in (F.dropout, F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout,
                              F.feature_alpha_dropout, F.rrelu)),
    (F.gumbel_softmax, _DRAWS | _FRESH),
    *((fn, _WRITES) for fn in (_init.constant_, _init.ones_, _init.zeros_, _init.eye_, _init.dirac_,
                               torch.Tensor.share_memory_, getattr(torch.Tensor, "apply_", None),
                               getattr(torch.Tensor, "map_", None), getattr(torch.Tensor, "map2_", None))),
    *((fn, _WRITES | _DRAWS) for fn in (_init.uniform_, _init.normal_, getattr(_init, "trunc_normal_", None),
                                        _init.xavier_uniform_, _init.xavier_normal_, _init.kaiming_uniform_,
                                        _init.kaiming_normal_, _init.orthogonal_, _init.sparse_)),
    *((fn, _NOT_A_VALUE) for fn in (torch.Tensor.data_ptr, getattr(torch.Tensor, "const_data_ptr", None),
                                    torch.Tensor.retain_grad, torch.Tensor.backward, torch.Tensor.requires_grad_,
                                    torch.Tensor.detach_)),
    # `sum(tensors)` starts from 0: always a new tensor (max/min return one of the elements).
    (builtins.sum, _FRESH),
    # Python operators on tensors: the result is always a new tensor.
    *((fn, _FRESH) for fn in (
        operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod, operator.pow,
        operator.matmul, operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift,
        operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne, operator.neg,
        operator.invert, builtins.abs)),
)


@dataclass(frozen=True)
class _Dropout:
    """Where a call that may draw finds its drop probability and its training flag (position, keyword, default)."""

    p: tuple[int, str, Any]
    train: tuple[int, str, Any] | None  # None: always training (`scaled_dot_product_attention`)


_F_DROPOUT = _Dropout((1, "p", 0.5), (2, "training", True))
_ATEN_DROPOUT = _Dropout((1, "p", None), (2, "train", None))
# Calls whose random draws are a dropout: they return their input, or compute without drawing, when not training
# or when p == 0.
_DROPOUTS = _table(
    *((fn, _F_DROPOUT) for fn in (F.dropout, F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout,
                                  F.feature_alpha_dropout)),
    *((fn, _ATEN_DROPOUT) for fn in (torch.dropout, torch.dropout_, torch.alpha_dropout, torch.alpha_dropout_,
                                     torch.feature_alpha_dropout, torch.feature_alpha_dropout_,
                                     getattr(torch, "feature_dropout", None),
                                     getattr(torch, "feature_dropout_", None))),
    (F.scaled_dot_product_attention, _Dropout((4, "dropout_p", 0.0), None)),
)
# torch's fused RNNs: `dropout` is their one float argument, `train` the one after it (in both overloads).
_RNNS = frozenset(fn for fn in (torch.lstm, torch.gru, torch.rnn_tanh, torch.rnn_relu))


def _argument(args: tuple, kwargs: dict, where: tuple[int, str, Any]) -> Any:
    position, keyword, default = where
    return kwargs[keyword] if keyword in kwargs else args[position] if len(args) > position else default


def draws_nothing(func: Any, args: tuple, kwargs: dict) -> bool:
    """Whether a call of a dropout-like `func` draws no random numbers: `training=False` or `p=0` given as constants
    (an eval-mode `nn.Dropout`, `dropout=0.0`, attention without dropout)."""
    if not _hashable(func):
        return False
    if func in _RNNS:
        floats = [i for i, a in enumerate(args) if type(a) is float]
        p, train = (args[floats[0]], args[floats[0] + 1]) if floats and floats[0] + 1 < len(args) else (None, None)
    elif func in _DROPOUTS:
        spec = _DROPOUTS[func]
        p = _argument(args, kwargs, spec.p)
        train = _argument(args, kwargs, spec.train) if spec.train is not None else True
    else:
        return False
    return train is False or (type(p) in (int, float) and p == 0)


def aten_packet(func: Any) -> Any:
    """The aten op packet `func` is torch's binding of (`torch.add`, `Tensor.add`: `aten.add`), else None."""
    if isinstance(func, torch._ops.OpOverload):
        return func.overloadpacket
    if isinstance(func, torch._ops.OpOverloadPacket):
        return func
    name = getattr(func, "__name__", None)
    if not isinstance(name, str):
        return None
    for namespace in _BINDINGS:
        if getattr(namespace, name, None) is func:  # the binding itself, not another callable of that name
            packet = getattr(_aten, name, None)
            return packet if isinstance(packet, torch._ops.OpOverloadPacket) else None
    return None


def _dispatched(op: Any) -> bool:
    """Whether an overload is a dispatcher op (TorchScript's list overloads, `aten::sort.int`, are not)."""
    schema = op._schema
    try:
        torch._C._dispatch_find_schema_or_throw(schema.name, schema.overload_name)
    except RuntimeError:
        return False
    return True


def _composite(op: Any) -> bool:
    """Whether an overload is a composite of other ops, whose schema torch does not check for aliasing
    (`type_as` returns `self` when the types agree, with an unannotated return)."""
    schema = op._schema
    qualified = f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name
    return torch._C._dispatch_has_kernel_for_dispatch_key(qualified, "CompositeImplicitAutograd")


def _schema_facts(packet: Any, overloads: list) -> Facts:
    """Facts every overload of an op guarantees (writes and draws: any overload; fresh: all of them)."""
    effects, fresh = Effect.NONE, bool(overloads)
    for op in overloads:
        schema, tags = op._schema, op.tags
        first = schema.arguments[0].alias_info if schema.arguments else None
        if first is not None and first.is_write:
            effects |= Effect.WRITES_FIRST_ARG
        if torch.Tag.nondeterministic_seeded in tags:
            effects |= Effect.RANDOM
        if any(r.alias_info is not None for r in schema.returns) or \
                torch.Tag.maybe_aliasing_or_mutating in tags or packet in _UNTRACKED_VIEWS or \
                (_composite(op) and packet not in _FRESH_COMPOSITES):
            fresh = False
    return Facts(effects, Trait.FRESH if fresh and not effects & Effect.WRITES_FIRST_ARG else Trait.NONE)


def _aten_facts(packet: Any, overloads: list) -> Facts:
    overloads = [op for op in overloads if _dispatched(op)]
    # `out=` overloads return their `out` argument: the call passes one or the other (recording marks `out=`).
    plain = [op for op in overloads if not any(a.is_out for a in op._schema.arguments)] or overloads
    facts = _schema_facts(packet, plain)
    if packet in _UNINITIALISED:
        facts |= _NOT_A_VALUE
    if packet in _CONVOLUTION_OPS:
        facts |= Facts(traits=Trait.CONVOLUTION)
    return facts


def facts_of(func: Any) -> Facts:
    """The effects and traits of calling `func`, from its aten schema or the table of Python-level callables."""
    if isinstance(func, torch._ops.OpOverload):
        return _aten_facts(func.overloadpacket, [func])
    facts = _PYTHON_LEVEL.get(func, NO_FACTS) if _hashable(func) else NO_FACTS
    packet = aten_packet(func)
    if packet is not None:
        facts |= _aten_facts(packet, [getattr(packet, o) for o in packet.overloads()])
    return facts


def traits_of(func: Any) -> Trait:
    """The traits of a node calling `func`."""
    return facts_of(func).traits


def _hashable(func: Any) -> bool:
    try:
        hash(func)
    except TypeError:
        return False
    return True
