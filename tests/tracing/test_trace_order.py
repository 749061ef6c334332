"""What a trace gives never depends on what was traced before in the process (the metadata memo is shared).

Each program is traced alone (memo emptied) and after others that fill the
memo with the same ops, and compared with eager PyTorch both times.
"""

import torch
import torch.nn.functional as F

import torch_autograph as ta
from torch_autograph.tracing import meta

torch.manual_seed(0)
LIN = torch.nn.Linear(4, 4)
CONV = torch.nn.Conv2d(2, 2, 3, padding=1)


def inplace_relu_on_a_layer_output(x):
    y = LIN(x)
    return F.relu(y, inplace=True) * 2, F.leaky_relu(LIN(x), 0.2, inplace=True)


def dcgan_like_block(x):  # pytorch/examples dcgan: Conv -> LeakyReLU(inplace=True)
    h = F.leaky_relu(CONV(x), 0.2, inplace=True)
    return F.leaky_relu(CONV(h), 0.2, inplace=True).mean()


def inplace_add_on_op_result(x):
    y = LIN(x) * 2
    y.add_(1)
    y.sub_(LIN(x))
    return y.sum()


def warm_up(x):
    return F.relu(LIN(x)).sum() + torch.tanh(LIN(x)).sum()


def warm_up_conv(x):
    return F.leaky_relu(CONV(x), 0.2).sum()


def eager_and_grads(fn, x):
    LIN.zero_grad()
    CONV.zero_grad()
    out = fn(x)
    total = sum(o.sum() for o in (out if isinstance(out, tuple) else (out,)))
    total.backward()
    return out, [p.grad.clone() for p in (*LIN.parameters(), *CONV.parameters()) if p.grad is not None]


def check(fn, x):
    expected = eager_and_grads(fn, x)
    got = eager_and_grads(ta.function(fn), x)
    torch.testing.assert_close(got, expected)


def test_results_do_not_depend_on_what_was_traced_before():
    programs = [(inplace_relu_on_a_layer_output, torch.randn(3, 4)), (dcgan_like_block, torch.randn(1, 2, 5, 5)),
                (inplace_add_on_op_result, torch.randn(2, 4))]
    for fn, x in programs:
        meta.memo._entries.clear()
        check(fn, x)  # alone
        ta.function(warm_up)(torch.randn(3, 4))
        ta.function(warm_up)(torch.randn(2, 4))
        ta.function(warm_up_conv)(torch.randn(1, 2, 5, 5))
        check(fn, x)  # after others
        check(fn, x + 1)  # and on another input
