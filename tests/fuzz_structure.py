"""What a generated program's structure says about the fuzz's refusals and references.

A refusal of the graph fuzz counts as one of TensorFlow's design rules only
when the program really breaks that rule, decided here from the program's
syntax tree, never from the error's text: `breaks(rule, source, floats)`.
And the comparison with plain Python is skipped only where Python ints and
eager tensors really differ: an augmented assignment to a name that may share
its tensor with another name, an argument or a list (`skips_python`).

Which values may be tensors is a taint over the whole function (a name is
a tensor if any assignment to it mentions one: the arguments are tensors, and
so is what any call but a few builtins returns); which names are bound for
sure at a statement is a forward walk (both branches of an `if`; a loop may
run zero times). Both are conservative in the same direction: they may call a
condition a tensor that is not, never the reverse, so a rule is never said to
be unbroken where it is broken.

What kind of value an expression gives (`Kinds`: None, a number, a tensor of
a dtype) is a fixpoint over the bindings of the names it reads, with torch's
type promotion; the merge rules (`merge_refused`) are the graph's: a number
meeting a tensor becomes a tensor of its dtype where that keeps its value,
tensors of two dtypes are refused. A name may give what any of its bindings
gives, wherever it is read: that errs towards saying a type rule is broken,
so every rule's tests (tests/test_fuzz_structure.py) include the unbroken
variant next to the broken one.
"""

from __future__ import annotations

import ast

PARAMS = ("a", "b", "c", "d")
# Builtins whose result is a Python value whatever their arguments are.
_PYTHON_VALUED = frozenset({"type", "isinstance"})
_ALIAS_CALLS = frozenset({"min", "max", "get_x", "get_y", "rec_sum", "countdown", "pop", "as_tensor"})
# Closures that return a local of `prog` as it is.
_GETTERS = {"get_x": "x", "get_y": "y"}


def _prog(source: str) -> ast.FunctionDef:
    return next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "prog")


def _own_nodes(node: ast.AST):
    """The nodes of `node` but not of the functions and lambdas nested in it."""
    yield node
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, (ast.FunctionDef, ast.Lambda)):
            yield from _own_nodes(child)


def _names(node: ast.AST, ctx: type) -> set:
    return {n.id for n in _own_nodes(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}


def _evaluated_for_sure(node: ast.AST):
    """The nodes of `node` evaluated whenever it is: of `a and b` only `a`, of `x if t else y` only `t`; not
    those of a nested function, lambda or comprehension."""
    yield node
    if isinstance(node, ast.BoolOp):
        yield from _evaluated_for_sure(node.values[0])
    elif isinstance(node, ast.IfExp):
        yield from _evaluated_for_sure(node.test)
    elif not isinstance(node, (ast.FunctionDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                               ast.GeneratorExp)):
        for child in ast.iter_child_nodes(node):
            yield from _evaluated_for_sure(child)


def _walrus_for_sure(node: ast.AST) -> set:
    """The names a walrus in `node` binds whenever `node` runs (not one in a short-circuited operand)."""
    return {n.target.id for n in _evaluated_for_sure(node) if isinstance(n, ast.NamedExpr)}


def _stored_for_sure(stmt: ast.stmt) -> set:
    """The names a simple statement binds whenever it runs: its targets, and its walruses evaluated for sure."""
    walrus = {id(n.target) for n in _own_nodes(stmt) if isinstance(n, ast.NamedExpr)}
    targets = {n.id for n in _own_nodes(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
               and id(n) not in walrus}
    return targets | _walrus_for_sure(stmt)


def _assignments(fn: ast.FunctionDef):
    """(target name, value expression or None, the statement) for every binding in `fn`, nested defs included."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        yield n.id, node.value, node
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            yield node.target.id, ast.BinOp(node.target, node.op, node.value), node
        elif isinstance(node, ast.NamedExpr):
            yield node.target.id, node.value, node
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            yield node.target.id, node.iter, node


class Program:
    """The facts about one generated `prog` that the rules below need."""

    def __init__(self, source: str, floats: bool):
        self.fn = _prog(source)
        self.floats = floats
        self._kinds: Kinds | None = None
        self.tensors = self._taint()
        self.entry: dict = {}  # id(if/loop node) -> names bound for sure before it
        self.branch_ends: dict = {}  # id(if node) -> (bound after its body, bound after its else)
        self._bound(self.fn.body, {a.arg for a in self.fn.args.args})

    # ----- which values may be tensors ------------------------------------------------------
    def _mentions_tensor(self, expr: ast.AST, tensors: set) -> bool:
        for n in ast.walk(expr):
            if isinstance(n, ast.Call):
                f = n.func
                name = f.id if isinstance(f, ast.Name) else None
                if name in _PYTHON_VALUED:
                    continue
                if name not in ("abs", "min", "max", "int", "float", "len", "sum", "range"):
                    return True  # torch.*, V.*, a user function: may return a tensor
            if isinstance(n, ast.Name) and n.id in tensors:
                return True
        return False

    def tensor_valued(self, expr: ast.AST) -> bool:
        """Whether `expr` may be a tensor; `type(...)`/`isinstance(...)` results never are."""
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in _PYTHON_VALUED:
            return False
        if isinstance(expr, ast.Compare) and any(self.tensor_valued(e) for e in [expr.left, *expr.comparators]):
            return True
        if isinstance(expr, ast.Compare):
            return False
        return self._mentions_tensor(expr, self.tensors)

    def _taint(self) -> set:
        tensors = set(PARAMS)
        bindings = list(_assignments(self.fn))
        while True:
            more = {name for name, value, _ in bindings if name not in tensors and value is not None
                    and self._mentions_tensor(value, tensors)}
            if not more:
                return tensors
            tensors |= more

    def tensor_controlled(self, node: ast.AST) -> bool:
        if isinstance(node, (ast.If, ast.While)):
            return self.tensor_valued(node.test)
        return isinstance(node, ast.For) and self.tensor_valued(node.iter)

    # ----- which names are bound for sure ---------------------------------------------------
    def _bound(self, body: list, bound: set) -> set:
        for stmt in body:
            bound = self._bound_stmt(stmt, bound)
        return bound

    def _bound_stmt(self, stmt: ast.stmt, bound: set) -> set:
        if isinstance(stmt, ast.If):
            entry = bound | _walrus_for_sure(stmt.test)
            self.entry[id(stmt)] = entry
            ends = self._bound(stmt.body, set(entry)), self._bound(stmt.orelse, set(entry))
            self.branch_ends[id(stmt)] = ends
            return ends[0] & ends[1]
        if isinstance(stmt, (ast.While, ast.For)):
            self.entry[id(stmt)] = set(bound)
            inner = set(bound) | ({stmt.target.id} if isinstance(stmt, ast.For) else set())
            self._bound(stmt.body, inner)
            return bound | (_walrus_for_sure(stmt.test) if isinstance(stmt, ast.While) else set())
        if isinstance(stmt, ast.Try):
            self.entry[id(stmt)] = set(bound)
            self._bound(stmt.body, set(bound))
            for handler in stmt.handlers:
                self._bound(handler.body, set(bound))
            self._bound(stmt.orelse, set(bound))
            return self._bound(stmt.finalbody, set(bound))
        if isinstance(stmt, ast.Delete):
            return bound - {t.id for t in stmt.targets if isinstance(t, ast.Name)}
        if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            return bound | {stmt.name}
        return bound | _stored_for_sure(stmt)

    # ----- helpers for the rules ------------------------------------------------------------
    def statements(self):
        """The statements of `prog`'s own body (not of the functions nested in it, which run as called)."""
        return (n for n in _own_nodes(self.fn) if isinstance(n, ast.stmt))

    def loaded_outside(self, name: str, node: ast.AST) -> bool:
        inside = {id(n) for n in ast.walk(node)}
        return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) and id(n) not in inside
                   for n in ast.walk(self.fn))

    @property
    def facts(self) -> Kinds:
        """The kinds of value of the program's names (`Kinds`), found once."""
        if self._kinds is None:
            self._kinds = Kinds(self)
        return self._kinds

    def kinds_of(self, expr: ast.AST) -> set:
        """The kinds of value `expr` may give."""
        return self.facts.of(expr)

    def kinds(self, name: str) -> set:
        """The kinds of value the bindings of `name` in `prog` may give (not a `for` target's)."""
        return set().union(set(), *(self.kinds_of(value) for n, value, stmt in _assignments(self.fn)
                                    if n == name and value is not None and not isinstance(stmt, ast.For)))


