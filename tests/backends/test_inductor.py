"""The jit_compile backend: values and gradients vs eager, per-call state updates, the error and the fallback.

Inductor compiles take seconds: the compiled function is built once per module (fixture) and shared, and
the error / fallback tests fail at lowering, before any compile.
"""

import shutil
import threading
import types
import warnings

import numpy
import pytest
import torch

import torch_autograph as ta
from torch_autograph.backends import inductor, tiering
from torch_autograph.errors import GraphLoweringError
from torch_autograph.graph import ValueKind

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="inductor on CPU needs a C++ compiler")

torch.manual_seed(0)
LIN = torch.nn.Linear(4, 3)
CALLS = ta.Variable(0.0, trainable=False)


def _loss(x):
    CALLS.assign_add(1.0)  # an in-place update of a capture, at every call of the compiled graph
    h = torch.tanh(LIN(x))
    return (h * h).sum() + x.sum(), h


@pytest.fixture(scope="module")
def jitted():
    return ta.function(_loss, jit_compile=True)


def _eager_grads(x):
    x = x.detach().clone().requires_grad_()
    LIN.zero_grad()
    loss, h = _loss(x)
    loss.backward()
    return loss.detach(), h.detach(), x.grad, LIN.weight.grad.clone(), LIN.bias.grad.clone()


def test_values_and_gradients_match_eager(jitted):
    x = torch.randn(5, 4)
    want = _eager_grads(x)
    xg = x.clone().requires_grad_()
    LIN.zero_grad()
    loss, h = jitted(xg)
    assert loss.requires_grad and h.requires_grad
    loss.backward()
    torch.testing.assert_close((loss.detach(), h.detach(), xg.grad, LIN.weight.grad, LIN.bias.grad), want)
    assert "compile" not in jitted.concrete_functions[0].graph.python_source.splitlines()[0]  # the fx code


def test_captures_are_read_and_written_by_reference_at_every_call(jitted):
    x = torch.randn(5, 4, requires_grad=True)
    jitted(x)  # compiled (shared with the test above when it ran first)
    before = CALLS.numpy().item()
    for _ in range(3):
        jitted(x)
    assert CALLS.numpy().item() == before + 3
    with torch.no_grad():
        LIN.bias.add_(1.0)  # an optimizer-style update is seen by the next call
    try:
        torch.testing.assert_close(jitted(x)[1], torch.tanh(LIN(x)))
    finally:
        with torch.no_grad():
            LIN.bias.sub_(1.0)
    assert jitted.experimental_get_tracing_count() == 1


W = torch.randn(4, 4) * 0.5


def _loops(x, n, m):
    steps = 0
    rows = []
    for i in range(n):  # a graph loop (n is a tensor) with a SCALAR counter, a list and a break
        x = torch.tanh(x @ W) * 0.9 + torch.sin(x) - 0.1
        for k in range(m):  # a nested graph loop
            x = x * 0.5 + torch.cos(x) * 0.25 - x.mean()
            steps += 1
        rows.append(x.sum(0))
        if x.sum() > 3.0:
            break
    while x.norm() > 0.5:  # a loop on a tensor condition, 1-op body: left on Python code
        x = x * 0.6
    assert x.norm() <= 0.5
    return torch.stack(rows), x, steps


@pytest.fixture(scope="module")
def jitted_loops():
    with pytest.MonkeyPatch.context() as mp:  # compiled regions also for calls recording autograd (AOT autograd)
        from torch_autograph.backends import regions

        mp.setattr(regions, "MIN_TRAINING_REGION_OPS", 1)
        f = ta.function(_loops, jit_compile=True)
        f.get_concrete_function(torch.randn(3, 4), torch.tensor(1), torch.tensor(1))  # split when traced
    return f


def _values_and_grads(f, x, *args):
    x = x.detach().clone().requires_grad_()
    rows, y, steps = f(x, *args)
    (rows.sum() + (y * y).sum()).backward()
    return rows.detach(), y.detach(), int(steps), x.grad


