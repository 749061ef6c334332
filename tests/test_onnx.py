"""`ta.onnx.export`: graphs with `cond` and `while` as ONNX models whose ONNX Runtime outputs equal eager PyTorch's.

The reference is the original Python function run eagerly (`.python_function`), never the traced function.
"""

import logging
import warnings

import pytest
import torch

import torch_autograph as ta

pytest.importorskip("onnxscript")
ort = pytest.importorskip("onnxruntime")
warnings.filterwarnings("ignore", message=".*(while_loop|cond|Symbol).*")
logging.getLogger("torch.onnx").setLevel(logging.ERROR)
ROWS = ta.TensorSpec([None, 3], torch.float32)
COUNT = ta.TensorSpec([], torch.int64)


@ta.function(input_signature=[ROWS, COUNT])
def loop_then_branch(x, n):
    acc = torch.zeros(3)
    sums = ta.TensorArray(torch.float32, size=0, dynamic_size=True, element_shape=[])  # eager stacks none too
    for i in range(n):
        if acc.sum() > 20:  # a cond inside the loop: torch.onnx needs the workaround in ta.onnx
            break
        acc = acc + x.sum(0).abs() * i
        sums = sums.write(i, acc.sum())
    assert acc.sum() >= 0, "negative"
    if acc.sum() > 5:  # a cond on the loop's result
        acc = acc - 100
    else:
        acc = acc + 100
    return acc, x.size(0) * 2, sums.stack()


ASSERT_LINE = loop_then_branch.python_function.__code__.co_firstlineno + 9


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """(path, program, warnings) of loop_then_branch exported once for the tests here."""
    path = tmp_path_factory.mktemp("onnx") / "loop.onnx"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        program = ta.onnx.export(loop_then_branch, path)
    return path, program, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def run(session, x, n):
    return session.run(None, {"x": x.numpy(), "n": n.numpy()})


def test_a_while_with_a_cond_inside_and_one_after_matches_in_onnx_runtime(exported):
    path, _, _ = exported
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ops = {node.op_type for node in __import__("onnx").load(str(path)).graph.node}
    assert "Loop" in ops
    torch.manual_seed(0)
    for batch, n in ((4, 0), (4, 1), (1, 3), (9, 5), (2, 30)):
        x = torch.randn(batch, 3)
        got = run(session, x, torch.tensor(n))
        want_acc, want_size, want_sums = loop_then_branch.python_function(x, torch.tensor(n))  # eager PyTorch
        torch.testing.assert_close(torch.from_numpy(got[0]), want_acc)
        assert got[1].dtype.name == "int64" and int(got[1]) == want_size
        torch.testing.assert_close(torch.from_numpy(got[2]), want_sums)  # a TensorArray written in the loop


def test_asserts_are_named_in_a_warning_since_onnx_cannot_raise(exported):
    _, _, messages = exported
    assert any("1 run-time check(s) (asserts at " in m and f"test_onnx.py:{ASSERT_LINE}) are not in the ONNX model"
               in m for m in messages), messages


def test_a_model_computing_something_else_is_refused(exported):
    _, program, _ = exported

    @ta.function(input_signature=[ROWS, COUNT])
    def other(x, n):
        return x.sum(0) * 0, x.size(0) * 2, x[:0, 0]

    with pytest.raises(ta.onnx.OnnxMismatchError, match=r"__inference_other_\d+: ONNX Runtime computes output 0 "
                                                        r"differently from the function"):
        ta.onnx.check_numerics(other.get_concrete_function(), program, [torch.ones(2, 3), torch.tensor(3)])
