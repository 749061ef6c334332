"""Random Python programs over int variables, for fidelity fuzzing.

`programs()` is a Hypothesis strategy for the source of a function
`prog(a, b, c)` built from nested if/elif/else, bounded while loops, for
loops over range, break, continue, early return, and/or/not, ternaries,
chained comparisons and a few builtins (abs, min, max), plus the constructs
of `FEATURES`:

- closures: a nested def and a lambda reading `x` and `y` (called inside
  loops and branches that change them), a nested def assigning `z` through
  `nonlocal`;
- lists: a local list grown and shrunk with `append`, `pop` (as a statement
  and inside expressions), `insert` and `del l[i]`, read at computed indices;
- try: `try`/`except`/`else`/`finally` (catching ValueError, also with TypeError, or
  Exception) with break, continue and return inside
  (none in `finally`), a helper that always raises, also while a `return`
  evaluates its value;
- recursion: a module-level and a nested recursive helper with a Python base
  case;
- decorated: a helper behind a `functools.wraps` decorator;
- fall_off: a helper that reaches its end without `return` on some paths
  (decided by a Python value).

Every program terminates (loops have counters or small ranges) and raises
nothing on int inputs, so its result can be compared across the original,
the converted code on ints, and the converted code on staged values (or real
tensors: the graph fuzz reuses this with `torch.tensor` inputs). With
`floats=True` the same program divides with `/` instead of `//`, so that it
is differentiable on float tensors (the graph fuzz compares gradients).

Hypothesis draws one seeded `random.Random` per program and `generate`
builds the program from it: drawing every token through Hypothesis made
generation cost more than conversion. `load(source)` turns a source into a
live function whose source `inspect` can find (registered in linecache).
"""

from __future__ import annotations

import itertools
import linecache
import random
from typing import Callable

from hypothesis import strategies as st

PARAMS = ("a", "b", "c")
LOCALS = ("x", "y", "z")
VARS = PARAMS + LOCALS
MAX_DEPTH = 3
FEATURES = frozenset({"closures", "lists", "try", "recursion", "decorated", "fall_off"})
_CMP = ("<", "<=", ">", ">=", "==", "!=")

# Module-level helpers, emitted before `prog` when a feature uses them.
_PRELUDE = {
    "decorated": '''\
import functools


def logged(f):
    @functools.wraps(f)
    def wrapper(*args):
        return f(*args)
    return wrapper


@logged
def dist(v, w):
    if v > w:
        return v - w
    return w - v
''',
    "recursion": '''\
def rec_sum(v, d):
    if d <= 0:
        return v
    return rec_sum(v + d, d - 1)
''',
    "fall_off": '''\
def third(v, k):
    for i in range(k):
        if i == 2:
            return v + i
''',
    "try": '''\
def fail(v):
    raise ValueError("fail")  # a message of Python values: raised when the graph takes its path
''',
}

# Definitions at the top of `prog`, after x, y, z.
_PROG_DEFS = {
    "closures": ["def get_x():", "    return x", "get_y = lambda: y", "def bump_z(k):",
                 "    nonlocal z", "    z = z + k"],
    "recursion": ["def countdown(v, d):", "    if d <= 0:", "        return v",
                  "    return countdown(v - 1, d - 1)"],
    "lists": ["l = [a, b + 1]"],
}


