"""ta.function and ConcreteFunction: wrapping forms, the API, trace keys, retracing, outputs."""

import collections
import dataclasses
import gc
import logging
import weakref

import numpy as np
import pytest
import torch

import torch_autograph as ta
from torch_autograph.function.signatures import Literal

X = torch.randn(3)


def _double(x):
    return x * 2


# ----- wrapping forms -----------------------------------------------------------------
def test_bare_decorator_factory_and_direct_call():
    @ta.function
    def bare(x):
        return x * 2

    @ta.function(reduce_retracing=True, autograph=False)
    def factory(x):
        return x * 2

    direct = ta.function(_double, autograph=False)
    for f in (bare, factory, direct):
        assert isinstance(f, ta.Function)
        torch.testing.assert_close(f(X), X * 2)
    assert direct.python_function is _double and direct.__wrapped__ is _double
    assert direct.__name__ == "_double" and direct.name == "_double"
    rewrapped = ta.function(direct, autograph=False)
    assert rewrapped.python_function is _double and rewrapped is not direct


def test_lambda_and_callable_object():
    class Scale:
        def __init__(self, k):
            self.k = k

        def __call__(self, x):
            return x * self.k

    for fn in (lambda x: x + 1, Scale(3.0)):
        torch.testing.assert_close(ta.function(fn, autograph=False)(X), fn(X))


class _Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.drop = torch.nn.Dropout(0.5)
        self.calls = 0

    @ta.function(autograph=False)
    def forward(self, x):
        self.calls += 1  # a Python side effect: once per trace
        return self.drop(self.lin(x))


def test_methods_trace_per_instance_and_hold_the_instance_weakly():
    a, b = _Net().eval(), _Net().eval()
    torch.testing.assert_close(a(X), a.lin(X))
    torch.testing.assert_close(b(X), b.lin(X))
    a(X)
    assert a.forward == a.forward and a.forward != b.forward  # like bound methods: equal, not identical
    assert (a.calls, b.calls) == (1, 1)
    assert a.forward.experimental_get_tracing_count() == 1 and _Net.forward.experimental_get_tracing_count() == 0
    ref = weakref.ref(a)
    del a
    gc.collect()
    assert ref() is None


def test_module_train_eval_switch_retraces_and_never_reuses_a_stale_mode():
    net = _Net().eval()
    torch.testing.assert_close(net(X), net.lin(X))
    net.train()
    torch.manual_seed(0)
    got = net(X)
    torch.manual_seed(0)
    torch.testing.assert_close(got, torch.nn.functional.dropout(net.lin(X), 0.5, True))
    net.eval()
    torch.testing.assert_close(net(X), net.lin(X))
    history = net.forward.trace_history()
    assert len(history) == 2
    assert "switched eval -> train mode" in history[1].reasons[0]


def test_plain_function_calling_a_module_is_guarded_by_its_mode():
    drop = torch.nn.Dropout(0.9)
    f = ta.function(lambda x: drop(x), autograph=False)
    drop.eval()
    torch.testing.assert_close(f(X), X)
    drop.train()
    assert not torch.equal(f(torch.ones(1000)), torch.ones(1000))
    drop.eval()
    torch.testing.assert_close(f(X), X)


# ----- Function API -----------------------------------------------------------------------
def test_function_api():
    def double(x):
        return x * 2

    spec = ta.TensorSpec([None], torch.float32)
    f = ta.function(double, autograph=False, input_signature=[spec])
    assert f.input_signature == (spec,)
    cf = f.get_concrete_function()
    assert cf is f.get_concrete_function(spec) is f.get_concrete_function(torch.randn(5))
    assert f.experimental_get_tracing_count() == 1
    torch.testing.assert_close(f(torch.ones(4)), torch.full((4,), 2.0))
    assert f.pretty_printed_concrete_signatures() == (
        "Input Parameters:\n"
        "  x (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(None,), dtype=torch.float32, name='x', device='cpu')\n"
        "Output Type:\n"
        "  TensorSpec(shape=(None,), dtype=torch.float32, name=None, device='cpu')\n"
        "Captures:\n"
        "  None")
    (event,) = f.trace_history()
    assert event.number == 1 and event.reasons == ("first call",)


def test_pretty_printed_concrete_signatures_one_block_per_trace():
    f = ta.function(lambda a, b=2: a ** b, autograph=False)
    f(X)
    f(X, 3)
    blocks = f.pretty_printed_concrete_signatures().split("\n\n")
    assert len(blocks) == 2
    assert "  b (POSITIONAL_OR_KEYWORD): Literal[2]" in blocks[0]
    assert "  b (POSITIONAL_OR_KEYWORD): Literal[3]" in blocks[1]


