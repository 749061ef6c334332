"""DistributedDataParallel training steps inside ta.function match eager DDP, step for step, on 2 gloo processes.

One spawn runs every scenario in both processes (`distributed_harness`); each test asserts on its part. The
trace-time errors run in this process on a one-process gloo group.
"""

import copy
import inspect
import os

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F

import torch_autograph as ta
from torch_autograph.backends import regions

HERE = __file__.rsplit("/", 1)[-1]
pytestmark = pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not available")
STEPS = 12


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(),
                               torch.nn.Linear(16, 2))


def _deep_model():
    """17 ops between DDP's two halves: one region that jit_compile compiles and runs compiled when training."""
    torch.manual_seed(0)
    layers = [torch.nn.Linear(4, 16), torch.nn.Tanh()]
    for _ in range(7):
        layers += [torch.nn.Linear(16, 16), torch.nn.Tanh()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(16, 2))


def _batches(rank, n=STEPS, size=8):
    g = torch.Generator().manual_seed(100 + rank)
    return [(torch.randn(size, 4, generator=g), torch.randn(size, 2, generator=g)) for _ in range(n)]


def _state(model):
    """Parameters (equal on every rank under DDP), then buffers (BatchNorm's running statistics: each rank's)."""
    params = [p.detach().flatten().tolist() for p in model.parameters()]
    return {"params": params, "buffers": [b.flatten().tolist() for b in model.buffers()]}


def _pair(make_model=_model, **ddp_kwargs):
    """Two DDP models from the same init, with their optimizers: one for eager, one for the graph."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    base = make_model()
    models = [DDP(copy.deepcopy(base), **ddp_kwargs) for _ in range(2)]
    opts = [torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9) for m in models]
    return models, opts


def _train_step(model, opt, clip=False):
    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        if clip:  # reads the gradients DDP all-reduced in the backward
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.05)
        opt.step()
        return loss

    return step


# ----- the scenarios, run in each spawned process ---------------------------------------------------------
def _ddp_step(rank, make_model=_model, clip=False, **options):
    (eager_model, graph_model), (eager_opt, graph_opt) = _pair(make_model)
    eager = _train_step(eager_model, eager_opt, clip)
    graph = ta.function(_train_step(graph_model, graph_opt, clip), **options)
    losses = {"eager": [], "graph": []}
    for x, y in _batches(rank):
        losses["eager"].append(eager(x, y).item())
        losses["graph"].append(graph(x, y).item())
    cf = graph.get_concrete_function(x, y)
    names = [n.op.name for n in cf.graph.nodes]
    seen = []
    regions.split(cf.graph, lambda region, grad: seen.append(regions.ops(region.nodes)) or (lambda *a: None))
    return {"losses": losses, "eager": _state(eager_model), "graph": _state(graph_model), "names": names,
            "traces": graph.experimental_get_tracing_count(), "regions": seen, "jit": cf.jit_status}


def _no_sync_accumulation(rank):
    (eager_model, graph_model), (eager_opt, graph_opt) = _pair()

    def make(model, opt):
        def step(x1, y1, x2, y2):
            opt.zero_grad()
            with model.no_sync():  # the first micro-batch's gradient stays local...
                F.mse_loss(model(x1), y1).backward()
            loss = F.mse_loss(model(x2), y2)
            loss.backward()  # ...and is all-reduced with the second's
            opt.step()
            return loss
        return step

    eager, graph = make(eager_model, eager_opt), ta.function(make(graph_model, graph_opt))
    batches = _batches(rank, n=2 * 5)
    losses = {"eager": [], "graph": []}
    for (x1, y1), (x2, y2) in zip(batches[::2], batches[1::2]):
        losses["eager"].append(eager(x1, y1, x2, y2).item())
        losses["graph"].append(graph(x1, y1, x2, y2).item())
    return {"losses": losses, "eager": _state(eager_model), "graph": _state(graph_model)}


def _no_sync_around_the_call(rank):
    """no_sync() entered outside the function: the graph reads DDP's flag when it runs."""
    (eager_model, graph_model), (eager_opt, graph_opt) = _pair()

    def make(model):
        def micro(x, y):
            loss = F.mse_loss(model(x), y)
            loss.backward()
            return loss
        return micro

    eager, graph = make(eager_model), ta.function(make(graph_model))
    batches = _batches(rank, n=6)
    for model, opt, fn in ((eager_model, eager_opt, eager), (graph_model, graph_opt, graph)):
        for (x1, y1), (x2, y2) in zip(batches[::2], batches[1::2]):
            opt.zero_grad()
            with model.no_sync():
                fn(x1, y1)
            fn(x2, y2)
            opt.step()
    return {"eager": _state(eager_model), "graph": _state(graph_model),
            "traces": graph.experimental_get_tracing_count()}