def test_loops_lists_breaks_and_asserts_compile_in_regions_and_match_eager(jitted_loops):
    x = torch.randn(3, 4)
    for n, m in ((4, 2), (3, 1), (0, 2)):  # one trace: n and m are tensors
        if n == 0:
            with pytest.raises(Exception, match="stack expects a non-empty"):  # as eager: no rows to stack
                jitted_loops(x, torch.tensor(n), torch.tensor(m))
            continue
        got = _values_and_grads(jitted_loops, x, torch.tensor(n), torch.tensor(m))
        torch.testing.assert_close(got, _values_and_grads(_loops, x, n, m))
    with torch.no_grad():  # inference variants of the same regions
        got = jitted_loops(x, torch.tensor(4), torch.tensor(2))
    torch.testing.assert_close((got[0], got[1], int(got[2])), _values_and_grads(_loops, x, 4, 2)[:3])
    assert jitted_loops.experimental_get_tracing_count() == 2  # the no_grad trace
    source = jitted_loops.concrete_functions[0].graph.python_source
    assert source.count("compiled with inductor:") == 2  # the two loop bodies; the rest is Python
    assert "while True:" in source and "_check" in source
    with pytest.raises(ta.errors.InvalidArgumentError, match="assertion failed"):
        jitted_loops(torch.full((3, 4), float("nan")), torch.tensor(1), torch.tensor(1))


def test_split_graph_is_valid_and_keeps_small_runs_as_python():
    from torch_autograph.backends import regions

    graph = ta.function(_loops).get_concrete_function(torch.randn(3, 4), torch.tensor(2), torch.tensor(2)).graph
    made = []
    split = regions.split(graph, lambda g, grad: made.append(g) or (lambda *a: None))
    split.verify()
    assert [len(g.nodes) for g in made] == [6, 6]
    assert [[v.name for v in g.outputs] for g in made] == [[made[0].nodes[-1].outputs[0].name],
                                                           [made[1].nodes[-1].outputs[0].name]]
    assert all(v.kind is ValueKind.TENSOR for g in made for v in g.inputs)
    assert [c for _, c in made[0].captures] == [W]  # a capture stays a capture of its region


HITS = ta.Variable(0.0, trainable=False)


def _stateful_cond(x):
    h = torch.tanh(LIN(x)) * 2.0 - 0.5
    if h.sum() > 0:  # a state update in a branch: no torch.cond, a Python `if`
        HITS.assign_add(1.0)
        y = torch.sigmoid(h) * h + 1.0 - torch.cos(h)
    else:
        y = h - 1.0
    assert y.abs().max() < 100.0, "y is too large"
    return (y * y).sum() + x.sum(), y


def test_a_cond_with_state_runs_as_python_if_with_gradients_and_updates():
    f = ta.function(_stateful_cond, jit_compile=True)
    for x in (torch.randn(5, 4) + 3.0, torch.randn(5, 4) - 3.0):
        hits = HITS.numpy().item()
        want_taken = bool(torch.tanh(LIN(x)).mul(2.0).sub(0.5).sum() > 0)
        xg = x.clone().requires_grad_()
        LIN.zero_grad()
        loss, y = f(xg)
        loss.backward()
        got = (loss.detach(), y.detach(), xg.grad, LIN.weight.grad.clone())
        assert HITS.numpy().item() == hits + want_taken
        HITS.assign(hits)
        xg = x.clone().requires_grad_()
        LIN.zero_grad()
        loss, y = _stateful_cond(xg)
        loss.backward()
        torch.testing.assert_close(got, (loss.detach(), y.detach(), xg.grad, LIN.weight.grad.clone()))
        HITS.assign(hits + want_taken)
    assert f.experimental_get_tracing_count() == 1


def _train_steps(model, opt, x, y, n):
    loss = torch.zeros(())
    for _ in range(n):  # a training loop inside the graph: autograd runs in Python between regions
        with ta.GradientTape() as tape:
            loss = ((torch.tanh(model(x)) * 2.0 - y) ** 2).mean()
        params = list(model.parameters())
        opt.apply_gradients(zip(tape.gradient(loss, params), params))
    return loss


