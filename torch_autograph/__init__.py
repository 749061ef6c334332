"""torch_autograph: TensorFlow's tf.function + AutoGraph for PyTorch.

    import torch, torch_autograph as ta

    @ta.function
    def step(x):
        return torch.relu(x) * 2

Decorated functions are traced once per input signature into a graph that
runs on PyTorch (CPU and CUDA) with gradients through torch.autograd.
"""

import importlib
from typing import Any

from . import autograph, config, errors, nest, staging
from .function import ConcreteFunction, Function, TraceEvent, export, function
from .graph import TensorSpec
from .state import GradientTape, TensorArray, UnconnectedGradients, Variable, init_scope, optimizers
from .subtraces import cond, print, py_function, shape, while_loop
from .tracing import GraphTensor

# The one registration done at import: AutoGraph's operators stage graph values through `staging`.
staging.install()

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
    "export",
    "function",
    "init_scope",
    "nest",
    "onnx",
    "optimizers",
    "print",
    "py_function",
    "saved_model",
    "shape",
    "summary",
    "while_loop",
]

__version__ = "0.1.0"

# Imported on first use: they bring the export path (exporting/, torch.export's own modules), which a program
# that only calls functions never needs; at import they were most of what `import torch_autograph` cost.
_ON_FIRST_USE = ("onnx", "saved_model", "summary")


def __getattr__(name: str) -> Any:
    if name in _ON_FIRST_USE:
        module = importlib.import_module(f".{name}", __name__)
        globals()[name] = module
        return module
    raise AttributeError(f"module 'torch_autograph' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_ON_FIRST_USE))
