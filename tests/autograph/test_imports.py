"""The pure transformer imports neither torch nor the graph/backends/function layers."""

from __future__ import annotations

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "torch_autograph" / "autograph"
FORBIDDEN = ("torch", "numpy", "torch_autograph.graph", "torch_autograph.backends",
             "torch_autograph.function", "torch_autograph.staging")
ALLOWED_OUTSIDE = {"torch_autograph.errors", "torch_autograph.naming"}


def _imports(path: pathlib.Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield from (f"{node.module}.{a.name}" if node.module == "torch_autograph"
                        else node.module for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield "torch_autograph.<relative>"


def test_autograph_imports_point_one_way():
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 20
    for path in files:
        for module in _imports(path):
            assert module != "torch_autograph.<relative>", f"{path}: use absolute imports"
            bad = [f for f in FORBIDDEN if module == f or module.startswith(f + ".")]
            assert not bad, f"{path.relative_to(PACKAGE)} imports {module}"
            if module.startswith("torch_autograph") and module not in ALLOWED_OUTSIDE:
                assert module.startswith("torch_autograph.autograph"), f"{path}: {module}"


def test_modules_have_docstrings_and_reasonable_size():
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        assert ast.get_docstring(ast.parse(text)), f"{path} has no module docstring"
        assert len(text.splitlines()) <= 500, f"{path} is over 500 lines"