# Kinds of value: "none", "other" (a container, an object), a number ("bool", "int", "float": a Python number or a
# run-time one, which a graph merges with a tensor as that tensor's dtype), or a tensor of a dtype ("T.bool",
# "T.int", "T.float32", "T.float64").
_RANK = {"bool": 0, "int": 1, "float32": 2, "float64": 2, "float": 2}
_NUMBER_DTYPE = {"bool": "bool", "int": "int", "float": "float32"}  # what a number is as a graph tensor
_AT_RAISE = {"bool": "T.bool", "int": "T.int", "float": "T.float64"}  # a number as a 0-dim tensor of its type
_DTYPES = {"torch.float64": "T.float64", "torch.float": "T.float32", "torch.float32": "T.float32",
           "torch.int64": "T.int", "torch.long": "T.int", "torch.int": "T.int", "torch.bool": "T.bool"}
_CASTS = {"long": "T.int", "int": "T.int", "float": "T.float32", "double": "T.float64", "bool": "T.bool"}


def _tensor_dtypes(kinds: set) -> set:
    return {k[2:] for k in kinds if k.startswith("T.")}


def _numbers(kinds: set) -> set:
    return kinds & {"bool", "int", "float"}


def _arith(left: str, right: str, divide: bool) -> str | None:
    """The kind of `left op right` (`divide`: `/`), None where it raises (None or an object as an operand)."""
    if {left, right} & {"none", "other"}:
        return None
    if not left.startswith("T.") and not right.startswith("T."):  # Python numbers
        if divide or "float" in (left, right):
            return "float"
        return "bool" if left == right == "bool" else "int"
    dtypes = [k[2:] if k.startswith("T.") else None for k in (left, right)]
    tensors = [d for d in dtypes if d is not None]
    top = max(tensors, key=lambda d: (_RANK[d], d == "float64"))
    number = next((k for k, d in zip((left, right), dtypes) if d is None), None)
    if number == "float" and _RANK[top] < 2:
        top = "float32"  # an int tensor and a Python float: torch's default float dtype
    if divide and _RANK[top] < 2:
        top = "float32"
    return f"T.{top}"


