"""Fidelity fuzzing: random int programs give the same result three ways.

For each program drawn by `program_gen.programs()`:
    original(ints) == converted(ints) == converted(Staged ints, FakeBackend)

in value and in type (`True` is not `1`).

`make test` checks 200 programs (deterministic: derandomize=True); `make
test-slow` checks the 500 `make test` checked before its time was cut, and
10,000 seeded ones, printing the tally of `fuzz_outcomes` categories.
`TA_FUZZ_EXAMPLES=n` sets the first count.
"""

from __future__ import annotations

import linecache
import os

import fake_backend
import program_gen
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torch_autograph.autograph import api, to_code, to_graph

EXAMPLES = int(os.environ.get("TA_FUZZ_EXAMPLES", "200"))


def _typed(value):
    """`value` with the type of each element beside it: `True` is not `1`, nor `1.0` `1`."""
    if isinstance(value, (tuple, list)):
        return type(value).__name__, [_typed(v) for v in value]
    return type(value).__name__, value


def _run(fn, args, unwrap=lambda v: v):
    try:
        return ("ok", _typed(unwrap(fn(*args))))
    except Exception as e:  # noqa: BLE001 - the same exception must come out of each version
        return ("raised", type(e).__name__)


def _check(source, args):
    original = program_gen.load(source)
    expected = _run(original, args)
    converted = to_graph(original)
    assert _run(converted, args) == expected, (source, to_code(original))
    with fake_backend.installed():
        staged = _run(converted, tuple(fake_backend.Staged(a) for a in args), fake_backend.unwrap)
    assert staged == expected, (source, to_code(original))
    api.clear_cache()  # every program is new: keep the cache (and memory) small


_SETTINGS = dict(deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))


@settings(max_examples=EXAMPLES, **_SETTINGS)
@given(source=program_gen.programs(), args=st.tuples(*[st.integers(-6, 7)] * 3))
def test_original_converted_and_staged_agree(source, args):
    _check(source, args)


# The 500 programs `make test` checked before its time was cut: the same inner function, so the same programs
# (derandomize seeds hypothesis from the function's source and name).
test_original_converted_and_staged_agree_500_programs = pytest.mark.slow(settings(max_examples=500, **_SETTINGS)(
    given(source=program_gen.programs(), args=st.tuples(*[st.integers(-6, 7)] * 3))(
        test_original_converted_and_staged_agree.hypothesis.inner_test)))


def _outcome(source, args):
    """The `fuzz_outcomes` category of one program (`_check`, with what it raises classified)."""
    from fuzz_outcomes import classify_error

    original = program_gen.load(source)
    try:
        expected = _run(original, args)
        converted = to_graph(original)
        if _run(converted, args) != expected:
            return "mismatch", "converted code on ints"
        with fake_backend.installed():
            try:
                staged = ("ok", _typed(fake_backend.unwrap(converted(*(fake_backend.Staged(a) for a in args)))))
            except Exception as e:  # noqa: BLE001 - classified unless Python raised the same
                staged = ("raised", type(e).__name__)
                if staged != expected:
                    return classify_error(e), f"{type(e).__name__}: {e}"
        return ("ok", "") if staged == expected else ("mismatch", f"staged {staged}, Python {expected}")
    finally:
        api.clear_cache()  # every program is new: keep the cache (and memory) small
        linecache.cache.pop(original.__code__.co_filename, None)


@pytest.mark.slow
def test_original_converted_and_staged_agree_10000_programs():
    """10,000 programs (seeds 0..9999): the tally of `fuzz_outcomes` categories, printed."""
    import random

    from fuzz_outcomes import Tally

    tally = Tally()
    for seed in range(10_000):
        rng = random.Random(seed)
        source = program_gen.generate(random.Random(seed))
        args = tuple(rng.randint(-6, 7) for _ in range(3))
        category, detail = _outcome(source, args)
        tally.add(category, f"{source}args={args}", detail)
    report = tally.summary("10,000 programs: original, converted and staged (FakeBackend):")
    print(report)
    assert not tally.failures(), report
