"""A bool known only when the graph runs, passed to a C function that takes a Python bool: a graph cond."""

import torch
import torch.nn.functional as F

import torch_autograph as ta


def _decode(x, n):
    for _ in range(n):
        q = x.unsqueeze(1)  # the carried tensor grows: its length is a size symbol
        out = F.scaled_dot_product_attention(q, q, q, is_causal=(x.size(1) > 1))
        x = torch.cat([x, out[:, 0, -1:]], dim=1)
    return x


def test_is_causal_from_a_growing_length_in_a_tensor_loop_equals_eager():
    f = ta.function(_decode)
    for start in (torch.randn(2, 1, 8), torch.randn(2, 3, 8)):
        for n in (0, 1, 3):
            torch.testing.assert_close(f(start, torch.tensor(n)), _decode(start, n))


def test_two_symbolic_bools_in_one_call_equal_eager():
    def body(x, n):
        for _ in range(n):
            q = x.unsqueeze(1)
            big = x.size(1) > 2
            out = F.scaled_dot_product_attention(q, q, q, is_causal=big, enable_gqa=x.size(1) > 1)
            x = torch.cat([x, out[:, 0, -1:]], dim=1)
        return x

    f = ta.function(body)
    x = torch.randn(2, 1, 8)
    torch.testing.assert_close(f(x, torch.tensor(4)), body(x, 4))