class Kinds:
    """Which kinds of value each expression of a `prog` may give: a fixpoint over the bindings of its names (a
    name may give what any of its bindings gives, wherever it is read), with the types torch's promotion gives."""

    def __init__(self, p: Program):
        self.p = p
        self.program_tensor = "T.float64" if p.floats else "T.int"
        self.lists = {n for n, value, _ in _assignments(p.fn) if isinstance(value, ast.List)}
        self.bound = {n for n, _, _ in _assignments(p.fn)}  # (a name the fixpoint has not reached gives nothing yet)
        self.names: dict = {a.arg: {self.program_tensor} for a in p.fn.args.args}
        bindings = [(n, v, stmt) for n, v, stmt in _assignments(p.fn) if v is not None]
        # A handler of a `try` around graph ops starts from each variable as bound at the op that failed: numbers
        # that differ between the body's ops become a 0-dim tensor of their type.
        at_raise = {n for t in _staged_tries(p) for s in t.body for n in _names(s, ast.Store)
                    if any(n in _names(h, ast.Load) for h in t.handlers)}
        while True:
            changed = False
            for name, value, stmt in bindings:
                got = self._element_kinds(value) if isinstance(stmt, ast.For) else self.of(value)
                if name in at_raise:
                    got = got | {_AT_RAISE[k] for k in _numbers(got)}
                if not got <= self.names.get(name, set()):
                    self.names[name] = self.names.get(name, set()) | got
                    changed = True
            if not changed:
                return

    def elements(self, name: str) -> set:
        """The kinds of what list `name` may hold: its literal's items, what is appended, inserted or set."""
        out: set = set()
        for node in ast.walk(self.p.fn):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.List) and \
                    any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                out |= set().union(set(), *(self.of(e) for e in node.value.elts))
            elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
                                                      and t.value.id == name for t in node.targets):
                out |= self.of(node.value)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args and \
                    isinstance(node.func.value, ast.Name) and node.func.value.id == name and \
                    node.func.attr in ("append", "insert", "extend"):
                item = node.args[-1]
                items = item.elts if node.func.attr == "extend" and isinstance(item, ast.List) else [item]
                out |= set().union(set(), *(self.of(e) for e in items))
        return out

    def _element_kinds(self, iterable: ast.AST) -> set:
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.func.id == "range":
            return {"int"}
        if isinstance(iterable, ast.Name) and iterable.id in self.lists:
            return self.elements(iterable.id)
        return self._fallback(iterable)

    def _fallback(self, expr: ast.AST) -> set:
        return {self.program_tensor} if self.p.tensor_valued(expr) else {"int"}

    def of(self, e: ast.AST) -> set:  # noqa: C901 - one case per kind of expression the generator writes
        p = self.p
        if isinstance(e, ast.Constant):
            v = e.value
            return {"none" if v is None else "bool" if isinstance(v, bool) else "int" if isinstance(v, int)
                    else "float" if isinstance(v, float) else "other"}
        if isinstance(e, ast.Name):
            if e.id in self.names:
                return self.names[e.id]
            if e.id in PARAMS or e.id == "ZERO" or (e.id == "ONE" and p.floats):
                return {self.program_tensor}
            return {"int"} if e.id == "ONE" else set() if e.id in self.bound else {"other"}
        if isinstance(e, ast.NamedExpr):
            return self.of(e.value)
        if isinstance(e, (ast.Compare, ast.UnaryOp)) and (isinstance(e, ast.Compare) or isinstance(e.op, ast.Not)):
            return {"T.bool"} if p.tensor_valued(e) else {"bool"}
        if isinstance(e, ast.UnaryOp):
            return {"int" if k == "bool" else k for k in self.of(e.operand)}
        if isinstance(e, ast.BinOp):
            return self._binop(self.of(e.left), self.of(e.right), isinstance(e.op, ast.Div))
        if isinstance(e, ast.BoolOp):
            return set().union(*(self.of(v) for v in e.values))
        if isinstance(e, ast.IfExp):
            return self.of(e.body) | self.of(e.orelse)
        if isinstance(e, ast.Subscript):
            if isinstance(e.value, ast.Attribute) and e.value.attr == "shape":
                return {"int"}
            if isinstance(e.value, ast.Name) and e.value.id in self.lists:
                return self.elements(e.value.id)
            if isinstance(e.value, (ast.Name, ast.Call)) and not (isinstance(e.value, ast.Name)
                                                                  and e.value.id in ("d", "CAP", "HID")):
                return self.of(e.value)
            return self._fallback(e)
        if isinstance(e, ast.Call):
            return self._call(e)
        if isinstance(e, (ast.List, ast.Tuple, ast.Dict, ast.Lambda)):
            return {"other"}
        return self._fallback(e)

    @staticmethod
    def _binop(left: set, right: set, divide: bool) -> set:
        return {k for a in left for b in right if (k := _arith(a, b, divide)) is not None}

    def _call(self, e: ast.Call) -> set:  # noqa: C901 - one case per function the generator calls
        f, args = e.func, e.args
        dtype = next((_DTYPES.get(ast.unparse(k.value)) for k in e.keywords if k.arg == "dtype"), None)
        if dtype is not None:
            return {dtype}
        if isinstance(f, ast.Name):
            if f.id in _GETTERS:
                return self.of(ast.Name(_GETTERS[f.id], ast.Load()))
            if f.id in ("int", "len", "range"):
                return {"int"}
            if f.id == "float":
                return {"float"}
            if f.id in ("bool", "isinstance"):
                return {"bool"}
            if f.id == "abs" and args:
                return {"int" if k == "bool" else k for k in self.of(args[0])}
            if f.id in ("min", "max"):
                return set().union(set(), *(self.of(a) for a in args))
            if f.id == "sum" and args:
                items = self.elements(args[0].id) if isinstance(args[0], ast.Name) and args[0].id in self.lists \
                    else self.of(args[0])
                return self._binop({"int"}, items, False) or {"int"}
            if f.id == "dist" and len(args) == 2:  # v - w or w - v
                return self._binop(self.of(args[0]), self.of(args[1]), False)
            if f.id in ("third", "countdown", "rec_sum") and len(args) == 2:  # v, or v plus or minus ints
                v = self.of(args[0])
                plus = self._binop(v, self.of(args[1]) | {"int"}, False)
                return v | plus | ({"none"} if f.id == "third" else set())
            if f.id == "fail":
                return set()  # it raises
            if f.id in ("Box", "type", "Obj"):
                return {"other"}
            if f.id in ("note", "push", "mark", "bump_z", "print"):
                return {"none"}
            return self._fallback(e)
        if isinstance(f, ast.Attribute):
            if f.attr in _CASTS and not args:
                return {_CASTS[f.attr]}
            if f.attr in ("as_tensor", "tensor") and args:
                return {k if k.startswith("T.") or k not in _NUMBER_DTYPE else "T." + _NUMBER_DTYPE[k]
                        for k in self.of(args[0])}
            if f.attr in ("zeros", "ones"):
                return {"T.float32"}
            if f.attr == "full" and len(args) == 2:
                return {"T." + _NUMBER_DTYPE.get(k, "float32") for k in self.of(args[1])}
            if f.attr == "arange":
                return {"T.int"}
            if f.attr == "cat" and args and isinstance(args[0], ast.List):
                return set().union(set(), *(self.of(x) for x in args[0].elts))
            if f.attr == "pad" and args:
                return self.of(args[0])
            if f.attr == "sum":
                return {"T.int" if k == "T.bool" else k for k in self.of(f.value)}
            if f.attr == "read_value":
                return {self.program_tensor}
            if f.attr == "pop" and isinstance(f.value, ast.Name) and f.value.id in self.lists:
                return self.elements(f.value.id)
            if f.attr in ("append", "insert", "extend", "assign_add", "assign_sub", "assign"):
                return {"none"}
        return self._fallback(e)


