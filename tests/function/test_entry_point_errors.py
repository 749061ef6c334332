"""Every entry point (a call, get_concrete_function, export, saved_model save/load, ONNX, TensorBoard) shows the
user's frames and one of the library's, with the library's message; torch's data-dependent guard failure comes
back as our own message naming the user's line and the construct."""

from __future__ import annotations

import os
import traceback

import pytest
import torch

import torch_autograph as ta
from torch_autograph.tracing.locations import PACKAGE_DIR

HERE = os.path.abspath(__file__)


def _library_frames(e: BaseException) -> list[traceback.FrameSummary]:
    return [f for f in traceback.extract_tb(e.__traceback__) if f.filename.startswith(PACKAGE_DIR)]


def _shows_only_user_frames(e: BaseException) -> None:
    frames = traceback.extract_tb(e.__traceback__)
    assert frames[0].filename == HERE, frames  # the test's own frame first
    assert len(_library_frames(e)) <= 1, "".join(traceback.format_list(frames))


U8 = ta.TensorSpec([], torch.uint8)


@ta.function(input_signature=[U8])
def _add_one(x):
    return x + 1


def test_an_out_of_range_value_for_a_uint8_spec_names_the_range_and_shows_user_frames():
    with pytest.raises(ValueError) as info:  # as TensorFlow: no silent wrap-around
        _add_one(300)
    msg = str(info.value)
    assert "argument 'x'" in msg and "got 300" in msg and "out of the range of torch.uint8 [0, 255]" in msg
    _shows_only_user_frames(info.value)
    assert _add_one(200).item() == 201  # in range: fine (uint8 arithmetic as eager: 200 + 1)


def test_get_concrete_function_with_a_wrong_argument_shows_user_frames():
    with pytest.raises(TypeError) as info:
        _add_one.get_concrete_function(ta.TensorSpec([2], torch.float32))
    assert "argument 'x' can not be cast" in str(info.value)
    _shows_only_user_frames(info.value)


def test_a_concrete_function_call_with_a_wrong_argument_shows_user_frames():
    cf = _add_one.get_concrete_function()
    with pytest.raises(ta.errors.InvalidArgumentError) as info:
        cf(torch.ones(3, dtype=torch.uint8))
    assert "argument x expected" in str(info.value)
    _shows_only_user_frames(info.value)


def _prints(x):
    ta.print(x)
    return x * 2


def test_export_errors_show_user_frames():
    f = ta.function(_prints)
    with pytest.raises(ta.errors.GraphLoweringError) as info:
        ta.export(f, torch.ones(2))
    _shows_only_user_frames(info.value)
    with pytest.raises(ta.errors.GraphLoweringError) as info:
        f.get_concrete_function(torch.ones(2)).export()
    _shows_only_user_frames(info.value)


def test_saved_model_errors_show_user_frames(tmp_path):
    with pytest.raises(TypeError) as info:
        ta.saved_model.save(object(), str(tmp_path / "nothing"))
    assert "has no ta.function" in str(info.value)
    _shows_only_user_frames(info.value)
    with pytest.raises(FileNotFoundError) as info:
        ta.saved_model.load(str(tmp_path / "missing"))
    _shows_only_user_frames(info.value)
    ta.saved_model.save(_add_one, str(tmp_path / "m"))
    loaded = ta.saved_model.load(str(tmp_path / "m"))
    assert loaded(torch.tensor(3, dtype=torch.uint8)).item() == 4
    with pytest.raises(TypeError) as info:
        loaded(torch.ones(2))
    assert "no saved signature matches" in str(info.value)
    _shows_only_user_frames(info.value)


def test_tensorboard_and_onnx_errors_show_user_frames(tmp_path):
    with pytest.raises(ValueError) as info:
        ta.summary.graph(ta.function(lambda x: x), str(tmp_path))  # never traced
    _shows_only_user_frames(info.value)
    pytest.importorskip("onnxscript")
    with pytest.raises(ta.errors.GraphLoweringError) as info:
        ta.onnx.export(ta.function(_prints), None, torch.ones(2))
    _shows_only_user_frames(info.value)


# ----- a size known only when the graph runs, used as a Python value -------------------------------------
def _unconverted_if(x):
    n = x.nonzero().shape[0]
    if n > 2:  # the line the message names
        return x * 2
    return x


def _converted_bool(x):
    n = x.nonzero().shape[0]
    return x * 2 if bool(n > 2) else x  # the line the message names


def _line_of(fn, text):
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("fn, autograph, construct, text", [
    (_unconverted_if, False, "the `if`", "if n > 2:"),
])
def test_a_data_dependent_python_value_gets_our_message_at_the_users_line(fn, autograph, construct, text):
    f = ta.function(fn, autograph=autograph)
    with pytest.raises(ta.errors.OperatorNotAllowedInGraphError) as info:
        f(torch.tensor([1.0, 0.0, 3.0, 4.0]))
    msg = str(info.value)
    assert f"{HERE}:{_line_of(fn, text)}" in msg and text in msg and construct in msg
    assert "known only when the graph runs" in msg and "Fix:" in msg
    assert "docs.google.com" not in msg and "GuardOnDataDependentSymNode" not in msg
    assert "TORCH_LOGS" not in "".join(traceback.format_exception(info.value))
    _shows_only_user_frames(info.value)


def test_bool_of_a_data_dependent_size_in_converted_code_is_a_graph_bool():
    # AutoGraph's `bool` overload: a bool known when the graph runs, which the ternary then stages.
    f = ta.function(_converted_bool)
    for x in (torch.tensor([1.0, 0.0, 3.0, 4.0]), torch.tensor([1.0, 0.0, 0.0, 4.0])):
        torch.testing.assert_close(f(x), _converted_bool(x))


def test_the_converted_if_on_a_data_dependent_size_still_works():
    @ta.function
    def g(x):
        n = x.nonzero().shape[0]
        if n > 2:
            return x * 2
        return x

    for x in (torch.tensor([1.0, 0.0, 3.0, 4.0]), torch.tensor([1.0, 0.0, 0.0, 4.0])):
        torch.testing.assert_close(g(x), _unconverted_if(x))


def test_an_input_signature_that_is_not_a_list_is_a_type_error_at_the_users_line():
    with pytest.raises(TypeError) as info:
        ta.function(lambda x: x, input_signature=ta.TensorSpec([2], torch.float32))
    assert "input_signature must be a list or tuple" in str(info.value)
    assert "pass input_signature=[TensorSpec(" in str(info.value)
    _shows_only_user_frames(info.value)
    with pytest.raises(TypeError) as info:  # the decorator-factory spelling goes through the same door
        ta.function(input_signature=ta.TensorSpec([2], torch.float32))(lambda x: x)
    _shows_only_user_frames(info.value)
