"""torch_autograph: TensorFlow's tf.function + AutoGraph for PyTorch.

    import torch, torch_autograph as ta

    @ta.function
    def step(x):
        return torch.relu(x) * 2

Decorated functions are traced once per input signature into a graph that
runs on PyTorch (CPU and CUDA) with gradients through torch.autograd.
"""

from . import autograph, config, errors, nest, optimizers, staged_calls, staging
from .function import ConcreteFunction, Function, TraceEvent, function
from .graph import GraphTensor
from .ops import cond, print, while_loop
from .shapes import shape
from .signatures import TensorSpec
from .staged_calls import py_function
from .tape import GradientTape, UnconnectedGradients
from .variables import Variable, init_scope
from .tensor_array import TensorArray

staging.install()
staged_calls.install()

__all__ = [
    "ConcreteFunction",
    "Function",
    "GradientTape",
    "GraphTensor",
    "TensorArray",
    "TensorSpec",
    "TraceEvent",
    "UnconnectedGradients",
    "Variable",
    "autograph",
    "cond",
    "config",
    "errors",
    "function",
    "init_scope",
    "nest",
    "optimizers",
    "print",
    "py_function",
    "shape",
    "while_loop",
]

__version__ = "0.1.0"
