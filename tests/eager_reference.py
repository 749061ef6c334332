"""Run a function eagerly and as a `ta.function` on the same inputs; compare values and gradients.

Shared by the graph-side control-flow tests. Every floating-point tensor
argument is a fresh leaf that requires grad; the sum of every output that
requires grad is backpropagated; the outputs, the `.grad` of each argument and
of each parameter of `modules` must agree (`torch.testing.assert_close`), the
gradients exactly: the default backend runs eager's ops in eager's order, so
they are bitwise equal (a backend that fuses ops needs its own tolerance).
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

import torch

import torch_autograph as ta


def _leaf(a: Any) -> Any:
    if isinstance(a, torch.Tensor):
        return a.detach().clone().requires_grad_(a.is_floating_point())
    return a


def _run(fn: Callable, args: Sequence[Any], modules: Sequence[torch.nn.Module]) -> tuple:
    for m in modules:
        m.zero_grad(set_to_none=True)
    args = [_leaf(a) for a in args]
    out = fn(*args)
    needs = [o for o in ta.nest.flatten(out) if isinstance(o, torch.Tensor) and o.requires_grad]
    if needs:
        sum(o.sum() for o in needs).backward()
    # A graph returns Python numbers as tensors (`ta.function` outputs are tensors).
    values = ta.nest.map_structure(lambda o: o.detach() if isinstance(o, torch.Tensor) else
                                   torch.tensor(o) if isinstance(o, (bool, int, float)) else o, out)
    grads = [a.grad if isinstance(a, torch.Tensor) else None for a in args]
    param_grads = [p.grad for m in modules for p in m.parameters()]
    return values, grads, param_grads


def assert_matches_eager(fn: Callable, *args: Any, modules: Sequence[torch.nn.Module] = (),
                         traced: Any = None) -> Any:
    """`ta.function(fn)(*args)` equals `fn(*args)` in value and gradients; returns the traced Function."""
    traced = traced if traced is not None else ta.function(fn)
    expected = _run(fn, args, modules)
    got = _run(traced, args, modules)
    torch.testing.assert_close(got[0], expected[0], msg=lambda m: f"values differ: {m}")
    torch.testing.assert_close(got[1], expected[1], rtol=0, atol=0, msg=lambda m: f"input gradients differ: {m}")
    torch.testing.assert_close(got[2], expected[2], rtol=0, atol=0, msg=lambda m: f"parameter gradients differ: {m}")
    return traced


def graph_ops(traced: Any, *args: Any) -> list[str]:
    """Names of every op in the traced graph for `args`, sub-graphs included (e.g. 'cond', 'while')."""
    names: list[str] = []

    def walk(graph: Any) -> None:
        for node in graph.nodes:
            names.append(node.op.name)
            for sub in node.subgraphs or ():
                walk(sub)

    walk(traced.get_concrete_function(*args).graph)
    return names


def line_of(fn: Callable, marker: str) -> str:
    """`file.py:N` of the line of `fn`'s source holding `marker` (a comment), for error-message checks."""
    lines, start = inspect.getsourcelines(fn)
    for k, text in enumerate(lines):
        if marker in text:
            return f"{inspect.getsourcefile(fn).rsplit('/', 1)[-1]}:{start + k}"
    raise AssertionError(f"marker {marker!r} not in the source of {fn.__name__}")