def merge_refused(kinds: set, numbers_differ: bool = False) -> bool:
    """Whether a graph refuses to give one value of these kinds (the paths of a tensor `if`, the iterations of a
    loop): tensors of two dtypes; a number a tensor cannot hold unchanged (a float in an int tensor); a bool and
    another number (`numbers_differ`, a loop: any two kinds of number)."""
    dtypes, numbers = _tensor_dtypes(kinds), _numbers(kinds)
    if len(dtypes) > 1:
        return True
    if dtypes and any(_RANK[n] > _RANK[next(iter(dtypes))] for n in numbers):
        return True
    return len(numbers) > 1 and (numbers_differ or "bool" in numbers)


def _one_branch(p: Program) -> bool:
    """A tensor `if` after which a name not bound before it may be bound on one path and not for sure on the
    other, and read after it (live): after it in the program, or by the next iteration of a loop around it
    where that iteration has not bound it for sure. A `break`, `continue` or `return` in a tensor `if` makes
    the rest of its loop's body, and a `while` loop's test, the other path of that `if` (`_jumped_over`)."""
    for node in p.statements():
        if isinstance(node, ast.If) and p.tensor_controlled(node):
            then, other = p.branch_ends[id(node)]
            stored = _names(ast.Module(body=node.body + node.orelse, type_ignores=[]), ast.Store)
            for name in stored - (then & other) - p.entry[id(node)]:
                if p.loaded_outside(name, node) or _read_by_next_iteration(p, name, _loops_around(p, node)):
                    return True
            for loop, rest in _jumped_over(p, node):
                stored = set().union(set(), *(_names(part, ast.Store) for part in rest))
                for name in stored - p.entry[id(node)]:
                    if p.loaded_outside(name, loop) or \
                            _read_by_next_iteration(p, name, [loop, *_loops_around(p, loop)]):
                        return True
    return False


def _loops_around(p: Program, node: ast.AST) -> list:
    """The loops of `prog` around `node`, innermost first."""
    return [n for n in reversed(list(p.statements())) if isinstance(n, (ast.While, ast.For)) and n is not node
            and any(c is node for c in ast.walk(n))]


def _read_by_next_iteration(p: Program, name: str, loops: list) -> bool:
    """Whether one of `loops` reads `name` (in its test or body) where its iteration has not bound it for sure:
    the value read is then the previous iteration's."""
    for loop in loops:
        entry = p.entry[id(loop)] | ({loop.target.id} if isinstance(loop, ast.For) else set())
        if isinstance(loop, ast.While) and name in _names(loop.test, ast.Load) - entry:
            return True
        entry |= _walrus_for_sure(loop.test) if isinstance(loop, ast.While) else set()
        if _reads_unbound(loop.body, entry, {name}):
            return True
    return False


def _jumped_over(p: Program, node: ast.If):
    """(loop, what it runs only where `node` did not jump) for each loop a `break`/`continue` in `node` leaves or
    continues (a `return`: every loop around it): the statements after `node` up to that loop's body's end, and
    a `while` loop's test."""
    jumps = [j for j in _own_nodes(node) if isinstance(j, (ast.Break, ast.Continue, ast.Return))]
    loops = _loops_around(p, node)
    for k, loop in enumerate(loops):
        # A break or continue in `node` whose innermost loop is outside `node` jumps for `loops[0]` only.
        if not any(isinstance(j, ast.Return) or (k == 0 and not _in_loop_inside(j, node)) for j in jumps):
            continue
        rest = [s for block, i in _blocks_to(loop.body, node) for s in block[i + 1:]]
        yield loop, rest + ([loop.test] if isinstance(loop, ast.While) else [])


def _in_loop_inside(jump: ast.AST, node: ast.AST) -> bool:
    """Whether a loop inside `node` holds `jump` (so that a `break`/`continue` is that loop's)."""
    return any(any(c is jump for c in ast.walk(n)) for n in _own_nodes(node)
               if n is not node and isinstance(n, (ast.While, ast.For)))


def _blocks_to(body: list, node: ast.AST) -> list:
    """[(block, index)] from `body` inward: `block[index]` holds `node`, down to the block holding `node`."""
    for i, stmt in enumerate(body):
        if stmt is node:
            return [(body, i)]
        if any(c is node for c in ast.walk(stmt)):
            inner = [b for field in ("body", "orelse", "finalbody") for b in [getattr(stmt, field, [])]]
            inner += [h.body for h in getattr(stmt, "handlers", [])]
            for block in inner:
                if (path := _blocks_to(block, node)):
                    return [(body, i), *path]
    return []


