"""Rules of ARCHITECTURE.md the import graph alone does not show, enforced on the package's source.

- No module-level registry: a module-level mutable container (a dict, list or set, made by a literal or a
  constructor) may be read by other modules (a constant table) but is written only by its own module, and no
  function named `register*` exists, except the one documented place a lower layer is handed code from a
  higher one (`autograph.operators.dispatch.register_backend`) and the loader's record of the origins of the
  files it generates (`autograph.pyct.origin_info.register`, read back through `lookup_origin`).
- No docstring carries a benchmark id or a measured figure (they belong in benchmarks/README.md).
- Passes and backends decide from data on the `Op` (`Effect`, `Trait`, `pure`, `runs_autograd`), never from a
  name: no comparison in graph/passes/ or backends/ reads the `__name__` or `.name` of an op, a node or a
  target.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "torch_autograph"
ALLOWED_REGISTRATION = {("torch_autograph.autograph.operators.dispatch", "register_backend"),
                        ("torch_autograph.autograph.pyct.origin_info", "register")}
_MUTATORS = {"append", "extend", "insert", "add", "update", "setdefault", "pop", "popitem", "clear", "remove",
             "discard", "__setitem__", "__delitem__"}
_MUTABLE_CALLS = {"dict", "list", "set", "defaultdict", "OrderedDict", "WeakSet", "WeakKeyDictionary",
                  "WeakValueDictionary", "deque"}


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources() -> dict[str, tuple[pathlib.Path, ast.Module]]:
    return {_module_name(p): (p, ast.parse(p.read_text(), str(p))) for p in sorted(PACKAGE.rglob("*.py"))}


def _is_mutable(value: ast.AST | None) -> bool:
    if isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)):
        return True
    if isinstance(value, ast.Call):
        f = value.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        return name in _MUTABLE_CALLS
    return False


def module_containers(tree: ast.Module) -> set[str]:
    """Names a module binds at its top level to a mutable container."""
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and _is_mutable(node.value):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and _is_mutable(node.value):
            names.add(node.target.id)
    return names


def _absolute(module: str, path: pathlib.Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[:len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _mutated(tree: ast.Module, refers: "callable") -> list[ast.AST]:
    """The expressions `e` for which the module writes `e[k] = v`, `del e[k]` or calls `e.append(...)` & co."""
    out = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        out += [t.value for t in targets if isinstance(t, ast.Subscript)]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS:
            out.append(node.func.value)
    return [e for e in out if refers(e)]


def shared_containers(sources: dict[str, tuple[pathlib.Path, ast.Module]]) -> list[str]:
    """`user -> owner.NAME` for every module-level mutable container another module writes."""
    containers = {m: module_containers(tree) for m, (_, tree) in sources.items()}
    found = []
    for user, (path, tree) in sources.items():
        aliases: dict[str, str] = {}  # local name -> module of the package it stands for
        imported: dict[str, str] = {}  # local name -> owner.NAME of a container imported by name
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                owner = _absolute(user, path, node)
                for a in node.names:
                    if a.name in containers.get(owner, ()) and owner != user:
                        imported[a.asname or a.name] = f"{owner}.{a.name}"
                    if f"{owner}.{a.name}" in containers:
                        aliases[a.asname or a.name] = f"{owner}.{a.name}"
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in containers and a.asname:
                        aliases[a.asname] = a.name

        def foreign(e: ast.AST) -> str | None:
            if isinstance(e, ast.Name) and e.id in imported:
                return imported[e.id]
            if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id in aliases:
                owner = aliases[e.value.id]
                if owner != user and e.attr in containers[owner]:
                    return f"{owner}.{e.attr}"
            return None

        found += [f"{user} -> {foreign(e)}" for e in _mutated(tree, lambda e: foreign(e) is not None)]
    return sorted(set(found))


def registration_functions(sources: dict[str, tuple[pathlib.Path, ast.Module]]) -> list[str]:
    return sorted(f"{m}.{n.name}" for m, (_, tree) in sources.items() for n in tree.body
                  if isinstance(n, ast.FunctionDef) and n.name.startswith("register")
                  and (m, n.name) not in ALLOWED_REGISTRATION)


_OP_WORDS = {"op", "node", "target", "func", "fn", "n"}


def _about_an_op(e: ast.AST) -> bool:
    return any((isinstance(x, ast.Attribute) and x.attr in _OP_WORDS) or (isinstance(x, ast.Name) and x.id in _OP_WORDS)
               for x in ast.walk(e))


def name_decisions(tree: ast.Module) -> list[int]:
    """Lines of comparisons (==, in, startswith) that read the `__name__` or `.name` of an op, node or target."""
    lines = []

    def reads_name(e: ast.AST) -> bool:
        return any(isinstance(x, ast.Attribute) and x.attr in ("__name__", "name") and _about_an_op(x.value)
                   for x in ast.walk(e)) or any(isinstance(x, ast.Call) and isinstance(x.func, ast.Name)
                                               and x.func.id == "op_name" for x in ast.walk(e))

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and (reads_name(node.left) or any(map(reads_name, node.comparators))):
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("startswith", "endswith") and reads_name(node.func.value):
            lines.append(node.lineno)
    return lines


@pytest.fixture(scope="module")
def sources() -> dict[str, tuple[pathlib.Path, ast.Module]]:
    """The package's modules, parsed once for the checks of this file (none of them changes a tree)."""
    return _sources()


