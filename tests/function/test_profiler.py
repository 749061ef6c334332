"""Profiler ranges: each ta.function call a range named after its trace; with profile_user_lines, one per line."""

from __future__ import annotations

import json

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

import torch_autograph as ta


@pytest.fixture
def user_lines():
    ta.config.profile_user_lines = True
    yield
    ta.config.profile_user_lines = False


def _step(x):
    y = torch.relu(x) * 2
    if y.sum() > 1:
        y = torch.tanh(y)
    return y.mean()


def _events(fn, *args):
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        out = fn(*args)
    return out, prof


def _ancestors(event) -> list[str]:
    names = []
    while event.cpu_parent is not None:
        event = event.cpu_parent
        names.append(event.name)
    return names


def test_each_call_is_a_range_named_after_the_function_and_its_trace():
    f = ta.function(_step)
    x = torch.randn(4) + 1
    cf = f.get_concrete_function(x)
    assert cf.profile_name == f"_step ({cf.name})"
    out, prof = _events(f, x)
    torch.testing.assert_close(out, _step(x))
    calls = [e for e in prof.events() if e.name == cf.profile_name]
    assert len(calls) == 1
    relu = next(e for e in prof.events() if e.name == "aten::relu")
    assert _ancestors(relu)[-1] == cf.profile_name  # the graph's ops happen inside the call's range
    assert not any(name.startswith("test_profiler.py:") for name in _ancestors(relu))  # lines: opt-in


def test_profile_user_lines_gives_each_line_its_range(user_lines, tmp_path):
    f = ta.function(_step)
    x = torch.randn(4) + 1
    cf = f.get_concrete_function(x)
    out, prof = _events(f, x)
    torch.testing.assert_close(out, _step(x))
    first = _step.__code__.co_firstlineno
    relu = next(e for e in prof.events() if e.name == "aten::relu")
    tanh = next(e for e in prof.events() if e.name == "aten::tanh")
    mean = next(e for e in prof.events() if e.name == "aten::mean")
    assert _ancestors(relu)[:2] == [f"test_profiler.py:{first + 1}", cf.profile_name]
    # the branch's op: inside its own line's range, inside the `if`'s range
    assert _ancestors(tanh)[:3] == [f"test_profiler.py:{first + 3}", f"test_profiler.py:{first + 2}",
                                    cf.profile_name]
    assert _ancestors(mean)[:2] == [f"test_profiler.py:{first + 4}", cf.profile_name]
    trace = tmp_path / "trace.json"
    prof.export_chrome_trace(str(trace))
    names = {e.get("name") for e in json.loads(trace.read_text())["traceEvents"]}
    assert {cf.profile_name, f"test_profiler.py:{first + 1}", "aten::relu"} <= names
    assert "with _range" not in cf.graph.python_source  # the code shown as python_source stays plain


def test_no_profiler_no_ranges_and_errors_still_name_the_line(user_lines):
    def bad(x):
        return x[5] * 2  # <- fails when run on fewer than 6 rows

    f = ta.function(bad, input_signature=[ta.TensorSpec([None])])
    with profile(activities=[ProfilerActivity.CPU]):
        with pytest.raises(IndexError) as info:
            f(torch.ones(2))
    assert any("test_profiler.py" in note and "return x[5] * 2" in note for note in info.value.__notes__)
    # outside a profiler, the call path runs the plain generated code
    cf = f.get_concrete_function()
    assert cf._fn is cf._compiled.default_fn and "with _range" not in cf.graph.python_source
