"""torch_autograph: TensorFlow's tf.function + AutoGraph for PyTorch.

    import torch, torch_autograph as ta

    @ta.function
    def step(x):
        return torch.relu(x) * 2

Decorated functions are traced once per input signature into a graph that
runs on PyTorch (CPU and CUDA) with gradients through torch.autograd.
"""

from . import config, errors, nest
from .function import ConcreteFunction, Function, TraceEvent, function
from .graph import GraphTensor
from .shapes import shape
from .signatures import TensorSpec

__all__ = [
    "ConcreteFunction",
    "Function",
    "GraphTensor",
    "TensorSpec",
    "TraceEvent",
    "config",
    "errors",
    "function",
    "nest",
    "shape",
]

__version__ = "0.1.0"