def test_a_self_differentiating_graph_with_a_loop_matches_the_default_backend():
    torch.manual_seed(1)
    models = [torch.nn.Linear(4, 2) for _ in range(2)]
    models[1].load_state_dict(models[0].state_dict())
    x, y = torch.randn(8, 4), torch.randn(8, 2)
    opts = [ta.optimizers.SGD(0.1) for _ in models]
    fs = [ta.function(lambda x, y, n, m=m, o=o: _train_steps(m, o, x, y, n), jit_compile=jit)
          for m, o, jit in zip(models, opts, (False, True))]
    for n in (3, 2):
        torch.testing.assert_close(fs[1](x, y, torch.tensor(n)), fs[0](x, y, torch.tensor(n)))
        torch.testing.assert_close(list(models[1].parameters()), list(models[0].parameters()))
    assert "compiled with inductor:" in fs[1].concrete_functions[0].graph.python_source


def _unique_in_loop(x, n):
    for _ in range(n):
        x = torch.unique(torch.sin(x * 2.0) + 1.0).mean() + torch.cos(x) * 0.5
    return x


def test_a_region_with_a_data_dependent_size_compiles_with_symbols():
    # Compiled from fake inputs with a shape environment, inductor gives `unique`'s length a size symbol.
    f = ta.function(_unique_in_loop, jit_compile=True)
    for x, n in [(torch.ones(3), torch.tensor(2)), (torch.tensor([1.0, 2.0, 2.0, 5.0]), torch.tensor(3))]:
        torch.testing.assert_close(f(x, n), _unique_in_loop(x, n))


def test_a_region_inductor_cannot_compile_is_a_clear_error_when_strict(monkeypatch):
    _refuse_to_compile(monkeypatch)
    monkeypatch.setattr(ta.config._config, "jit_strict", True)  # else: the default backend, with a warning
    f = ta.function(_unique_in_loop, jit_compile=True)
    line = _unique_in_loop.__code__.co_firstlineno + 2
    with pytest.raises(GraphLoweringError) as e:
        f(torch.ones(3), torch.tensor(2))
    msg = str(e.value)
    assert "inductor could not compile the region %mul .. %add_1 of graph _unique_in_loop" in msg
    assert f'test_inductor.py", line {line}' in msg and "RuntimeError: no kernel for this op" in msg


@pytest.fixture
def jit_threshold():
    """Set the jit_compile="auto" threshold for the test (read when a trace is made), then restore it."""
    old = ta.config.get_jit_threshold()
    yield ta.config.set_jit_threshold
    ta.config.set_jit_threshold(old)


def _counting_loop(x):
    while x.sum() < 100:
        HITS.assign_add(1.0)  # a side effect: "auto" cannot run it on a copy of the arguments
        x = x * 2
    return x


def _refuse_to_compile(monkeypatch):
    """Make every inductor compile fail (as one of an op inductor has no lowering for would)."""
    import torch._inductor.compile_fx as compile_fx_module

    def refuse(gm, inputs):
        raise RuntimeError("no kernel for this op")

    monkeypatch.setattr(compile_fx_module, "compile_fx", refuse)


def test_auto_falls_back_with_one_warning(jit_threshold, monkeypatch):
    _refuse_to_compile(monkeypatch)
    jit_threshold(1)  # every trace starts its background compile at its first call
    f = ta.function(_unique_in_loop, jit_compile="auto")
    line = _unique_in_loop.__code__.co_firstlineno + 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for x in (torch.ones(3), torch.ones(2), torch.ones(5)):  # three traces, one warning
            torch.testing.assert_close(f(x, torch.tensor(2)), _unique_in_loop(x, 2))
        assert not any(cf.wait_for_compile(60) for cf in f.concrete_functions)
    msgs = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(msgs) == 1, msgs
    assert "ta.function _unique_in_loop: jit_compile='auto' falls back to the default backend" in msgs[0]
    assert "inductor could not compile the region %mul .. %add_1" in msgs[0] and f"line {line}" in msgs[0]
    assert [cf.jit_status for cf in f.concrete_functions] == ["failed"] * 3
    torch.testing.assert_close(f(torch.ones(3), torch.tensor(2)), _unique_in_loop(torch.ones(3), 2))
    assert f.experimental_get_tracing_count() == 3


