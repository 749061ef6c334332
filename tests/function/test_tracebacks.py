"""Errors and warnings reach the user at their own frames: library frames filtered, generated code shown."""

from __future__ import annotations

import os
import traceback
import warnings

import pytest
import torch

import torch_autograph as ta
from torch_autograph.tracing.locations import PACKAGE_DIR

HERE = os.path.abspath(__file__)


def _frames(e: BaseException) -> list[traceback.FrameSummary]:
    return traceback.extract_tb(e.__traceback__)


def _library(frames):
    return [f for f in frames if f.filename.startswith(PACKAGE_DIR)]


def _shape_error(x):
    y = x * 2
    return y @ torch.ones(5, 5)  # (3,) @ (5, 5): fails while tracing


def test_a_trace_time_error_shows_the_users_frames_and_one_library_frame():
    with pytest.raises(RuntimeError) as info:
        ta.function(_shape_error)(torch.ones(3))
    frames = _frames(info.value)
    assert len(_library(frames)) == 1 and _library(frames)[0].name == "__call__"  # the frame that re-raises
    line = _shape_error.__code__.co_firstlineno + 2
    assert any(f.filename.startswith("<autograph _shape_error") for f in frames)  # the converted code
    text = "".join(traceback.format_exception(info.value))
    assert f'File "{HERE}", line {line}, in _shape_error' in text  # the "in user code" note maps it back


def test_filtering_can_be_turned_off():
    ta.config.set_filter_tracebacks(False)
    try:
        with pytest.raises(RuntimeError) as info:
            ta.function(_shape_error)(torch.ones(3))
    finally:
        ta.config.set_filter_tracebacks(True)
    assert len(_library(_frames(info.value))) > 3


def _index_error(x, i):
    return x[i] * 2


def test_a_run_time_error_shows_the_generated_code_with_its_source_line():
    f = ta.function(_index_error)
    cf = f.get_concrete_function(ta.TensorSpec([3]), ta.TensorSpec([], torch.int64))
    with pytest.raises(IndexError) as info:
        cf(torch.ones(3), torch.tensor(7))
    frames = _frames(info.value)
    generated = [fr for fr in frames if fr.filename.startswith("<torch_autograph graph")]
    assert generated and generated[-1].line  # the generated line is shown, not a bare location
    assert len(_library(frames)) == 1
    assert f"{os.path.basename(HERE)}:{_index_error.__code__.co_firstlineno + 1}" in str(info.value) + "".join(
        getattr(info.value, "__notes__", []))


def _watches_an_int_tensor():
    def step(x):
        with ta.GradientTape() as tape:
            tape.watch(x.long())  # an integer tensor cannot be differentiated: warned at this line
        return x * 2
    return step


def test_warnings_carry_the_users_file_and_line():
    step = _watches_an_int_tensor()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ta.function(step)(torch.ones(3))
    hits = [w for w in caught if "must be floating" in str(w.message)]
    assert hits and hits[0].filename == HERE
    assert hits[0].lineno == _watches_an_int_tensor.__code__.co_firstlineno + 3


def test_a_warning_filter_on_the_users_module_applies():
    step = _watches_an_int_tensor()
    module = os.path.splitext(os.path.basename(HERE))[0]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*must be floating", module=module)
        with pytest.raises(UserWarning, match="must be floating"):
            ta.function(step)(torch.ones(3))