"""The Values a graph `while` carries: a loop variable's Value from its initial value, its Value after the loop,
and the placeholder a variable first assigned in the loop starts from."""

from __future__ import annotations

from typing import Any, Sequence

import torch

from ..graph import SourceLocation, Value, ValueKind
from ..tracing import OutputDim, Scope, constant_of, lists, same_dim
from .branches import SCALAR_DTYPES, Leaf, leaf_kind, quoted, where


def loop_name(names: Sequence[str] | None, i: int) -> str:
    return names[i] if names and i < len(names) else f"loop_var_{i}"


def iterated_value(state: Scope) -> Value:
    return Value(state.fresh_name("iterated"), torch.bool, (), None, ValueKind.SCALAR, False)


class SharedSizes:
    """Open dims of loop variables that are equal on entry, given one size symbol while the body keeps them equal.

    A decoding loop grows a KV cache and its attention mask by one position per step: with a symbol each, library
    code comparing them (`kv_length - mask.shape[-1] > 0`, then `F.pad` by the difference) would decide on a
    size the graph knows only when it runs. Equal on entry and grown alike by the body, they are equal at every
    iteration (by induction), and one symbol says so. A body that grows them differently breaks the group
    (`broken`); the loop is traced again with those dims apart.
    """

    def __init__(self, apart: set, shrinks: set | None = None) -> None:
        self.apart = apart  # entry sizes whose dims must not share (kept across the loop's retraces)
        # Entry sizes whose dims some iteration makes smaller than they came in (kept across retraces). Any
        # other open dim that enters at n >= 1 is traced as never below n, so that library code deciding on it
        # (`if cache.numel() == 0: return 0`) decides as it does on every run; `unfounded` checks the traced
        # body for that, and the loop is traced again without it where the body does not only grow the dim.
        self.shrinks = shrinks if shrinks is not None else set()
        self.symbols: dict[Any, torch.SymInt] = {}
        self.members: dict[Any, list[tuple[int, int]]] = {}
        self.floored: dict[Any, list[tuple[int, int, torch.SymInt]]] = {}
        # Python int loop variables that enter at n >= 1, traced as never below n (a cache's count of tokens
        # seen, which library code compares with a window): loop variable -> its symbol.
        self.floored_ints: dict[int, torch.SymInt] = {}

    def floor(self, entry: Any) -> int | None:
        """The size an open dim that enters at `entry` is traced as never going below, or None."""
        return entry if type(entry) is int and entry >= 1 and entry not in self.shrinks else None

    def floored_at(self, entry: Any, size: torch.SymInt, i: int, d: int) -> None:
        self.floored.setdefault(entry, []).append((i, d, size))

    def int_floor(self, i: int, entry: Any) -> int | None:
        """The least value Python int loop variable `i`, entering at `entry`, is traced as taking, or None."""
        return entry if type(entry) is int and entry >= 1 and ("int", i) not in self.shrinks else None

    def unfounded(self, raw: Sequence[Any], decided: set) -> set:
        """The entry sizes of floored dims that the body's outputs `raw` do not give as the dim plus a number >= 0
        (the floor holds at every iteration by induction only where each iteration keeps or grows the dim), and
        ("int", i) for a floored int loop variable the body does not give as itself plus a number >= 0 where a
        decision read its floor (`decided`: the symbols of bools decided by bounds). A floor nothing decided on
        needs no proof: an accumulator the body makes a tensor (`acc = 1; acc *= t`) is re-typed, not traced
        again."""
        out = {("int", i) for i, sym in self.floored_ints.items()
               if sym.node.expr in decided and not _grows(getattr(raw[i], "example", raw[i]), sym)}
        for entry, members in self.floored.items():
            for i, d, size in members:
                o = raw[i].shape[d] if isinstance(raw[i], Value) and len(raw[i].shape) > d else None
                if not _grows(o, size):
                    out.add(entry)
        return out

    @staticmethod
    def key(size: Any) -> Any:
        return size if type(size) is int else ("symbol", size.node.expr)

    def symbol(self, entry: Any) -> torch.SymInt | None:
        key = self.key(entry)
        return None if key in self.apart else self.symbols.get(key)

    def add(self, entry: Any, size: torch.SymInt, i: int, d: int) -> None:
        key = self.key(entry)
        if key not in self.apart:
            self.symbols.setdefault(key, size)
            self.members.setdefault(key, []).append((i, d))

    def broken(self, raw: Sequence[Any]) -> set:
        """The groups whose members the body's outputs `raw` (per loop variable) give different sizes."""
        out = set()
        for key, members in self.members.items():
            sizes = [raw[i].shape[d] for i, d in members if isinstance(raw[i], Value) and len(raw[i].shape) > d]
            if len(members) > 1 and (len(sizes) < len(members) or not all(same_dim(s, sizes[0]) for s in sizes)):
                out.add(key)
        return out


