"""The package's layering, enforced literally (ARCHITECTURE.md): which layer imports which, no cycles, small modules.

    errors, config, nest,       leaves: import nothing of the package
    naming
    autograph/                  the source transformer: errors, config and naming only, and never torch
    graph/                      the IR alone: errors only
    op_facts                    a torch callable's effects and traits, from torch's schemas: graph
    logs                        the loggers and the stderr lines (reads config)
    tracing/                    graph (and the leaves)
    subtraces/                  control-flow sub-traces: tracing, graph
    interop/                    torch's libraries while tracing, every torch patch: tracing, subtraces, graph
    backends/                   graph, interop (the data watch of frozen code), logs; never tracing directly
    state/                      tracing, interop (the tape's hook in the table), backends, graph
    staging/                    autograph <-> tracing (and subtraces, interop, state)
    exporting/                  graphs as torch.export programs: tracing, state, backends, graph
    function/                   every layer below it (staging's STAGING_HOOKS)
    summary                     function and graph (TensorBoard event files)
    saved_model/, onnx          saving and ONNX: function, exporting (and below)
    cli, __main__               the command line: the API layers (and __main__ only cli)
    torch_autograph/__init__    the public API: anything

Imports inside functions count (a deferred import is still an arrow), and so
do imports under `if TYPE_CHECKING:` (a cycle a type checker follows is a
cycle of the design, even if it never runs).
"""

from __future__ import annotations

import ast
import pathlib
import sys

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "torch_autograph"
MAX_LINES = 600

LEAVES = {"errors", "config", "nest", "naming"}
ALLOWED: dict[str, set[str]] = {
    "errors": set(), "config": set(), "nest": set(), "naming": set(),
    "autograph": {"errors", "config", "naming"},
    "graph": {"errors"},
    "op_facts": {"graph"},
    "tracing": {"graph", "op_facts"} | LEAVES,
    "subtraces": {"tracing", "graph"} | LEAVES,
    "interop": {"tracing", "subtraces", "graph"} | LEAVES,
    "logs": {"config"},
    "backends": {"graph", "interop", "errors", "config", "logs", "naming"},
    "state": {"tracing", "interop", "backends", "graph"} | LEAVES,
    "staging": {"autograph", "tracing", "subtraces", "interop", "state", "graph"} | LEAVES,
    "exporting": {"tracing", "state", "backends", "graph", "logs"} | LEAVES,
    "function": {"autograph", "staging", "tracing", "state", "backends", "exporting", "graph", "logs"} | LEAVES,
    "summary": {"function", "graph"} | LEAVES,
    "saved_model": {"function", "exporting", "tracing", "state", "graph"} | LEAVES,
    "onnx": {"function", "exporting", "graph"} | LEAVES,
    "cli": {"autograph", "function", "tracing", "graph"} | LEAVES,
    "__main__": {"cli"},
    "top": {"op_facts", "autograph", "staging", "subtraces", "interop", "function", "tracing", "state", "backends", "graph", "summary", "logs", "exporting",
            "saved_model", "onnx"} | LEAVES,
}


def _module_name(path: pathlib.Path, root: pathlib.Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: pathlib.Path) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """({module: modules of the package it imports}, {module: third-party top-level names it imports})."""
    paths = {_module_name(p, root): p for p in root.rglob("*.py")}
    edges: dict[str, set[str]] = {}
    external: dict[str, set[str]] = {}
    for name, path in paths.items():
        tree = ast.parse(path.read_text(), str(path))
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        inside, outside = set(), set()
        for node in ast.walk(tree):  # imports under `if TYPE_CHECKING:` count too
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[:len(package) - node.level + 1]
                    prefix = ".".join(base + ([node.module] if node.module else []))
                else:
                    prefix = node.module or ""
                for alias in node.names:
                    full = f"{prefix}.{alias.name}"
                    inside.add(full if full in paths else prefix)
                if not node.level:
                    outside.add(prefix.split(".")[0])
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    (inside if alias.name in paths else outside).add(alias.name if alias.name in paths
                                                                     else alias.name.split(".")[0])
        edges[name] = {m for m in inside if m in paths and m != name}
        external[name] = outside
    return edges, external


def layer_of(module: str) -> str:
    parts = module.split(".")
    return "top" if len(parts) == 1 else parts[1]


def wrong_arrows(edges: dict[str, set[str]], external: dict[str, set[str]]) -> list[str]:
    bad = []
    for module, targets in sorted(edges.items()):
        layer = layer_of(module)
        for target in sorted(targets):
            other = layer_of(target)
            if other != layer and other not in ALLOWED[layer]:
                bad.append(f"{module} -> {target}")
        if layer == "autograph" and "torch" in external[module]:
            bad.append(f"{module} -> torch")
    return bad


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(edges)))
    try:
        for v in sorted(edges):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


