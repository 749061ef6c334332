"""Tensors kept in Python objects between calls, read by the graph at every call: inputs of the graph.

A graph reads the tensors it captured by reference: right for a parameter or a buffer, which the user updates in
place and whose replacement the module guards see. A tensor kept in a plain entry of a Python object is replaced
instead: `self.running = 0.9 * self.running + ...` on a module, `state["w"] = new` by the user between calls, a
call's own write-back of a tensor it computed. Read by reference, the graph would keep the tensor of the trace;
guarded by identity, every call would trace again (each call's write-back is a new tensor).

So a tensor the trace read from an entry of an object it follows (the closure's and globals' dicts, lists and
objects, the modules and their submodules, the instance of a method) becomes an input of the compiled graph,
read from that entry at every call, along the path the trace found it by (`st["sub"]["v"]`: a replaced inner
dict is seen too). The call checks that the entry holds a tensor of the traced type, dtype, shape, device and
`requires_grad` (else it traces again, the reason naming the entry); which tensor it is does not matter.

A tensor found in more than one entry (or not a plain tensor: a Parameter kept in a dict) stays a capture, and
each entry is guarded by identity instead: the graph could not tell which entry a use read.
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import Any

import torch

from ..graph import Graph
from .python_state import ObjectWatch, step_of

_EXPR = "<torch_autograph state reads>"


@dataclasses.dataclass(frozen=True)
class _Entry:
    root: Any  # the object the path starts at (weakly where it can be)
    steps: tuple  # ("item", key) / ("attr", name) / ("submodule", name)
    tensor: torch.Tensor  # what the entry held when traced

    def where(self) -> str:
        root = self.root() if isinstance(self.root, weakref.ref) else self.root
        words = [type(root).__name__]
        for how, key in self.steps:
            words.append(f"[{key!r}]" if how == "item" else f".{key}")
        return "".join(words)

    def now(self) -> Any:
        obj = self.root() if isinstance(self.root, weakref.ref) else self.root
        for how, key in self.steps:
            obj = obj[key] if how == "item" else vars(obj)[key] if how == "attr" else obj._modules[key]
        return obj


class ReadPlan:
    """The entries a finished trace read tensors from (`plan_reads`); `lift` makes them graph inputs."""

    def __init__(self, reads: list[_Entry], pinned: list[_Entry]) -> None:
        self.reads, self.pinned = reads, pinned

    def read_ids(self) -> set[int]:
        """The ids of the tensors read at each call (no identity guard needed on their entries)."""
        return {id(e.tensor) for e in self.reads}

    def lift(self, graph: Graph) -> tuple[Graph, "StateReads | None"]:
        """`graph` with the captures of the read tensors moved to the end of its inputs (a copy, for the backend:
        the graph itself keeps them as captures, for export and inspection), and the per-call reads."""
        values = {id(t): v for v, t in graph.captures}
        reads = [e for e in self.reads if id(e.tensor) in values]  # (a capture no node uses is gone)
        if not reads and not self.pinned:
            return graph, None
        lifted = {id(e.tensor) for e in reads}
        if reads:
            graph = dataclasses.replace(graph, inputs=graph.inputs + [values[id(e.tensor)] for e in reads],
                                        captures=[(v, t) for v, t in graph.captures if id(t) not in lifted])
        return graph, StateReads(reads, self.pinned)


class StateReads:
    """At every call: whether the entries still fit the trace (`holds`), and the tensors they hold (`extend`)."""

    def __init__(self, reads: list[_Entry], pinned: list[_Entry]) -> None:
        self._reads, self._pinned = tuple(reads), tuple(pinned)
        self.holds, self.extend = _compile(self._reads, self._pinned)

    def __len__(self) -> int:
        return len(self._reads) + len(self._pinned)

    def reason(self) -> str:
        """Which entry no longer fits (the first found), for `trace_history()`."""
        for e in self._reads:
            try:
                now = e.now()
            except (KeyError, IndexError, AttributeError, TypeError):
                return f"{e.where()} is gone (it held a tensor the trace read)"
            want = _describe(e.tensor)
            if not isinstance(now, torch.Tensor) or _describe(now) != want:
                got = _describe(now) if isinstance(now, torch.Tensor) else type(now).__name__
                return f"{e.where()} holds {got}, {want} when traced"
        for e in self._pinned:
            return f"{e.where()} holds another tensor than when traced (one more entries or a parameter shared)"
        return "an entry the trace read a tensor from changed"


def _describe(t: torch.Tensor) -> str:
    grad = ", requires_grad" if t.requires_grad else ""
    return f"{type(t).__name__} {str(t.dtype).replace('torch.', '')}{list(t.shape)} on {t.device}{grad}"


def _compile(reads: tuple, pinned: tuple) -> tuple:
    """`holds()` and `extend(flat)`: one generated expression each (an entry read is a few dict lookups)."""
    env: dict[str, Any] = {}

    def path(i: int, e: _Entry) -> str:
        env[f"r{i}"] = e.root
        expr = f"r{i}()" if isinstance(e.root, weakref.ref) else f"r{i}"
        for j, (how, key) in enumerate(e.steps):
            env[f"k{i}_{j}"] = key
            expr += f"[k{i}_{j}]" if how == "item" else f".__dict__[k{i}_{j}]" if how == "attr" else \
                f"._modules[k{i}_{j}]"
        return expr

    tests, reads_src = [], []
    for i, e in enumerate(reads):
        t = e.tensor
        env[f"T{i}"], env[f"D{i}"], env[f"S{i}"] = type(t), t.dtype, tuple(t.shape)
        env[f"V{i}"], env[f"G{i}"] = t.device, t.requires_grad
        expr = path(i, e)
        reads_src.append(expr)
        tests.append(f"(type(x{i} := {expr}) is T{i} and x{i}.dtype is D{i} and x{i}.shape == S{i} and "
                     f"x{i}.device == V{i} and x{i}.requires_grad is G{i})")
    for i, e in enumerate(pinned, len(reads)):
        env[f"t{i}"] = e.tensor
        tests.append(f"{path(i, e)} is t{i}")
    src = "def holds():\n    try:\n        return " + (" and ".join(tests) or "True") + \
        "\n    except Exception:\n        return False\n" + \
        "def extend(flat):\n    return (*flat, " + "".join(f"{r}, " for r in reads_src) + ")\n"
    exec(compile(src, _EXPR, "exec"), env)  # noqa: S102 (the code is ours: names of the values bound above)
    return env["holds"], env["extend"]


def plan_reads(watch: ObjectWatch, captured: set[int]) -> ReadPlan | None:
    """The entries of the objects `watch` follows that held, before the trace, a tensor it captured (`captured`:
    ids). Read before the watch restores anything (it holds each object's contents before the trace)."""
    found: dict[int, list[_Entry]] = {}
    for obj, kind, before in watch.held:
        if kind == "names":
            continue  # (rebound globals and nonlocals: the graph reads a global tensor by reference)
        entries = enumerate(before) if kind == "list" else before
        for key, v in entries:
            if isinstance(v, torch.Tensor) and id(v) in captured:
                found.setdefault(id(v), []).append(_entry(watch, obj, step_of(kind, key), v))
    if not found:
        return None
    reads, pinned = [], []
    for entries in found.values():
        if len(entries) == 1 and type(entries[0].tensor) is torch.Tensor:
            reads.append(entries[0])
        else:
            pinned.extend(entries)
    return ReadPlan(reads, pinned)


def _entry(watch: ObjectWatch, obj: Any, last: tuple, tensor: torch.Tensor) -> _Entry:
    steps = [last]
    while id(obj) in watch.parents:
        obj, step = watch.parents[id(obj)]
        steps.append(step)
    try:
        root = weakref.ref(obj)  # (the instance of a method: its Function is held weakly by it)
    except TypeError:  # a dict or a list: kept alive by the closure or module that holds it anyway
        root = obj
    return _Entry(root, tuple(reversed(steps)), tensor)
