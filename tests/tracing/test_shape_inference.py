"""Shape inference: metadata from meta tensors, the memo cache, data-dependent shapes."""

import torch

import torch_autograph as ta
from torch_autograph.tracing import shape_inference
from torch_autograph.graph import Value, ValueKind
from torch_autograph.tracing.shape_inference import Meta, ShapeInference


def _v(shape, dtype=torch.float32):
    return Value("v", dtype, shape, torch.device("cpu"))


def test_infers_dtype_shape_device():
    si = ShapeInference()
    out = si.infer(torch.matmul, (_v((5, 3)), _v((3, 2))), {}, None)
    assert out == Meta(torch.float32, (5, 2), torch.device("cpu"))


def test_none_dims_propagate():
    si = ShapeInference()
    assert si.infer(torch.cat, ([_v((None, 3)), _v((2, 3))],), {}, None).shape == (None, 3)
    assert si.infer(torch.sum, (_v((None, 3)),), {"dim": 0}, None).shape == (3,)


def test_memo_cache_hits_for_the_same_signature(monkeypatch):
    si = ShapeInference()
    calls = []
    real = shape_inference._run

    def counting_run(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(shape_inference, "_run", counting_run)
    first = si.infer(torch.relu, (_v((4, 4)),), {}, None)
    n = len(calls)
    assert n >= 1
    second = si.infer(torch.relu, (Value("other_name", torch.float32, (4, 4), torch.device("cpu")),), {}, None)
    assert second is first and len(calls) == n  # a hit: the op did not run again
    si.infer(torch.relu, (_v((4, 5)),), {}, None)
    assert len(calls) > n  # a new shape misses


def test_metadata_only_results_are_python_values():
    si = ShapeInference()
    assert si.infer(torch.Tensor.dim, (_v((2, 3)),), {}, None) == 2
    scalar = si.infer(torch.Tensor.size, (_v((None, 3)), 0), {}, None)
    assert scalar.kind is ValueKind.SCALAR and scalar.dtype is torch.int64


def _data_dependent(x):
    return (torch.nonzero(x > 0), torch.masked_select(x, x > 0), torch.unique(torch.round(x)), x[x > 0],
            torch.argwhere(x < 0), x[x > 0].sum())


def test_data_dependent_ops_give_none_dims_and_run_correctly():
    x = torch.randn(3, 4)
    cf = ta.function(_data_dependent, autograph=False).get_concrete_function(x)
    shapes = [v.shape for v in cf.outputs]
    assert shapes == [(None, 2), (None,), (None,), (None,), (None, 2), ()]
    for inp in (x, torch.randn(3, 4), torch.zeros(3, 4), torch.ones(3, 4)):
        torch.testing.assert_close(cf(inp), _data_dependent(inp))


def test_data_dependent_result_does_not_disturb_the_random_generator():
    traced = ta.function(lambda x: torch.unique(x) + torch.rand(1), autograph=False)
    x = torch.tensor([3.0, 1.0, 3.0])
    torch.manual_seed(5)
    got = traced(x)
    torch.manual_seed(5)
    torch.testing.assert_close(got, torch.unique(x) + torch.rand(1))
