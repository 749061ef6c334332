"""`ta.export`: a function (or plain callable) straight to a `torch.export.ExportedProgram`."""

from __future__ import annotations

from typing import Any, Callable

from .function import BoundFunction, Function
from .tracebacks import user_facing


@user_facing
def export(f: Callable | Function, *example_args: Any, input_signature: Any = None, **example_kwargs: Any) -> Any:
    """Trace `f` and export its graph: `ta.function(f).get_concrete_function(...).export(...)` in one call.

    Args:
        f: a `ta.function`, or a plain callable (decorated here, with `input_signature`).
        *example_args: the positional arguments to trace with (tensors or `ta.TensorSpec`s); none for a
            function with an input_signature. Tensors fix their shapes, as a call would; a TensorSpec's None
            dims (or the signature's) become `torch.export.Dim`s.
        input_signature: for a plain callable, the signature to decorate it with.
        **example_kwargs: the keyword arguments to trace with, as `example_args`.

    Returns:
        The `torch.export.ExportedProgram` (see `ConcreteFunction.export`).
    """
    if not isinstance(f, (Function, BoundFunction)):
        f = Function(f, input_signature=input_signature)
    elif input_signature is not None:
        raise TypeError("ta.export: input_signature is for a plain callable; this ta.function has its own")
    cf = f.get_concrete_function(*example_args, **example_kwargs)
    given = list(example_args) + list(example_kwargs.values())
    if not given or any(_is_spec(a) for a in given):
        return cf.export()  # traced with zeros of the signature's shapes
    return cf.export(*example_args, **example_kwargs)


def _is_spec(x: Any) -> bool:
    from ..graph import TensorSpec

    return isinstance(x, TensorSpec)
