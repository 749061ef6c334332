"""`ta.onnx.export`: graphs with `cond` and `while` as ONNX models whose ONNX Runtime outputs equal the function's."""

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
    for i in range(n):
        if acc.sum() > 20:  # a cond inside the loop: torch.onnx needs the workaround in ta.onnx
            break
        acc = acc + x.sum(0).abs() * i
    if acc.sum() > 5:  # a cond on the loop's result
        acc = acc - 100
    else:
        acc = acc + 100
    return acc, x.size(0) * 2


def run(session, x, n):
    return session.run(None, {"x": x.numpy(), "n": n.numpy()})


def test_a_while_with_a_cond_inside_and_one_after_matches_in_onnx_runtime(tmp_path):
    path = tmp_path / "loop.onnx"
    ta.onnx.export(loop_then_branch, path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ops = {node.op_type for node in __import__("onnx").load(str(path)).graph.node}
    assert "Loop" in ops
    torch.manual_seed(0)
    for batch, n in ((4, 0), (4, 1), (1, 3), (9, 5), (2, 30)):
        x = torch.randn(batch, 3)
        got = run(session, x, torch.tensor(n))
        want_acc, want_size = loop_then_branch(x, torch.tensor(n))
        torch.testing.assert_close(torch.from_numpy(got[0]), want_acc)
        assert int(got[1]) == want_size


def test_asserts_are_named_in_a_warning_since_onnx_cannot_raise():
    @ta.function(input_signature=[ROWS])
    def checked(x):
        assert x.sum() > 0, "positive"
        return x * 2

    line = checked.python_function.__code__.co_firstlineno + 2
    with pytest.warns(UserWarning, match=rf"1 run-time check\(s\) \(asserts at .*test_onnx.py:{line}\) are not in "
                                         r"the ONNX model"):
        program = ta.onnx.export(checked, None, torch.ones(2, 3))
    session = ort.InferenceSession(program.model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
    torch.testing.assert_close(torch.from_numpy(session.run(None, {"x": torch.ones(5, 3).numpy()})[0]),
                               torch.full((5, 3), 2.0))


def test_a_model_computing_something_else_is_refused():
    @ta.function(input_signature=[ROWS])
    def plus(x):
        return x + 1

    @ta.function(input_signature=[ROWS])
    def minus(x):
        return x - 1

    other = ta.onnx.export(minus)
    with pytest.raises(ta.onnx.OnnxMismatchError, match=r"__inference_plus_\d+: ONNX Runtime computes output 0 "
                                                        r"differently from the function"):
        ta.onnx.check_numerics(plus.get_concrete_function(), other, [torch.ones(2, 3)])