@pytest.fixture(scope="module")
def package_imports() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """`import_graph` of the package, read once for the two checks below (neither changes it)."""
    return import_graph(PACKAGE)


def test_every_arrow_points_down_the_layers(package_imports):
    edges, external = package_imports
    assert wrong_arrows(edges, external) == []


def test_no_import_cycles_between_modules(package_imports):
    edges, _ = package_imports
    assert cycles(edges) == []


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_stay_small(path):
    n = len(path.read_text().splitlines())
    assert n <= MAX_LINES, f"{path.relative_to(PACKAGE)} has {n} lines; split it (one concept per module)"


# The tracer is the room everything else plugs into: it holds what turns torch calls into graph nodes, and
# what one torch library or one kind of state needs goes to interop/ or state/ as a plug-in (TraceHooks).
TRACING_MAX_LINES = 4000


def test_the_tracer_stays_one_small_room():
    n = sum(len(p.read_text().splitlines()) for p in (PACKAGE / "tracing").glob("*.py"))
    assert n < TRACING_MAX_LINES, f"tracing/ has {n} lines (goal: under {TRACING_MAX_LINES})"


def test_every_top_level_module_has_a_rule():
    for path in PACKAGE.glob("*.py"):
        if path.stem != "__init__":
            assert path.stem in ALLOWED, f"torch_autograph/{path.name} is in no layer: give it one in ALLOWED"
    for path in PACKAGE.iterdir():
        if path.is_dir() and (path / "__init__.py").exists():
            assert path.name in ALLOWED, f"torch_autograph/{path.name}/ is in no layer: give it one in ALLOWED"


def _fake_package(tmp_path: pathlib.Path, files: dict[str, str]) -> pathlib.Path:
    root = tmp_path / "torch_autograph"
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for d in [root, *[p for p in root.rglob("*") if p.is_dir()]]:
        (d / "__init__.py").touch()
    return root


def test_the_checks_catch_wrong_arrows_deferred_imports_and_cycles(tmp_path):
    root = _fake_package(tmp_path, {
        "graph/ir.py": "from ..tracing import trace\n",  # the IR reaching up: wrong
        "tracing/trace.py": "def f():\n    from ..backends import codegen\n",  # deferred, still wrong
        "backends/codegen.py": "from ..graph import ir\n",
        "autograph/api.py": "import torch\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                            "    from ..graph import ir\n",  # torch: wrong; the TYPE_CHECKING import: wrong too
    })
    edges, external = import_graph(root)
    assert wrong_arrows(edges, external) == [
        "torch_autograph.autograph.api -> torch_autograph.graph.ir",
        "torch_autograph.autograph.api -> torch",
        "torch_autograph.graph.ir -> torch_autograph.tracing.trace",
        "torch_autograph.tracing.trace -> torch_autograph.backends.codegen",
    ]
    assert cycles(edges) == [["torch_autograph.backends.codegen", "torch_autograph.graph.ir",
                              "torch_autograph.tracing.trace"]]



