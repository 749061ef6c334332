"""What a node does: an `Op` (kind, target, effects) and the structured control-flow targets.

Everything a pass or backend needs to know about a node is data on its `Op`,
set by whoever records the node: whether it writes an argument in place, draws
random numbers, runs Python or autograd at every call, and whether it is a
pure function of its arguments. Nothing downstream looks at module or function
names to find out.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgumentError
from .values import Value


class OpKind(enum.Enum):
    """How a node's target is applied (and printed / generated)."""

    FUNCTION = "function"  # target(*args, **kwargs)
    METHOD = "method"  # args[0].<target name>(*args[1:], **kwargs)
    GETATTR = "getattr"  # args[0].<attribute>
    OPERATOR = "operator"  # a Python operator: a + b, a[i], a[i] = v, ...
    CONTROL = "control"  # a structured control-flow op holding sub-graphs


class Effect(enum.Flag):
    """What a node does besides computing its outputs. Any effect keeps the node, in program order."""

    NONE = 0
    WRITES_FIRST_ARG = enum.auto()  # writes args[0] in place: x.add_(y), x[i] = v, Variable.assign, lst.append
    WRITES_OUT = enum.auto()  # writes its `out=` argument
    RANDOM = enum.auto()  # draws random numbers: never merged, folded or pruned
    RUNS_PYTHON = enum.auto()  # runs Python at every call: ta.print, ta.py_function, a staged optimizer step
    RAISES = enum.auto()  # may raise, and that matters: a run-time check, an op in a `try` body; always runs
    UNKNOWN = enum.auto()  # may write anything it reads (control flow whose sub-graphs have effects)
    MAY_NOT_END = enum.auto()  # a loop not known to terminate: run even when its results are unused


class Trait(enum.Flag):
    """What passes and backends may assume of a node's outputs, set by whoever records it (never read off a name)."""

    NONE = 0
    FRESH = enum.auto()  # every output is a new tensor, never a view of an argument (alias analysis)
    NOT_A_VALUE = enum.auto()  # a different result each time, or no value (`empty`, `data_ptr`): never folded
    CONVOLUTION = enum.auto()  # convolves its input with its weights: freezing CPU weights pays (jit_compile)


@dataclass(frozen=True)
class Op:
    """What a node does: a kind plus the Python object it applies.

    Attributes:
        kind: how `target` is applied.
        target: the callable for FUNCTION (e.g. `torch.add`), the method or
            attribute name for METHOD / GETATTR (e.g. `"view"`), the `operator`
            function for OPERATOR (e.g. `operator.add`), or a control-flow op
            object for CONTROL.
        name: only for printing and naming outputs.
        effects: what the node does besides computing its outputs.
        pure: the outputs are a deterministic function of the arguments and
            nothing else: passes may merge two such nodes (CSE) or compute one
            ahead of time (constant folding). False for library helpers with an
            identity of their own (a tape's `watch` makes a new leaf each time).
        runs_autograd: the node runs autograd itself (`backward`,
            `torch.autograd.grad`, a GradientTape gradient): compiled regions
            end there, and the graph is a training step.
        inplace: set on the Python operator an augmented assignment to a
            run-time Python number records (`n += 1` rebinds `n`, as in Python):
            the in-place tensor op the same statement records when its target is
            a tensor (`t += 1` is `t.add_(1)`), which the node must become if its
            target is re-typed to a tensor.
        traits: what passes may assume of the outputs (`Trait`): fresh tensors, never folded, a convolution.
        converts_number: marks the `torch.tensor(n, dtype=..., device=...)` the
            tracer itself inserts where a Python number must become a tensor (a
            graph `if` merging it with a tensor from the other branch, a loop
            variable the body promotes), as opposed to a user's own
            `torch.tensor` call: if re-typing makes `n` a tensor of that dtype,
            a trace would insert nothing, and the node becomes the identity.
    """

    kind: OpKind
    target: Any
    name: str
    effects: Effect = Effect.NONE
    pure: bool = False
    runs_autograd: bool = False
    inplace: "Op | None" = None
    converts_number: bool = False
    traits: Trait = Trait.NONE

    @property
    def stateful(self) -> bool:
        """Whether the node has an effect: never pruned, never merged, run in program order."""
        return self.effects is not Effect.NONE

    @property
    def reads_python_state(self) -> bool:
        """Whether the target reads Python state kept between calls (its own `reads_python_state` attribute).

        The ops that keep Python's meaning of a number a tensor `if` merged with a tensor look up, when they
        run, which tensors stand for such numbers: torch.fx cannot trace that lookup, so `jit_compile=True`
        runs them as Python between its compiled regions.
        """
        return getattr(self.target, "reads_python_state", False)


