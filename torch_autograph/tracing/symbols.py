"""Sizes and numbers known only when the graph runs: torch's SymInt/SymFloat/SymBool, and where each comes from.

A dim of an input left None by the signature, a size read from data
(`x[mask]`, `nonzero`), a Python number the graph computes (`int(t)`, a loop
counter): while tracing, each is a `torch.SymInt` (or SymFloat, SymBool) of
the trace's `ShapeEnv`, so user code and library code see what they will get
when the graph runs — an int-like number, not a tensor — and torch's own meta
kernels (through a `FakeTensorMode` on the same ShapeEnv) compute sizes from
it: `torch.zeros(2 * n).reshape(n, 2)` is `[s0, 2]`, `B, T, C = x.size()` works.

Every symbol has a *source*, how its value is read when the graph runs:

- `InputDim(value, dim)`: `x.size(dim)` of a placeholder (`s0`, backed by the
  size of the call that traced, or unbacked when traced from a spec alone);
- `FromValue(value)`: a run-time number the graph computes (`u0`): `int(t)`,
  a loop counter, a number merged by a tensor `if`;
- `OutputDim(value, dim)`: `v.size(dim)` of a value whose size depends on data
  (`u0` rows of `x[mask]`) or changes between iterations of a loop.

A source names a Value, not a graph: a branch or loop body reads it where it
is visible (`Scope.resolve`), lifting it in from an enclosing graph.

`SymbolTable.value_of` turns a symbolic number met as an argument into a graph
Value: the source's Value for a plain symbol, or a node evaluating the
expression (`2*s0 + 1`) from the sources' Values. Nothing is recorded while
user code does arithmetic on symbols; what a node needs is computed where it
is used.

Assumptions the ShapeEnv makes about sizes of the inputs (guards: `s0 != 1`
when broadcasting needed it, `Eq(s0, s1)`) become checks made at every call
(`guard_checker`); a call whose sizes break one traces again. Assumptions about
sizes read from data are checked when the graph runs (`runtime_asserts`).

The ShapeEnv and FakeTensorMode are made when a trace first needs them:
importing them loads sympy and torch._dynamo (about a second, once per
process), which a trace with static shapes never pays.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

import torch

from ..graph import Expression, Node, Value, ValueKind
from .context import Traced, current

Scope = Any  # trace.Scope: trace.py imports this module, so it is not imported here

SYMBOLIC = (torch.SymInt, torch.SymFloat, torch.SymBool)


@dataclasses.dataclass(frozen=True, eq=False)
class InputDim:
    """The dim `dim` of placeholder `value`: read as `x.size(dim)` when the graph runs."""

    value: Value
    dim: int


@dataclasses.dataclass(frozen=True, eq=False)
class FromValue:
    """A run-time number the graph computes: the SCALAR `value` itself."""

    value: Value


@dataclasses.dataclass(frozen=True, eq=False)
class OutputDim:
    """The dim `dim` of tensor `value` (a node output, or a sub-graph input such as a loop variable) whose
    size is known only when the graph runs: `v.size(dim)`, read in the graph that has `value`."""

    value: Value
    dim: int


def is_symbolic(x: Any) -> bool:
    """Whether `x` is a SymInt/SymFloat/SymBool whose value is not a constant."""
    return isinstance(x, SYMBOLIC) and not _constant(x)


def _constant(x: Any) -> bool:
    try:
        return not _symbols_in(_static(x))
    except AttributeError:
        return False


def _static(x: Any) -> Any:
    """`x`'s expression; a bool's decided without a guard by the sizes' bounds where they decide it (`numel() == 0`
    of dims >= 1). One over unbounded ints and 0/1 flags only (a loop's counter, break flag) is never asked."""
    expr = x.node.expr
    if isinstance(x, torch.SymBool):
        symbols = _symbols_in(expr)
        env = getattr(x.node, "shape_env", None)
        if symbols and env is not None and _bounded(env.var_to_range, symbols):
            try:
                decided = env._maybe_evaluate_static(expr)
            except Exception:  # a relation ShapeEnv cannot evaluate: not decided
                decided = None
            if decided is not None:
                if (state := current()) is not None:
                    state.trace.symbols.decided.update(symbols)
                return decided
    return expr


def undecided(n: torch.SymInt) -> bool:
    """Whether `n`'s comparisons go undecided while tracing (`_static`): no symbol of it is bounded or replaced."""
    env, symbols = getattr(n.node, "shape_env", None), _symbols_in(n.node.expr)
    return env is not None and not _bounded(env.var_to_range, symbols) and not env.replacements.keys() & symbols


def _bounded(ranges: dict, symbols: Any) -> bool:
    """Whether one of `symbols` has a range other than all ints or {0, 1} (a size, a clamped number)."""
    (minus_infinity, infinity), (zero, one) = _open_ranges()
    return any((r := ranges.get(s)) is None or not ((r.lower is minus_infinity and r.upper is infinity) or
                                                     (r.lower is zero and r.upper is one)) for s in symbols)


@functools.lru_cache(maxsize=4096)
def _symbols_in(expr: Any) -> frozenset:  # sympy walks the whole expression for it, at every comparison
    return expr.free_symbols


@functools.cache
def _open_ranges() -> tuple:  # the bounds of ranges that decide nothing: all ints, {0, 1} (sympy's singletons)
    from sympy import S
    from torch.utils._sympy.numbers import int_oo
    return (-int_oo, int_oo), (S.Zero, S.One)


def is_graph_value(x: Any) -> bool:
    """Whether `x` stands for something known only when the graph runs: a graph value or a symbolic number."""
    return isinstance(x, Traced) or is_symbolic(x)


def constant_of(x: Any) -> Any:
    """A symbolic number whose expression has no symbol left, as the Python number; else `x` unchanged."""
    if isinstance(x, SYMBOLIC) and _constant(x):
        expr = _static(x)
        if isinstance(x, torch.SymBool):
            return bool(expr)
        return int(expr) if isinstance(x, torch.SymInt) else float(expr)
    return x


def same_dim(a: Any, b: Any) -> bool:
    """Whether two dims are the same size by construction (never a guess: no guard is made)."""
    if type(a) is int and type(b) is int:
        return a == b
    if isinstance(a, torch.SymInt) and isinstance(b, torch.SymInt):
        return a.node.expr == b.node.expr
    return False


class SymbolTable:
    """The ShapeEnv and FakeTensorMode of one (root) trace, and the source of every symbol they hold."""

    def __init__(self) -> None:
        self._env: Any = None
        self._mode: Any = None
        self.sources: dict[Any, Any] = {}  # sympy symbol -> InputDim | FromValue | OutputDim
        self.input_dims: list[tuple[Any, InputDim]] = []  # (symbol, source), in placeholder order
        self.templates: dict[Any, Any] = {}  # graph-tensor wrappers by symbolic metadata (tensor.py)
        self._asserts_counted = 0  # env.num_deferred_runtime_asserts when last looked at
        self._asserts_taken: set[int] = set()  # ids of the RuntimeAsserts already handled
        self.decided: set = set()  # symbols of bools their bounds decided (`_static`): what a loop's floor must prove

    # ----- the lazily made machinery ----------------------------------------------------------
    @property
    def env(self) -> Any:
        if self._env is None:
            from torch.fx.experimental.symbolic_shapes import ShapeEnv

            # Sizes 0 and 1 are sizes like any other: a None dim of a signature accepts them with one trace.
            self._env = ShapeEnv(specialize_zero_one=False, assume_static_by_default=False)
        return self._env

    @property
    def mode(self) -> Any:
        if self._mode is None:
            from torch._subclasses.fake_tensor import FakeTensorMode

            self._mode = FakeTensorMode(shape_env=self.env, allow_non_fake_inputs=True)
        return self._mode

    @property
    def active(self) -> bool:
        """Whether this trace has made any symbol (or fake tensor) at all."""
        return self._env is not None

    # ----- making symbols -------------------------------------------------------------------------
    def input_symbol(self, arg: str, dim: int, hint: int | None) -> torch.SymInt:
        """A symbol for dim `dim` of input `arg`: unbacked (a size known to be >= 0 and nothing else), so that
        what the graph computes holds for every size. `bind_input` names its placeholder once made.

        With a `hint` (the traced call's size), code that must decide on the size (a library `if`, a number
        of results) gets the hint's answer, and the decision becomes an assumption checked at each call
        (torch's real-tensor propagation: a deferred runtime assert); nothing else is specialised.
        """
        return self.fresh_size() if hint is None else self.hinted_size(hint)

    def hinted_size(self, hint: int) -> torch.SymInt:
        """A fresh size whose decisions take `hint`'s answer, each one an assumption checked when the graph runs."""
        sym = self.fresh_size()
        _quiet_hint_logs()
        self.env.set_real_tensor_prop_unbacked_vals(sym.node.expr, hint)
        return sym

    def fresh_size(self) -> torch.SymInt:
        """A new size known only when the graph runs (>= 0): its source is set by whoever reads it."""
        sym = self.env.create_unbacked_symint()
        with self.mode, torch._C.DisableTorchFunction():
            torch._check(sym >= 0)
        self.new_runtime_asserts()  # a size is >= 0 when the graph runs: nothing to check
        return sym

    def either_size(self, a: Any, b: Any) -> torch.SymInt:
        """A fresh size that is `a` or `b` when the graph runs (a dim merging two branches): within their bounds,
        so that code deciding on it (`numel() == 0` of a cache that is never empty) decides as for both."""
        sym = self.fresh_size()
        ranges = [self._bounds(x) for x in (a, b)]
        lo, hi = min(r[0] for r in ranges), max(r[1] for r in ranges)
        with self.mode, torch._C.DisableTorchFunction():
            if lo > 0:
                torch._check(sym >= lo)
            if hi is not None and hi != float("inf"):
                torch._check(sym <= hi)
        self.new_runtime_asserts()  # true by construction: nothing to check when the graph runs
        return sym

    def at_least(self, sym: torch.SymInt, floor: int) -> None:
        """Note that size `sym` is never below `floor`: a loop dim that enters at `floor` and that the body only
        grows (its caller proves that from the traced body, or traces again without it). True by
        construction, so nothing is checked when the graph runs."""
        from torch.fx.experimental.symbolic_shapes import constrain_range

        # a range, not a guard: torch answers from it without deferring a check to run time
        constrain_range(sym, min=floor)

    def lower_bound(self, x: Any) -> int:
        """The least value size `x` can take, as far as torch can tell (0 where it cannot)."""
        return self._bounds(x)[0]

    def _bounds(self, x: Any) -> tuple:
        if type(x) is int:
            return x, x
        try:
            r = self.env.bound_sympy(x.node.expr)
        except Exception:  # a size torch cannot bound: only >= 0
            return 0, float("inf")
        return max(_finite(r.lower, 0), 0), _finite(r.upper, float("inf"))

    def new_runtime_asserts(self) -> list:
        """The assumptions torch deferred to run time since the last call (`Eq(u0, 3)`: a mask's length must
        equal another size for an op to need no broadcast), except those only about input sizes, which the
        per-call check covers (`guard_checker`)."""
        env = self._env
        if env is None or env.num_deferred_runtime_asserts == self._asserts_counted:
            return []
        self._asserts_counted = env.num_deferred_runtime_asserts
        new = []
        for asserts in env.deferred_runtime_asserts.values():
            for ra in asserts:
                if id(ra) not in self._asserts_taken:  # the env keeps every RuntimeAssert alive
                    self._asserts_taken.add(id(ra))
                    new.append(ra)
        return [ra for ra in new if ra.expr.free_symbols and
                not all(isinstance(self.sources.get(s), InputDim) for s in ra.expr.free_symbols)]

    def assert_value(self, expr: Any, state: "Scope") -> Value | None:
        """A graph value computing boolean `expr` from its symbols' sources as they are when the graph runs
        (no replacement applied: a replacement is what the check is about); None if a symbol has no source
        in reach."""
        symbols = sorted(expr.free_symbols, key=str)
        if not all(s in self.sources for s in symbols):
            return None
        args = tuple(self._symbol_value(s, state) for s in symbols)
        out = Value(state.fresh_name("assumed"), torch.bool, (), None, ValueKind.SCALAR, None)
        state.add_node(Node(expression(expr, symbols, torch.bool).op(), args, {}, (out,), pattern=out))
        return out

    def describe(self, expr: Any, state: "Scope") -> str:
        """`expr` with each symbol written as what it stands for (`x.size(0)`, `getitem.size(0)`, `n`)."""
        import sympy

        names = {}
        for s in expr.free_symbols:
            source = self.sources.get(s)
            if isinstance(source, (InputDim, OutputDim)):
                names[s] = sympy.Symbol(f"{source.value.name}.size({source.dim})")
            elif isinstance(source, FromValue):
                names[s] = sympy.Symbol(source.value.name)
        from torch.utils._sympy.printers import PythonPrinter

        return PythonPrinter().doprint(expr.xreplace(names))

    def bind_input(self, sym: torch.SymInt, value: Value, dim: int) -> None:
        source = InputDim(value, dim)
        self.sources[sym.node.expr] = source
        self.input_dims.append((sym.node.expr, source))

    def from_value(self, value: Value) -> Any:
        """A fresh symbol standing for the run-time number `value`, which becomes its example."""
        env = self.env
        if value.dtype == torch.bool:
            sym = env.create_unbacked_symbool()
        elif value.dtype.is_floating_point:
            sym = env.create_unbacked_symfloat()
        else:
            sym = env.create_unbacked_symint()
        self.bind_value(sym, value)
        object.__setattr__(value, "example", sym)  # the Value was made before its symbol: set it once, here
        return sym

    def bind_value(self, sym: Any, value: Value) -> None:
        """Symbol `sym` (fresh, with no source yet) is read as the run-time number `value`."""
        self.sources[_symbol_of(sym)] = FromValue(value)

    def input_sizes(self, inputs: list[Value]) -> dict[str, str]:
        """`{"u0": "x.size(0)"}` for every symbol standing for a dim of one of `inputs`."""
        names = {id(v): v.name for v in inputs}
        return {str(sym): f"{names[id(src.value)]}.size({src.dim})" for sym, src in self.sources.items()
                if isinstance(src, InputDim) and id(src.value) in names}

    def needs_source(self, sym: Any) -> bool:
        """Whether `sym` is a bare symbol no source reads yet (a number a node just made)."""
        expr = sym.node.expr
        if isinstance(sym, torch.SymBool):
            return len(expr.free_symbols) == 1 and _symbol_of(sym) not in self.sources
        return bool(getattr(expr, "is_Symbol", False)) and expr not in self.sources

    def output_dim(self, sym: torch.SymInt, value: Value, dim: int) -> None:
        """Note that size `sym`, if a fresh symbol, is dim `dim` of `value` (read as `value.size(dim)`)."""
        expr = sym.node.expr
        if getattr(expr, "is_Symbol", False) and expr not in self.sources:
            self.sources[expr] = OutputDim(value, dim)

    # ----- symbols as graph values ---------------------------------------------------------------
    def value_of(self, x: Any, state: "Scope") -> Any:
        """The graph Value (or Python constant) that computes symbolic number `x` in `state`'s graph."""
        x = constant_of(x)
        if not isinstance(x, SYMBOLIC):
            return x
        expr = self.env.replace(x.node.expr)
        symbols = sorted(expr.free_symbols, key=str)
        if isinstance(x, torch.SymBool) and len(symbols) == 1:
            source = self.sources.get(symbols[0])
            if isinstance(source, FromValue) and source.value.dtype == torch.bool and _is_bool_symbol(expr):
                return state.resolve(source.value)  # Eq(u, 1) of a bool the graph made
        if getattr(expr, "is_Symbol", False):
            return self._symbol_value(expr, state)
        return self._expr_value(expr, _kind_dtype(x), x, state)

    def _expr_value(self, expr: Any, dtype: torch.dtype, example: Any, state: "Scope") -> Value:
        """A node of `state` computing `expr`. Parts made only of symbols of enclosing traces are computed
        there, once (`i < Max(0, n)` in a loop condition reads `Max(0, n)` from before the loop)."""
        hit = state.sym_values.get(expr)
        if hit is not None:
            return hit
        owner = self._innermost_owner(expr, state)
        if owner is not None and owner is not state:
            return state.lift_value(self._expr_value(expr, dtype, example, owner), owner)
        hoisted: dict[Any, Value] = {}
        split = self._hoist(expr, state, hoisted)
        symbols = sorted(split.free_symbols, key=str)
        args = tuple(hoisted[s] if s in hoisted else self._symbol_value(s, state) for s in symbols)
        out = Value(state.fresh_name("sym"), dtype, (), None, ValueKind.SCALAR, example)
        state.add_node(Node(expression(split, symbols, dtype).op(), args, {}, (out,), pattern=out))
        state.sym_values[expr] = out
        return out

    def _hoist(self, expr: Any, state: "Scope", hoisted: dict[Any, Value]) -> Any:
        """`expr` with each largest part computable in an enclosing trace replaced by a placeholder symbol
        (its Value in `hoisted`)."""
        import sympy

        if not expr.free_symbols or expr.is_Atom:
            return expr
        owner = self._innermost_owner(expr, state)
        if owner is not None and owner is not state:
            dtype = torch.bool if expr.is_Boolean else torch.int64 if expr.is_integer else torch.float64
            value = state.lift_value(self._expr_value(expr, dtype, self._symbolic(expr, dtype), owner), owner)
            placeholder = sympy.Dummy(f"h{len(hoisted)}")
            hoisted[placeholder] = value
            return placeholder
        return expr.func(*(self._hoist(a, state, hoisted) for a in expr.args))

    def _symbolic(self, expr: Any, dtype: torch.dtype) -> Any:
        from torch.fx.experimental.sym_node import SymNode

        pytype, cls = {torch.bool: (bool, torch.SymBool), torch.float64: (float, torch.SymFloat)}.get(
            dtype, (int, torch.SymInt))
        return cls(SymNode(expr, self.env, pytype, None))

    def _innermost_owner(self, expr: Any, state: "Scope") -> "Scope | None":
        """The innermost trace (from `state` outwards) that defines one of `expr`'s symbols."""
        owners = set()
        for symbol in expr.free_symbols:
            source = self.sources.get(symbol)
            if source is None:
                return state  # not ours to move
            owner = state.definer(source.value)
            if owner is None:
                return state
            owners.add(id(owner))
        s = state
        while s is not None:
            if id(s) in owners:
                return s
            s = s.parent
        return state

    def _symbol_value(self, symbol: Any, state: "Scope") -> Value:
        source = self.sources.get(symbol)
        if isinstance(source, FromValue):
            return state.resolve(source.value)
        if isinstance(source, (InputDim, OutputDim)):
            owner = state.definer(source.value)
            if owner is None:
                raise AssertionError(f"bug in torch_autograph: %{source.value.name} is not visible here")
            value = owner.size_values.get(symbol)
            if value is None:
                value = owner.size_values[symbol] = owner.record_size(source.value, source.dim)
            return state.resolve(value)
        raise AssertionError(f"bug in torch_autograph: the symbol {symbol} has no source in this trace")

    # ----- checks ------------------------------------------------------------------------------------
    def guard_checker(self, inputs: list[Value]) -> "Callable[[list[torch.Tensor]], str | None] | None":
        """A function of the call's placeholder tensors that names the first broken size assumption, or
        None when none is broken; None when the trace assumed nothing about input sizes."""
        if not self.active or not self.input_dims:
            return None
        from .size_guards import compile_guards

        return compile_guards(self.env, self.input_dims, inputs)


def _quiet_hint_logs() -> None:
    """torch logs a warning each time it decides with a hint (meant for draft export); here that is the policy."""
    import logging

    logger = logging.getLogger("torch.fx.experimental.symbolic_shapes")
    if not any(isinstance(f, _HintLogFilter) for f in logger.filters):
        logger.addFilter(_HintLogFilter())


class _HintLogFilter:
    def filter(self, record: Any) -> bool:
        return not str(record.msg).startswith("propagate_real_tensors")


def _is_bool_symbol(expr: Any) -> bool:
    """Whether `expr` is `Eq(u, 1)`: how torch writes a bool symbol (an int symbol u that is 0 or 1)."""
    import sympy

    return isinstance(expr, sympy.Eq) and expr.rhs == 1 and getattr(expr.lhs, "is_Symbol", False)


def _symbol_of(sym: Any) -> Any:
    """The symbol of a bare symbolic number (an unbacked bool is `Eq(u, 1)` of an int symbol u)."""
    expr = sym.node.expr
    if isinstance(sym, torch.SymBool) and not getattr(expr, "is_Symbol", False):
        return next(iter(expr.free_symbols))
    return expr


def _kind_dtype(x: Any) -> torch.dtype:
    if isinstance(x, torch.SymBool):
        return torch.bool
    if isinstance(x, torch.SymFloat):
        return torch.float64
    return torch.int64


@dataclasses.dataclass(frozen=True)
class ScalarMeta:
    """Metadata of a run-time number a node computes: its dtype (int64, float64, bool) and symbolic example."""

    dtype: torch.dtype
    example: Any = None


def expression(expr: Any, symbols: list, dtype: torch.dtype) -> Expression:
    """The graph op target computing sympy expression `expr` of `symbols` (given as its arguments, in order)."""
    from torch.utils._sympy.printers import PythonPrinter

    names = {str(s): f"_a{i}" for i, s in enumerate(symbols)}
    text = PythonPrinter().doprint(expr)
    for name in sorted(names, key=len, reverse=True):
        text = _replace_word(text, name, names[name])
    return Expression(text, len(symbols), dtype, str(expr))


def _replace_word(text: str, word: str, new: str) -> str:
    import re

    return re.sub(rf"(?<![A-Za-z0-9_%]){re.escape(word)}(?![A-Za-z0-9_])", new, text)


def _finite(bound: Any, otherwise: Any) -> Any:
    """A range bound as an int, or `otherwise` for an infinite one (torch's `int_oo` says it is finite, and
    `int()` of it raises: an Integer is the only finite kind a size's bound takes)."""
    if getattr(bound, "is_Integer", False) or type(bound) is int:
        return int(bound)
    return otherwise
