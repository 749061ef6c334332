"""What `jit_compile=True` did with each region of a graph: compiled, below the compile threshold, fell back.

One `JitReport` per trace, filled while the graph is split (regions too small to compile) and at the calls that
compile (each region's compile time, or the reason inductor gave and the region's fall back to the default
backend). `ConcreteFunction.jit_status` sums it up in a word, `ConcreteFunction.jit_report()` lists it::

    graph step: 3 regions: 1 compiled, 1 below threshold, 1 fell back
      compiled (4.1 s): the region %linear .. %sum of graph step at File "train.py", line 12
      below threshold (3 ops < 5): the region %mul .. %add of graph step at File "train.py", line 15
      fell back to the default backend: the region %mul_1 .. %div of graph step at File "train.py", line 19:
        node %div: InductorError: ...
"""

from __future__ import annotations

import re
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any

from ..errors import GraphLoweringError, JitFallbackWarning
from ..graph import Graph, Node, walk_nodes


@dataclass
class RegionRecord:
    """One graph or region: its words for messages, its size in ops, and what became of it.

    `state`: "not called yet" (compiled at its first call), "compiled", "below threshold" (too few ops to
    gain from a compile: the default backend's code), "default for training calls" (a small region whose call
    records autograd), or "fell back" (inductor could not lower or compile it: `reason`)."""

    what: str
    ops: int
    state: str = "not called yet"
    seconds: float = 0.0  # time spent in inductor for it, every variant together
    variants: int = 0
    reason: str = ""


@dataclass
class JitReport:
    """Every region of one trace's graph under `jit_compile=True`, in program order."""

    graph_name: str
    regions: list[RegionRecord] = field(default_factory=list)
    threshold: int = 0  # regions.MIN_REGION_OPS
    training_threshold: int = 0  # regions.MIN_TRAINING_REGION_OPS
    warned: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, what: str, ops: int, state: str = "not called yet") -> RegionRecord:
        record = RegionRecord(what, ops, state)
        self.regions.append(record)
        return record

    def compiled_regions(self) -> list[RegionRecord]:
        return [r for r in self.regions if r.state != "below threshold"]

    @property
    def status(self) -> str:
        """One word for `jit_status`: "fell back" (a region runs the default backend because inductor refused
        it), "compiled" (at least one region compiled), "not called yet" (compiled at the first call), or "below
        threshold" (no region large enough to compile, or to gain from AOT autograd for the training calls it
        got: all default backend code)."""
        states = {r.state for r in self.regions}
        for state in ("fell back", "compiled", "not called yet"):
            if state in states:
                return state
        return "below threshold"  # also a small region whose calls record autograd: the default's code runs

    def lines(self) -> list[str]:
        counts: dict[str, int] = {}
        for r in self.regions:
            counts[r.state] = counts.get(r.state, 0) + 1
        n = len(self.regions)
        head = f"graph {self.graph_name}: {n} region{'s' if n != 1 else ''}" + (
            ": " + ", ".join(f"{c} {s}" for s, c in counts.items()) if counts else " (nothing to compile)")
        out = [head]
        for r in self.regions:
            if r.state == "compiled":
                out.append(f"  compiled ({r.seconds:.1f} s, {r.variants} variant{'s' if r.variants != 1 else ''}): "
                           f"{r.what}")
            elif r.state == "below threshold":
                out.append(f"  below threshold ({r.ops} ops < {self.threshold}, runs the default backend's code): "
                           f"{r.what}")
            elif r.state == "fell back":
                out.append(f"  fell back to the default backend ({r.seconds:.1f} s in inductor): {r.what}: "
                           f"{r.reason}")
            elif r.state == "default for training calls":
                out.append(f"  default for training calls ({r.ops} ops < {self.training_threshold}: AOT autograd's "
                           f"training wrapper would cost more than it saves): {r.what}")
            else:
                out.append(f"  {r.state}: {r.what}")
        return out

    def fell_back(self, record: RegionRecord, graph: Graph, error: BaseException, seconds: float = 0.0) -> None:
        """Note that `record`'s region runs the default backend, and warn (once per trace) at the user's line."""
        node = culprit(graph, error)
        reason = _reason(error)
        with self.lock:
            record.state, record.reason = "fell back", f"node %{node.name} ({node.op.name}): {reason}" if node \
                else reason
            record.seconds += seconds
            if self.warned:
                return
            self.warned = True
        loc = node.origin if node is not None else None
        where = f' (File "{loc.filename}", line {loc.lineno}{": " + loc.line.strip() if loc.line else ""})' \
            if loc else ""
        message = (f"jit_compile=True: inductor could not compile {record.what}; it runs on the default "
                   f"backend{where}. {record.reason}. (ta.config.set_jit_strict(True) raises instead; "
                   f"ConcreteFunction.jit_report() lists every region.)")
        if loc is not None:
            warnings.warn_explicit(message, JitFallbackWarning, loc.filename, loc.lineno or 0)
        else:
            warnings.warn(message, JitFallbackWarning, stacklevel=2)


def _reason(error: BaseException) -> str:
    """The first line of what inductor (or the lowering) said, without our "Fix:" line."""
    msg = str(error).split("\nFix:")[0].strip()
    if isinstance(error, GraphLoweringError) and msg.startswith("inductor could not compile "):
        msg = msg.split(": ", 1)[-1]  # the region is named by the record
    return msg.splitlines()[0] if msg else type(error).__name__


def culprit(graph: Graph, error: BaseException) -> Node | None:
    """The node of `graph` that inductor's message names (`%name`, or a name of one of its fx nodes), else the
    graph's first node: what the warning points at."""
    texts: list[str] = []
    e: Any = error
    while e is not None and len(texts) < 8:
        texts.append(str(e))
        e = e.__cause__ or e.__context__
    text = "\n".join(texts)
    nodes = [n for n in walk_nodes(graph) if n.outputs]
    for pattern in (r"%{}\b", r"\b{}\b"):
        for node in nodes:
            if any(re.search(pattern.format(re.escape(v.name)), text) for v in node.outputs):
                return node
    return graph.nodes[0] if graph.nodes else None
