"""The wider random programs of the graph fuzz: `program_gen`'s, plus the constructs of `WIDE`.

`program_gen.ProgramGenerator` builds programs over Python ints; this one adds
what converted code met in code nobody here wrote and the int programs never
generate (every construct runs eagerly on Python ints and on tensors alike,
so the same program is the reference three ways):

- int_alias: a Python number that becomes a tensor, or an alias of one, in
  nested loops (`r += s` outside a loop that does `s += j`; `m += 3; m = x`);
- branch_init: a loop variable first assigned in one branch of the loop body
  (`if k == 0: t = e else: t = t + e`), read in the loop only;
- rank1: conditions on 1-element tensors of rank 1 and 2, and a rank-1 loop
  counter with a `break`;
- mixed_bool: `and`/`or`/`not` (as conditions) over Python bools, None,
  numbers and int, float and bool tensors;
- walrus: `:=` in `if` and `while` tests, also one that updates its own variable;
- type_checks: `type(u) is torch.Tensor`, `isinstance(u, ...)` on a value whose
  kind is the same on every path (a tensor, or a literal);
- variables: a `ta.Variable` (module level, `V`) updated by `assign_add` in a loop
  over `range` of a run-time number, and read;
- list_shapes: a list that gets a 0-dim element on one side of an `if` and a
  `[1]` or `[1, 1]` one on the other (one element: conditions on what is read
  from it stay valid Python);
- deletes: `del l[1:]`, `del l[:-1]`, `del l[:]` (refilled at once), `del t`;
- try_ops: a `try` around an index that is out of range for some values (IndexError when the graph runs),
  sometimes unused under a tensor `if` (it still runs), with an `except` that assigns the variable too or
  returns, sometimes an `else:`; or an `except` that never catches it and a `finally:` updating `V` (the
  harness compares the state after a call that raises too);
- grow: a tensor a Python `for` over a `range` grows by one row per step (`torch.cat`), with a `break` on
  a tensor condition (the rest of the range becomes one graph loop once the flag is a tensor), then library-
  style code deciding on its length: `0 if g.numel() == 0 else g.shape[0]`, or an `F.pad` of another tensor
  by the difference of their lengths (a size known only when the graph runs);
- mutation (`MUTATION`; TA_FUZZ_MUTATION=0 turns it off): a dict argument
  `d` (with a list in it), the captured `CAP` (a dict), `CAPL` (a list) and `OBJ`
  (an object) changed (items set, appended, extended, popped, deleted; an attribute
  set; a list attribute and a dict item that exist before the call replaced by new ones, which must not make
  the next call trace again) inside and outside loops and branches, also by called functions that change objects
  the program never names (`note`, `push`, `mark`: HID, HIDL, HOBJ); half the programs
  with one `return` return a `Box` object holding the results. The harness compares the
  objects' state after each call (and the returned object's contents) with eager's;
- python_grow (not in `FEATURES`: its own test runs it): one of those lists grown with Python values (`CAPL.append(3)`, `push(3)`) under
  a tensor condition: refused by design (`fuzz_structure` says which programs do it);
- number_merge (not in `FEATURES`: its own test runs it): a number and a tensor of another kind (int64, bool,
  the program's dtype) merged by a tensor `if`, a conditional expression or a loop (`n = torch.as_tensor(2)`,
  `if c: n = 0.5`): one the tensor holds unchanged becomes that tensor, another is refused by design;
- missing_kernel (not in `FEATURES`: its own test runs it): an op in a `try` whose `except NotImplementedError:`
  falls back on another, as transformers' static cache does around `index_copy_`: the op has its CPU kernel (the
  handler never runs; an index out of range is an IndexError nothing catches), or it is `cuda_only`, a custom op
  with a CUDA kernel only (the handler runs at every call);
- raise_paths (not in `FEATURES`: its own test runs it): what the program holds at an op that fails as the graph
  runs: a `try` whose body rebinds a variable before its failing index (at the body's top, in a tensor `if`, in
  a loop, in an inner `try`), the handler reading it or passing it on; and the objects of `mutation` changed
  before and after an index no `except` catches (the call raises: its state is compared with eager's).

`generate_pair(seed)` gives the program for int64 tensors and its `/` version
for float64 tensors, as `program_gen.generate_pair` does.
"""

