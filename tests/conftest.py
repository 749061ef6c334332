"""Shared by every test directory: the helpers in tests/ on sys.path, and the `slow` marker's switch.

`make test` deselects tests marked `slow` (long randomised runs); `make test-slow` runs only them.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "autograph"))
