"""FSDP2 (`fully_shard`) training steps inside ta.function match eager FSDP2 on 2 gloo processes (CPU).

One spawn runs every scenario in both processes (`distributed_harness`); each test asserts on its part.
"""

import copy
import os

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F

import torch_autograph as ta

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not available")
STEPS = 10


def _base():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 16), torch.nn.Tanh(),
                               torch.nn.Linear(16, 2))


def _sharded_pair(group=False, **shard_kwargs):
    """Two FSDP2 models from the same init (each Linear sharded, or the first two as one group; then the root),
    with their optimizers."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    base = _base()
    models = []
    for _ in range(2):
        m = copy.deepcopy(base)
        if group:  # two modules as one FSDP unit: one all-gather for both
            fully_shard([m[0], m[2]], mesh=mesh, **shard_kwargs)
        for layer in ([] if group else m):
            if isinstance(layer, torch.nn.Linear):
                fully_shard(layer, mesh=mesh, **shard_kwargs)
        fully_shard(m, mesh=mesh, **shard_kwargs)
        models.append(m)
    opts = [torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9) for m in models]
    return models, opts


def _batches(rank, n):
    g = torch.Generator().manual_seed(200 + rank)
    return [(torch.randn(6, 4, generator=g), torch.randn(6, 2, generator=g)) for _ in range(n)]


def _full_params(model):
    return [p.full_tensor().flatten().tolist() for p in model.parameters()]


def _train(rank, clip=False, group=False, **shard_kwargs):
    (eager_model, graph_model), (eager_opt, graph_opt) = _sharded_pair(group, **shard_kwargs)

    def make(model, opt):
        def step(x, y):
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            if clip:  # on the sharded DTensor gradients, read as graph values after the backward
                torch.nn.utils.clip_grad_norm_(model.parameters(), 0.05)
            opt.step()
            return loss
        return step

    eager, graph = make(eager_model, eager_opt), ta.function(make(graph_model, graph_opt))
    losses = {"eager": [], "graph": []}
    for x, y in _batches(rank, STEPS):
        losses["eager"].append(eager(x, y).item())
        losses["graph"].append(graph(x, y).item())
    names = [n.op.name for n in graph.get_concrete_function(x, y).graph.nodes]
    return {"losses": losses, "eager": _full_params(eager_model), "graph": _full_params(graph_model),
            "names": names, "traces": graph.experimental_get_tracing_count(),
            "sharded": [list(p.to_local().shape) for p in graph_model.parameters()]}


def _accumulate(rank):
    (eager_model, graph_model), (eager_opt, graph_opt) = _sharded_pair()

    def make(model, opt):
        def step(x1, y1, x2, y2):
            opt.zero_grad()
            model.set_requires_gradient_sync(False)  # the first micro-batch's gradients stay unsharded, local
            F.mse_loss(model(x1), y1).backward()
            model.set_requires_gradient_sync(True)
            loss = F.mse_loss(model(x2), y2)
            loss.backward()
            opt.step()
            return loss
        return step

    eager, graph = make(eager_model, eager_opt), ta.function(make(graph_model, graph_opt))
    batches = _batches(rank, 8)
    losses = {"eager": [], "graph": []}
    for (x1, y1), (x2, y2) in zip(batches[::2], batches[1::2]):
        losses["eager"].append(eager(x1, y1, x2, y2).item())
        losses["graph"].append(graph(x1, y1, x2, y2).item())
    return {"losses": losses, "eager": _full_params(eager_model), "graph": _full_params(graph_model)}


def worker(rank, world):
    return {"train": _train(rank), "keep_unsharded": _train(rank, reshard_after_forward=False),
            "accumulate": _accumulate(rank), "clip": _train(rank, clip=True), "group": _train(rank, group=True)}


@pytest.fixture(scope="module")
def results(spawned_results):
    """`worker`'s results by rank (the one spawn of tests/conftest.py's `spawned_results` runs it)."""
    return spawned_results[os.path.realpath(__file__)]


def _check(results, key):
    for r in results:
        assert r[key]["losses"]["graph"] == r[key]["losses"]["eager"]
        assert r[key]["graph"] == r[key]["eager"]
    assert results[0][key]["graph"] == results[1][key]["graph"]
    assert results[0][key]["losses"]["graph"] != results[1][key]["losses"]["graph"]  # each rank its own data


def test_fsdp2_step_matches_eager_fsdp2(results):
    _check(results, "train")
    for r in results:
        assert r["train"]["traces"] == 1
        assert len(r["train"]["losses"]["graph"]) == STEPS
        assert r["train"]["sharded"][0] == [8, 4]  # Linear(4, 16).weight: half of the rows on each rank
        names = r["train"]["names"]
        assert names.count("fsdp_pre_forward") == 4 and names.count("fsdp_post_forward") == 4  # root + 3 Linear
        assert names.index("fsdp_pre_forward") < names.index("linear") < names.index("backward")


def test_fsdp2_without_reshard_after_forward(results):
    _check(results, "keep_unsharded")


def test_fsdp2_gradient_accumulation_without_sync(results):
    _check(results, "accumulate")


def test_fsdp2_clip_grad_norm_on_sharded_gradients(results):
    _check(results, "clip")


def test_fsdp2_on_a_group_of_modules(results):
    _check(results, "group")