def test_no_module_level_container_is_reached_from_another_module(sources):
    assert shared_containers(sources) == []


def test_nothing_registers_itself_except_the_one_documented_place(sources):
    assert registration_functions(sources) == []


@pytest.mark.parametrize("folder", ["graph/passes", "backends"])
def test_passes_and_backends_never_decide_on_a_name(folder, sources):
    bad = [f"{p.relative_to(PACKAGE)}:{line}" for m, (p, tree) in sources.items()
           if str(p.relative_to(PACKAGE)).startswith(folder) for line in name_decisions(tree)]
    assert bad == []


def test_the_rules_catch_what_they_forbid(tmp_path):
    reg = ast.parse("REG = {}\ndef register_thing(x):\n    REG[1] = x\n")
    assert module_containers(reg) == {"REG"}
    root = tmp_path / "torch_autograph"
    root.mkdir()
    (root / "a.py").write_text("TABLE = {}\n")
    (root / "b.py").write_text("from .a import TABLE\nTABLE[1] = 2\n")
    (root / "c.py").write_text("from . import a\na.TABLE.update({})\nx = a.TABLE.get(1)\n")
    fake = {f"torch_autograph.{p.stem}": (p, ast.parse(p.read_text())) for p in root.glob("*.py")}
    assert shared_containers(fake) == ["torch_autograph.b -> torch_autograph.a.TABLE",
                                       "torch_autograph.c -> torch_autograph.a.TABLE"]
    assert name_decisions(ast.parse("if node.op.name == 'conv2d':\n    pass\n")) == [1]
    assert name_decisions(ast.parse("ok = fn.__name__.startswith('conv')\n")) == [1]
    assert name_decisions(ast.parse("ok = Trait.FRESH in node.op.traits\n")) == []


_MEASUREMENT = re.compile(r"\b[PMH]\d{1,2}j?\b|\d(\.\d+)?\s?(µs|us|ms)\b|\d(\.\d+)?x\b|\d(\.\d+)?×")


def measurements_in_docstrings(tree: ast.Module) -> list[int]:
    """Lines of docstrings that cite a benchmark id (P3j, M5, H2) or a timing or ratio (~7 µs, 2.1x): figures
    rot in code; they belong in benchmarks/README.md, beside the runs that remeasure them."""
    lines = []
    for node in [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                     ast.ClassDef)))]:
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and \
                isinstance(body[0].value.value, str):
            text = body[0].value.value
            lines += [body[0].lineno + i for i, line in enumerate(text.splitlines()) if _MEASUREMENT.search(line)]
    return lines


def test_no_docstring_carries_a_benchmark_id_or_a_measurement(sources):
    bad = [f"{p.relative_to(PACKAGE)}:{line}" for p, tree in sources.values()
           for line in measurements_in_docstrings(tree)]
    assert bad == []


def test_the_measurement_check_catches_ids_timings_and_ratios():
    for text in ("P3j runs 6x faster", "costs ~7 µs", "took 557 us", "M5 gains", "0.7× eager"):
        assert measurements_in_docstrings(ast.parse(f'"""{text}"""')) == [1], text
    assert measurements_in_docstrings(ast.parse('"""A 2-op body; a 3x3 kernel is fine: x86."""')) == []
