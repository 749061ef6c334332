"""Random sequences of module edits between calls, each call of the `ta.function` compared with eager.

The class of bug the guards on modules close: a trace that keeps computing with objects the caller has replaced.
Each program builds a small model tree (a Sequential holding Linears, an activation, a ModuleList and a module
with a buffer), then alternates calls with an edit drawn at random: a replaced submodule, parameter or buffer,
`load_state_dict` with and without `assign`, an in-place update through `.data`, an appended or deleted layer.
After every edit the next call must equal eager exactly (the trace is read by reference or traced again).
"""

import random

import pytest
import torch
import torch.nn as nn

import torch_autograph as ta

N_PROGRAMS = 15  # in `make test`; `make test-slow` runs 300 more
N_SLOW = 300
CALLS = 6


class Scaled(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.register_buffer("scale", torch.rand(width) + 0.5)
        self.inner = nn.Linear(width, width)

    def forward(self, x):
        return self.inner(x) * self.scale


def _model(rng):
    w = 3
    blocks = nn.ModuleList([nn.Linear(w, w) for _ in range(rng.randint(1, 3))])
    return nn.Sequential(nn.Linear(w, w), nn.Tanh(), Scaled(w)), blocks


def _edit(rng, seq, blocks):
    w = 3
    kind = rng.choice(["sub", "param", "buffer", "assign", "load", "data", "append", "delete", "none", "bias"])
    if kind == "sub":
        seq[rng.choice([0, 1])] = nn.Linear(w, w) if rng.random() < 0.5 else nn.ReLU()
    elif kind == "param":
        target = rng.choice([seq[2].inner, *blocks])
        target.weight = nn.Parameter(torch.randn(w, w))
    elif kind == "buffer":
        seq[2].scale = torch.rand(w)
    elif kind in ("assign", "load"):
        sd = {k: torch.randn_like(v) for k, v in seq.state_dict().items()}
        seq.load_state_dict(sd, assign=kind == "assign")
    elif kind == "data":
        with torch.no_grad():
            rng.choice(list(seq.parameters())).data.mul_(-1.5)
    elif kind == "append":
        blocks.append(nn.Linear(w, w))
    elif kind == "delete" and len(blocks) > 1:
        del blocks[rng.randrange(len(blocks))]
    elif kind == "bias":
        lin = rng.choice(list(blocks))
        lin.bias = None if lin.bias is not None else nn.Parameter(torch.randn(w))
    return kind


@pytest.mark.parametrize("seed", [*range(N_PROGRAMS), *(pytest.param(s, marks=pytest.mark.slow)
                                                       for s in range(N_PROGRAMS, N_PROGRAMS + N_SLOW))])
def test_module_edits_between_calls_give_eager_results(seed):
    rng = random.Random(seed)
    torch.manual_seed(seed)
    seq, blocks = _model(rng)

    def fn(x):
        h = seq(x)
        for b in blocks:
            h = torch.relu(b(h))
        return h

    f = ta.function(fn)
    x = torch.randn(2, 3)
    edits = []
    for _ in range(CALLS):
        torch.testing.assert_close(f(x), fn(x), rtol=0, atol=0, msg=lambda m: f"after {edits}: {m}")
        edits.append(_edit(rng, seq, blocks))
    torch.testing.assert_close(f(x), fn(x), rtol=0, atol=0, msg=lambda m: f"after {edits}: {m}")
