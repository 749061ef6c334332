"""The documentation site builds in strict mode (broken links, anchors and API references fail it)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings_handlers.python")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = ["index", "coming-from-tf-function", "control-flow", "debugging", "training", "export", "distributed",
         "performance", "library-code", "api/function", "api/user-ops", "api/autograph", "api/state", "api/export", "api/graph",
         "api/config", "api/errors"]


def test_the_site_builds_strictly_with_every_page(tmp_path):
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(tmp_path)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    for page in PAGES:
        path = tmp_path / ("index.html" if page == "index" else f"{page}/index.html")
        assert path.is_file(), page
    api = (tmp_path / "api/function/index.html").read_text()
    assert "get_concrete_function" in api and "reduce_retracing" in api  # rendered from the docstrings
