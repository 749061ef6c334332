"""The documentation site builds in strict mode from a fresh copy of the tree, with no warning at all."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings_handlers.python")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = ["index", "coming-from-tf-function", "control-flow", "debugging", "training", "export", "distributed",
         "performance", "library-code", "api/function", "api/user-ops", "api/autograph", "api/state", "api/export", "api/graph",
         "api/config", "api/errors"]


def _fresh_copy(dest) -> str:
    """The files a fresh clone has (tracked and not ignored), so nothing built here hides a failure."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.split("\n")
    for name in filter(None, listed):
        source = os.path.join(ROOT, name)
        if os.path.isfile(source):
            os.makedirs(os.path.join(dest, os.path.dirname(name)), exist_ok=True)
            shutil.copy2(source, os.path.join(dest, name))
    return str(dest)


def test_the_site_builds_strictly_with_every_page_and_no_warning(tmp_path):
    tree = _fresh_copy(tmp_path / "clone")
    site = tmp_path / "site"
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    # Not --quiet: that hides the warnings strict mode counts (a griffe warning in a docstring passed it).
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
                          cwd=tree, env=env, capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    warnings = [line for line in output.splitlines() if "WARNING" in line or "Aborted" in line]
    assert warnings == [], output
    for page in PAGES:
        path = site / ("index.html" if page == "index" else f"{page}/index.html")
        assert path.is_file(), page
    api = (site / "api/function/index.html").read_text()
    assert "get_concrete_function" in api and "reduce_retracing" in api  # rendered from the docstrings


def test_the_build_reports_a_docstring_warning(tmp_path):
    """The check above can fail: a docstring naming a parameter the signature lacks is caught."""
    tree = _fresh_copy(tmp_path / "clone")
    path = os.path.join(tree, "torch_autograph", "function", "export_api.py")
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text.replace("        input_signature: for a plain callable", "        not_a_parameter: nothing.\n"
                             "        input_signature: for a plain callable", 1))
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                          cwd=tree, env=dict(os.environ, NO_MKDOCS_2_WARNING="1"), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode != 0
    assert "not_a_parameter" in done.stdout + done.stderr


def test_the_package_metadata_builds_without_a_deprecation_warning(tmp_path):
    """pyproject's license is an SPDX string (a TOML table is deprecated by setuptools>=77)."""
    pytest.importorskip("setuptools", minversion="77")
    done = subprocess.run([sys.executable, "-W", "always", "-c",
                           "import setuptools; setuptools.setup()", "egg_info", "--egg-base", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "deprecated" not in (done.stdout + done.stderr).lower(), done.stdout + done.stderr
    info = next(tmp_path.glob("*.egg-info")) / "PKG-INFO"
    assert "License-Expression: Apache-2.0" in info.read_text()
