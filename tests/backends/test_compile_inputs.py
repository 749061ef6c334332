"""Compiled variants with the graph's open dims as size symbols, and inductor's on-disk caches (backends/compile_inputs.py)."""

import logging

import torch

import torch_autograph as ta


def _chain(x):
    return ((x * 2.0).sin() + x.cos() * 0.5).exp().sum(1)


def _compiles(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "torch_autograph.jit" and
            r.getMessage().startswith("compiling")]


def test_an_open_dim_compiles_once_for_every_size_of_at_least_two(caplog):
    caplog.set_level(logging.INFO, logger="torch_autograph.jit")
    f = ta.function(_chain, jit_compile=True, input_signature=[ta.TensorSpec([None, 8], torch.float32)])
    for n in (3, 5, 17, 2):
        x = torch.randn(n, 8)
        torch.testing.assert_close(f(x), _chain(x))
    assert len(_compiles(caplog)) == 1 and "(open sizes symbolic)" in _compiles(caplog)[0]
    x = torch.randn(1, 8)  # size 1: torch specialises on it; the open variant's guard sends it to an exact one
    torch.testing.assert_close(f(x), _chain(x))
    assert len(_compiles(caplog)) == 2 and "open sizes" not in _compiles(caplog)[1]
    x = torch.randn(8, 6)[:, :4].repeat(1, 2)  # contiguous again after repeat: the open variant
    torch.testing.assert_close(f(x), _chain(x))
    y = torch.randn(8, 7).t()[:, :8]  # not contiguous: an exact variant
    torch.testing.assert_close(f(y.contiguous()), _chain(y))
    torch.testing.assert_close(f(y), _chain(y))
    assert len(_compiles(caplog)) == 3


def _grow(x, limit):
    while x.size(1) < limit:  # limit a tensor: a graph loop whose variable grows by a column per iteration
        x = torch.cat([x, (x[:, -1:].sin() * 2.0 + x[:, :1].cos()).tanh() * 0.5], dim=1)
    return x


def test_a_growing_loop_variable_compiles_its_region_once_and_matches_the_default_backend(caplog):
    caplog.set_level(logging.INFO, logger="torch_autograph.jit")
    f, d = ta.function(_grow, jit_compile=True), ta.function(_grow)
    x = torch.randn(3, 2)
    for limit in (9, 4, 12):
        torch.testing.assert_close(f(x, torch.tensor(limit)), d(x, torch.tensor(limit)))
        torch.testing.assert_close(f(x, torch.tensor(limit)), _grow(x, limit))
    assert len(_compiles(caplog)) == 1 and "(open sizes symbolic)" in _compiles(caplog)[0]


def test_a_compile_in_a_new_process_is_served_by_inductors_caches():
    # What a second process finds on disk: inductor's FX graph cache and AOT autograd's cache both hit (they
    # need a shape environment, and fx nodes known to be tensors). The caches are the default ones (those the
    # rest of the suite fills: a fresh cache directory would compile inductor's own C++ helpers again, half of
    # this test's time); a constant new to every run of the test makes the first process's lookups miss.
    import os
    import subprocess
    import sys
    import uuid

    scale = 2.0 + (uuid.uuid4().int % 10**9) / 10**10  # in the graph, so in both caches' keys
    script = (
        "import torch, torch_autograph as ta\n"
        "from torch._dynamo.utils import counters\n"
        "m = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.LayerNorm(8))\n"
        f"f = ta.function(lambda x: m(x).relu().transpose(0, 1).contiguous() * {scale!r}, jit_compile=True)\n"
        "with torch.no_grad():\n"
        "    f(torch.randn(4, 8))\n"
        "print(counters['aot_autograd']['autograd_cache_hit'], counters['inductor']['fxgraph_cache_hit'])\n")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
            .stdout.split() for _ in range(2)]
    assert runs[0] == ["0", "0"] and runs[1] == ["1", "1"]


