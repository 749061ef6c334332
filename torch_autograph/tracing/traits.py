"""What the tracer knows of a torch callable's outputs, set on its `Op` as `Trait`s when it records the node.

Passes and backends read the flags; only the recorder, which knows the callable
it records, decides them::

    torch.relu, Tensor.add, operator.mul  ->  Trait.FRESH          (alias analysis: never a view of an input)
    torch.empty, Tensor.data_ptr          ->  Trait.NOT_A_VALUE    (constant folding leaves them alone)
    F.conv2d, torch.convolution           ->  Trait.CONVOLUTION    (jit_compile freezes CPU conv weights)
"""

from __future__ import annotations

import operator
from typing import Any

from ..graph import OpKind, Trait

# Python operators whose result is always a new tensor (never a view of an argument).
_FRESH_OPERATORS = frozenset({
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod, operator.pow,
    operator.matmul, operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift,
    operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne, operator.neg,
    operator.invert, abs,
})
# torch functions and Tensor methods whose result is always a new tensor (their out-of-place forms).
_FRESH = frozenset({
    "add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow", "neg", "abs",
    "sin", "cos", "tan", "tanh", "sigmoid", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt",
    "relu", "gelu", "silu", "softplus", "elu", "leaky_relu", "hardtanh", "erf", "erfc", "reciprocal", "square",
    "sign", "floor", "ceil", "round", "trunc", "clamp", "clip", "minimum", "maximum", "where", "lerp",
    "addcmul", "addcdiv", "matmul", "mm", "bmm", "linear", "addmm", "einsum", "softmax", "log_softmax",
    "layer_norm", "sum", "mean", "prod", "amax", "amin", "var", "std", "norm", "cumsum", "cat", "stack",
    "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not", "clone", "tensor",
    "zeros", "ones", "full", "arange", "eye", "linspace", "logspace", "zeros_like", "ones_like", "full_like",
    "scalar_tensor", "cross_entropy", "mse_loss", "nll_loss", "conv1d", "conv2d", "conv3d", "dropout",
    "batch_norm", "group_norm", "instance_norm", "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d",
    "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
})
# Calls that never give the same result twice, or whose result is not a value (even when they have no effect).
_NOT_A_VALUE = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "data_ptr", "requires_grad_",
                          "detach_", "retain_grad", "backward"})
_CONVOLUTIONS = frozenset({"conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                           "conv_transpose3d", "convolution"})


def traits_of(kind: OpKind, target: Any, name: str) -> Trait:
    """The traits of a node calling `target` (`name`: the callable's own name, `add_` for `Tensor.add_`)."""
    if kind is OpKind.OPERATOR:
        return Trait.FRESH if target in _FRESH_OPERATORS else Trait.NONE
    found = Trait.NONE
    if name in _FRESH:
        found |= Trait.FRESH
    if name in _NOT_A_VALUE:
        found |= Trait.NOT_A_VALUE
    if name in _CONVOLUTIONS:
        found |= Trait.CONVOLUTION
    return found
