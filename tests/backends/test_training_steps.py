"""jit_compile=True and "auto" on unchanged PyTorch training steps: regions compiled around the staged calls.

`model.train()`, `optimizer.zero_grad()`, `loss.backward()`, `ta.py_function(...)`, `optimizer.step()` and `scheduler.step()` run
as Python between compiled regions; 20 steps match the default backend and eager PyTorch. One small model, so
inductor compiles one forward region (a few seconds; "auto" reuses inductor's cache of the same code).
"""

import shutil

import pytest
import torch
import torch.nn.functional as F

import torch_autograph as ta
from torch_autograph.backends import regions
from torch_autograph.errors import GraphLoweringError
from torch_autograph.graph import Effect, walk_nodes

HERE = __file__.rsplit("/", 1)[-1]
needs_cxx = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                               reason="inductor on CPU needs a C++ compiler")


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 16), torch.nn.GELU(),
                               torch.nn.Linear(16, 3))


def _trainer():
    model = _model()
    opt = torch.optim.AdamW(model.parameters(), lr=0.02, weight_decay=0.1)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=20)

    def step(x, y):
        model.train()  # staged too: a mode change the graph replays
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y) * 0.5 + 0.1  # one region: the forward and the loss
        loss.backward()
        ta.py_function(lambda: torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5))
        opt.step()
        sched.step()
        return loss

    return model, step


def _data(n=20):
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(32, 6, generator=g), torch.randint(0, 3, (32,), generator=g)) for _ in range(n)]


def _run(step, model, data):
    losses = [step(x, y).detach() for x, y in data]
    return torch.stack(losses), [p.detach().clone() for p in model.parameters()]


def test_staged_calls_are_never_in_a_region():
    model, step = _trainer()
    f = ta.function(step)
    graph = f.get_concrete_function(*_data(1)[0]).graph
    seen = []
    split = regions.split(graph, lambda region, grad: seen.append(region) or (lambda *a: None))
    assert len(seen) == 1 and [n.op.name for n in seen[0].nodes][:2] == ["linear", "tanh"]
    for region in seen:
        assert not any(n.op.runs_autograd or n.op.effects & Effect.RUNS_PYTHON for n in walk_nodes(region))
    names = [n.op.name for n in split.nodes]  # in program order, around the one region
    assert names[:5] == ["Sequential.train", "AdamW.zero_grad", "region", "backward", "<lambda>"]
    assert names[5].endswith(".step") and names[6:] == ["CosineAnnealingLR.step"]


def test_to_fx_names_the_staged_call_it_cannot_lower():
    model, step = _trainer()
    f = ta.function(step)
    cf = f.get_concrete_function(*_data(1)[0])
    line = step.__code__.co_firstlineno + 1
    with pytest.raises(GraphLoweringError, match=rf"cannot lower the call Sequential.train at File "
                                                 rf"\".*{HERE}\", line {line} to torch.fx: it runs Python at every call"):
        cf.to_fx()


@pytest.fixture
def compile_small_regions(monkeypatch):
    # The forward region has 8 ops: compiled also for training calls (AOT autograd), not only past 16 ops.
    monkeypatch.setattr(regions, "MIN_TRAINING_REGION_OPS", 1)


@needs_cxx
@pytest.mark.parametrize("jit", [True, "auto"])
def test_training_step_compiles_around_staged_calls_and_matches_the_default_backend(jit, compile_small_regions):
    data = _data()
    eager_model, eager_step = _trainer()
    want_losses, want_params = _run(eager_step, eager_model, data)
    default_model, default_step = _trainer()
    default_losses, default_params = _run(ta.function(default_step), default_model, data)
    assert torch.equal(default_losses, want_losses)  # the default backend runs eager's ops

    old = ta.config.get_jit_threshold()
    ta.config.set_jit_threshold(2)
    try:
        model, step = _trainer()
        f = ta.function(step, jit_compile=jit)
        losses = []
        for i, (x, y) in enumerate(data):
            losses.append(f(x, y).detach())
            if jit == "auto" and i == 1:  # call 2 gave the regions their examples and started their compile
                cf = f.concrete_functions[0]
                assert cf.wait_for_compile(240) and cf.jit_status == "compiled"
    finally:
        ta.config.set_jit_threshold(old)
    params = [p.detach() for p in model.parameters()]
    # inductor's kernels may round differently from eager's: float32 tolerance over 20 AdamW steps
    torch.testing.assert_close(torch.stack(losses), default_losses)
    torch.testing.assert_close(params, default_params)
    source = f.concrete_functions[0].graph.python_source
    assert source.count("compiled with inductor:") == 1
    assert f.experimental_get_tracing_count() == 1


@needs_cxx
def test_jit_traces_and_compiles_once_per_autocast_state_around_the_call():
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 8)

    def f(x):
        return (torch.tanh(lin(x)) * 2.0 + 1.0).sin().sum(-1)

    g = ta.function(f, jit_compile=True)
    x = torch.randn(4, 8)
    with torch.no_grad():
        for enabled in (True, False, True):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=enabled):
                got, want = g(x), f(x)
            assert got.dtype == want.dtype == (torch.bfloat16 if enabled else torch.float32)
            # inductor keeps bf16 intermediates in float32 where eager rounds each op: bf16 tolerance
            torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)
    # The autocast around the call decides the dtypes the trace sees: one trace per state, reused.
    assert g.experimental_get_tracing_count() == 2
    assert "autocast around the call cpu bfloat16 -> off" in str(g.trace_history()[1])


def test_the_forward_regions_of_micro_batches_share_one_runner():
    from torch_autograph.backends import inductor

    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(xs, ys, scale):
        opt.zero_grad()
        for x, y in zip(xs, ys):  # gradient accumulation: the same forward on each micro-batch
            loss = F.cross_entropy(model(x), y) * scale + 0.1
            loss.backward()
        last = (F.cross_entropy(model(xs[0]), ys[0]) * 0.25 + 0.1).detach()  # another constant: its own region
        opt.step()
        return last

    data = _data(3)
    xs, ys = [x for x, _ in data], [y for _, y in data]
    graph = ta.function(step).get_concrete_function(xs, ys, 0.5).graph
    seen = []
    regions.split(graph, lambda region, grad: seen.append(region) or (lambda *a: None))
    keys = [regions.structure(r, None) for r in seen]
    assert len(seen) == 4 and keys[0] == keys[1] == keys[2] != keys[3]
    _, runners = inductor._compile_split(graph, False, True, tiered=True)  # tiered: nothing compiles here
    assert len(runners) == 2