# ----- ConcreteFunction -------------------------------------------------------------------
def test_concrete_function_api_and_str():
    w = torch.ones(3)

    def f(a, b=2, *, scale):
        return {"out": a ** b * w * scale, "n": None}

    traced = ta.function(f, autograph=False)
    cf = traced.get_concrete_function(ta.TensorSpec([3], name="a"), 2, scale=torch.tensor(2.0))
    x = torch.randn(3)
    expected = {"out": x ** 2 * 2, "n": None}
    torch.testing.assert_close(cf(x, scale=torch.tensor(2.0)), expected)
    torch.testing.assert_close(cf(a=x, b=2, scale=torch.tensor(2.0)), expected)
    assert cf.name.startswith("__inference_f_")
    assert [v.name for v in cf.inputs] == ["a", "scale", "const"]
    assert [v.name for v in cf.outputs] == ["mul_1"]
    assert cf.captured_inputs == [w] and cf.captured_inputs[0] is w
    assert set(cf.structured_outputs) == {"out", "n"} and cf.structured_outputs["n"] is None
    assert isinstance(cf.structured_outputs["out"], ta.GraphTensor)
    args, kwargs = cf.structured_input_signature
    assert args == (ta.TensorSpec((3,), torch.float32, device="cpu"), Literal(2))
    assert kwargs == {"scale": ta.TensorSpec((), torch.float32, device="cpu")}
    assert cf.graph is traced.get_concrete_function(x, 2, scale=torch.tensor(1.0)).graph
    assert str(cf) == (
        "ConcreteFunction Input Parameters:\n"
        "  a (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(3,), dtype=torch.float32, name='a', device='cpu')\n"
        "  b (POSITIONAL_OR_KEYWORD): Literal[2]\n"
        "  scale (KEYWORD_ONLY): TensorSpec(shape=(), dtype=torch.float32, name=None, device='cpu')\n"
        "Output Type:\n"
        "  {'out': TensorSpec(shape=(3,), dtype=torch.float32, name=None, device='cpu'), 'n': Literal[None]}\n"
        "Captures:\n"
        "  %const: TensorSpec(shape=(3,), dtype=torch.float32, name=None, device='cpu')")  # as cf.graph names it
    assert cf.pretty_printed_signature() == str(cf)[len("ConcreteFunction "):]


def test_concrete_function_never_retraces_and_converts_python_values():
    traced = ta.function(lambda a: a * 2, autograph=False)
    cf = traced.get_concrete_function(ta.TensorSpec([2]))
    torch.testing.assert_close(cf([1.0, 2.0]), torch.tensor([2.0, 4.0]))
    torch.testing.assert_close(cf(np.ones(2, np.float32)), torch.full((2,), 2.0))
    assert traced.experimental_get_tracing_count() == 1


# ----- outputs -----------------------------------------------------------------------------
Pair = collections.namedtuple("Pair", "first second")


@dataclasses.dataclass
class Box:
    value: torch.Tensor
    tag: str


torch.utils._pytree.register_dataclass(Box)  # a structure, as torch.export needs it (its tag: pytree context)


@dataclasses.dataclass
class Unregistered:
    value: torch.Tensor


def test_a_dataclass_pytree_does_not_know_is_refused_with_the_fix():
    f = ta.function(lambda b: b.value * 2, autograph=False)
    with pytest.raises(TypeError, match=r"Unregistered, a dataclass holding tensors .*register_dataclass\(Unregistered\)"):
        f(Unregistered(X))
    g = ta.function(lambda x: Unregistered(x * 2), autograph=False)
    with pytest.raises(TypeError, match=r"result is a Unregistered.*register_dataclass"):
        g(X)


def test_outputs_keep_structure_scalars_become_tensors_none_stays_none():
    def f(x):
        return {"pair": Pair(x, [x * 2, (x + 1,)]), "box": Box(x - 1, "t"), "int": 3, "float": 2.5,
                "bool": True, "none": None, "str": "s"}

    out = ta.function(f, autograph=False)(X)
    assert isinstance(out["pair"], Pair) and isinstance(out["box"], Box)
    torch.testing.assert_close(out["pair"].first, X)
    torch.testing.assert_close(out["pair"].second[1][0], X + 1)
    torch.testing.assert_close(out["box"].value, X - 1)
    assert out["box"].tag == "t"
    for key, value in (("int", torch.tensor(3)), ("float", torch.tensor(2.5)), ("bool", torch.tensor(True))):
        assert isinstance(out[key], torch.Tensor) and out[key].dtype == value.dtype
        torch.testing.assert_close(out[key], value)
    assert out["none"] is None and out["str"] == "s"
    assert ta.function(lambda x: None, autograph=False)(X) is None


def test_returning_an_input_or_a_capture():
    w = torch.randn(3)
    a, b = ta.function(lambda x: (x, w), autograph=False)(X)
    torch.testing.assert_close(a, X)
    torch.testing.assert_close(b, w)


