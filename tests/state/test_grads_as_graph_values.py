"""`.grad` read after a staged backward is the gradient of that call; training-step methods are staged wherever
they are called from. Every step function is compared with eager PyTorch over 20 steps from the same start."""

import copy

import pytest
import torch

import torch_autograph as ta
from tests.eager_reference import line_of

STEPS = 20


def _model(seed=0, heads=1):
    torch.manual_seed(seed)
    trunk = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh())
    return torch.nn.ModuleDict({"trunk": trunk, **{f"head{i}": torch.nn.Linear(8, 2) for i in range(heads)}})


def _data(seed=1):
    torch.manual_seed(seed)
    return [(torch.randn(8, 4), torch.randn(8, 2)) for _ in range(STEPS)]


def _forward(m, x):
    return m["head0"](m["trunk"](x))


def _compare(step, make_opt=None, heads=1, make_scaler=None, make_sched=None, jit=False, tol=(1e-6, 1e-7)):
    """Run `step(m, opt, extra, x, y)` eagerly and as a ta.function from the same start: equal losses/params
    (exactly on the default backend, within `tol` with `jit`)."""
    start = _model(heads=heads)
    results = []
    for graph in (False, True):
        m = copy.deepcopy(start)
        opt = make_opt(m) if make_opt else None
        extra = {"scaler": make_scaler() if make_scaler else None,
                 "sched": make_sched(opt) if make_sched else None}
        fn = (lambda x, y: step(m, opt, extra, x, y))
        run = ta.function(fn, jit_compile=jit) if graph else fn
        losses = [float(run(x, y).detach()) for x, y in _data()]
        results.append((losses, [p.detach().clone() for p in m.parameters()], run))
    (le, pe, _), (lg, pg, traced) = results
    if not jit:  # the default backend runs eager's ops in eager's order: bitwise equal, so compared exactly
        tol = (0.0, 0.0)
    torch.testing.assert_close(torch.tensor(lg), torch.tensor(le), rtol=tol[0], atol=tol[1])
    for a, b in zip(pg, pe):
        torch.testing.assert_close(a, b, rtol=tol[0], atol=tol[1])
    assert traced.experimental_get_tracing_count() == 1
    return traced


def _mse(m, x, y):
    return torch.nn.functional.mse_loss(_forward(m, x), y)


# ----- reading gradients after backward -----------------------------------------------------------
def clip_by_norm(m, opt, extra, x, y):
    opt.zero_grad()
    loss = _mse(m, x, y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(m.parameters(), 0.05)
    opt.step()
    return loss


@pytest.mark.parametrize("jit", [True, "auto"], ids=["jit", "auto"])
def test_clip_grad_norm_and_grad_scaler_steps_compile_around_the_staged_calls(jit):
    # inductor fuses the forward and its backward: float32 rounding differs from eager's in the last bits
    _compare(clip_by_norm, lambda m: torch.optim.SGD(m.parameters(), lr=0.5), jit=jit, tol=(1e-4, 1e-5))
    _compare(scaled_step, lambda m: torch.optim.Adam(m.parameters(), lr=0.01), jit=jit, tol=(1e-4, 1e-5),
             make_scaler=lambda: torch.amp.GradScaler("cpu", init_scale=2.0 ** 8))


def test_clip_grad_norm_after_a_staged_backward_clips_this_calls_gradients():
    traced = _compare(clip_by_norm, lambda m: torch.optim.SGD(m.parameters(), lr=0.5))
    ops = [n.op.name for n in traced.get_concrete_function(*_data()[0]).graph.nodes]
    assert ops.count("grad") == 4  # one read per parameter, after the backward node
    assert ops.index("grad") > next(i for i, name in enumerate(ops) if "backward" in name)


def accumulate_and_clip_value(m, opt, extra, x, y):
    opt.zero_grad()
    total = 0
    for xb, yb in zip(x.chunk(4), y.chunk(4)):
        loss = _mse(m, xb, yb) / 4
        loss.backward()
        total = total + loss.detach()
    torch.nn.utils.clip_grad_value_(m.parameters(), 0.01)
    opt.step()
    return total


def test_accumulating_four_micro_batches_then_clipping_by_value():
    _compare(accumulate_and_clip_value, lambda m: torch.optim.AdamW(m.parameters(), lr=0.01))


def manual_sgd(m, opt, extra, x, y):
    for p in m.parameters():
        p.grad = None
    loss = _mse(m, x, y)
    loss.backward()
    with torch.no_grad():
        for p in m.parameters():
            p.data.add_(p.grad, alpha=-0.1)
    return loss


def test_manual_sgd_on_p_grad():
    _compare(manual_sgd)


def log_grad_norm(m, opt, extra, x, y):
    opt.zero_grad()
    loss = _mse(m, x, y)
    loss.backward()
    norm = sum(p.grad.norm() ** 2 for p in m.parameters() if p.grad is not None) ** 0.5
    opt.step()
    return loss + 0 * norm


def test_gradient_norm_for_logging_and_momentum_sgd():
    _compare(log_grad_norm, lambda m: torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, nesterov=True))


