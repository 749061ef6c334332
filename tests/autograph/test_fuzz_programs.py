"""Fidelity fuzzing: random int programs give the same result three ways.

For each program drawn by `program_gen.programs()`:
    original(ints) == converted(ints) == converted(Staged ints, FakeBackend)

`make test` checks 500 programs (deterministic: derandomize=True); the
`slow` test, run by `make test-slow`, checks 10,000. `TA_FUZZ_EXAMPLES=n`
sets the first count.
"""

from __future__ import annotations

import os

import pytest
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


def _check(source, args):
    original = program_gen.load(source)
    expected = _run(original, args)
    converted = to_graph(original)
    assert _run(converted, args) == expected, (source, to_code(original))
    with fake_backend.installed():
        staged = _run(converted, tuple(fake_backend.Staged(a) for a in args))
    staged = (staged[0], fake_backend.unwrap(staged[1]))
    assert staged == expected, (source, to_code(original))
    api.clear_cache()  # every program is new: keep the cache (and memory) small


_SETTINGS = dict(deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))


@settings(max_examples=EXAMPLES, **_SETTINGS)
@given(source=program_gen.programs(), args=st.tuples(*[st.integers(-6, 7)] * 3))
def test_original_converted_and_staged_agree(source, args):
    _check(source, args)


@pytest.mark.slow
@settings(max_examples=10_000, **_SETTINGS)
@given(source=program_gen.programs(), args=st.tuples(*[st.integers(-6, 7)] * 3))
def test_original_converted_and_staged_agree_10000_programs(source, args):
    _check(source, args)