@dataclass(frozen=True, eq=False)
class CondOp:
    """Target of a `cond` node: subgraphs[0] runs when args[0] is true, subgraphs[1] otherwise."""

    def __repr__(self) -> str:
        return "cond"

    def printed_args(self) -> list[str]:
        """Printed arguments after the node's own (see `graph.printing`)."""
        return []


@dataclass(frozen=True, eq=False)
class WhileOp:
    """Target of a `while` node.

    `loop_vars` are the values the condition (subgraphs[0], one output) and
    the body (subgraphs[1], one output per loop var) read; node args start
    with their initial values. `maximum_iterations` is None, an int or a Value.
    `trip_count`: for a `for` loop, the number of elements it iterates over, known
    before the loop starts (an int or a Value): the loop runs at most that many
    times (exporting preallocates what the loop appends); None for a `while`.
    """

    loop_vars: tuple[Value, ...]
    maximum_iterations: Any = None
    checks_iteration: bool = False  # the last loop var says whether the body ran (variables first assigned in it)
    trip_count: Any = None

    def bound_values(self) -> list[Value]:
        """The Values among `maximum_iterations` and `trip_count` (node arguments too, kept alive by them)."""
        return [v for v in (self.maximum_iterations, self.trip_count) if isinstance(v, Value)]

    def __repr__(self) -> str:
        return "while"

    def printed_args(self) -> list[str]:
        names = ", ".join(f"%{v.name}" for v in self.loop_vars)
        limit = [] if self.maximum_iterations is None else [f"maximum_iterations={self.maximum_iterations!r}"]
        return [f"loop_vars=({names}{',' if len(self.loop_vars) == 1 else ''})"] + limit


@dataclass(frozen=True, eq=False)
class TryOp:
    """Target of a `try` node: subgraphs[0] is the body; when it raises one of `catches[i]` as the graph runs,
    subgraphs[i + 1] runs instead (a Python `try` with the user's `except` clauses). The node's args are the
    values the sub-graphs read; every node of the body has `Effect.RAISES` (it may fail, and the failure is
    caught), so none is pruned, merged or folded."""

    catches: tuple[tuple[type, ...], ...]
    # The last sub-graph holds the effects of the user's `finally:`: run, then the exception goes on, when the
    # node raises what no handler catches (or a handler raises).
    on_raise: bool = False
    # What the handlers start from where the body rebinds a variable between its ops: per variable, (the
    # placeholder the handler graphs read, the values it may be bound to (Values, Python numbers: a 0-dim
    # tensor of its type, or a callable raising the refusal of a value the graph does not have there), ((node of
    # the body at any depth, index among them), ...)): bound, as a handler starts, to the value of the node that
    # raised (values[0] for the nodes not listed).
    at_raise: tuple = ()

    def __repr__(self) -> str:
        return "try"

    def bound_values(self) -> list[Value]:
        """The values `at_raise` binds (read by the node: passes keep and rename them)."""
        return [v for _, values, _ in self.at_raise for v in values if isinstance(v, Value)]

    def printed_args(self) -> list[str]:
        names = ", ".join("(" + ", ".join(c.__name__ for c in cs) + ")" for cs in self.catches)
        bound = [f"%{p.name}=at_raise({', '.join('%' + v.name if isinstance(v, Value) else repr(v) for v in values)})"
                 for p, values, _ in self.at_raise]
        return [f"except={names}"] + (["finally"] if self.on_raise else []) + bound


@dataclass(frozen=True, eq=False)
class CheckOp:
    """Target of a run-time check: raises InvalidArgumentError when args[0] is false.

    With `error` (the exception a user's `raise` made while a branch or loop body was traced), it raises a
    copy of that exception instead: args[0] is then False, the node sits in the sub-graph of the path that
    raises, and the user's `except` around the call catches it as it would the eager one.
    """

    message: str
    label: str = ""  # what a printed graph shows instead of a long message
    error: BaseException | None = None

    def __repr__(self) -> str:
        return "check"

    def printed_args(self) -> list[str]:
        if self.label:
            return [repr(self.label)]
        return [repr(self.message.split("\n", 1)[0])]  # the rest names the user line: the node's comment