def _exports(root: pathlib.Path, folder: str) -> set[str]:
    """The names a folder's `__init__` lists in `__all__` (its front door)."""
    tree = ast.parse((root / folder / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def back_doors(root: pathlib.Path) -> list[str]:
    """Imports of another folder that pass by its front door: a deeper module, or a name its `__all__` lacks.

    The package's own `__init__` (the public API) may reach anywhere; a folder's modules import their own
    folder freely.
    """
    bad = []
    for path in sorted(root.rglob("*.py")):
        name = _module_name(path, root)
        if name == root.name:
            continue
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package[:len(package) - node.level + 1]
                target = base + (node.module.split(".") if node.module else [])
            else:
                target = (node.module or "").split(".")
            if target[0] != root.name or len(target) < 2 or target[1] == layer_of(name):
                continue
            if not (root / target[1] / "__init__.py").exists():
                continue  # a top-level module (errors, config, nest, logs, ...)
            where = f"{path.relative_to(root.parent)}:{node.lineno}"
            if len(target) > 2:
                bad.append(f"{where}: from {'.'.join(target)} (import from {'.'.join(target[:2])})")
                continue
            missing = sorted({a.name for a in node.names} - _exports(root, target[1]))
            if missing:
                bad.append(f"{where}: {', '.join(missing)} not in {target[1]}/__init__.py's __all__")
    return bad


def test_other_folders_import_a_folder_only_through_its_front_door():
    assert back_doors(PACKAGE) == []


def test_the_front_door_check_catches_deep_imports_and_unexported_names(tmp_path):
    root = _fake_package(tmp_path, {
        "graph/ir.py": "X = 1\nY = 2\n",
        "graph/__init__.py": "from .ir import X\n__all__ = [\"X\"]\n",
        "tracing/a.py": "from ..graph import X\nfrom ..graph import Y\nfrom ..graph.ir import X\n",
        "tracing/b.py": "from . import a\n",  # its own folder: free
    })
    assert back_doors(root) == [
        "torch_autograph/tracing/a.py:2: Y not in graph/__init__.py's __all__",
        "torch_autograph/tracing/a.py:3: from torch_autograph.graph.ir (import from torch_autograph.graph)",
    ]


# ----- op facts: decided from the callable object, never from its name ------------------------------------
def _string_sets(tree: ast.AST) -> list[tuple[int, list[str]]]:
    """(line, strings) of every set/frozenset/tuple/list literal of two or more string constants."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Set, ast.Tuple, ast.List)) and len(node.elts) >= 2 and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
            out.append((node.lineno, [e.value for e in node.elts]))
    return out


def _names_of_ops_with_facts(strings: list[str]) -> list[str]:
    """The strings that name an aten op with a schema fact: it draws random numbers or writes its first argument."""
    import torch

    found = []
    for s in strings:
        packet = getattr(torch.ops.aten, s, None)
        if not isinstance(packet, torch._ops.OpOverloadPacket):
            continue
        for o in packet.overloads():
            op = getattr(packet, o)
            first = op._schema.arguments[0].alias_info if op._schema.arguments else None
            if torch.Tag.nondeterministic_seeded in op.tags or (first is not None and first.is_write):
                found.append(s)
                break
    return found


def name_lists_of_effects(tree: ast.AST) -> list[int]:
    """Lines of string collections naming three or more ops that draw or write in place: a name list deciding
    what only the op's schema may say (`_RANDOM = frozenset({"rand", "randn", "bernoulli", ...})`)."""
    return [line for line, strings in _string_sets(tree) if len(_names_of_ops_with_facts(strings)) >= 3]


def facts_asked_by_name(tree: ast.AST) -> list[int]:
    """Lines where `facts_of`/`traits_of` is given anything but one callable (a name, a kind, a string)."""
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None)) in ("facts_of", "traits_of")
            and (len(node.args) != 1 or node.keywords or isinstance(node.args[0], (ast.Constant, ast.JoinedStr))
                 or any(isinstance(x, ast.Attribute) and x.attr == "__name__" for x in ast.walk(node.args[0])))]


def test_op_facts_are_never_decided_on_a_name():
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        bad += [f"{path.relative_to(PACKAGE)}:{line}" for line in name_lists_of_effects(tree) + facts_asked_by_name(tree)]
    assert bad == []


def test_the_op_facts_check_catches_name_lists_and_names_passed():
    assert name_lists_of_effects(ast.parse('_RANDOM = frozenset({"rand", "randn", "bernoulli", "dropout"})')) == [1]
    assert name_lists_of_effects(ast.parse('_INPLACE = ("add_", "mul_", "copy_")')) == [1]
    assert name_lists_of_effects(ast.parse('_READS = frozenset({"size", "dim", "stride"})')) == []
    assert facts_asked_by_name(ast.parse("t = traits_of(kind, fn, fn.__name__)\nu = traits_of(fn)")) == [1]
    assert facts_asked_by_name(ast.parse("t = facts_of('add')")) == [1]


# ----- tests mirror the package -------------------------------------------------------------------------------
TESTS = PACKAGE.parent / "tests"
TEST_ONLY_FOLDERS = {"conformance": "ported programs from other projects, run eagerly and as graphs",
                     "integrations": "Hugging Face models end to end"}


def mirror_mismatches(package: pathlib.Path, tests: pathlib.Path) -> list[str]:
    """Package folders without a test folder, and test folders that are neither a package folder nor a documented
    test-only one."""
    folders = {p.name for p in package.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    test_folders = {p.name for p in tests.iterdir() if p.is_dir() and any(p.glob("test_*.py"))}
    return sorted([f"torch_autograph/{f}/ has no tests/{f}/" for f in folders - test_folders] +
                  [f"tests/{f}/ mirrors no package folder" for f in test_folders - folders - set(TEST_ONLY_FOLDERS)])


def test_tests_mirror_the_package():
    assert mirror_mismatches(PACKAGE, TESTS) == []


def test_the_mirror_check_catches_a_missing_and_an_extra_folder(tmp_path):
    package = _fake_package(tmp_path, {"a/x.py": "", "b/y.py": ""})
    tests = tmp_path / "tests"
    for folder in ("a", "misc"):
        (tests / folder).mkdir(parents=True)
        (tests / folder / "test_x.py").write_text("")
    assert mirror_mismatches(package, tests) == ["tests/misc/ mirrors no package folder",
                                                 "torch_autograph/b/ has no tests/b/"]