def _one_path_of_a_try(p: Program) -> bool:
    """A `try` with handlers (staged where its body records graph ops, which may fail as the graph runs) after
    which a name not bound before it may be bound on the body's path and not for sure on a handler's, or the
    reverse, and read outside the `try` or anywhere in a loop around it (a later iteration)."""
    for node in p.statements():
        if not isinstance(node, ast.Try) or not node.handlers:
            continue
        entry = p.entry[id(node)]
        paths = [node.body] + [h.body for h in node.handlers]
        stored = set().union(*(_names(ast.Module(body=b, type_ignores=[]), ast.Store) for b in paths))
        sure = set.intersection(*(p._bound(b, set(entry)) for b in paths))
        loops = [n for n in p.statements() if isinstance(n, (ast.While, ast.For))
                 and any(c is node for c in ast.walk(n))]
        for name in stored - sure - entry:
            if p.loaded_outside(name, node) or any(name in _names(loop, ast.Load) for loop in loops):
                return True
    return False


def _bound_in_body(loop: ast.AST) -> set:
    """Names a loop's body binds (its target too); a walrus in a `while` test is bound once the loop is done."""
    names = {loop.target.id} if isinstance(loop, ast.For) and isinstance(loop.target, ast.Name) else set()
    for stmt in loop.body:
        names |= _names(stmt, ast.Store) | {n.target.id for n in ast.walk(stmt) if isinstance(n, ast.NamedExpr)}
    return names


def _loop_once(p: Program) -> bool:
    """A name first bound in a tensor loop's body (which may run zero times) and read after the loop: after it
    in the program, or anywhere in a loop around it (its next iteration runs the tensor loop again)."""
    loops = [n for n in p.statements() if isinstance(n, (ast.While, ast.For))]
    for node in loops:
        if not p.tensor_controlled(node):
            continue
        around = [e for e in loops if e is not node and any(c is node for c in ast.walk(e))]
        for name in _bound_in_body(node) - p.entry[id(node)]:
            if p.loaded_outside(name, node) or any(name in _names(e, ast.Load) for e in around):
                return True
    return False


def _loop_vars(p: Program):
    for node in p.statements():
        if isinstance(node, (ast.While, ast.For)) and p.tensor_controlled(node):
            yield node, _bound_in_body(node) & p.entry[id(node)]


def _type_change(p: Program) -> bool:
    """A variable of a tensor loop bound to values of different kinds (an int and a float)."""
    return any(merge_refused(p.kinds(name), numbers_differ=True) for _, names in _loop_vars(p) for name in names)


def _none_merge(p: Program) -> bool:
    """A name that is None on some path and a tensor on another, merged by a tensor `if` or loop."""
    return any("none" in p.kinds(name) and len(p.kinds(name) - {"other"}) > 1 for name in _names(p.fn, ast.Store))


def _shape_change(p: Program) -> bool:
    """Values of more than one shape in the program: a list given a `[1]`/`[1, 1]` element beside 0-dim ones."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "append"
               and n.args and isinstance(n.args[0], ast.Call) and isinstance(n.args[0].func, ast.Attribute)
               and n.args[0].func.attr in ("full", "zeros", "ones") for n in ast.walk(p.fn))


def _read_before_bound(p: Program) -> bool:
    """A name first bound in a tensor loop's body (not before the loop) and read in the body at a point where
    it is not bound for sure (`if k == 0: t = e else: t = t + e`): a later iteration would read the previous
    one's value, which a graph loop carries only if it exists before the loop."""
    for node in p.statements():
        if isinstance(node, (ast.While, ast.For)) and p.tensor_controlled(node):
            entry = p.entry[id(node)] | ({node.target.id} if isinstance(node, ast.For) else set())
            first = _bound_in_body(node) - entry
            if first and _reads_unbound(node.body, set(entry), first):
                return True
    return False