class _TwoHeads(torch.nn.Module):
    """`head_b` gets no gradient when `use_b` is False: DDP must find it unused at every call."""

    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(4, 8)
        self.head_a = torch.nn.Linear(8, 2)
        self.head_b = torch.nn.Linear(8, 2)

    def forward(self, x, use_b: bool):
        h = torch.relu(self.body(x))
        return self.head_b(h) if use_b else self.head_a(h), h


def _find_unused_parameters(rank):
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    base = _TwoHeads()
    models = [DDP(copy.deepcopy(base), find_unused_parameters=True) for _ in range(2)]
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in models]

    def make(model, opt):
        def step(x, y, use_b: bool):
            opt.zero_grad()
            out, hidden = model(x, use_b)
            loss = F.mse_loss(out, y)
            loss.backward()
            opt.step()
            return loss
        return step

    eager, graph = make(models[0], opts[0]), ta.function(make(models[1], opts[1]))
    losses = {"eager": [], "graph": []}
    for i, (x, y) in enumerate(_batches(rank, n=8)):
        use_b = i % 3 == 2
        losses["eager"].append(eager(x, y, use_b).item())
        losses["graph"].append(graph(x, y, use_b).item())
    return {"losses": losses, "eager": _state(models[0]), "graph": _state(models[1]),
            "traces": graph.experimental_get_tracing_count()}


def _static_graph(rank):
    (eager_model, graph_model), (eager_opt, graph_opt) = _pair(static_graph=True)
    eager = _train_step(eager_model, eager_opt)
    graph = ta.function(_train_step(graph_model, graph_opt))
    for x, y in _batches(rank, n=5):
        eager(x, y)
        graph(x, y)
    return {"eager": _state(eager_model), "graph": _state(graph_model)}


def worker(rank, world):
    return {"step": _ddp_step(rank), "no_sync": _no_sync_accumulation(rank),
            "no_sync_outside": _no_sync_around_the_call(rank), "unused": _find_unused_parameters(rank),
            "static": _static_graph(rank), "jit": _ddp_step(rank, _deep_model, jit_compile=True),
            "clip": _ddp_step(rank, clip=True)}


@pytest.fixture(scope="module")
def results(spawned_results):
    """`worker`'s results by rank (the one spawn of tests/conftest.py's `spawned_results` runs it)."""
    return spawned_results[os.path.realpath(__file__)]


def _close(a, b, exact=True):
    if exact:
        assert a == b
    else:
        torch.testing.assert_close(torch.tensor(a), torch.tensor(b), rtol=1e-5, atol=1e-6)


def _same_params_everywhere(results, key, exact=True):
    """Graph and eager DDP hold the same parameters and buffers on each rank, the ranks the same parameters."""
    for r in results:
        for part in ("params", "buffers"):
            assert len(r[key]["eager"][part]) == len(r[key]["graph"][part])
            for a, b in zip(r[key]["eager"][part], r[key]["graph"][part]):
                _close(a, b, exact)
    assert results[0][key]["graph"]["params"]
    for a, b in zip(results[0][key]["graph"]["params"], results[1][key]["graph"]["params"]):
        _close(a, b, exact)