def _grows(out: Any, sym: torch.SymInt) -> bool:
    """Whether `out` is the number `sym` plus a constant >= 0."""
    if not isinstance(out, torch.SymInt):
        return False
    grown = out.node.expr - sym.node.expr
    return bool(grown.is_Integer and grown >= 0)


def carried_value(state: Scope, i: int, v: Any, refined: Value | None, invariants: dict,
                  names: Sequence[str] | None, origin: SourceLocation | None, reuse: str | None = None,
                  shared: SharedSizes | None = None) -> Value:
    """The loop-variable Value the condition and the body read for initial value `v` (named `reuse` if given).

    A tensor keeps its static dims and the symbols of its initial value, except dims the shape invariant
    leaves open (None), which get fresh size symbols, read from the loop variable itself (or the symbol
    `shared` gives the open dims of that size on entry).
    """
    kind = leaf_kind(v)
    name = reuse or state.fresh_name(loop_name(names, i))
    if kind == Leaf.PYSCALAR:
        value = Value(name, SCALAR_DTYPES[type(constant_of(v))], (), None, ValueKind.SCALAR)
        sym = state.trace.symbols.from_value(value)
        floor = shared.int_floor(i, v) if shared is not None else None
        if floor is not None:
            state.trace.symbols.at_least(sym, floor)
            shared.floored_ints[i] = sym
        return value
    meta = refined or state.to_value(v)
    if meta.kind is ValueKind.SCALAR:
        value = Value(name, meta.dtype, (), None, ValueKind.SCALAR)
        state.trace.symbols.from_value(value)
        return value
    if meta.kind is ValueKind.LIST:
        return Value(name, meta.dtype, meta.shape, meta.device, ValueKind.LIST)
    shape: tuple = meta.shape
    if i in invariants:
        inv = invariants[i]
        if inv is None:  # any shape (TensorFlow's unknown rank); a graph loop variable keeps its rank
            inv = (None,) * len(shape)
        if len(inv) != len(shape):
            raise ValueError(f"{quoted(loop_name(names, i))} has shape {shape_words(shape)} before the loop, "
                             f"which does "
                             f"not conform with the shape invariant {shape_words(inv)}{where(origin)}: a graph loop "
                             f"variable keeps its rank.")
        if not all(d is None or same_dim(d, s) or not isinstance(d, int) for d, s in zip(inv, shape)):
            raise ValueError(f"{quoted(loop_name(names, i))} has shape {shape_words(shape)} before the loop, "
                             f"which does "
                             f"not conform with the shape invariant {shape_words(inv)}{where(origin)}.")
        # A dim that changes between iterations is known only when the graph runs; its size on entry is the
        # hint library code deciding on it gets (`nonzero length?` in attention), each such decision a checked
        # assumption, as for an input's symbolic dim.
        hints = tuple(s if d is None and type(s) is int else None for d, s in zip(inv, shape))
        entry = shape
        opened = tuple(d is None for d in inv)
        shape = tuple((shared.symbol(s) if shared is not None else None) if d is None else s
                      for d, s in zip(inv, entry))
    else:
        hints, entry, opened = None, shape, (False,) * len(shape)
    requires_grad = bool(getattr(meta.example, "requires_grad", False))
    example = state.trace.engine.example(shape, meta.dtype, meta.device, requires_grad, hints=hints)
    value = Value(name, meta.dtype, tuple(example.shape), meta.device, ValueKind.TENSOR, example)
    for d, size in enumerate(value.shape):
        if shape[d] is None:
            state.trace.symbols.output_dim(size, value, d)
        if opened[d] and shared is not None:
            shared.add(entry[d], size, i, d)
            floor = shared.floor(entry[d])
            if floor is not None and isinstance(size, torch.SymInt):
                state.trace.symbols.at_least(size, floor)
                shared.floored_at(entry[d], size, i, d)
    return value


