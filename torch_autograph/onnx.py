"""`ta.onnx.export`: a traced function as an ONNX model (`If` / `Loop` for its `cond` / `while`), checked.

    program = ta.onnx.export(predict, "predict.onnx")     # a ta.function with an input_signature
    session = onnxruntime.InferenceSession("predict.onnx")

It is `torch.onnx.export(cf.export(), dynamo=True)` plus what torch.onnx does
not do for you:

- a numeric check (`verify=True`, the default): the model runs in ONNX Runtime
  on the example inputs and must give what the default backend gives; if it
  does not, `OnnxMismatchError` says which output differs, instead of a model
  that silently computes something else;
- run-time checks: ONNX has no operator that raises, so a graph's asserts are
  dropped by torch.onnx; exporting one warns, naming each assert's line.

Needs the `onnx`, `onnxscript` (and for `verify`, `onnxruntime`) packages:
`pip install torch-autograph[export]`.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from typing import Any, Iterator

import torch

from .errors import TorchAutographError
from .function import BoundFunction, ConcreteFunction, Function, user_facing
from .graph import CheckOp, walk_nodes


class OnnxMismatchError(TorchAutographError):
    """The ONNX model computes a different value than the function: torch.onnx exported it wrongly.

    Cause: a bug in torch.onnx or ONNX Runtime for one of the graph's ops. Fix: run the function with the
    default backend or `torch.export` (`cf.export()`) instead, and report the model to PyTorch.
    """


@user_facing
def export(f: Any, path: str | os.PathLike | None = None, *example_args: Any, verify: bool = True,
           rtol: float = 1e-4, atol: float = 1e-5) -> Any:
    """Export `f` (a ta.function with an input_signature, or a ConcreteFunction) to ONNX.

    Args:
        f: what to export; `example_args` trace it when it has no input_signature.
        path: where to write the `.onnx` file (None: only return the program).
        example_args: example inputs (tensors); by default the signature's shapes with values from
            `torch.randn` / `torch.randint(0, 3)`.
        verify: run the model in ONNX Runtime on the example inputs and compare with the function.

    Returns:
        torch.onnx's `ONNXProgram` (`.model_proto` is the ONNX model).

    Raises:
        OnnxMismatchError: `verify` found an output that differs.
        GraphLoweringError: the function cannot be exported (see `ConcreteFunction.export`).
    """
    cf = _concrete(f, example_args)
    flat = cf.flat_inputs(_bind(cf, example_args)) if example_args else _random_inputs(cf)
    # (A user's `raise` on a run-time path is a check too, which `cf.export` refuses at its line.)
    checks = [n for n in walk_nodes(cf.graph) if isinstance(n.op.target, CheckOp) and n.op.target.error is None]
    if checks:
        lines = ", ".join(sorted({str(n.origin) for n in checks if n.origin is not None}))
        warnings.warn(f"ta.onnx.export({cf.name}): ONNX has no operator that raises, so the graph's {len(checks)} "
                      f"run-time check(s) (asserts at {lines or 'unknown lines'}) are not in the ONNX model",
                      UserWarning, stacklevel=2)
    program = cf.export(*flat, flat=True) if flat else cf.export(flat=True)  # ONNX: flat inputs and outputs
    # An ExportedProgram carries its dynamic dims: torch.onnx keeps them as symbolic ONNX dims.
    with _local_functions_at_version_1():
        onnx_program = torch.onnx.export(program, tuple(flat), dynamo=True, verbose=False)
    if verify:
        check_numerics(cf, onnx_program, flat, rtol, atol)
    if path is not None:
        onnx_program.save(os.fspath(path))
    return onnx_program


def check_numerics(cf: ConcreteFunction, onnx_program: Any, flat: list[torch.Tensor], rtol: float = 1e-4,
                   atol: float = 1e-5) -> None:
    """Run `onnx_program` in ONNX Runtime on `flat` and compare with the function's default backend."""
    import onnxruntime

    session = onnxruntime.InferenceSession(onnx_program.model_proto.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    feeds = {i.name: t.detach().cpu().numpy() for i, t in zip(session.get_inputs(), flat)}
    got = session.run(None, feeds)
    want = [t for t in _flat_outputs(cf, flat)]
    if len(got) != len(want):
        raise OnnxMismatchError(f"{cf.name}: the ONNX model has {len(got)} outputs, the function {len(want)}")
    for i, (g, w) in enumerate(zip(got, want)):
        g = torch.from_numpy(g)
        if g.shape != w.shape or not torch.allclose(g.to(w.dtype), w, rtol=rtol, atol=atol, equal_nan=True):
            raise OnnxMismatchError(
                f"{cf.name}: ONNX Runtime computes output {i} differently from the function: got {g!r}, expected "
                f"{w!r} (inputs {[tuple(t.shape) for t in flat]}). torch.onnx exported this graph wrongly: run it "
                f"with the default backend or the torch.export program (cf.export()) instead.")


def _flat_outputs(cf: ConcreteFunction, flat: list[torch.Tensor]) -> list[torch.Tensor]:
    """The function's flat tensor outputs on `flat`, computed by the exported program's own reference: the
    default backend (state it updates is restored after, so verifying changes nothing)."""
    saved = [(t, t.detach().clone()) for _, t in cf.graph.captures]
    try:
        out = cf._fn(*flat)
    finally:
        with torch.no_grad():
            for t, copy in saved:
                t.copy_(copy)
    out = out if isinstance(out, tuple) else (out,)
    return [torch.as_tensor(o).detach() for o, v in zip(out, cf.graph.outputs) if not _constant(v)]


def _constant(v: Any) -> bool:
    from .graph import Value

    return not isinstance(v, Value)


@contextlib.contextmanager
def _local_functions_at_version_1() -> Iterator[None]:
    """Work around torch.onnx (2.13) failing on a `torch.cond` inside a `torch.while_loop` body.

    torch.onnx records the domain of its local functions (the branches and loop bodies,
    "pkg.torch.__subgraph__") at the model's opset version when a call to one sits inside another, and its
    opset conversion then refuses to inline them ("Opset mismatch when inlining function ... has version 20
    in the model but version 1 in the function"). Local functions have version 1: say so before converting.
    """
    from torch.onnx._internal.exporter import _constants, _core

    apis = _core.onnxscript_apis
    original = apis.convert_version

    def convert_version(model: Any, *args: Any, **kwargs: Any) -> Any:
        domain = _constants.LOCAL_FUNCTION_DOMAIN
        for imports in [model.opset_imports] + [fn.opset_imports for fn in model.functions.values()]:
            if imports.get(domain, 1) != 1:
                imports[domain] = 1
        return original(model, *args, **kwargs)

    apis.convert_version = convert_version
    try:
        yield
    finally:
        apis.convert_version = original


def _concrete(f: Any, example_args: tuple) -> ConcreteFunction:
    if isinstance(f, ConcreteFunction):
        return f
    if isinstance(f, (Function, BoundFunction)):
        return f.get_concrete_function(*example_args)
    raise TypeError(f"ta.onnx.export takes a ta.function or a ConcreteFunction, got {f!r}")


def _bind(cf: ConcreteFunction, args: tuple) -> dict:
    from .function import bind_arguments

    return bind_arguments(cf._signature, args, {}, cf.name)


def _random_inputs(cf: ConcreteFunction) -> list[torch.Tensor]:
    from .exporting import example_inputs

    out = []
    for t in example_inputs(cf.graph):
        if t.dtype.is_floating_point:
            out.append(torch.randn(t.shape, dtype=t.dtype))
        elif t.dtype == torch.bool:
            out.append(torch.randint(0, 2, t.shape).bool())
        else:
            out.append(torch.randint(0, 3, t.shape, dtype=t.dtype))
    return out