# ----- two processes ---------------------------------------------------------------------------------------
def test_ddp_step_matches_eager_ddp_for_every_step(results):
    for r in results:
        assert r["step"]["losses"]["graph"] == r["step"]["losses"]["eager"]
        assert len(r["step"]["losses"]["graph"]) == STEPS
        assert r["step"]["traces"] == 1
        names = r["step"]["names"]
        assert names.index("ddp_pre_forward") < names.index("linear") < \
            names.index("ddp_post_forward") < names.index("backward")
    assert results[0]["step"]["losses"]["graph"] != results[1]["step"]["losses"]["graph"]  # each rank its data
    _same_params_everywhere(results, "step")


def test_no_sync_accumulates_locally_then_syncs(results):
    for r in results:
        assert r["no_sync"]["losses"]["graph"] == r["no_sync"]["losses"]["eager"]
    _same_params_everywhere(results, "no_sync")


def test_no_sync_around_a_call_is_read_when_the_graph_runs(results):
    _same_params_everywhere(results, "no_sync_outside")
    assert results[0]["no_sync_outside"]["traces"] == 1


def test_find_unused_parameters(results):
    for r in results:
        assert r["unused"]["losses"]["graph"] == r["unused"]["losses"]["eager"]
        assert r["unused"]["traces"] == 2  # one per value of the Python flag
    _same_params_everywhere(results, "unused")


def test_static_graph(results):
    _same_params_everywhere(results, "static")


def test_clipping_reads_the_all_reduced_gradients(results):
    for r in results:
        assert r["clip"]["losses"]["graph"] == r["clip"]["losses"]["eager"]
        assert "grad" in r["clip"]["names"]  # p.grad after the backward: a graph value, read at run time
    _same_params_everywhere(results, "clip")


def test_jit_compile_ddp_step_matches_eager(results):
    for r in results:
        _close(r["jit"]["losses"]["graph"], r["jit"]["losses"]["eager"], exact=False)
        assert "ddp_pre_forward" in r["jit"]["names"]
        assert r["jit"]["jit"] == "compiled"
        # the model between DDP's halves is one region, large enough to run compiled when training
        assert max(r["jit"]["regions"]) >= regions.MIN_TRAINING_REGION_OPS
    _same_params_everywhere(results, "jit", exact=False)


# ----- trace-time errors (one process: the `one_process_group` fixture of tests/conftest.py) ----------------


def test_ddp_mixed_precision_is_refused_at_the_user_line(one_process_group):
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.nn.parallel.distributed import _MixedPrecision

    model = DDP(torch.nn.Linear(4, 2), mixed_precision=_MixedPrecision(param_dtype=torch.float64))

    @ta.function
    def step(x):
        return model(x).sum()

    with pytest.raises(ta.errors.DistributedTracingError) as e:
        step(torch.ones(3, 4))
    msg = str(e.value)
    assert "DistributedDataParallel(Linear) with mixed_precision" in msg
    line = inspect.getsourcelines(step.python_function)[1] + 2
    assert f"{HERE}:{line}" in msg


def test_graph_shows_ddp_halves_around_the_module(one_process_group):
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(4, 2))

    @ta.function
    def predict(x):
        return model(x) * 2

    x = torch.randn(3, 4)
    torch.testing.assert_close(predict(x), model.module(x) * 2)
    text = str(predict.get_concrete_function(x).graph)
    assert "%ddp_pre_forward, = DistributedDataParallel._pre_forward(%x)  -> (float32[3, 4] cpu)" in text
    assert "torch.nn.functional.linear(%ddp_pre_forward, %linear_weight, %linear_bias)" in text
    assert "%ddp_post_forward, = DistributedDataParallel._post_forward(%linear)  -> (float32[3, 2] cpu)" in text