def test_auto_keeps_the_default_backend_when_no_region_is_worth_compiling(jit_threshold):
    jit_threshold(1)
    f = ta.function(_counting_loop, jit_compile="auto")
    hits = HITS.numpy().item()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing failed: no warning
        for x in (torch.ones(3), torch.ones(2), torch.full((5,), 0.5)):
            torch.testing.assert_close(f(x), _with_loop(x))
        assert not any(cf.wait_for_compile(30) for cf in f.concrete_functions)
    assert [cf.jit_status for cf in f.concrete_functions] == ["kept default"] * 3
    iterations = [int(torch.log2(100 / x.sum()).ceil()) for x in (torch.ones(3), torch.ones(2), torch.full((5,), 0.5))]
    assert HITS.numpy().item() == hits + sum(iterations)  # once per iteration of a call, no more
    HITS.assign(hits)


def _with_loop(x):
    while x.sum() < 100:
        x = x * 2
    return x


@pytest.mark.parametrize("faster", [False, True], ids=["compiled_slower", "compiled_faster"])
def test_auto_installs_the_compiled_code_only_when_it_times_faster_on_the_callers_calls(jit_threshold, trial,
                                                                                        faster, monkeypatch):
    # Every timing is taken on the caller's thread: on the compiling thread, OpenMP's two thread teams share
    # the cores and every candidate times slower (the frozen P3j MLP, 2x faster than the default on the
    # caller's thread, timed no faster there).
    from torch_autograph.backends import tiering

    timed_on = []
    clock = tiering.time.perf_counter
    monkeypatch.setattr(tiering, "time", types.SimpleNamespace(
        perf_counter=lambda: timed_on.append(threading.current_thread()) or clock()))
    jit_threshold(1)
    trial.keep(faster)
    f = ta.function(lambda x: torch.sin(x) * 2.0 + 1.0, jit_compile="auto")
    x = torch.randn(8)
    want = f(x)
    cf = f.concrete_functions[0]
    assert cf.wait_for_compile(120) and cf.jit_status == "compiled"  # compiled, on trial
    trial.finish(cf, lambda: torch.testing.assert_close(f(x), want))  # default and compiled in turn, timed
    assert cf.jit_status == ("compiled" if faster else "kept default")
    assert (cf._fn is cf._compiled.default_fn) is not faster
    assert cf._compiled.trial_timings[0][0] == "default" and len(cf._compiled.trial_timings) >= 2
    assert timed_on and set(timed_on) == {threading.current_thread()}
    torch.testing.assert_close(f(x), want)


@pytest.mark.parametrize("faster", [False, True], ids=["compiled_slower", "compiled_faster"])
def test_auto_splits_control_flow_and_installs_the_compiled_regions_only_when_faster(jit_threshold, trial, faster):
    jit_threshold(2)
    trial.keep(faster)
    f = ta.function(_loops, jit_compile="auto")
    x, n, m = torch.randn(3, 4), torch.tensor(6), torch.tensor(4)
    want = _values_and_grads(_loops, x, 6, 4)
    torch.testing.assert_close(_values_and_grads(f, x, n, m), want)
    torch.testing.assert_close(_values_and_grads(f, x, n, m), want)  # starts the compile
    cf = f.concrete_functions[0]
    assert cf.wait_for_compile(240)
    trial.finish(cf, lambda: _values_and_grads(f, x, n, m))
    assert cf.jit_status == ("compiled" if faster else "kept default")
    assert (cf._fn is cf._compiled.default_fn) is not faster
    torch.testing.assert_close(_values_and_grads(f, x, n, m), want)
    assert f.experimental_get_tracing_count() == 1