def one_head_of_two(m, opt, extra, x, y):
    opt.zero_grad()
    loss = _mse(m, x, y)  # head1 gets no gradient
    loss.backward()
    grads = [p.grad for p in m.parameters() if p.grad is not None]
    opt.step()
    return loss + len(grads)


def test_parameters_the_backward_does_not_reach_keep_a_none_grad():
    # The returned loss includes len(grads): 4 in eager (the trunk and head0), so equal losses say the graph
    # counted the same gradients.
    traced = _compare(one_head_of_two, lambda m: torch.optim.SGD(m.parameters(), lr=0.1), heads=2)
    ops = [n.op.name for n in traced.get_concrete_function(*_data()[0]).graph.nodes]
    assert ops.count("grad") == 4


# ----- staged wherever called ---------------------------------------------------------------------
@ta.autograph.experimental.do_not_convert
def library_helper(opt, sched):
    """Not converted: a Lightning-style helper. Its calls are staged by the methods themselves."""
    opt.step()
    sched.step()
    opt.zero_grad()


def step_through_helper(m, opt, extra, x, y):
    loss = _mse(m, x, y)
    loss.backward()
    library_helper(opt, extra["sched"])
    return loss


def test_optimizer_and_scheduler_steps_in_unconverted_code_run_at_every_call():
    _compare(step_through_helper, lambda m: torch.optim.Adam(m.parameters(), lr=0.02),
             make_sched=lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5))


def scaled_step(m, opt, extra, x, y):
    scaler = extra["scaler"]
    opt.zero_grad()
    loss = _mse(m, x, y)
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
    scaler.step(opt)
    scaler.update()
    return loss


@pytest.mark.parametrize("enabled", [True, False], ids=["scaler_on", "scaler_off"])
def test_grad_scaler_steps_the_optimizer_when_the_graph_runs(enabled):
    _compare(scaled_step, lambda m: torch.optim.Adam(m.parameters(), lr=0.01),
             make_scaler=lambda: torch.amp.GradScaler("cpu", enabled=enabled, init_scale=2.0 ** 8))


# ----- what the trace assumed about the gradients it did not make ---------------------------------
def test_a_read_that_finds_no_gradient_when_the_graph_runs_raises_at_its_line():
    w = torch.nn.Parameter(torch.ones(3))

    def scale_grad(x):
        w.grad.mul_(x)  # <- no backward here: the gradient of an earlier eager step
        return w.grad.sum()

    (w * 2).sum().backward()
    f = ta.function(scale_grad)
    torch.testing.assert_close(f(torch.tensor(3.0)), torch.tensor(18.0))
    w.grad = None
    with pytest.raises(ta.errors.InvalidArgumentError) as info:
        f(torch.tensor(3.0))
    text = str(info.value)
    assert "is None when the graph runs" in text and line_of(scale_grad, "# <-") in text


def test_a_grad_traced_as_none_is_checked_to_be_none_at_each_call():
    w = torch.nn.Parameter(torch.ones(3))

    def maybe(x):
        if w.grad is None:  # <-
            return x
        return x + w.grad

    f = ta.function(maybe)
    torch.testing.assert_close(f(torch.zeros(3)), torch.zeros(3))
    (w * 2).sum().backward()
    with pytest.raises(ta.errors.InvalidArgumentError) as info:
        f(torch.zeros(3))
    assert "was None when the function was traced" in str(info.value)
    assert line_of(maybe, "# <-") in str(info.value)


def test_setting_grad_while_tracing_is_a_node_not_a_trace_time_write():
    w = torch.nn.Parameter(torch.ones(3))
    (w * 2).sum().backward()

    def reset(x):
        w.grad = None
        return x * 2

    f = ta.function(reset)
    f.get_concrete_function(torch.ones(1))
    assert w.grad is not None  # tracing did not touch it
    f(torch.ones(1))
    assert w.grad is None
