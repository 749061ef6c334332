"""Python values for a TensorSpec are checked like TensorFlow: no silent truncation, wrap-around or bool cast."""

import traceback

import pytest
import torch

import torch_autograph as ta


def _raised_at_this_file(excinfo) -> bool:
    """The innermost frame of user code is the call that passed the value."""
    frames = [f for f in traceback.extract_tb(excinfo.value.__traceback__) if "/torch_autograph/" not in f.filename]
    return frames[-1].filename == __file__ and frames[-1].line.strip() in ("f(bad)", "cf(bad)")


def _times_ten(k):
    return k * 10


@pytest.mark.parametrize("spec, good, bad, error, words", [
    (ta.TensorSpec([], torch.int64), 2, 2.7, TypeError, "Python float 2.7 to torch.int64"),
    (ta.TensorSpec([], torch.int64), 2, 2.0, TypeError, "Python float 2.0 to torch.int64"),
    (ta.TensorSpec([None], torch.int32), [1, 2], [1.5, 2.5, 3.9], TypeError, "Python float 1.5 to torch.int32"),
    (ta.TensorSpec([], torch.float32), 2.5, True, TypeError, "Python bool True to torch.float32"),
    (ta.TensorSpec([], torch.int64), 3, False, TypeError, "Python bool False to torch.int64"),
    (ta.TensorSpec([], torch.bool), True, 1, TypeError, "Python int 1 to torch.bool"),
    (ta.TensorSpec([], torch.uint8), 3, 300, ValueError, "300 is out of the range of torch.uint8 [0, 255]"),
    (ta.TensorSpec([], torch.uint8), 255, -1, ValueError, "-1 is out of the range of torch.uint8 [0, 255]"),
    (ta.TensorSpec([2], torch.int8), [1, -128], [1, 128], ValueError, "128 is out of the range of torch.int8"),
])
def test_python_value_that_does_not_fit_the_spec_raises_naming_the_argument(spec, good, bad, error, words):
    f = ta.function(_times_ten, input_signature=[spec])
    for _ in range(2):  # the first call traces, the second runs the cached trace: both check
        assert torch.equal(f(good), torch.tensor(good, dtype=spec.dtype) * 10)
        with pytest.raises(error, match="argument 'k'") as e:
            f(bad)
        assert words in str(e.value) and _raised_at_this_file(e)
    cf = f.get_concrete_function()
    with pytest.raises(error, match="argument k") as e:
        cf(bad)
    assert words in str(e.value) and _raised_at_this_file(e)


def test_ints_for_a_float_spec_and_floats_for_a_complex_spec_are_exact_and_accepted():
    f = ta.function(_times_ten, input_signature=[ta.TensorSpec([None], torch.float32)])
    assert torch.equal(f([1, 2]), torch.tensor([10.0, 20.0]))
    c = ta.function(_times_ten, input_signature=[ta.TensorSpec([], torch.complex64)])
    assert torch.equal(c(1.5), torch.tensor(15 + 0j, dtype=torch.complex64))