def test_auto_is_tiered_same_values_and_gradients_before_and_after_the_swap(jit_threshold, trial, monkeypatch):
    jit_threshold(3)
    trial.keep(True)
    release = threading.Event()
    real_compiled = tiering.Tiered._compiled

    def held_back(self, example, effect, freeze):  # the compile waits until the test has made calls meanwhile
        assert release.wait(60)
        return real_compiled(self, example, effect, freeze)

    monkeypatch.setattr(tiering.Tiered, "_compiled", held_back)
    f = ta.function(_loss, jit_compile="auto")
    x = torch.randn(5, 4)

    def run(x):
        xg = x.clone().requires_grad_()
        LIN.zero_grad()
        loss, h = f(xg)
        loss.backward()
        return loss.detach(), h.detach(), xg.grad, LIN.weight.grad.clone(), LIN.bias.grad.clone()

    before = [run(x), run(x)]
    cf = f.concrete_functions[0]
    assert cf.jit_status == "default" and cf._fn is not cf._compiled.default_fn  # counting
    calls = CALLS.numpy().item()
    run(x)  # the 3rd call starts the compile and returns without waiting for it
    assert cf.jit_status == "compiling" and cf._fn is cf._compiled.default_fn  # no counting any more
    for _ in range(3):  # calls keep running on the default backend while the compile is under way
        torch.testing.assert_close(run(x), before[0])
    release.set()
    assert cf.wait_for_compile(120) and cf.jit_status == "compiled"
    assert cf._fn is not cf._compiled.default_fn and cf._compiled.calls == 3
    after = run(x)
    torch.testing.assert_close(after, before[0])
    torch.testing.assert_close(before[1], before[0])
    assert CALLS.numpy().item() == calls + 2 + 3  # the capture update runs at every call, either tier


def test_jit_threshold_must_be_positive():
    with pytest.raises(ValueError, match="at least 1"):
        ta.config.set_jit_threshold(0)


def test_jit_compile_rejects_other_values():
    with pytest.raises(ValueError, match="jit_compile must be False, True or 'auto'"):
        ta.function(_loss, jit_compile="yes")


def test_freeze_captures_needs_jit_compile_and_a_bool():
    with pytest.raises(ValueError, match="freeze_captures=True .* needs jit_compile=True or 'auto'"):
        ta.function(_loss, freeze_captures=True)
    with pytest.raises(ValueError, match="freeze_captures must be None, False or True, got 'yes'"):
        ta.function(_loss, jit_compile=True, freeze_captures="yes")


def test_frozen_captures_are_compiled_again_by_reference_after_an_update():
    torch.manual_seed(1)
    mlp = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    x = torch.randn(3, 8)
    f = ta.function(lambda x: mlp(x), jit_compile=True, freeze_captures=True)
    with torch.no_grad():
        # Another GEMM kernel than eager's: equal to rounding, not bitwise.
        torch.testing.assert_close(f(x), mlp(x))
        runner_calls = f(x), f(x)  # the frozen code, repeated
        torch.testing.assert_close(runner_calls[0], runner_calls[1], rtol=0, atol=0)
        mlp[0].weight.mul_(2.0)  # in place: the version counter moves, so the frozen code is thrown away
        torch.testing.assert_close(f(x), mlp(x))
        mlp[2].bias.data = torch.full((2,), 5.0)  # a new storage: the data pointer moves
        torch.testing.assert_close(f(x), mlp(x))
    # Optimizer steps on the same weights (by reference now) are seen too.
    opt = torch.optim.SGD(mlp.parameters(), lr=0.5)
    mlp(x).square().sum().backward()
    opt.step()
    with torch.no_grad():
        torch.testing.assert_close(f(x), mlp(x))
    # Under grad mode nothing is frozen: values and gradients as eager.
    xg = x.clone().requires_grad_()
    out = f(xg)
    out.sum().backward()
    xe = x.clone().requires_grad_()
    mlp(xe).sum().backward()
    torch.testing.assert_close(out, mlp(x))
    torch.testing.assert_close(xg.grad, xe.grad)


_WRITES = {
    "data_mul_": lambda m: m[0].weight.data.mul_(2.0),  # in place through `.data`: a version counter of its own
    "data_view_fill_": lambda m: m[0].weight.data[1].fill_(3.0),  # a view of that tensor
    "data_copy_": lambda m: m[2].bias.data.copy_(torch.full((2,), 5.0)),
    "numpy_view": lambda m: m[0].weight.detach().numpy().__setitem__((0, 0), 7.0),  # no version counter
    "numpy_asarray": lambda m: numpy.asarray(m[2].bias.data).__setitem__(1, -3.0),
    "from_dlpack": lambda m: torch.from_dlpack(m[0].bias.detach()).mul_(3.0),  # a version counter of its own
}