from __future__ import annotations

import os
import random

import program_gen

WIDE = frozenset({"int_alias", "branch_init", "rank1", "mixed_bool", "walrus", "type_checks", "variables",
                  "list_shapes", "deletes", "try_ops", "grow"})
# Mutation of dict/list arguments and captured containers and objects, inside and outside tensor loops and
# branches: on unless TA_FUZZ_MUTATION=0. Inside a tensor loop or branch a change that cannot be
# staged is refused by design (a StateEffectError, `fuzz_outcomes.DESIGN_RULES`).
MUTATION = os.environ.get("TA_FUZZ_MUTATION", "1") != "0"
# (python_grow is not among them: each of its programs is refused by design, beyond the long runs' bound on
# those; its own test in tests/test_fuzz_graph.py runs it)
FEATURES = program_gen.FEATURES | WIDE | (frozenset({"mutation"}) if MUTATION else frozenset())
_WIDE_STMT_P = 0.3  # how often a statement is one of WIDE's (else one of program_gen's)
_WIDE_COND_P = 0.25


class WideProgramGenerator(program_gen.ProgramGenerator):
    """`program_gen.ProgramGenerator` with the constructs of `WIDE` (module docstring)."""

    def __init__(self, rng: random.Random, features: frozenset = FEATURES, floats: bool = False,
                 wide_p: float = _WIDE_STMT_P):
        super().__init__(rng, program_gen.MAX_DEPTH, features, floats)
        self.dtype = "torch.float64" if floats else "torch.int64"
        self.wide_p = wide_p

    def fresh(self, prefix: str) -> str:
        return f"{prefix}{next(self.counter)}"

    def stop(self, extra: tuple) -> str:
        """A `range` stop: a run-time number (the loop is a graph loop) or a literal."""
        r = self.rng
        return f"int({self.int_expr(0, extra)}) % 3" if r.random() < 0.7 else str(r.randint(0, 3))

    # ----- conditions -------------------------------------------------------------------------
    def operand(self, extra: tuple) -> str:
        """One operand of a mixed `and`/`or`/`not`: bools, None, numbers, tensors of several dtypes."""
        r, v = self.rng, self.rng.choice(program_gen.VARS + extra)
        return r.choice((v, f"({v} * 1.5)", f"({v} > 1)", f"({v} % 2 == 0)", "None", "0", "3", "0.0", "2.5",
                         "True", "False", f"({v} + 1)", f"(not {v})"))

    def bool_expr(self, depth: int, extra: tuple) -> str:
        r, f = self.rng, self.features
        kinds = []
        if "mixed_bool" in f and depth < 2:
            kinds.append("mixed")
        if "rank1" in f:
            kinds.append("rank1")
        if "walrus" in f and depth == 0:
            kinds.append("walrus")
        if not kinds or r.random() >= _WIDE_COND_P * self.wide_p / _WIDE_STMT_P:
            return super().bool_expr(depth, extra)
        kind = r.choice(kinds)
        e = self.int_expr(depth + 1, extra)
        if kind == "mixed":
            op = r.choice((" and ", " or "))
            terms = [self.operand(extra) for _ in range(r.randint(2, 3))]
            expr = "(" + op.join(terms) + ")"
            return f"(not {expr})" if r.random() < 0.3 else expr
        if kind == "rank1":
            shape = r.choice(("[1]", "[1, 1]"))
            one = f"(({e}) * torch.ones({shape}, dtype={self.dtype}) {r.choice(program_gen._CMP)} {r.randint(-2, 4)})"
            if r.random() < 0.4:  # and-ed with a Python or 0-dim condition
                return f"({one} {r.choice(('and', 'or'))} {super().bool_expr(depth + 1, extra)})"
            return one
        # A walrus binding a fresh name, read by nothing after: the test alone must be right.
        return f"(({self.fresh('w')} := {e}) {r.choice(program_gen._CMP)} {r.randint(-2, 4)})"

    # ----- statements -------------------------------------------------------------------------
    def stmt(self, indent: int, depth: int, in_loop: bool, extra: tuple) -> list[str]:
        f = self.features
        kinds = [k for k in ("int_alias", "branch_init", "rank1", "walrus", "type_checks", "variables",
                             "list_shapes", "deletes", "try_ops", "grow", "mutation", "python_grow", "raise_paths",
                             "number_merge", "missing_kernel")
                 if k in f]
        if depth >= self.max_depth or not kinds or self.rng.random() >= self.wide_p:
            return super().stmt(indent, depth, in_loop, extra)
        return getattr(self, f"wide_{self.rng.choice(kinds)}")("    " * indent, indent, depth, in_loop, extra)

    def _block(self, indent: int, depth: int, extra: tuple) -> list[str]:
        return self.block(indent, depth, True, extra)

    def wide_int_alias(self, pad, indent, depth, in_loop, extra):
        r = self.rng
        v, w = r.sample(program_gen.LOCALS, 2)
        k, j = self.fresh("k"), self.fresh("k")
        if r.random() < 0.5:  # TF's dependent_inner_for: `r += s` sees the inner loop's `s += j`
            inner = f"range({self.stop(extra + (k,))})" if r.random() < 0.5 else \
                f"torch.arange({self.stop(extra + (k,))}, dtype={self.dtype})"  # tensor elements, eagerly too
            return [f"{pad}for {k} in range({self.stop(extra)}):", f"{pad}    {v} += {w}",
                    f"{pad}    for {j} in {inner}:", f"{pad}        {w} += {j}"]
        # A number the first time round, then an alias of a tensor that `+=` updates in place.
        src = r.choice(program_gen.VARS)
        return [f"{pad}for {k} in range({self.stop(extra)}):", f"{pad}    {v} += {r.randint(1, 3)}",
                f"{pad}    {v} = {src}"]

    def wide_branch_init(self, pad, indent, depth, in_loop, extra):
        # Half the time `t` is also bound before the loop; else, over a run-time `range`, the program breaks
        # TensorFlow's rule that a loop's state exists before the loop (a clear refusal, by design).
        r = self.rng
        k, t = self.fresh("k"), self.fresh("t")
        first = r.choice((f"{k} == 0", f"{k} < 1"))
        before = [f"{pad}{t} = {self.int_expr(0, extra)}"] if r.random() < 0.5 else []
        return before + [f"{pad}for {k} in range({self.stop(extra)}):", f"{pad}    if {first}:",
                f"{pad}        {t} = {self.int_expr(0, extra + (k,))}", f"{pad}    else:",
                f"{pad}        {t} = {t} + {self.int_expr(1, extra + (k,))}",
                f"{pad}    {r.choice(program_gen.LOCALS)} = {r.choice(program_gen.LOCALS)} + {t}"]

    def wide_rank1(self, pad, indent, depth, in_loop, extra):
        r = self.rng
        i, var = self.fresh("t"), r.choice(program_gen.LOCALS)
        shape = r.choice(("[1]", "[1, 1]"))
        lines = [f"{pad}{i} = torch.zeros({shape}, dtype={self.dtype}) + {self.int_expr(1, extra)}",
                 f"{pad}while {i} < {r.randint(1, 6)}:", f"{pad}    {i} += 1"]
        if r.random() < 0.7:
            lines += [f"{pad}    if {i} > {r.randint(0, 4)}:", f"{pad}        break"]
        return lines + [f"{pad}{var} = {var} + {i}.sum()"]

    def wide_walrus(self, pad, indent, depth, in_loop, extra):
        r = self.rng
        var, w = r.choice(program_gen.LOCALS), self.fresh("w")
        e = self.int_expr(1, extra)
        if r.random() < 0.4:
            return [f"{pad}if ({w} := {e}) {r.choice(program_gen._CMP)} {r.randint(-2, 4)}:",
                    f"{pad}    {var} = {var} + {w}", f"{pad}else:", f"{pad}    {var} = {var} - {w}"]
        k = self.fresh("k")
        # The counter comes first: the walrus is evaluated at least once (`w` is bound after the loop).
        target = w if r.random() < 0.6 else var  # a walrus updating its own variable
        value = f"{e} * {k}" if target == w else f"{var} + {e}"
        return [f"{pad}{k} = 0", f"{pad}while {k} < {r.randint(1, 4)} and ({target} := {value}) < {r.randint(0, 8)}:",
                f"{pad}    {k} += 1"] + self._block(indent + 1, depth + 1, extra + (k,)) + \
               [f"{pad}{var} = {var} + {target}"]

    def wide_type_checks(self, pad, indent, depth, in_loop, extra):
        r = self.rng
        u, var = self.fresh("u"), r.choice(program_gen.LOCALS)
        value = r.choice((f"torch.as_tensor({self.int_expr(1, extra)})",
                          f"torch.as_tensor({r.choice(program_gen.PARAMS)})", str(r.randint(-2, 4))))
        check = r.choice((f"type({u}) is torch.Tensor", f"type({u}) is torch.Tensor", f"isinstance({u}, torch.Tensor)",
                          f"type({u}) is int", f"isinstance({u}, (int, float))", f"not isinstance({u}, torch.Tensor)"))
        return [f"{pad}{u} = {value}", f"{pad}if {check}:", f"{pad}    {var} = {var} + {u}", f"{pad}else:",
                f"{pad}    {var} = {var} - {u} * 2"]

    def wide_variables(self, pad, indent, depth, in_loop, extra):
        r = self.rng
        k, var = self.fresh("k"), r.choice(program_gen.LOCALS)
        lines = [f"{pad}for {k} in range({self.stop(extra)}):",
                 f"{pad}    V.{r.choice(('assign_add', 'assign_sub'))}({r.choice((k, self.int_expr(1, extra)))})"]
        return lines + [f"{pad}{var} = {var} + V.read_value()"]

    def wide_list_shapes(self, pad, indent, depth, in_loop, extra):
        # One time in four the other branch's element has another rank: a graph list refuses that (by design, as
        # TensorFlow's TensorArray); else it is a 0-dim tensor made another way (`torch.full([], ...)`).
        r, var = self.rng, self.rng.choice(program_gen.VARS)
        shape = r.choice(("[1]", "[1, 1]")) if r.random() < 0.25 else "[]"
        return [f"{pad}if {self.bool_expr(0, extra)}:", f"{pad}    l.append({var} + {self.int_expr(1, extra)})",
                f"{pad}else:", f"{pad}    l.append(torch.full({shape}, 9, dtype={self.dtype}))"]

    def wide_deletes(self, pad, indent, depth, in_loop, extra):
        r = self.rng
        kind = r.choice(("head", "tail", "all", "name"))
        if kind == "head":
            return [f"{pad}if len(l) > 1:", f"{pad}    del l[1:]"]
        if kind == "tail":
            return [f"{pad}if len(l) > 1:", f"{pad}    del l[:-1]"]
        if kind == "all":  # refilled at once: every read finds an element
            return [f"{pad}del l[:]", f"{pad}l.append({self.int_expr(0, extra)})"]
        t, var = self.fresh("t"), r.choice(program_gen.LOCALS)
        return [f"{pad}{t} = {self.int_expr(0, extra)}", f"{pad}{var} = {var} + {t}", f"{pad}del {t}"]

    def wide_grow(self, pad, indent, depth, in_loop, extra):
        r = self.rng
        var = r.choice(program_gen.LOCALS)
        g, k = self.fresh("g"), self.fresh("k")
        lines = [f"{pad}{g} = torch.zeros({r.randint(1, 3)}, dtype={self.dtype}) + {r.randint(0, 2)}",
                 f"{pad}for {k} in range({r.randint(2, 5)}):",
                 f"{pad}    {g} = torch.cat([{g}, {g}[-1:] + {k}])",
                 f"{pad}    if {g}.sum() > {self.int_expr(depth + 1, extra)}:",
                 f"{pad}        break"]
        if r.random() < 0.5:  # transformers' `get_seq_length`: 0 for an empty cache
            return lines + [f"{pad}{var} = {var} + (0 if {g}.numel() == 0 else {g}.shape[0])"]
        # transformers' `prepare_padding_mask`: pad a shorter tensor to the grown one's length
        h = self.fresh("h")
        return lines + [f"{pad}{h} = torch.ones(1, dtype={self.dtype})",
                        f"{pad}if (n_{h} := {g}.shape[0] - {h}.shape[0]) > 0:",
                        f"{pad}    {h} = torch.nn.functional.pad({h}, (0, n_{h}))",
                        f"{pad}{var} = {var} + ({h} * {g}).sum()"]

    def wide_try_ops(self, pad, indent, depth, in_loop, extra):
        r, var = self.rng, self.rng.choice(program_gen.LOCALS)
        index = f"torch.as_tensor({self.int_expr(1, extra)}).long()"  # out of range for some inputs
        op = f"torch.arange(3, dtype={self.dtype})[{index}]"
        if r.random() < 0.3:  # unused, under a tensor `if`: it still runs, and its failure runs the handler
            body = [f"{pad}    if {self.bool_expr(1, extra)}:", f"{pad}        {op}", f"{pad}    {var} = {var} + 1"]
        else:
            body = [f"{pad}    {var} = {var} + {op}"]
        # Sometimes only the handler returns (the body's path leaves the return value unassigned).
        handler = [f"{pad}    return (x, y, z - {r.randint(1, 5)})"] if r.random() < 0.2 and not self.no_jumps else \
            [f"{pad}    {var} = {var} - {r.randint(1, 5)}"]
        if "variables" in self.features and r.random() < 0.25:
            # Nothing catches the IndexError: it goes on, after the `finally:` changed V (as the graph runs too).
            return [f"{pad}try:"] + body + [f"{pad}except KeyError:"] + handler + \
                [f"{pad}finally:", f"{pad}    V.assign_add({r.randint(1, 3)})"]
        lines = [f"{pad}try:"] + body + [f"{pad}except IndexError:"] + handler
        if r.random() < 0.4:
            lines += [f"{pad}else:", f"{pad}    {var} = {var} * 2"]
        return lines

    def wide_mutation(self, pad, indent, depth, in_loop, extra):
        # The values stored are tensors (graph values while tracing: replayed at every call); a Python value
        # stored in an object that outlives the call is written once, while tracing, as TensorFlow documents.
        # (`+ ZERO`, a tensor of the program's dtype: `a * 0` is a Python number where the program rebinds `a`)
        r, e = self.rng, f"({self.int_expr(1, extra)}) + ZERO"
        return [r.choice((f"{pad}d['k'] = d['k'] + {e}", f"{pad}d['l'].append({e})", f"{pad}CAP['n'] = CAP['n'] + {e}",
                          f"{pad}CAPL.append({e})", f"{pad}if len(CAPL) > 1:\n{pad}    CAPL.pop()",
                          f"{pad}OBJ.n = OBJ.n + {e}", f"{pad}d['l'].extend([{e}, 1])",
                          f"{pad}CAPL[0] = CAPL[0] + {e}", f"{pad}if len(d['l']) > 2:\n{pad}    del d['l'][0]",
                          # containers that exist before the call, replaced by new ones at each call (one trace)
                          f"{pad}OBJ.items = [{e}, OBJ.items[1] + {e}]",
                          f"{pad}CAP['sub'] = {{'v': CAP['sub']['v'] + {e}}}",
                          # a called function changing objects `prog` never names (HID, HIDL, HOBJ)
                          f"{pad}note({e})", f"{pad}push({e})", f"{pad}mark({e})"))]

    def wide_python_grow(self, pad, indent, depth, in_loop, extra):
        # A list that outlives the call grown with Python values under a tensor condition: eagerly at each call
        # that takes the branch; the trace would run it once, whatever the graph decides, so it is refused
        # (`fuzz_structure`'s rule says which programs break it). Never outside tensor code: there a Python value
        # is written once, while tracing, as TensorFlow documents.
        r = self.rng
        cond = f"{r.choice(('a', 'b', 'c'))} {r.choice(('>', '<', '==', '!='))} {r.randint(-2, 4)}"
        grow = r.choice((f"CAPL.append({r.randint(0, 9)})", f"d['l'].append({r.randint(0, 9)})",
                         f"CAPL.extend([{r.randint(0, 9)}, {r.randint(0, 9)}])", f"push({r.randint(0, 9)})",
                         f"CAPL.insert(0, {r.randint(0, 9)})"))
        return [f"{pad}if {cond}:", f"{pad}    {grow}"]

    def wide_number_merge(self, pad, indent, depth, in_loop, extra):
        # A number and a tensor merged by a tensor `if`, a conditional expression or a loop: a number the tensor's
        # dtype holds unchanged becomes that tensor (an int in a float tensor); another (a float in an int tensor,
        # an int in a bool one) is refused, never cast (`1.5` would become `1`).
        r = self.rng
        u, var = self.fresh("n"), r.choice(program_gen.LOCALS)
        tensor = r.choice((f"torch.as_tensor({r.randint(-2, 4)})", f"(ZERO + {r.randint(-2, 4)})",
                           f"({r.choice(program_gen.PARAMS)} > {r.randint(-2, 4)})", "torch.as_tensor(True)"))
        number = r.choice(("0.5", "-1.5", "2", "0", "True"))
        form = r.choice(("if", "ifexp", "loop"))
        if form == "if":
            lines = [f"{pad}{u} = {tensor}", f"{pad}if {self.bool_expr(0, extra)}:", f"{pad}    {u} = {number}"]
        elif form == "ifexp":
            lines = [f"{pad}{u} = ({tensor} if {self.bool_expr(0, extra)} else {number})"]
        else:
            lines = [f"{pad}{u} = {tensor}", f"{pad}for {self.fresh('k')} in range({self.stop(extra)}):",
                     f"{pad}    {u} = {number}"]
        return lines + [f"{pad}{var} = {var} + {u}"]

    def wide_missing_kernel(self, pad, indent, depth, in_loop, extra):
        # transformers' static cache: an op in a `try` whose `except NotImplementedError:` falls back on another
        # (for a device without the op's kernel). `index_copy_` has its CPU kernel: the handler never runs,
        # eagerly or as the graph runs, and an index out of range for some inputs is an IndexError nothing
        # catches. `cuda_only` (a custom op with a CUDA kernel only) has none: its handler runs at every call.
        r, var = self.rng, self.rng.choice(program_gen.LOCALS)
        buf, pos = self.fresh("buf"), self.fresh("pos")
        value = f"torch.as_tensor({var}, dtype={self.dtype}).reshape(1)"
        lines = [f"{pad}{buf} = torch.zeros(3, dtype={self.dtype})",
                 f"{pad}{pos} = torch.as_tensor({self.int_expr(1, extra)}).long().reshape(1)"]
        if r.random() < 0.6:
            body = [f"{pad}    {buf}.index_copy_(0, {pos}, {value})"]
        else:
            body = [f"{pad}    {buf} = {buf} + cuda_only({value})"]
        handler = [f"{pad}    {buf} = {buf} - {r.randint(1, 5)}"]
        return lines + [f"{pad}try:"] + body + [f"{pad}except NotImplementedError:"] + handler + \
            [f"{pad}{var} = {var} + {buf}.sum()"]

    def wide_raise_paths(self, pad, indent, depth, in_loop, extra):
        if depth > 0:  # (at the top of the program: not in a `try` of program_gen, whose `finally:` may read it)
            return program_gen.ProgramGenerator.stmt(self, indent, depth, in_loop, extra)
        r, var = self.rng, self.rng.choice(program_gen.LOCALS)
        index = f"torch.as_tensor({self.int_expr(1, extra)}).long()"  # out of range for some inputs
        op = f"torch.arange(3, dtype={self.dtype})[{index}]"
        kind = r.choice(("top", "if", "loop", "inner", "effects", "effects"))
        if kind == "effects":  # changes before and after an index nothing catches
            e = f"({self.int_expr(1, extra)}) + ZERO"
            change = lambda: r.choice((f"CAPL.append({e})", f"CAP['n'] = CAP['n'] + {e}", f"OBJ.n = OBJ.n + {e}",
                                       f"d['k'] = d['k'] + {e}", f"d['l'].append({e})", f"note({e})",
                                       f"push({e})", f"mark({e})"))
            return [f"{pad}{change()}", f"{pad}{var} = {var} + {op}", f"{pad}{change()}"]
        body = [f"{pad}    {var} = {var} + {self.int_expr(1, extra)}"]  # rebound before the failing op
        if kind == "top":
            body += [f"{pad}    {var} = {var} + {op}"]
        elif kind == "if":
            body += [f"{pad}    if {self.bool_expr(1, extra)}:", f"{pad}        {var} = {var} * 2",
                     f"{pad}        {var} = {var} + {op}", f"{pad}    else:", f"{pad}        {var} = {var} - {op}"]
        elif kind == "loop":
            k = self.fresh("k")
            body += [f"{pad}    for {k} in range({self.stop(extra)}):", f"{pad}        {var} = {var} + 1",
                     f"{pad}        {var} = {var} + torch.arange(3, dtype={self.dtype})[{k} + {index}]"]
        else:
            body += [f"{pad}    try:", f"{pad}        {var} = {var} * 2", f"{pad}        {var} = {var} + {op}",
                     f"{pad}    except IndexError:", f"{pad}        {var} = {var} - {r.randint(1, 5)}",
                     f"{pad}    {var} = {var} + torch.arange(3, dtype={self.dtype})[{index} - 1]"]
        handler = r.choice(([f"{pad}    pass"], [f"{pad}    {var} = {var} - {r.randint(10, 50)}"]))
        return [f"{pad}try:"] + body + [f"{pad}except IndexError:"] + handler

    def program(self) -> str:
        source = super().program()
        if "mutation" in self.features or "python_grow" in self.features or "raise_paths" in self.features:
            source = source.replace("def prog(a, b, c):", "def prog(a, b, c, d):")
        head = ["import torch", "import torch_autograph as ta", ""]
        if "variables" in self.features:
            head.append(f"V = ta.Variable(torch.tensor(0, dtype={self.dtype}), trainable=False)")
        if "mutation" in self.features or "python_grow" in self.features or "raise_paths" in self.features:
            # d['l']'s first item, of the program's dtype: a graph list holds one dtype (a Python float: float32)
            head += [f"ONE = {'torch.tensor(1.0, dtype=torch.float64)' if self.dtype == 'torch.float64' else '1'}"]
            head += [f"ZERO = torch.tensor(0, dtype={self.dtype})"]
            head += ["CAP = {'n': 0}", "CAPL = [0]", "", "", "class Obj:", "    n = 0", "", "", "OBJ = Obj()"]
            head += _HIDDEN
            # (only where that is the one return: an early one's tuple and a Box could not be merged)
            if source[source.index("def prog("):].count("return (") == 1 and self.rng.random() < 0.5:
                # a returned object holding the results (graph values while tracing: a new one at each call)
                source = source.replace("return (x, y, z)", "return Box((x, y, z), z)")
        if "missing_kernel" in self.features:
            head += _CUDA_ONLY
        return "\n".join(head) + "\n\n\n" + source


