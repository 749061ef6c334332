"""Imports point one way (DESIGN.md): graph/ <- backends/ <- function.py; autograph/ knows no torch."""

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "torch_autograph"
MODULES = sorted(PACKAGE.rglob("*.py"))


def _imports(path):
    """Absolute dotted names of every module `path` imports (relative imports resolved)."""
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module
            if node.module:
                out.append(prefix)
            out += [f"{prefix}.{a.name}" for a in node.names]
    return out


def _layer(path):
    rel = path.relative_to(PACKAGE).parts
    return rel[0] if len(rel) > 1 else "top"


def _violations(path):
    layer = _layer(path)
    bad = []
    for name in _imports(path):
        inside = name.startswith("torch_autograph")
        sub = name.split(".")[1] if inside and "." in name else None
        # errors and nest are leaf modules (stdlib-only helpers) every layer may use.
        if layer == "graph" and inside and sub not in ("graph", "errors", "nest"):
            bad.append(name)
        if layer == "backends" and inside and sub not in ("graph", "backends", "errors", "nest"):
            bad.append(name)
        if layer == "autograph" and (name == "torch" or name.startswith("torch.")
                                     or (inside and sub in ("graph", "backends", "function"))):
            bad.append(name)
    return bad


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_the_right_way(path):
    bad = _violations(path)
    assert not bad, f"{path.relative_to(PACKAGE)} imports against the layering (DESIGN.md): {bad}"


def test_the_checker_catches_wrong_arrows(tmp_path, monkeypatch):
    fake = tmp_path / "torch_autograph"
    (fake / "graph").mkdir(parents=True)
    (fake / "autograph").mkdir()
    (fake / "graph" / "bad.py").write_text("from ..backends import torch_codegen\nfrom .. import function\n")
    (fake / "autograph" / "bad.py").write_text("import torch\nfrom ..graph import tracer\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    assert _violations(fake / "graph" / "bad.py") == [
        "torch_autograph.backends", "torch_autograph.backends.torch_codegen", "torch_autograph.function"]
    assert _violations(fake / "autograph" / "bad.py") == [
        "torch", "torch_autograph.graph", "torch_autograph.graph.tracer"]