# Every write under jit_compile=True; under "auto" (the same frozen code, reached through the tiering), one by
# default and the others in `make test-slow`.
@pytest.mark.parametrize("jit, write", [pytest.param(True, w, id=f"True-{name}") for name, w in _WRITES.items()] + [
    pytest.param("auto", w, id=f"auto-{name}", marks=() if name == "data_mul_" else pytest.mark.slow)
    for name, w in _WRITES.items()])
def test_writes_through_data_thaw_frozen_captures(write, jit, jit_threshold, trial):
    if jit == "auto":  # "auto" ships the frozen code, whatever the timings say
        jit_threshold(2)
        trial.keep("frozen")
    torch.manual_seed(1)
    mlp = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    x = torch.randn(3, 8)
    f = ta.function(lambda x: mlp(x), jit_compile=jit, freeze_captures=True)
    with torch.no_grad():
        for _ in range(3):
            f(x)
        cf = f.get_concrete_function(x)
        if jit == "auto":
            assert cf.wait_for_compile(300)
            trial.finish(cf, lambda: f(x))
            assert cf.jit_status == "compiled" and cf._compiled.kept == "frozen"
        torch.testing.assert_close(f(x), mlp(x))
        write(mlp)
        torch.testing.assert_close(f(x), mlp(x))