# What the mutation construct's programs call: functions changing objects the program never names, and the
# object it may return.
_HIDDEN = ["HID = {'n': 0}", "HIDL = [0]", "HOBJ = Obj()", "", "",
           "def note(v):", "    HID['n'] = HID['n'] + v", "", "",
           "def push(v):", "    HIDL.append(v)", "", "",
           "def mark(v):", "    HOBJ.n = HOBJ.n + v", "", "",
           "class Box:", "    def __init__(self, v, w):", "        self.v = v", "        self.w = w"]


# The missing_kernel construct's op without a CPU kernel (registered once per process: every program that uses
# it defines it the same way).
_CUDA_ONLY = ["", "", "if not hasattr(torch.ops.ta_fuzz, 'cuda_only'):",
              "    @torch.library.custom_op('ta_fuzz::cuda_only', mutates_args=(), device_types='cuda')",
              "    def _cuda_only(x: torch.Tensor) -> torch.Tensor:", "        return x * 2", "",
              "    _cuda_only.register_fake(lambda x: torch.empty_like(x))",
              "cuda_only = torch.ops.ta_fuzz.cuda_only"]


def unboxed(result):
    """A returned `Box` as the dict of its attributes (compared and differentiated like the results)."""
    if type(result).__name__ == "Box":
        return {"Box": {k: unboxed(v) for k, v in vars(result).items()}}
    return result


