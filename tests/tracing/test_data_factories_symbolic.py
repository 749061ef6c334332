"""`torch.tensor(x)` / `torch.as_tensor(x)` of an input whose dims are known only when the graph runs (a copy of
it, as `x.clone()`), compared with eager on inputs of several sizes through one trace."""

import warnings

import torch

import torch_autograph as ta


def copies(x):
    y = torch.tensor(x)
    z = torch.as_tensor(x, dtype=torch.float64)
    return y * 2, z.sum(), torch.tensor(x[0]) + 1


def test_tensor_of_an_input_with_a_none_dim():
    traced = ta.function(copies, input_signature=[ta.TensorSpec((None, 2), torch.float32)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's "use clone()" advice for torch.tensor(tensor)
        for x in (torch.ones(3, 2), torch.arange(8.).reshape(4, 2), torch.zeros(1, 2)):
            for got, expected in zip(traced(x), copies(x)):
                assert got.dtype == expected.dtype
                torch.testing.assert_close(got, expected, rtol=0, atol=0)