class ProgramGenerator:
    """Builds one program from a random source (see module docstring)."""

    def __init__(self, rng: random.Random, max_depth: int = MAX_DEPTH,
                 features: frozenset = FEATURES, floats: bool = False):
        self.rng = rng
        self.max_depth = max_depth
        self.features = features
        self.div = " / " if floats else " // "  # the only token `floats` changes
        self.counter = itertools.count()
        self.no_jumps = 0  # > 0 inside `finally`: no break/continue/return there

    def atom(self, extra: tuple) -> str:
        r, f = self.rng, self.features
        calls = []
        if "closures" in f:
            calls += ["get_x()", "get_y()"]
        if "recursion" in f:
            calls += [f"rec_sum({r.choice(VARS)}, {r.randint(0, 3)})",
                      f"countdown({r.choice(VARS)}, {r.randint(0, 3)})"]
        if "decorated" in f:
            calls.append(f"dist({r.choice(VARS)}, {r.choice(VARS + extra)})")
        if "fall_off" in f:
            calls.append(f"(third({r.choice(VARS)}, {r.randint(1, 4)}) or 0)")
        if "lists" in f:
            calls.append("len(l)")
        if calls and r.random() < 0.15:
            return r.choice(calls)
        return r.choice(VARS + extra) if r.random() < 0.7 else str(r.randint(-3, 5))

    def int_expr(self, depth: int, extra: tuple) -> str:
        r = self.rng
        if depth >= 2 or r.random() < 0.45:
            return self.atom(extra)
        sub = lambda: self.int_expr(depth + 1, extra)  # noqa: E731
        kind = r.choice(("add", "sub", "mulk", "floordiv", "mod", "ternary", "abs", "minmax",
                         "neg"))
        if kind == "add":
            return f"({sub()} + {sub()})"
        if kind == "sub":
            return f"({sub()} - {sub()})"
        if kind == "mulk":
            return f"({sub()} * {r.randint(-2, 3)})"
        if kind == "floordiv":
            return f"({sub()}{self.div}{r.randint(1, 3)})"
        if kind == "mod":
            return f"({sub()} % {r.randint(2, 5)})"
        if kind == "ternary":
            return f"({sub()} if {self.bool_expr(depth + 1, extra)} else {sub()})"
        if kind == "abs":
            return f"abs({sub()})"
        if kind == "neg":
            return f"(-{sub()})"
        return f"{r.choice(('min', 'max'))}({sub()}, {sub()})"

    def bool_expr(self, depth: int, extra: tuple) -> str:
        r = self.rng
        sub_int = lambda: self.int_expr(depth + 1, extra)  # noqa: E731
        kind = r.choice(("cmp", "cmp", "chain", "and", "or", "not") if depth < 2 else ("cmp",))
        if kind == "cmp":
            return f"{sub_int()} {r.choice(_CMP)} {sub_int()}"
        if kind == "chain":
            return f"{sub_int()} {r.choice(_CMP)} {sub_int()} {r.choice(_CMP)} {sub_int()}"
        sub = lambda: self.bool_expr(depth + 1, extra)  # noqa: E731
        if kind == "and":
            return f"({sub()} and {sub()})"
        if kind == "or":
            return f"({sub()} or {sub()})"
        return f"(not {sub()})"

    def block(self, indent: int, depth: int, in_loop: bool, extra: tuple) -> list[str]:
        n = self.rng.randint(1, 3 if depth == 0 else 2)
        return [line for _ in range(n) for line in self.stmt(indent, depth, in_loop, extra)]

    def stmt(self, indent: int, depth: int, in_loop: bool, extra: tuple) -> list[str]:
        r, pad, f = self.rng, "    " * indent, self.features
        kinds = ["assign", "assign", "augassign"]
        if not self.no_jumps:
            kinds.append("return")
        if depth < self.max_depth:
            kinds += ["if", "ifelse", "elif", "while", "for"]
            if "try" in f:
                kinds.append("try")
        if in_loop and not self.no_jumps:
            kinds += ["break", "continue"]
        if "closures" in f:
            kinds.append("bump")
        if "lists" in f:
            kinds += ["append", "pop", "pop_expr", "insert", "del", "index"]
        kind = r.choice(kinds)
        expr = lambda: self.int_expr(0, extra)  # noqa: E731
        cond = lambda: self.bool_expr(0, extra)  # noqa: E731
        body = lambda: self.block(indent + 1, depth + 1, in_loop, extra)  # noqa: E731
        var = r.choice(VARS)
        if kind == "assign":
            return [f"{pad}{var} = {expr()}"]
        if kind == "augassign":
            return [f"{pad}{var} {r.choice(('+=', '-='))} {expr()}"]
        if kind in ("break", "continue"):
            return [f"{pad}if {cond()}:", f"{pad}    {kind}"]
        if kind == "return":
            return [f"{pad}if {cond()}:", f"{pad}    return ({expr()}, x, y)"]
        if kind == "if":
            return [f"{pad}if {cond()}:"] + body()
        if kind == "ifelse":
            return [f"{pad}if {cond()}:"] + body() + [f"{pad}else:"] + body()
        if kind == "elif":
            return ([f"{pad}if {cond()}:"] + body() + [f"{pad}elif {cond()}:"] + body()
                    + [f"{pad}else:"] + body())
        if kind == "try":
            return self.try_stmt(indent, depth, in_loop, extra)
        if kind == "bump":
            return [f"{pad}bump_z({expr()})"]
        if kind in ("append", "pop", "pop_expr", "insert", "del", "index"):
            return self.list_stmt(kind, pad, var, expr)
        k = f"k{next(self.counter)}"
        inner = self.block(indent + 1, depth + 1, True, extra + (k,))
        if kind == "while":
            # The counter is bumped first so `continue` cannot skip it.
            return ([f"{pad}{k} = 0", f"{pad}while {k} < {r.randint(0, 4)} and {cond()}:",
                     f"{pad}    {k} += 1"] + inner)
        stop = f"int({expr()}) % 4" if r.random() < 0.5 else str(r.randint(0, 3))
        return [f"{pad}for {k} in range({stop}):"] + inner

    def list_stmt(self, kind: str, pad: str, var: str, expr: Callable[[], str]) -> list[str]:
        """A statement on the list `l`, which always keeps an element (so a graph list of it
        knows its element type; every loop is small, so it stays short too)."""
        r = self.rng
        if kind == "append":
            return [f"{pad}l.append({var} + {expr()})"]
        if kind == "pop":
            where = r.choice(("", "0", "-1"))
            return [f"{pad}if len(l) > 1:", f"{pad}    {var} = {var} + l.pop({where})"]
        if kind == "pop_expr":
            return [f"{pad}if len(l) > 2:", f"{pad}    {var} = l.pop() - l.pop(0) + {var}"]
        if kind == "insert":
            return [f"{pad}l.insert({r.randint(0, 2)}, {var} - {expr()})"]
        if kind == "del":
            return [f"{pad}if len(l) > 1:", f"{pad}    del l[{r.choice((0, -1))}]"]
        return [f"{pad}{var} = {var} + l[int({expr()}) % len(l)]"]

    def try_stmt(self, indent: int, depth: int, in_loop: bool, extra: tuple) -> list[str]:
        r, pad = self.rng, "    " * indent
        var = r.choice(VARS)
        expr = lambda: self.int_expr(0, extra)  # noqa: E731
        # A raise comes first in the block: after a jump under a tensor `if` it would move
        # into that `if`'s other branch, where tracing raises it whichever way the `if` goes.
        fail = [[], [f"{pad}    {var} = {var} + fail({expr()})"]]
        if not self.no_jumps:
            fail.append([f"{pad}    return (fail({expr()}), x, y)"])
        lines = [f"{pad}try:"] + r.choice(fail) + self.block(indent + 1, depth + 1, in_loop, extra)
        # The handler may catch more than `fail`'s ValueError: never the library's own errors while it traces.
        caught = r.choice(("ValueError", "ValueError", "(ValueError, TypeError)", "Exception"))
        lines += [f"{pad}except {caught}:"] + self.block(indent + 1, depth + 1, in_loop, extra)
        if r.random() < 0.3:
            lines += [f"{pad}else:"] + self.block(indent + 1, depth + 1, in_loop, extra)
        if r.random() < 0.6:
            # A jump in `finally` would cancel a pending return: not generated.
            self.no_jumps += 1
            lines += [f"{pad}finally:"] + self.block(indent + 1, depth + 1, in_loop, extra)
            self.no_jumps -= 1
        return lines

    def program(self) -> str:
        prelude = [_PRELUDE[k] for k in sorted(_PRELUDE) if k in self.features]
        lines = ["def prog(a, b, c):", "    x = 0", "    y = 1", "    z = a"]
        for key in sorted(_PROG_DEFS):
            if key in self.features:
                lines += ["    " + line for line in _PROG_DEFS[key]]
        lines += self.block(1, 0, False, ())
        if "lists" in self.features:
            lines.append("    z = z + len(l) * 100 + sum(l)")
        lines += ["    return (x, y, z)"]
        return "\n\n".join(prelude + ["\n".join(lines)]) + "\n"


