"""FSDP2 with jit_compile=True: the model between FSDP's hook nodes compiled by inductor, equal to eager FSDP2.

Marked `slow` (inductor compiles a training region in each of the 2 spawned processes): `make test-slow`.
"""

import copy

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F
from distributed_harness import run_spawned

import torch_autograph as ta
from torch_autograph.backends import regions

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not available")]


def _deep():
    torch.manual_seed(0)
    layers = [torch.nn.Linear(4, 16), torch.nn.Tanh()]
    for _ in range(7):
        layers += [torch.nn.Linear(16, 16), torch.nn.Tanh()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(16, 2))


def worker(rank, world):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cpu", (world,))
    base = _deep()
    models = [fully_shard(copy.deepcopy(base), mesh=mesh) for _ in range(2)]  # one FSDP unit: one region
    opts = [torch.optim.Adam(m.parameters(), lr=0.01) for m in models]

    def make(model, opt):
        def step(x, y):
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss
        return step

    eager, graph = make(models[0], opts[0]), ta.function(make(models[1], opts[1]), jit_compile=True)
    g = torch.Generator().manual_seed(rank)
    losses = {"eager": [], "graph": []}
    for _ in range(6):
        x, y = torch.randn(8, 4, generator=g), torch.randn(8, 2, generator=g)
        losses["eager"].append(eager(x, y).item())
        losses["graph"].append(graph(x, y).item())
    cf = graph.get_concrete_function(x, y)
    seen = []
    regions.split(cf.graph, lambda region, grad: seen.append(regions.ops(region.nodes)) or (lambda *a: None))
    params = [[p.full_tensor().flatten().tolist() for p in m.parameters()] for m in models]
    return {"losses": losses, "eager": params[0], "graph": params[1], "status": cf.jit_status, "regions": seen}


def test_fsdp2_jit_compile_matches_eager_fsdp2():
    results = run_spawned(worker, nprocs=2, timeout=400)
    for r in results:
        assert r["status"] == "compiled" and max(r["regions"]) >= regions.MIN_TRAINING_REGION_OPS
        torch.testing.assert_close(torch.tensor(r["losses"]["graph"]), torch.tensor(r["losses"]["eager"]))
        for a, b in zip(r["graph"], r["eager"]):
            torch.testing.assert_close(torch.tensor(a), torch.tensor(b), rtol=1e-5, atol=1e-6)
    assert results[0]["graph"] == results[1]["graph"]