def _is_open(state: Scope, size: Any, loop_values: Sequence[Value]) -> bool:
    """Whether `size` is an open dim of one of the loop variables (a symbol read from it at each iteration)."""
    source = state.trace.symbols.sources.get(size.node.expr) if isinstance(size, torch.SymInt) else None
    return isinstance(source, OutputDim) and any(source.value is lv for lv in loop_values)


def fits_loop_var(state: Scope, shape: tuple, lv: Value, loop_values: Sequence[Value] = ()) -> bool:
    """Whether a body output of `shape` fits loop variable `lv` (its open dims take any size)."""
    if len(shape) != len(lv.shape):
        return False
    return all(same_dim(out, dim) or _is_open(state, dim, (lv, *loop_values)) for out, dim in zip(shape, lv.shape))


def final_value(state: Scope, lv: Value, init: Any, out: Any, name: str, loop_values: Sequence[Value] = (),
                finals: dict | None = None) -> tuple[Value, bool]:
    """The Value of a loop variable after the loop: the loop variable's type; its open dims fresh symbols (one per
    symbol of the loop: `finals` maps a loop symbol to its size after the loop)."""
    if lv.kind is not ValueKind.TENSOR:
        return Value(state.fresh_name(name), lv.dtype, lv.shape, lv.device, lv.kind), False
    finals = {} if finals is None else finals
    requires_grad = bool(getattr(lv.example, "requires_grad", False)) or bool(
        isinstance(out, Value) and getattr(out.example, "requires_grad", False))
    open_dims = {d for d, size in enumerate(lv.shape) if _is_open(state, size, (lv, *loop_values))}
    shape = tuple(finals.get(size.node.expr) if d in open_dims else size for d, size in enumerate(lv.shape))
    example = state.trace.engine.example(shape, lv.dtype, lv.device, requires_grad)
    value = Value(state.fresh_name(name), lv.dtype, tuple(example.shape), lv.device, ValueKind.TENSOR, example)
    for d in open_dims:
        state.trace.symbols.output_dim(value.shape[d], value, d)
        if lv.shape[d].node.expr not in finals:
            finals[lv.shape[d].node.expr] = value.shape[d]
            # the size after the loop is one the loop variable had: never below the least of those
            floor = state.trace.symbols.lower_bound(lv.shape[d])
            if floor > 0:
                state.trace.symbols.at_least(value.shape[d], floor)
    return value, requires_grad


def shape_words(shape: Any) -> str:
    if shape is None:
        return "<unknown rank>"
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def placeholder_init(v: Any, name: str, origin: SourceLocation | None) -> Any:
    """A stand-in initial value of `v`'s type (a Value or a Python number) for a variable first assigned in a loop."""
    if isinstance(v, Value):
        if v.kind is ValueKind.SCALAR:
            return {torch.bool: False, torch.float64: 0.0}.get(v.dtype, 0)
        if v.kind is ValueKind.LIST:
            return lists.new_list([])
        # Never read, but of the body's shape where that is known before the loop (a size of the inputs), so
        # the loop variable keeps one shape (an exported loop needs that); other sizes known only later are 0.
        shape = tuple(d if type(d) is int else or_zero(lists.input_size(d)) for d in v.shape)
        return torch.zeros(shape, dtype=v.dtype, device=v.device)
    if type(v) in SCALAR_DTYPES:
        return type(v)()
    raise ValueError(f"{quoted(name)} must be defined before the loop{where(origin)}: it is first assigned inside the "
                     f"loop, and its type ({type(v).__name__}) cannot be given a placeholder value. Supported types "
                     f"are tensors and Python numbers.")


def or_zero(d: Any) -> Any:
    return 0 if d is None else d


def element_fits(shape: tuple | None, element: tuple | None) -> bool:
    """Whether list elements of `shape` fit a list whose elements are `element` (None dims: any size)."""
    if element is None:
        return True
    if shape is None or len(shape) != len(element):
        return False
    return all(e is None or same_dim(s, e) for s, e in zip(shape, element))