def test_reads_of_data_and_other_compiled_code_on_the_same_weights_keep_the_frozen_code(monkeypatch):
    # Torch itself reads `.data` of Parameters (AOT autograd's runtime wrappers, when code compiled by reference
    # runs on them): reads must not thaw the frozen code of another function on the same weights.
    frozen = []
    real = inductor._Runner._compile_frozen
    monkeypatch.setattr(inductor._Runner, "_compile_frozen", lambda self, args, open_dims=False: frozen.append(
        real(self, args, open_dims)) or frozen[-1])
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Conv2d(4, 2, 3)).eval()
    x = torch.randn(2, 3, 8, 8)
    f = ta.function(lambda x: net(x), jit_compile=True)  # convolutions on the CPU: frozen
    g = ta.function(lambda x: net(x) * 2.0, jit_compile=True, freeze_captures=False)
    with torch.no_grad():
        torch.testing.assert_close(f(x), net(x), rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(g(x), net(x) * 2.0, rtol=1e-4, atol=1e-5)
        norm = net[0].weight.data.norm()  # a read
        assert torch.equal(norm, net[0].weight.norm())
        torch.testing.assert_close(f(x), net(x), rtol=1e-4, atol=1e-5)
    assert len(frozen) == 1 and not frozen[0].thawed()


def test_data_of_a_frozen_capture_shares_its_version_counter():
    # The one difference from `.data`: a write through it between a forward that saved the tensor and the
    # backward is autograd's in-place error (eager `.data` would use the new values in the gradient silently).
    torch.manual_seed(1)
    lin = torch.nn.Linear(4, 4)
    f = ta.function(lambda x: lin(x), jit_compile=True, freeze_captures=True)
    x = torch.randn(2, 4)
    with torch.no_grad():
        f(x)
    alias = lin.weight.data
    assert type(alias) is torch.Tensor and not alias.requires_grad and alias.data_ptr() == lin.weight.data_ptr()
    before = lin.weight._version
    alias.add_(1.0)
    assert lin.weight._version == before + 1
    loss = (torch.randn(2, 4, requires_grad=True) @ lin.weight).sum()
    lin.weight.data.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    other = torch.nn.Parameter(torch.ones(3))  # not a capture: `.data` as always, a version counter of its own
    other.data.mul_(2.0)
    assert other._version == 0


@pytest.mark.parametrize("layer, freeze, frozen", [
    (lambda: torch.nn.Conv2d(3, 4, 3), None, True),  # convolutions on the CPU: frozen by default
    (lambda: torch.nn.Conv2d(3, 4, 3), False, False),
    (lambda: torch.nn.Linear(8, 4), None, False),  # GEMMs: frozen only on request
    (lambda: torch.nn.Linear(8, 4), True, True),
])
def test_jit_compile_true_freezes_convolutions_by_default(layer, freeze, frozen, monkeypatch):
    compiled = []
    real = inductor._Runner._compile_frozen
    monkeypatch.setattr(inductor._Runner, "_compile_frozen",
                        lambda self, args, open_dims=False: compiled.append(1) or real(self, args, open_dims))
    torch.manual_seed(0)
    net = layer().eval()
    x = torch.randn(2, 3, 8, 8) if isinstance(net, torch.nn.Conv2d) else torch.randn(2, 8)
    f = ta.function(lambda x: torch.relu(net(x)), jit_compile=True, freeze_captures=freeze)
    with torch.no_grad():
        torch.testing.assert_close(f(x), torch.relu(net(x)), rtol=1e-4, atol=1e-5)
        net.weight.mul_(0.5)
        torch.testing.assert_close(f(x), torch.relu(net(x)), rtol=1e-4, atol=1e-5)
    assert compiled == ([1] if frozen else [])
    # With grad enabled nothing is frozen: gradients as eager.
    xg = x.clone().requires_grad_()
    f(xg).sum().backward()
    xe = x.clone().requires_grad_()
    torch.relu(net(xe)).sum().backward()
    torch.testing.assert_close(xg.grad, xe.grad, rtol=1e-4, atol=1e-5)
    assert compiled == ([1] if frozen else [])


def test_inference_mode_captures_are_not_frozen():
    with torch.inference_mode():
        w = torch.randn(4, 4)  # an inference tensor: no version counter to guard a frozen copy with
    f = ta.function(lambda x: torch.relu(x @ w) * 2.0 + 1.0, jit_compile=True, freeze_captures=True)
    x = torch.randn(3, 4)
    with torch.no_grad():
        torch.testing.assert_close(f(x), torch.relu(x @ w) * 2.0 + 1.0)


def test_new_layouts_past_max_variants_run_the_default_backend(monkeypatch):
    from torch_autograph.backends import inductor

    compiled = []
    real_compile = inductor._Runner.compile
    monkeypatch.setattr(inductor, "MAX_VARIANTS", 1)
    monkeypatch.setattr(inductor._Runner, "compile", lambda self, args, open_dims=False: compiled.append(
        args[0].shape) or real_compile(self, args, open_dims))
    f = ta.function(lambda x: (x.sin() * 2.0 + x.cos()).exp().sum(0), jit_compile=True,
                    input_signature=[ta.TensorSpec([None, 3], torch.float32)])
    # Sizes 0 and 1 of an open dim take exact variants (see compile_inputs): n=1 compiled; n=0 and n=4 on the
    # default backend's code (the limit is reached); n=1 compiled code again.
    for n in (1, 0, 1, 4):
        x = torch.randn(n, 3)
        torch.testing.assert_close(f(x), (x.sin() * 2.0 + x.cos()).exp().sum(0))
    assert compiled == [torch.Size([1, 3])]


def test_a_compile_logs_its_start_and_end_with_the_duration(caplog):
    import logging
    import re

    caplog.set_level(logging.INFO, logger="torch_autograph.jit")
    f = ta.function(lambda x: torch.sin(x) * 2 + torch.cos(x), jit_compile=True, name="wave")
    x = torch.randn(8)
    torch.testing.assert_close(f(x), torch.sin(x) * 2 + torch.cos(x))
    messages = [r.getMessage() for r in caplog.records if r.name == "torch_autograph.jit"]
    assert messages[0] == "compiling graph wave with inductor"
    assert re.fullmatch(r"compiled graph wave with inductor in \d+\.\d\d s", messages[1])
    assert f.concrete_functions[0].jit_status == "compiled"


def test_in_place_ops_on_the_graphs_own_tensors_do_not_stop_freezing(monkeypatch):
    # A conv net's `relu(inplace=True)` after BatchNorm and `out += identity` write tensors the graph made in
    # the call: freezing (inductor folds BatchNorm into the convolution's pre-packed weights) still applies.
    frozen = []
    real = inductor._Runner._compile_frozen
    monkeypatch.setattr(inductor._Runner, "_compile_frozen",
                        lambda self, args, open_dims=False: frozen.append(1) or real(self, args, open_dims))
    torch.manual_seed(0)
    conv, bn = torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4)
    bn.running_mean.uniform_(-1, 1), bn.running_var.uniform_(0.5, 2)
    net = torch.nn.Sequential(conv, bn, torch.nn.ReLU(inplace=True)).eval()

    def block(x):
        out = net(x)
        out += x.sum(1, keepdim=True)
        return torch.relu_(out)

    f = ta.function(block, jit_compile=True, freeze_captures=True)
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        torch.testing.assert_close(f(x), block(x), rtol=1e-4, atol=1e-5)
        assert inductor.side_effect(f.get_concrete_function(x).graph) is None and frozen == [1]
        bn.running_mean.add_(0.5)  # an update of a capture: the next call sees it
        torch.testing.assert_close(f(x), block(x), rtol=1e-4, atol=1e-5)


