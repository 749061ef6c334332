"""Unchanged PyTorch training steps inside ta.function match the same loop run eagerly, step for step."""

import copy

import pytest
import torch
import torch.nn.functional as F

import torch_autograph as ta

HERE = __file__.rsplit("/", 1)[-1]


def _setup(seed=0):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    x, y = torch.randn(32, 6), torch.randint(0, 3, (32,))
    return model, x, y


def test_torch_optimizer_step_is_staged_and_matches_eager():
    model, x, y = _setup()
    ref = copy.deepcopy(model)
    torch_opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)

    @ta.function
    def train_step_torch(x, y):
        torch_opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        torch_opt.step()
        return loss

    for _ in range(10):
        got = train_step_torch(x, y)
        ref_opt.zero_grad()
        want = F.cross_entropy(ref(x), y)
        want.backward()
        ref_opt.step()
        torch.testing.assert_close(got, want)
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p, q)
    names = [n.op.name for n in train_step_torch.get_concrete_function(x, y).graph.nodes]
    assert names[0] == "SGD.zero_grad" and names[-2:] == ["backward", "SGD.step"]
    assert train_step_torch.experimental_get_tracing_count() == 1


def test_scheduler_module_zero_grad_and_adam():
    model, x, y = _setup(1)
    ref = copy.deepcopy(model)
    opts = [torch.optim.Adam(m.parameters(), lr=0.01) for m in (model, ref)]
    scheds = [torch.optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5) for o in opts]

    @ta.function
    def step(x, y):
        model.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opts[0].step()
        scheds[0].step()
        return loss

    for _ in range(6):
        got = step(x, y)
        ref.zero_grad()
        want = F.cross_entropy(ref(x), y)
        want.backward()
        opts[1].step()
        scheds[1].step()
        torch.testing.assert_close(got, want)
    assert scheds[0].get_last_lr() == scheds[1].get_last_lr() == [0.01 * 0.5 ** 3]


def test_backward_node_is_kept_even_when_its_result_is_unused():
    w = torch.nn.Parameter(torch.tensor([1.0, 2.0]))

    @ta.function
    def accumulate(x):
        (w * x).sum().backward()

    accumulate(torch.tensor([1.0, 1.0]))
    accumulate(torch.tensor([2.0, 3.0]))
    torch.testing.assert_close(w.grad, torch.tensor([3.0, 4.0]))
    w.grad = None


def test_optimizer_step_without_autograph_is_staged_by_the_optimizer_itself():
    model, x, y = _setup()
    start = {k: v.clone() for k, v in model.state_dict().items()}

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    graph = ta.function(step, autograph=False)  # nothing converted: the methods stage themselves
    graph_losses = [graph(x, y).item() for _ in range(5)]
    graph_params = [p.detach().clone() for p in model.parameters()]
    model.load_state_dict(start)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    eager_losses = [step(x, y).item() for _ in range(5)]
    assert graph_losses == eager_losses
    for got, want in zip(graph_params, model.parameters()):
        torch.testing.assert_close(got, want)


def test_an_optimizer_step_that_escaped_staging_is_an_error_not_a_trace_time_update():
    import functools

    model, x, y = _setup()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    opt.step = functools.partial(torch.optim.SGD.step._ta_staged, opt)  # a step bound before staging existed
    before = [p.detach().clone() for p in model.parameters()]

    @ta.function(autograph=False)
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    with pytest.raises(RuntimeError, match=rf"SGD\.step\(\) was called while tracing at .*{HERE}:\d+: it would run "
                                           r"once, now"):
        step(x, y)
    for p, q in zip(model.parameters(), before):
        torch.testing.assert_close(p.detach(), q)


def test_py_function_runs_at_every_call_in_order():
    log = []

    def record(x):
        log.append(float(x))
        return x * 10

    @ta.function
    def f(x):
        a = ta.py_function(record, [x], Tout=ta.TensorSpec([], torch.float32))
        ta.py_function(log.append, ["after"])
        return a + 1

    assert f(torch.tensor(1.0)).item() == 11.0
    assert f(torch.tensor(2.0)).item() == 21.0
    assert log == [1.0, "after", 2.0, "after"]
    spec = ta.py_function(lambda: [1, 2], [], Tout=ta.TensorSpec([2], torch.int64))
    assert spec.tolist() == [1, 2]  # eager: called at once, converted to the dtype


def test_clip_grad_norm_after_backward_needs_no_py_function():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    start_state = {k: v.clone() for k, v in model.state_dict().items()}

    def step(x):
        opt.zero_grad()
        model(x).pow(2).sum().backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)  # reads this call's gradients
        opt.step()

    torch.manual_seed(1)
    xs = [torch.randn(4, 3) for _ in range(4)]
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    graph_step = ta.function(step)
    for x in xs:
        graph_step(x)
    graph_params = [p.detach().clone() for p in model.parameters()]
    model.load_state_dict(start_state)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)  # fresh, like the graph's at the start
    for x in xs:
        step(x)
    for got, want in zip(graph_params, model.parameters()):
        torch.testing.assert_close(got, want)