def generate(rng: random.Random, max_depth: int = MAX_DEPTH, features: frozenset = FEATURES,
             floats: bool = False) -> str:
    """The source of one program drawn from `rng`; `floats`: `/` for `//` (differentiable on floats)."""
    return ProgramGenerator(rng, max_depth, features, floats).program()


def generate_pair(seed: int, max_depth: int = MAX_DEPTH, features: frozenset = FEATURES) -> tuple[str, str]:
    """The same program twice: for ints, and with `/` for `//` for float tensors and gradients."""
    return (generate(random.Random(seed), max_depth, features),
            generate(random.Random(seed), max_depth, features, floats=True))


def programs(max_depth: int = MAX_DEPTH, features: frozenset = FEATURES) -> st.SearchStrategy[str]:
    """Hypothesis strategy: sources of `def prog(a, b, c)` ending with `return (x, y, z)`."""
    return st.randoms(use_true_random=True).map(lambda rng: generate(rng, max_depth, features))


def program_pairs(max_depth: int = MAX_DEPTH,
                  features: frozenset = FEATURES) -> st.SearchStrategy[tuple[str, str]]:
    """Hypothesis strategy: `generate_pair` of a drawn seed."""
    return st.randoms(use_true_random=True).map(
        lambda rng: generate_pair(rng.getrandbits(64), max_depth, features))


_ids = itertools.count()


def load(source: str, name: str = "prog") -> Callable:
    """Executes `source` under a fresh pseudo-filename that inspect can read back."""
    filename = f"<fuzz program {next(_ids)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {"__name__": "fuzz_programs"}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102
    return namespace[name]