def _writes_a_view_of_a_capture(x):
    row = _W[0]
    row.add_(1)
    return x * 2


def _writes_a_view_of_an_input(x):
    torch.nn.functional.relu(x.view(-1), inplace=True)
    return x * 2


def _writes_through_relu_inplace(x):
    y = torch.nn.functional.relu(_W, inplace=True)  # returns `_W` itself
    y.add_(1)
    return x + 1


_W = torch.zeros(3, 4)


@pytest.mark.parametrize("fn", [_writes_a_view_of_a_capture, _writes_a_view_of_an_input,
                                _writes_through_relu_inplace])
def test_an_in_place_op_on_a_view_of_a_capture_or_an_input_is_a_side_effect(fn):
    graph = ta.function(fn).get_concrete_function(torch.ones(2, 2)).graph
    assert inductor.side_effect(graph) is not None


@pytest.mark.parametrize("keep", ["frozen", "by reference", "default"])
def test_auto_races_frozen_code_and_code_by_reference_against_the_default_and_keeps_the_fastest(jit_threshold, trial,
                                                                                                keep):
    # Frozen weights are not always faster (other GEMM kernels): under "auto", an inference graph is compiled
    # both ways, and the caller's calls race the two and the default.
    jit_threshold(2)
    trial.keep(keep)
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    f = ta.function(lambda x: mlp(x), jit_compile="auto")
    x = torch.randn(5, 8)
    with torch.no_grad():
        for _ in range(3):
            f(x)
        cf = f.get_concrete_function(x)
        assert cf.wait_for_compile(300)
        assert cf._fn.labels == ("default", "frozen", "by reference")
        trial.finish(cf, lambda: torch.testing.assert_close(f(x), mlp(x)))
        assert [label for label, _ in cf._compiled.trial_timings] == ["default", "frozen", "by reference"]
        assert cf.jit_status == ("kept default" if keep == "default" else "compiled")
        assert f"the {keep} code runs" in cf.jit_report() or keep == "default"
        mlp[0].weight.mul_(-1.0)  # frozen or by reference, the update is seen
        torch.testing.assert_close(f(x), mlp(x))


def test_an_autotuned_compile_times_its_own_gemms_instead_of_reusing_a_decision_from_the_caches():
    # freeze_captures=True autotunes its GEMMs: a kernel timed once on a loaded machine and kept in inductor's
    # caches (its autotuning cache, or the FX graph cache, whose code holds the chosen kernel) would decide every
    # later compile of the graph, in any process. So each such compile times its choices itself, the second one
    # of the same graph too, and none is looked up in the FX graph cache (freezing bypasses it; a torch that
    # cached frozen graphs would need it turned off); a compile by reference is looked up there.
    from torch._dynamo.utils import counters

    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 8)
    x = torch.randn(4, 8)
    for freeze in (True, True, False):
        counters.clear()
        f = ta.function(lambda x: lin(x).relu(), jit_compile=True, freeze_captures=freeze)
        with torch.no_grad():
            torch.testing.assert_close(f(x), lin(x).relu())
        stats = dict(counters["inductor"])
        assert stats.get("select_algorithm_autotune", 0) == (1 if freeze else 0), stats
        assert stats.get("fxgraph_cache_hit", 0) + stats.get("fxgraph_cache_miss", 0) == (0 if freeze else 1), stats