def run_check(condition: Any, message: str, error: BaseException | None = None) -> None:
    """What a `check` node does when the graph runs."""
    if not bool(condition):
        if error is not None:
            raise fresh_error(error)
        raise InvalidArgumentError(message)


def fresh_error(error: BaseException) -> BaseException:
    """A new exception equal to `error` (type, args, attributes), so that raising it at every call does not grow
    one traceback; `error` itself (without its traceback) where its class cannot be rebuilt from its args."""
    import copy

    try:
        new = copy.copy(error)
    except Exception:
        return error.with_traceback(None)
    new.__cause__, new.__suppress_context__ = error.__cause__, error.__suppress_context__
    return new


AUTOCAST_DEVICES = ("cpu", "cuda")


def autocast_state() -> tuple | None:
    """The autocast regions in force, as ((device type, dtype), ...), or None outside any."""
    import torch

    if not torch._C._is_any_autocast_enabled():
        return None
    return tuple((d, torch.get_autocast_dtype(d)) for d in AUTOCAST_DEVICES if torch.is_autocast_enabled(d))


def under_autocast(state: tuple | None) -> Any:
    """A context that makes `state` (from `autocast_state()`; None or `()`: none) the autocast in force:
    it enters the regions of `state` and turns off autocast on the other devices."""
    import contextlib

    import torch

    stack = contextlib.ExitStack()
    wanted = dict(state or ())
    for device in AUTOCAST_DEVICES:
        if device in wanted:
            stack.enter_context(torch.autocast(device, dtype=wanted[device]))
        elif torch.is_autocast_enabled(device):
            stack.enter_context(torch.autocast(device, enabled=False))
    return stack


def control_op(target: Any, name: str, subgraph_nodes: Any = ()) -> Op:
    """The Op of a control-flow node whose sub-graphs hold `subgraph_nodes`: it has an effect if any of them does."""
    stateful = any(n.stateful for n in subgraph_nodes)
    return Op(OpKind.CONTROL, target, name, effects=Effect.UNKNOWN if stateful else Effect.NONE)


class Expression:
    """The target of a node computing a number from others: a Python expression over its arguments.

    Sizes and numbers known only when the graph runs are computed where they are needed, e.g. `2*s0 + 1`
    from the value of `x.size(0)`. `text` writes argument i as `_a{i}`; graphs print it and the torch
    backend generates it with the arguments' names (`render`).
    """

    __slots__ = ("text", "arity", "dtype", "symbolic", "_fn")

    def __init__(self, text: str, arity: int, dtype: Any, symbolic: str = "") -> None:
        import math

        import torch

        self.text = text
        self.arity = arity
        self.dtype = dtype
        self.symbolic = symbolic  # the expression in symbols (`2*s0 + 1`), for messages
        args = ", ".join(f"_a{i}" for i in range(arity))
        self._fn = eval(f"lambda {args}: {text}", {"torch": torch, "math": math})  # noqa: S307

    def __call__(self, *args: Any) -> Any:
        return self._fn(*args)

    def render(self, args: list[str]) -> str:
        """The expression with argument `i` written as `args[i]` (graph printing and code generation)."""
        import re

        text = re.sub(r"\b_a(\d+)\b", lambda m: args[int(m.group(1))], self.text)
        return f"({text})" if any(c in text for c in " +-*/%<>=&|") else text

    def op(self) -> Op:
        return Op(OpKind.FUNCTION, self, "sym", pure=True)

    def is_int_arithmetic(self) -> bool:
        """Whether the text is `+ - * // %` over the arguments and int literals (`2*_a0 + 1`): an int computed the
        same way from ints and from torch's size symbols, which torch.fx can record operator by operator."""
        import ast

        allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod,
                   ast.USub, ast.Name, ast.Load)
        for node in ast.walk(ast.parse(self.text, mode="eval")):
            if isinstance(node, ast.Constant):
                if type(node.value) is not int:
                    return False
            elif not isinstance(node, allowed) or (isinstance(node, ast.Name) and not node.id.startswith("_a")):
                return False
        return True

    def __repr__(self) -> str:
        return f"expr[{self.symbolic or self.text}]"