# ----- trace keys -----------------------------------------------------------------------
def count(f):
    return f.experimental_get_tracing_count()


def test_tensors_keyed_by_dtype_shape_device():
    f = ta.function(_double, autograph=False)
    f(torch.ones(2))
    f(torch.zeros(2))
    assert count(f) == 1
    f(torch.ones(3))
    f(torch.ones(3, dtype=torch.float64))
    assert count(f) == 3
    assert f.trace_history()[-1].reasons == ("argument 'x': dtype torch.float32 -> torch.float64",)


def test_numpy_arrays_are_keyed_by_dtype_and_shape():
    # The array is converted as eager code converts it (tests/function/test_numpy_arguments.py has the rest).
    f = ta.function(lambda x: torch.as_tensor(x) * 2)
    torch.testing.assert_close(f(np.ones(3, np.float32)), torch.full((3,), 2.0))
    torch.testing.assert_close(f(np.arange(3, dtype=np.float32)), torch.arange(3.0) * 2)
    assert count(f) == 1
    f(np.ones(3, np.float64))
    assert count(f) == 2


def test_literals_by_type_and_value():
    f = ta.function(lambda x, n: x * n, autograph=False)
    for n in (2, 2.0, True, 2, 2.0, True):
        torch.testing.assert_close(f(X, n), X * n)
    assert count(f) == 3
    f(X, 3)
    assert count(f) == 4
    assert f.trace_history()[-1].reasons == ("argument 'n': Literal[True] -> Literal[3]",)


def test_other_objects_by_weak_identity():
    class Config:
        scale = 2.0

    f = ta.function(lambda x, cfg: x * cfg.scale, autograph=False)
    c1 = Config()
    f(X, c1)
    c1.scale = 5.0  # mutating the object does not retrace: the trace-time value stays
    torch.testing.assert_close(f(X, c1), X * 2.0)
    c2 = Config()
    f(X, c2)
    assert count(f) == 2
    ref = weakref.ref(c1)
    del c1
    gc.collect()
    assert ref() is None  # the trace key does not keep the object alive


def test_unhashable_objects_fall_back_to_identity():
    f = ta.function(lambda x, opts: x * len(opts), autograph=False)
    opts = {1, 2}
    torch.testing.assert_close(f(X, opts), X * 2)
    f(X, opts)
    assert count(f) == 1
    f(X, {1, 2})  # equal but not the same object: a new trace
    assert count(f) == 2


def test_nested_structures_and_dict_key_order():
    f = ta.function(lambda s: s["a"][0] + s["a"][1]["k"] * s["b"].first, autograph=False)
    arg = {"a": [X, {"k": X}], "b": Pair(X, 1)}
    torch.testing.assert_close(f(arg), X + X * X)
    f({"b": Pair(torch.randn(3), 1), "a": [torch.randn(3), {"k": torch.randn(3)}]})
    assert count(f) == 1
    f({"a": [X, {"k": X}], "b": Pair(X, 2)})
    f({"a": [X, {"k": torch.ones(1)}], "b": Pair(X, 1)})
    assert count(f) == 3
    assert f.trace_history()[-1].reasons == ("argument 's'['a'][1]['k']: shape (3,) -> (1,)",
                                             "argument 's'['b']['second']: Literal[2] -> Literal[1]")


def test_dataclass_arguments():
    f = ta.function(lambda b: b.value * 2 if b.tag == "double" else b.value, autograph=False)
    torch.testing.assert_close(f(Box(X, "double")), X * 2)
    torch.testing.assert_close(f(Box(X, "same")), X)
    f(Box(torch.randn(3), "same"))
    assert count(f) == 2


def test_defaults_and_kwargs_bound_canonically():
    f = ta.function(lambda x, training=False: x * (2 if training else 1), autograph=False)
    f(X)
    f(X, False)
    f(X, training=False)
    assert count(f) == 1
    torch.testing.assert_close(f(X, training=True), X * 2)
    assert count(f) == 2


def test_var_args_and_kwargs_are_part_of_the_key():
    f = ta.function(lambda *xs, **kw: sum(xs) * kw.get("k", 1), autograph=False)
    torch.testing.assert_close(f(X, X), X * 2)
    torch.testing.assert_close(f(X, X, X, k=3), X * 9)
    f(X, X, X, k=3)
    assert count(f) == 2


def test_most_specific_matching_trace_wins():
    f = ta.function(_double, autograph=False)
    half = f.get_concrete_function(ta.TensorSpec([1, None]))
    general = f.get_concrete_function(ta.TensorSpec([None, None]))
    assert general is not half
    hits = []
    general._fn, half._fn = (lambda orig, tag: lambda *a: hits.append(tag) or orig(*a))(general._fn, "general"), \
        (lambda orig, tag: lambda *a: hits.append(tag) or orig(*a))(half._fn, "half")
    f(torch.ones(1, 5))
    f(torch.ones(2, 5))
    assert hits == ["half", "general"] and count(f) == 2


