"""Fidelity fuzzing: random int programs give the same result three ways.

For each program drawn by `program_gen.programs()`:
    original(ints) == converted(ints) == converted(Staged ints, FakeBackend)

The default run checks 500 programs (deterministic: derandomize=True). For
the long run:

    TA_FUZZ_EXAMPLES=10000 .venv/bin/python -m pytest tests/autograph/test_fuzz_programs.py
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fake_backend
import program_gen
from torch_autograph.autograph import api, to_code, to_graph

EXAMPLES = int(os.environ.get("TA_FUZZ_EXAMPLES", "500"))


def _run(fn, args):
    try:
        return ("ok", fn(*args))
    except Exception as e:  # noqa: BLE001 - the same exception must come out of each version
        return ("raised", type(e).__name__)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(source=program_gen.programs(), args=st.tuples(*[st.integers(-6, 7)] * 3))
def test_original_converted_and_staged_agree(source, args):
    original = program_gen.load(source)
    expected = _run(original, args)
    converted = to_graph(original)
    assert _run(converted, args) == expected, (source, to_code(original))
    with fake_backend.installed():
        staged = _run(converted, tuple(fake_backend.Staged(a) for a in args))
    staged = (staged[0], fake_backend.unwrap(staged[1]))
    assert staged == expected, (source, to_code(original))
    api.clear_cache()  # every program is new: keep the cache (and memory) small
