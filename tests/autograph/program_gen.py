"""Random Python programs over int variables, for fidelity fuzzing.

`programs()` is a Hypothesis strategy for the source of a function
`prog(a, b, c)` built from nested if/elif/else, bounded while loops, for
loops over range, break, continue, early return, and/or/not, ternaries,
chained comparisons and a few builtins (abs, min, max). Every program
terminates (loops have counters or small ranges) and raises nothing on int
inputs, so its result can be compared across the original, the converted
code on ints, and the converted code on staged values (or real tensors:
the lead reuses this with `torch.tensor` inputs).

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
_CMP = ("<", "<=", ">", ">=", "==", "!=")


class ProgramGenerator:
    """Builds one program from a random source (see module docstring)."""

    def __init__(self, rng: random.Random, max_depth: int = MAX_DEPTH):
        self.rng = rng
        self.max_depth = max_depth
        self.counter = itertools.count()

    def int_expr(self, depth: int, extra: tuple) -> str:
        r = self.rng
        if depth >= 2 or r.random() < 0.45:
            return r.choice(VARS + extra) if r.random() < 0.7 else str(r.randint(-3, 5))
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
            return f"({sub()} // {r.randint(1, 3)})"
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
        r, pad = self.rng, "    " * indent
        kinds = ["assign", "assign", "augassign", "return"]
        if depth < self.max_depth:
            kinds += ["if", "ifelse", "elif", "while", "for"]
        if in_loop:
            kinds += ["break", "continue"]
        kind = r.choice(kinds)
        expr = lambda: self.int_expr(0, extra)  # noqa: E731
        cond = lambda: self.bool_expr(0, extra)  # noqa: E731
        body = lambda: self.block(indent + 1, depth + 1, in_loop, extra)  # noqa: E731
        if kind == "assign":
            return [f"{pad}{r.choice(VARS)} = {expr()}"]
        if kind == "augassign":
            return [f"{pad}{r.choice(VARS)} {r.choice(('+=', '-='))} {expr()}"]
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
        k = f"k{next(self.counter)}"
        inner = self.block(indent + 1, depth + 1, True, extra + (k,))
        if kind == "while":
            # The counter is bumped first so `continue` cannot skip it.
            return ([f"{pad}{k} = 0", f"{pad}while {k} < {r.randint(0, 4)} and {cond()}:",
                     f"{pad}    {k} += 1"] + inner)
        stop = f"({expr()}) % 4" if r.random() < 0.5 else str(r.randint(0, 3))
        return [f"{pad}for {k} in range({stop}):"] + inner

    def program(self) -> str:
        lines = ["def prog(a, b, c):", "    x = 0", "    y = 1", "    z = a"]
        lines += self.block(1, 0, False, ())
        lines += ["    return (x, y, z)"]
        return "\n".join(lines) + "\n"


def generate(rng: random.Random, max_depth: int = MAX_DEPTH) -> str:
    """The source of one program drawn from `rng`."""
    return ProgramGenerator(rng, max_depth).program()


def programs(max_depth: int = MAX_DEPTH) -> st.SearchStrategy[str]:
    """Hypothesis strategy: sources of `def prog(a, b, c)` ending with `return (x, y, z)`."""
    return st.randoms(use_true_random=True).map(lambda rng: generate(rng, max_depth))


_ids = itertools.count()


def load(source: str, name: str = "prog") -> Callable:
    """Executes `source` under a fresh pseudo-filename that inspect can read back."""
    filename = f"<fuzz program {next(_ids)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {"__name__": "fuzz_programs"}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102
    return namespace[name]