def test_input_signature_fixes_one_trace():
    f = ta.function(_double, autograph=False, input_signature=[ta.TensorSpec([None], torch.float32)])
    for n in (1, 4, 9):
        torch.testing.assert_close(f(torch.ones(n)), torch.full((n,), 2.0))
    torch.testing.assert_close(f([1.0, 2.0]), torch.tensor([2.0, 4.0]))
    assert count(f) == 1


def test_reduce_retracing_generalises_shapes_not_literals():
    f = ta.function(lambda x: x.sum(), autograph=False, reduce_retracing=True)
    for n in (3, 5, 7, 9):
        x = torch.randn(n)
        torch.testing.assert_close(f(x), x.sum())
    assert count(f) == 2
    assert "TensorSpec(shape=(None,)" in f.trace_history()[1].signature
    g = ta.function(lambda x, i: x * i, autograph=False, reduce_retracing=True)
    for i in range(4):
        torch.testing.assert_close(g(X, i), X * i)
    assert count(g) == 4


def test_grad_mode_is_part_of_the_key():
    f = ta.function(_double, autograph=False)
    f(X)
    with torch.no_grad():
        f(X)
    assert count(f) == 2 and f.trace_history()[1].reasons == ("grad mode enabled -> disabled",)


# ----- retracing: warning, bound cache ------------------------------------------------------
def _warnings(caplog):
    return [r for r in caplog.records if r.name == "torch_autograph" and r.levelno == logging.WARNING]


def test_frequent_retracing_warns_with_reasons(caplog):
    def shapes(x):
        return x + 1

    f = ta.function(shapes, autograph=False)
    with caplog.at_level(logging.WARNING, logger="torch_autograph"):
        for n in range(1, 5):
            f(torch.ones(n))
        assert _warnings(caplog) == []
        f(torch.ones(5))
        (w,) = _warnings(caplog)
        msg = w.getMessage()
        assert msg.startswith("5 out of the last 5 calls to <function")
        assert "shapes" in msg and "argument 'x': shape (4,) -> (5,)" in msg
        assert "reduce_retracing=True" in msg
        for n in range(6, 30):
            f(torch.ones(n))
        assert len(_warnings(caplog)) == 2  # at most twice per function


def test_no_warning_when_traces_are_spread_out(caplog):
    f = ta.function(lambda x: x + 1, autograph=False)
    with caplog.at_level(logging.WARNING, logger="torch_autograph"):
        for n in range(1, 7):
            f(torch.ones(n))
            for _ in range(10):
                f(torch.ones(n))
    assert _warnings(caplog) == []


def test_rewrapping_in_a_loop_warns(caplog):
    def step(x):
        return x * 3

    with caplog.at_level(logging.WARNING, logger="torch_autograph"):
        for _ in range(5):
            ta.function(step, autograph=False)(X)
    (w,) = _warnings(caplog)
    assert "first call of a new Function for step" in w.getMessage()
    assert "define it once, outside" in w.getMessage()


def test_cache_is_bounded_lru_and_evicted_traces_are_remade():
    f = ta.function(_double, autograph=False, max_traces=3)
    for n in (1, 2, 3):
        f(torch.ones(n))
    f(torch.ones(1))  # 1 is now the most recently used
    f(torch.ones(4))  # evicts 2
    assert len(f.concrete_functions) == 3 and count(f) == 4
    f(torch.ones(1))
    f(torch.ones(3))
    assert count(f) == 4
    torch.testing.assert_close(f(torch.ones(2)), torch.full((2,), 2.0))
    assert count(f) == 5 and len(f.concrete_functions) == 3
    assert len(f._cache.fast) <= 3


def test_default_max_traces_is_64():
    f = ta.function(_double, autograph=False)
    for n in range(1, 70):
        f(torch.ones(n))
    assert len(f.concrete_functions) == 64 and count(f) == 69


# ----- run_functions_eagerly ------------------------------------------------------------------
def test_run_functions_eagerly_runs_python_every_call(capsys):
    def noisy(x):
        print("value", x.sum().item())
        return x + 1

    f = ta.function(noisy, autograph=False)
    assert not ta.config.functions_run_eagerly()
    ta.config.run_functions_eagerly(True)
    try:
        assert ta.config.functions_run_eagerly()
        torch.testing.assert_close(f(torch.ones(2)), torch.full((2,), 2.0))
        f(torch.ones(2))
    finally:
        ta.config.run_functions_eagerly(False)
    assert capsys.readouterr().out == "value 2.0\nvalue 2.0\n"
    assert count(f) == 0
