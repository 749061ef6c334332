"""The effects on Python objects a call made before the op that failed as its graph ran, applied as eagerly.

Eagerly, `log.append(x.sum())` followed by an op that raises leaves the appended item in `log`; the effects
after the failing op are never made. A trace replays the final state of each object after a call that
returned (python_state.py). So that a call whose graph raises gets what eager code left, the trace also keeps
what the watched objects held each time they changed between two of its ops (`Checkpoints`, a mark per
change, placed before the next op recorded), and planned like the final state (their graph values become
outputs of the graph too, so that every pass keeps them). When the graph raises, the frame of its generated
code says which op failed (the line the exception left it at): the latest mark before that op is applied
with the values the graph had computed, then the exception goes on (`apply_at_raise`). A mark whose values
do not all exist there (a value some op made in a branch that did not run) gives way to the one before it.
"""

from __future__ import annotations

from typing import Any

from ..graph import Node, Value, WhileOp
from .object_writes import contents_of as _contents
from .python_state import StateEffectError, object_kind

_MISSING = object()


class Checkpoints:
    """What the watched objects held each time they changed between two root ops of the trace.

    Each op compares a print of each object (its keys, and its values by identity, held so that no identity
    is reused) with the one at the last op; a module's attributes only at the first op of each user line (a
    model's modules are many, and Python code runs between two lines)."""

    def __init__(self, watch: Any) -> None:
        self.watch = watch
        self.seq = 0  # root ops recorded so far
        self.order: dict[int, tuple[Node, int]] = {}  # id(node) -> (node, its place among the root ops)
        self.marks: list[tuple[int, list]] = []  # (place of the first op after the change, the objects' contents)
        self.inside: dict[int, Node] = {}  # the loops and `if`s that change objects in their bodies: `changes_inside`
        self._prints: list | None = None
        self._node: Node | None = None  # the last root op

    def at_node(self, node: Node, changes_visible: bool) -> None:
        """A root op is being recorded: mark the objects' contents if they changed since the last op.
        `changes_visible`: no sub-trace is running (its staged writes are not the root's)."""
        if changes_visible:
            last = self._node.origin if self._node is not None else None
            self._mark_if_changed(modules=last is None or node.origin is None or (
                node.origin.filename, node.origin.lineno) != (last.filename, last.lineno))
        self.order[id(node)] = (node, self.seq)
        self._node = node
        self.seq += 1

    def _mark_if_changed(self, modules: bool = True) -> None:
        w = self.watch
        objects = [(obj, kind) for obj, kind, _ in w.held] + [(c, object_kind(c)) for c, _, _ in w.arg_containers]
        prints = self._prints
        if prints is None:
            prints = self._prints = [_print(c, kind) for (_, kind), c in zip(objects, w.initial())]
        changed = len(prints) != len(objects)
        for k, (obj, kind) in enumerate(objects):
            if k < len(prints) and (kind == "module" and not modules):
                continue
            now = _print(_contents(obj, kind), kind)
            if k >= len(prints) or now[1] != prints[k][1]:
                changed = True
                if k < len(prints):
                    prints[k] = now
        if changed:
            self.marks.append((self.seq, w.token()))
            self._prints = [_print(c, kind) for (_, kind), c in zip(objects, self.marks[-1][1])]

    def changes_inside(self) -> None:
        """The root tensor loop or `if` just recorded changes entries of Python objects in its body (carried
        out of it, written back after it): eagerly, the changes made in it before an op in it fails stay, which
        its graph cannot say (`apply_at_raise` refuses that)."""
        if self._node is not None and self._node.subgraphs:
            self.inside[id(self._node)] = self._node

    def at_end(self) -> None:
        """The trace is over: a last mark if the objects changed after its last op (never applied; it says a loop
        or `if` that is the last op changes objects: `changes_inside`)."""
        self._mark_if_changed()


def apply_at_raise(effects: Any, exc: BaseException, outputs: list, n_results: int, bound: dict | None) -> None:
    """Apply the mark of `effects.at_raise` before the op whose failure raised `exc` (read from the frame of
    the generated code in its traceback), with the values that frame holds (`outputs`: the graph's)."""
    tb, frame, line = exc.__traceback__, None, None
    while tb is not None:
        lines = tb.tb_frame.f_globals.get("__ta_node_lines__")
        if lines is not None:
            frame, line = tb.tb_frame, tb.tb_lineno
            break
        tb = tb.tb_next
    if frame is None:
        return
    order = effects.order
    failed = max((order[id(n)][1] for at, n in lines if at <= line and id(n) in order), default=None)
    if failed is None:
        return
    node = next(n for n, seq in order.values() if seq == failed)
    changed_after = [on_held for seq, _, on_held, _ in effects.at_raise if seq == failed + 1]
    if id(node) in effects.inside and changed_after:
        what = ", ".join(sorted({f"a {type(obj() if kind == 'module' else obj).__name__}"
                                 for obj, kind, _, _ in changed_after[0]})) or "an argument's container"
        raise StateEffectError(
            f"the graph raised {type(exc).__name__} ({exc}) inside the tensor "
            f"{'loop' if isinstance(node.op.target, WhileOp) else '`if`'} at {node.origin}, which changes {what} "
            f"that outlives the call: eagerly, the changes made in it before the error stay, and the graph makes "
            f"them only after it. Make those changes after it, from the values it gives, or avoid the error "
            f"inside it") from exc
    local, glob = frame.f_locals, frame.f_globals
    outs = [(local.get(v.name, glob.get(v.name, _MISSING)) if isinstance(v, Value) else v)
            for v in outputs[n_results:]]
    for seq, on_args, on_held, uses in reversed(effects.at_raise):
        if seq > failed:
            continue
        if any(outs[i] is _MISSING for i in uses):
            continue
        effects.write(on_args, on_held, tuple(outs), bound)
        return


def _print(contents: list, kind: str) -> tuple:
    """(the contents, held; what tells them apart: keys and the identities of the values)."""
    if kind == "list":
        return contents, list(map(id, contents))
    return contents, [(k, id(v)) for k, v in contents]