def test_auto_freezes_captures_by_default_and_follows_updates(monkeypatch, trial):
    # jit_compile="auto" folds the weights of a no_grad graph into the compiled code (when it times faster than
    # the default backend); an in-place update or a new storage sends the next call to the default backend.
    from torch_autograph.backends import inductor

    frozen = []
    real = inductor._Runner._compile_frozen
    monkeypatch.setattr(inductor._Runner, "_compile_frozen",
                        lambda self, args, open_dims=False: frozen.append(1) or real(self, args, open_dims))
    trial.keep("frozen")
    old = ta.config.get_jit_threshold()
    ta.config.set_jit_threshold(2)
    try:
        torch.manual_seed(0)
        mlp = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
        f = ta.function(lambda x: mlp(x), jit_compile="auto")
        x = torch.randn(5, 8)
        with torch.no_grad():
            for _ in range(3):
                f(x)
            cf = f.get_concrete_function(x)
            assert cf.wait_for_compile(300) and frozen == [1]
            trial.finish(cf, lambda: torch.testing.assert_close(f(x), mlp(x)))
            assert cf._compiled.kept == "frozen"
            torch.testing.assert_close(f(x), mlp(x))
            mlp[0].weight.mul_(-1.0)
            torch.testing.assert_close(f(x), mlp(x))
            mlp[2].bias.data = torch.full((4,), 3.0)
            torch.testing.assert_close(f(x), mlp(x))
        g = ta.function(lambda x: mlp(x), jit_compile="auto", freeze_captures=False)
        with torch.no_grad():
            for _ in range(3):
                g(x)
            assert g.get_concrete_function(x).wait_for_compile(300) and frozen == [1]
            torch.testing.assert_close(g(x), mlp(x))
    finally:
        ta.config.set_jit_threshold(old)


def test_inference_code_with_the_cpp_wrapper_takes_a_new_variant_for_a_new_layout(caplog, monkeypatch):
    from torch_autograph.backends import inductor

    chosen = []
    original = inductor._Runner.cpp_wrapper
    monkeypatch.setattr(inductor._Runner, "cpp_wrapper", lambda self, args, frozen=False: chosen.append(
        original(self, args, frozen)) or chosen[-1])
    caplog.set_level(logging.INFO, logger="torch_autograph.jit")
    w = [torch.randn(8, 8) for _ in range(8)]  # 9 tensors for inductor's wrapper to check: the C++ one
    f = ta.function(lambda x: ((x @ sum(w)).sin() * 2.0 + x.cos()).tanh(), jit_compile=True)
    with torch.no_grad():
        x = torch.randn(8, 8)
        torch.testing.assert_close(f(x), ((x @ sum(w)).sin() * 2.0 + x.cos()).tanh())
        y = torch.randn(8, 8).t()  # same sizes, other strides: the C++ wrapper's check raises RuntimeError
        torch.testing.assert_close(f(y), ((y @ sum(w)).sin() * 2.0 + y.cos()).tanh())
        torch.testing.assert_close(f(x), ((x @ sum(w)).sin() * 2.0 + x.cos()).tanh())
    assert chosen == [True, True] and len(_compiles(caplog)) == 2


def test_the_generated_open_layout_check_agrees_with_the_open_key():
    # The per-call fast path of a graph with open dims checks a call against the variant in use with generated
    # code: it must accept exactly the arguments whose open key is the variant's.
    from torch_autograph.backends.compile_inputs import Layouts
    from torch_autograph.graph import Graph, Value, ValueKind

    open_dim = object()  # Layouts reads a dim that is not an int as open (a SymInt in a traced graph)
    graph = Graph(name="g", inputs=[Value("x", torch.float32, (2, open_dim, 4), torch.device("cpu")),
                                    Value("n", None, (), None, kind=ValueKind.SCALAR),
                                    Value("w", torch.float32, (3,), torch.device("cpu"))], nodes=[], outputs=[])
    layouts = Layouts(graph)
    for grad in (False, True):
        a = (torch.randn(2, 5, 4), 3, torch.randn(3))
        fits = layouts.open_fits(a, grad)
        calls = [a, (torch.randn(2, 9, 4), 3, torch.randn(3)), (torch.randn(2, 1, 4), 3, torch.randn(3)),
                 (torch.randn(2, 5, 4), 4, torch.randn(3)), (torch.randn(2, 5, 4), 3.0, torch.randn(3)),
                 (torch.randn(2, 5, 4).double(), 3, torch.randn(3)), (torch.randn(3, 5, 4), 3, torch.randn(3)),
                 (torch.randn(2, 5, 8)[:, :, :4], 3, torch.randn(3)), (torch.randn(2, 5, 4, 1), 3, torch.randn(3)),
                 (torch.randn(2, 5, 4, requires_grad=True), 3, torch.randn(3)), (torch.randn(2, 5, 4), 3, 1.0),
                 (torch.randn(2, 5, 4), 3, torch.randn(4)), (torch.randn(2, 5, 4), 3)]
        for b in calls:
            want = len(b) == len(a) and layouts.open_key(b, grad) is not None and \
                layouts.open_key(b, grad) == layouts.open_key(a, grad)
            assert fits(b) == want, (grad, [getattr(t, "shape", t) for t in b])
