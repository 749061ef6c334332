"""Shared by every test directory: the helpers in tests/ on sys.path, and the `slow` marker's switch.

`make test` deselects tests marked `slow` (long randomised runs); `make test-slow` runs only them.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "autograph"))


def pytest_collection_modifyitems(config, items):
    """Tests marked `graphviz` need Graphviz's `dot` program: skipped cleanly where it is not installed."""
    import shutil

    import pytest

    if shutil.which("dot") is None:
        skip = pytest.mark.skip(reason="needs Graphviz's `dot` program (apt-get install graphviz)")
        for item in items:
            if "graphviz" in item.keywords:
                item.add_marker(skip)