def _reads_unbound(body: list, bound: set, names: set) -> bool:
    """Whether `body` reads one of `names` where it is not bound for sure (a forward walk; loops may not run)."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            if (_names(stmt.test, ast.Load) & names) - bound:
                return True
            bound = bound | _walrus_for_sure(stmt.test)
            if _reads_unbound(stmt.body, set(bound), names) or _reads_unbound(stmt.orelse, set(bound), names):
                return True
            bound = bound | (_bound_for_sure(stmt.body, bound) & _bound_for_sure(stmt.orelse, bound))
        elif isinstance(stmt, (ast.While, ast.For)):
            head = stmt.test if isinstance(stmt, ast.While) else stmt.iter
            inner = set(bound) | ({stmt.target.id} if isinstance(stmt, ast.For) else set())
            if (_names(head, ast.Load) & names) - bound or _reads_unbound(stmt.body, inner, names):
                return True
            bound = bound | (_walrus_for_sure(head) if isinstance(stmt, ast.While) else set())
        elif isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            bound = bound | {stmt.name}
        else:
            if (_names(stmt, ast.Load) & names) - bound:
                return True
            bound = bound | _stored_for_sure(stmt)
    return False


def _bound_for_sure(body: list, bound: set) -> set:
    for stmt in body:
        if isinstance(stmt, ast.If):
            bound = bound | _walrus_for_sure(stmt.test)
            bound = bound | (_bound_for_sure(stmt.body, bound) & _bound_for_sure(stmt.orelse, bound))
        elif isinstance(stmt, ast.While):
            bound = bound | _walrus_for_sure(stmt.test)
        elif not isinstance(stmt, (ast.For, ast.Try)):
            bound = bound | _stored_for_sure(stmt)
    return bound


def _ranks_differ_in_graph_list(p: Program) -> bool:
    """A list given a `[1]`/`[1, 1]` element beside 0-dim ones (`_shape_change`), appended inside a tensor `if`
    or loop (which makes it a graph list)."""
    jumps, inside = _tensor_controlled(p)
    return _shape_change(p) and any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "append"
        and (jumps or id(n) in inside) for n in ast.walk(p.fn))


def _tensor_controlled(p: Program) -> tuple[bool, set]:
    """(whether a tensor `if`, or a handler of a `try` around graph ops, holds a jump, or a tensor loop a
    `return`: the rest of its block (what follows the loop) then moves into the other path of a condition
    decided when the graph runs; the ids of the nodes inside tensor-controlled statements)."""
    controlled = [n for n in p.statements() if p.tensor_controlled(n)]
    jumping = [n for n in controlled if isinstance(n, ast.If)] + [h for t in _staged_tries(p) for h in t.handlers]
    jumps = any(isinstance(j, (ast.Break, ast.Continue, ast.Return)) for n in jumping for j in ast.walk(n)) or \
        any(isinstance(j, ast.Return) for n in controlled if isinstance(n, (ast.While, ast.For)) for j in ast.walk(n))
    return jumps, {id(c) for n in controlled for c in ast.walk(n)}


def _staged_tries(p: Program) -> list:
    """The `try` statements with handlers whose body may record graph ops (run, with its handlers, as the graph
    runs): a body mentioning a tensor."""
    return [t for t in p.statements() if isinstance(t, ast.Try) and t.handlers
            and any(p.tensor_valued(e) for s in t.body for e in ast.walk(s) if isinstance(e, ast.expr))]


# What outlives a generated program's call (graph_program_gen's mutation construct): its dict argument, the
# captured dict, list and object.
_OUTLIVING = frozenset({"d", "CAP", "CAPL", "OBJ"})
_CHANGING_CALLS = frozenset({"note", "push", "mark"})  # functions changing objects the program never names


def _changes_outliving_object_in_tensor_code(p: Program) -> bool:
    """An item, element or attribute of an object that outlives the call set, appended, popped or deleted inside
    a tensor-controlled statement or an `except`/`else` of a `try` (or anywhere once a tensor `if` holds a jump,
    as `_raised_in_branch`)."""
    jumps, inside = _tensor_controlled(p)
    # A `try` around graph ops runs its `except` (and `else`) when the graph runs, decided then, as a tensor `if`;
    # and whether its body's change was made before the op that failed is decided then too.
    inside |= {id(c) for t in ast.walk(p.fn) if isinstance(t, ast.Try)
               for part in ([h for h in t.handlers] + t.orelse) for c in ast.walk(part)}
    inside |= {id(c) for t in _staged_tries(p) for s in t.body for c in ast.walk(s)}
    return any((jumps or id(n) in inside) and _changes_outliving(n) for n in p.statements())


def _kept_outside_a_try(p: Program) -> bool:
    """A statement in the body of a `try` with handlers that stores a value elsewhere than in a variable: in a
    list (`l.insert(0, v)`), an item or an attribute, or through a function changing objects the program never
    names (`note(v)`). Where the body records graph ops, which may fail as the graph runs, such a value does not
    exist on the handler's path, and reading it after the `try` (a later read of the list, the write-back of an
    object that outlives the call) is refused."""
    for t in ast.walk(p.fn):
        if isinstance(t, ast.Try) and t.handlers:
            for stmt in (n for b in t.body for n in ast.walk(b) if isinstance(n, ast.stmt)):
                if _changes_outliving(stmt) or _stores_elsewhere(stmt):
                    return True
    return False


def _stores_elsewhere(stmt: ast.stmt) -> bool:
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Delete)):
        targets = stmt.targets if isinstance(stmt, (ast.Assign, ast.Delete)) else [stmt.target]
        return any(isinstance(t, (ast.Subscript, ast.Attribute)) for t in targets)
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute)


def _finally_rebinds_in_a_try(p: Program) -> bool:
    """A `try` with handlers whose body holds a `try` with a `finally:` that assigns, deletes or changes a list
    (`x = ...`, `l.pop()`): where the body's graph ops fail as the graph runs, that `finally:` runs before the
    handler, which starts from the values before the body."""
    for t in ast.walk(p.fn):
        if isinstance(t, ast.Try) and t.handlers:
            for inner in (n for b in t.body for n in ast.walk(b) if isinstance(n, ast.Try) and n.finalbody):
                for n in (n for s in inner.finalbody for n in ast.walk(s)):
                    if isinstance(n, (ast.Assign, ast.AugAssign, ast.Delete, ast.NamedExpr)) or (
                            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                            and n.func.attr in _LENGTH_CHANGES):
                        return True
    return False


_LENGTH_CHANGES = frozenset({"append", "extend", "insert", "pop"})


def _finally_effect_reads_what_the_try_changes(p: Program) -> bool:
    """A `try` around graph ops whose `finally:` has an effect that outlives the call (a `Variable` update, an
    in-place update of what may be an argument, a change of an outliving object) and reads a name its body or a
    handler binds or changes (a list: anywhere in the `finally:`). When the graph raises there, the `finally:`
    runs with the values at the op that raised, which the graph does not have."""
    params = _may_be_arguments(p)
    for t in _staged_tries(p):
        final = ast.Module(body=t.finalbody, type_ignores=[])
        effects = [s for s in _own_nodes(final) if isinstance(s, ast.stmt) and (
            _changes_outliving(s) or (isinstance(s, ast.AugAssign) and _root(s.target) in params)
            or any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and _root(c.func) == "V"
                   and c.func.attr.startswith("assign") for c in ast.walk(s)))]
        if not effects:
            continue
        paths = ast.Module(body=t.body + [s for h in t.handlers for s in h.body], type_ignores=[])
        changed = _names(paths, ast.Store) | {_root(c.func.value) for c in ast.walk(paths) if isinstance(c, ast.Call)
                                              and isinstance(c.func, ast.Attribute) and c.func.attr in _LENGTH_CHANGES}
        changed |= {_root(n.value) for d in ast.walk(paths) if isinstance(d, ast.Delete) for n in d.targets
                    if isinstance(n, ast.Subscript)}
        lists = {name for name, value, _ in _assignments(p.fn) if isinstance(value, ast.List)}
        if (_names(final, ast.Load) & changed & lists) or \
                any(_names(e, ast.Load) & changed for e in effects):
            return True
    return False


def _may_be_arguments(p: Program) -> set:
    """The names that may hold an argument of `prog` as it is (`z = a`, and names bound to those)."""
    names = set(PARAMS)
    while True:
        more = {n for n, value, stmt in _assignments(p.fn) if isinstance(stmt, ast.Assign)
                and isinstance(value, ast.Name) and value.id in names} - names
        if not more:
            return names
        names |= more


def _python_grows_outliving_list(p: Program) -> bool:
    """A list that outlives the call (`CAPL`, `d['l']`, `HIDL` through `push`) grown with Python values only
    (`CAPL.append(3)`, `push(3)`), or shrunk (`pop`, `del`), inside a tensor-controlled statement or an
    `except`/`else` of a `try` (or anywhere once a tensor `if` holds a jump): the graph decides how often that
    runs, and the trace runs it once."""
    jumps, inside = _tensor_controlled(p)
    inside |= {id(c) for t in ast.walk(p.fn) if isinstance(t, ast.Try)
               for part in ([h for h in t.handlers] + t.orelse) for c in ast.walk(part)}
    return any((jumps or id(n) in inside) and _python_length_change(p, n) for n in p.statements())


def _python_length_change(p: Program, stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Delete):
        return any(isinstance(t, ast.Subscript) and _root(t.value) in _OUTLIVING for t in stmt.targets)
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    call = stmt.value
    if isinstance(call.func, ast.Name):
        return call.func.id == "push" and not any(p.tensor_valued(a) for a in call.args)
    if not (isinstance(call.func, ast.Attribute) and call.func.attr in _LENGTH_CHANGES
            and _root(call.func.value) in _OUTLIVING):
        return False
    if call.func.attr == "pop":
        return True
    values = call.args[-1:]
    if call.func.attr == "extend" and values and isinstance(values[0], ast.List):
        values = values[0].elts
    return bool(values) and not any(p.tensor_valued(v) for v in values)


def _root(e: ast.AST) -> str | None:
    while isinstance(e, (ast.Subscript, ast.Attribute)):
        e = e.value
    return e.id if isinstance(e, ast.Name) else None


def _changes_outliving(stmt: ast.stmt) -> bool:
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Delete)):
        targets = stmt.targets if isinstance(stmt, (ast.Assign, ast.Delete)) else [stmt.target]
        return any(isinstance(t, (ast.Subscript, ast.Attribute)) and _root(t) in _OUTLIVING for t in targets)
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute):
        return _root(stmt.value.func.value) in _OUTLIVING
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Name):
        return stmt.value.func.id in _CHANGING_CALLS
    return False


def _raised_in_branch(p: Program) -> bool:
    """`fail(...)` inside a tensor-controlled statement, or anywhere once a tensor `if` holds a jump (the rest of
    the block then moves into that `if`'s other branch)."""
    calls = [n for n in ast.walk(p.fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and n.func.id == "fail"]
    if not calls:
        return False
    controlled = [n for n in p.statements() if p.tensor_controlled(n)]
    jumps = any(isinstance(j, (ast.Break, ast.Continue, ast.Return)) for n in controlled
                if isinstance(n, ast.If) for j in ast.walk(n))
    inside = {id(c) for n in controlled for c in ast.walk(n)}
    return jumps or any(id(c) in inside for c in calls)


def _emptied_list(p: Program) -> bool:
    """`del l[:]`: a list with no element, whose element type nothing then says."""
    return any(isinstance(n, ast.Delete) and any(isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Slice)
                                                 and t.slice.lower is None and t.slice.upper is None
                                                 for t in n.targets) for n in ast.walk(p.fn))


def _number_from_inner_code_of_a_try(p: Program) -> bool:
    """A name bound inside a tensor `if` or loop of the body of a `try` around graph ops, read by a handler or
    after the `try` (where it is a run-time number, the handler's path has no value for it)."""
    for t in _staged_tries(p):
        inner = [n for s in t.body for n in _own_nodes(s) if isinstance(n, ast.stmt) and p.tensor_controlled(n)]
        names = set().union(set(), *(_names(n, ast.Store) for n in inner))
        read = set().union(set(), *(_names(ast.Module(body=h.body, type_ignores=[]), ast.Load) for h in t.handlers))
        if names & read or any(p.loaded_outside(name, t) for name in names):
            return True
    return False


def _path_types_differ(p: Program) -> bool:
    """A name bound in a tensor `if` (or a `try` around graph ops) to values of different kinds (an int and a
    float, a bool and an int), or `return`s giving different kinds at one position of what they return."""
    jumps, inside = _tensor_controlled(p)
    tried = {id(c) for t in _staged_tries(p) for c in ast.walk(t)}
    for name in {t for n in p.statements() if id(n) in inside | tried for t in _names(n, ast.Store)}:
        # (the paths of a `try` give a number one type: an int on one and a float on another are refused)
        in_try = any(id(n) in tried and name in _names(n, ast.Store) for n in p.statements())
        if merge_refused(p.kinds(name), numbers_differ=in_try):
            return True
    # A conditional expression (or `and`/`or`) on a tensor merges what its operands give, as a tensor `if`.
    for e in _own_nodes(p.fn):
        if isinstance(e, ast.IfExp) and p.tensor_valued(e.test) and \
                merge_refused(p.kinds_of(e.body) | p.kinds_of(e.orelse)):
            return True
        if isinstance(e, ast.BoolOp) and p.tensor_valued(e.values[0]) and \
                merge_refused(set().union(*(p.kinds_of(v) for v in e.values))):
            return True
    returns = [_returned(r.value) for r in p.statements() if isinstance(r, ast.Return) and r.value is not None]
    if len(returns) < 2:
        return False
    if len({len(r) for r in returns}) > 1:
        return True
    return any(merge_refused(set().union(*(p.kinds_of(r[k]) for r in returns))) for k in range(len(returns[0])))


def _returned(value: ast.expr) -> list:
    """The parts of a returned value: a tuple's items (a `Box((...), v)`'s tuple and value), else the value."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "Box":
        return [e for a in value.args for e in (a.elts if isinstance(a, ast.Tuple) else [a])]
    return list(value.elts) if isinstance(value, ast.Tuple) else [value]


def _element_types_differ(p: Program) -> bool:
    """A list given elements of different dtypes: tensors of two dtypes (a number takes the dtype of the tensors
    the list holds, so it counts only where the list may be emptied, `del l[:]`, and start again from it)."""
    kinds = p.facts
    emptied = {t.value.id for n in ast.walk(p.fn) if isinstance(n, ast.Delete) for t in n.targets
               if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and isinstance(t.slice, ast.Slice)}
    for name in kinds.lists:
        elements = kinds.elements(name)
        dtypes = _tensor_dtypes(elements) | ({_NUMBER_DTYPE[n] for n in _numbers(elements)} if name in emptied
                                             else set())
        if len(dtypes) > 1:
            return True
    return False


# The rule `fuzz_outcomes.DESIGN_RULES` names -> whether a program breaks it. Recursion and a helper falling off
# its end never depend on a tensor in these programs (their base cases and bounds are literals).
RULES = {
    "a variable defined in one branch only of a tensor `if`": lambda p: _one_branch(p) or _one_path_of_a_try(p),
    "a value or None returned depending on a tensor": lambda p: False,
    "an exception raised in one branch of a tensor `if`": _raised_in_branch,
    "recursion ending on a tensor condition": lambda p: False,
    "a variable first defined in a loop that may not run": _loop_once,
    "a list whose element type is unknown when it is read": _emptied_list,
    "a loop variable changing shape (shape invariants)": _shape_change,
    "None and a tensor merged by a tensor `if` or loop": _none_merge,
    "a loop variable changing its type (int to float)": _type_change,
    "a variable first assigned in a loop, read where it may be unassigned": _read_before_bound,
    "a list given elements of different ranks in a tensor `if` or loop": _ranks_differ_in_graph_list,
    "a Python object that outlives the call changed inside a tensor `if` or loop":
        _changes_outliving_object_in_tensor_code,
    "a list that outlives the call grown with Python values inside a tensor `if` or loop":
        _python_grows_outliving_list,
    "a value made in a `try` body around graph ops kept elsewhere than in its variables": _kept_outside_a_try,
    "a variable or the return value given different types by the paths of a tensor `if`": _path_types_differ,
    "a list given elements of different dtypes in a tensor `if` or loop": _element_types_differ,
    "a run-time number made in a tensor `if` or loop of a `try` body around graph ops, read on a handler's path":
        _number_from_inner_code_of_a_try,
    "a `finally:` inside a `try` body around graph ops rebinding what that `try` carries": _finally_rebinds_in_a_try,
    "a `finally:` of a `try` around graph ops changing state from what the body or a handler changes":
        _finally_effect_reads_what_the_try_changes,
}


def breaks(rule: str, source: str, floats: bool) -> bool:
    """Whether the program `source` (its `prog`) really breaks the design rule `rule`."""
    return RULES[rule](Program(source, floats))


def _may_alias(p: Program, expr: ast.AST) -> bool:
    """Whether `expr` may give an object another name (or a list) holds: a name, min/max, a conditional, an
    element, a call that may return its argument."""
    if isinstance(expr, ast.Name):
        return True
    if isinstance(expr, ast.IfExp):
        return _may_alias(p, expr.body) or _may_alias(p, expr.orelse)
    if isinstance(expr, ast.Subscript):
        return True
    if isinstance(expr, ast.Call):
        f = expr.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
        return name in _ALIAS_CALLS
    return isinstance(expr, (ast.BoolOp, ast.NamedExpr))


def skips_python(source: str) -> bool:
    """Whether eager PyTorch may rightly differ from Python ints: `v op= e` on a name that may share its
    tensor (with another name, an argument held by another name, an element of a list or dict)."""
    p = Program(source, floats=False)
    shared: set = set()  # an argument no other name holds is the caller's fresh tensor: updating it shows nowhere
    for name, value, stmt in _assignments(p.fn):
        if isinstance(stmt, (ast.Assign, ast.NamedExpr)) and _may_alias(p, value):
            shared.add(name)
            loaded = _names(value, ast.Load)
            shared |= loaded | {_GETTERS[g] for g in loaded & set(_GETTERS)}
    for node in ast.walk(p.fn):  # names put into a list or a dict as they are
        if isinstance(node, ast.List):
            shared |= {e.id for e in node.elts if isinstance(e, ast.Name)}
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("append", "insert"):
            shared |= {e.id for e in node.args if isinstance(e, ast.Name)}
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Subscript) for t in node.targets) and \
                isinstance(node.value, ast.Name):
            shared.add(node.value.id)
    return any(isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id in shared
               for n in ast.walk(p.fn))