def generate(rng: random.Random, features: frozenset = FEATURES, floats: bool = False,
             wide_p: float = _WIDE_STMT_P) -> str:
    """One program; `wide_p`: how often a statement is one of `WIDE`'s (conditions in proportion)."""
    return WideProgramGenerator(rng, features, floats, wide_p).program()


def generate_pair(seed: int, features: frozenset = FEATURES, wide_p: float = _WIDE_STMT_P) -> tuple[str, str]:
    """The same program for int64 tensors and, with `/` for `//`, for float64 tensors (gradients)."""
    return (generate(random.Random(seed), features, wide_p=wide_p),
            generate(random.Random(seed), features, floats=True, wide_p=wide_p))


def takes_dict(prog) -> bool:
    """Whether the program takes the dict argument `d` (the mutation feature)."""
    return prog.__code__.co_argcount == 4


def fresh_state(prog) -> dict:
    """Resets what the program's calls change besides their result (V, CAP, CAPL); returns the `d` argument
    (empty dict when the program takes none)."""
    g = prog.__globals__
    if "V" in g:
        g["V"].assign(0)
    if "CAP" in g:
        g["CAP"].clear()
        g["CAP"]["n"] = 0
        g["CAP"]["sub"] = {"v": g["ZERO"].clone()}
        g["CAPL"][:] = [0]
        g["OBJ"].n = 0
        g["OBJ"].items = [g["ZERO"].clone(), g["ZERO"].clone()]
        g["HID"].clear()
        g["HID"]["n"] = 0
        g["HIDL"][:] = [0]
        g["HOBJ"].n = 0
    one = g.get("ONE", 1)
    return {"k": 0, "l": [one.clone() if hasattr(one, "clone") else one]}


def state_of(prog, d) -> dict:
    """What the last call left in the objects a program changes besides its result."""
    g, out = prog.__globals__, {}
    if "V" in g:
        out["V"] = g["V"].read_value()
    if "CAP" in g:
        out["CAP"], out["CAPL"], out["OBJ"] = dict(g["CAP"]), list(g["CAPL"]), (g["OBJ"].n, list(g["OBJ"].items))
        out["HID"], out["HIDL"], out["HOBJ"] = dict(g["HID"]), list(g["HIDL"]), g["HOBJ"].n
    if takes_dict(prog):
        out["d"] = {"k": d["k"], "l": list(d["l"])}
    return out
