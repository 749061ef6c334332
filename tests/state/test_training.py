"""Unchanged PyTorch training steps inside ta.function match the same loop run eagerly, step for step."""

import copy

import pytest
import torch
import torch.nn.functional as F

import torch_autograph as ta
from torch_autograph.tracing.tensor import GraphTensor

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


def test_an_optimizer_step_bound_before_any_trace_is_staged_by_torchs_step_hook():
    # torch's own `SGD.step` bound outside any trace (as an LR scheduler binds it): nothing of ours wraps it, so
    # it reaches torch's step hooks at trace time; the trace's pre-hook stages it instead of updating now.
    import functools

    model, x, y = _setup()
    start = {k: v.clone() for k, v in model.state_dict().items()}

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt.step = functools.partial(torch.optim.SGD.step, opt)
    graph = ta.function(step, autograph=False)
    graph_losses = [graph(x, y).item() for _ in range(4)]
    graph_params = [p.detach().clone() for p in model.parameters()]
    model.load_state_dict(start)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    eager_losses = [step(x, y).item() for _ in range(4)]
    assert graph_losses == eager_losses
    for got, want in zip(graph_params, model.parameters()):
        torch.testing.assert_close(got, want)


def test_an_optimizer_step_that_escaped_staging_is_an_error_not_a_trace_time_update():
    # With a step hook of the user's, torch's step body cannot be stood in for (the hook would run at trace
    # time): the step is refused at the user's line and nothing is updated.
    import functools

    model, x, y = _setup()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    opt.step = functools.partial(torch.optim.SGD.step, opt)
    handle = opt.register_step_pre_hook(lambda o, args, kwargs: None)
    before = [p.detach().clone() for p in model.parameters()]

    @ta.function(autograph=False)
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    try:
        with pytest.raises(RuntimeError, match=rf"SGD\.step\(\) was called while tracing at .*{HERE}:\d+: it would "
                                               r"run once, now"):
            step(x, y)
    finally:
        handle.remove()
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
        ta.py_function(log.append, ["after"], Tout=None)
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


def test_item_on_a_returned_loss_works_and_a_loss_kept_on_the_trainer_is_the_call_s_loss():
    class Trainer:
        def __init__(self):
            torch.manual_seed(0)
            self.model = torch.nn.Linear(6, 3)
            self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
            self.last_loss = None

        @ta.function
        def step(self, x, y):
            self.opt.zero_grad()
            loss = F.cross_entropy(self.model(x), y)
            loss.backward()
            self.opt.step()
            self.last_loss = loss  # written back after each call, with that call's loss
            return loss

    trainer = Trainer()
    ref = copy.deepcopy(trainer.model)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    _, x, y = _setup()
    for _ in range(3):
        got = trainer.step(x, y).item()  # no trace is running: a returned tensor is a plain tensor
        ref_opt.zero_grad()
        want = F.cross_entropy(ref(x), y)
        want.backward()
        ref_opt.step()
        assert got == want.item()
        assert not isinstance(trainer.last_loss, GraphTensor) and trainer.last_loss.item() == got
    # Once more when last_loss first holds a tensor: it held None, a Python value the first trace may have read.
    assert trainer.step.experimental_get_tracing_count() == 2


def _dropout_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 1))


def test_functions_that_set_the_mode_trace_once_per_entry_state_and_replay_the_change():
    model, ref = _dropout_model(), _dropout_model()

    def train_step(m, x):
        m.train()
        return m(x).sum()

    def eval_step(m, x):
        m.eval()
        return m(x).sum()

    graph_train = ta.function(lambda x: train_step(model, x))
    graph_eval = ta.function(lambda x: eval_step(model, x))
    x = torch.randn(3, 4)
    for i in range(30):
        for graph_fn, eager_fn, training in ((graph_train, train_step, True), (graph_eval, eval_step, False)):
            torch.manual_seed(i)  # the same dropout masks: the graph draws them as eager does
            got = graph_fn(x)
            torch.manual_seed(i)
            assert torch.equal(got, eager_fn(ref, x))
            assert [m.training for m in model.modules()] == [training] * 4  # the change ran at this call
    # train_step entered once in train mode (the first call) and then always in eval mode: two traces.
    assert graph_train.experimental_get_tracing_count() == 2
    assert graph_eval.experimental_get_tracing_count() == 1
    reasons = [e.reasons for e in graph_train.trace_history()]
    assert reasons[1] == (f"module Sequential at {id(model):#x} switched train -> eval mode",
                          f"module Dropout at {id(model[1]):#x} switched train -> eval mode")
    names = [n.op.name for n in graph_train.concrete_functions[0].graph.nodes]
    assert names[0] == "Sequential.train"


def test_tracing_leaves_the_mode_as_it_was_and_a_restored_mode_follows_the_entry_state():
    model, ref = _dropout_model(), _dropout_model()

    def evaluate(m, x):
        was_training = m.training  # a Python value read while tracing: the entry mode is part of the trace
        m.eval()
        out = m(x).sum()
        m.train(was_training)
        return out

    f = ta.function(lambda x: evaluate(model, x))
    x = torch.randn(3, 4)
    f.get_concrete_function(x)  # traces without running: no mode left changed
    assert model.training and model[1].training
    for training in (True, False, True, False):
        model.train(training)
        ref.train(training)
        assert torch.equal(f(x), evaluate(ref, x))
        assert [m.training for m in model.modules()] == [m.training for m in ref.modules()] == [training] * 4
    assert f.experimental_get_tracing_count() == 2


def test_setting_the_mode_inside_a_tensor_condition_is_an_error():
    model = _dropout_model()

    def step(x):
        if x.sum() > 0:
            model.eval()  # <- here
        return model(x)

    line = step.__code__.co_firstlineno + 2
    with pytest.raises(ta.errors.OperatorNotAllowedInGraphError) as info:
        ta.function(step)(torch.randn(3, 4))
    msg = str(info.value)
    assert "Sequential.eval() inside a tensor-dependent `if` or loop" in msg and f"{HERE}:{line}" in msg
    assert "Fix: set the mode outside" in msg
    assert model.training and model[1].training  # the trace that failed changed nothing
