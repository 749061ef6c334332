"""`ta.saved_model.save` / `load`: every concrete function saved, weights once, loaded without the source.

Loaded programs are compared with eager PyTorch running the original Python code (`eager`), never with the
`ta.function` that was saved.
"""

import json
import os
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

import torch_autograph as ta

warnings.filterwarnings("ignore", message=".*(while_loop|cond|Symbol).*")
ROWS = ta.TensorSpec([None, 3], torch.float32)
COUNT = ta.TensorSpec([], torch.int64)


def eager(function, *args):
    """`function(*args)` as plain eager Python, the `ta.function`s it calls too: the reference."""
    ta.config.run_functions_eagerly(True)
    try:
        return function(*args)
    finally:
        ta.config.run_functions_eagerly(False)


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(3, 2)
        self.calls = ta.Variable(torch.tensor(0), trainable=False)

    @ta.function(input_signature=[ROWS, COUNT])
    def predict(self, x, n):
        y = self.lin(x)
        for i in range(n):
            if y.sum() > 0:
                y = torch.tanh(y) + i
            else:
                y = y * 0.5
        self.calls.assign_add(1)
        return {"y": y, "n": n}

    @ta.function
    def double(self, x):
        return x * 2, "label"


def test_a_module_round_trip_keeps_names_signatures_and_shares_variables(tmp_path):
    m = Model()
    m.double(torch.ones(2))  # traced: saved with its (static) signature
    ta.saved_model.save(m, tmp_path)
    meta = json.loads((tmp_path / "saved_model.json").read_text())
    assert sorted(meta["functions"]) == ["double", "predict"] and meta["signatures"] == {"serving_default":
                                                                                         ["predict", 0]}
    names = meta["variables"]  # once each, though two functions read the weights
    assert names[:3] == ["lin.weight", "lin.bias", "calls"] and len(set(names)) == len(names)
    loaded = ta.saved_model.load(tmp_path)
    for n in (0, 1, 4):
        x = torch.randn(5, 3)
        got, want = loaded.predict(x, torch.tensor(n)), eager(m.predict, x, torch.tensor(n))
        assert list(got) == ["y", "n"]
        torch.testing.assert_close(got["y"], want["y"])
        torch.testing.assert_close(got["n"], want["n"])
    assert int(loaded.calls) == 3 == int(loaded.variables["calls"])  # the loaded program's Variable, updated
    got = loaded.signatures["serving_default"](torch.ones(1, 3), torch.tensor(2))
    torch.testing.assert_close(got["y"], eager(m.predict, torch.ones(1, 3), torch.tensor(2))["y"])
    y, label = loaded.double(torch.ones(2))
    torch.testing.assert_close(y, torch.full((2,), 2.0))
    assert label == "label"
    with pytest.raises(TypeError, match=r"loaded function 'double': no saved signature matches the arguments "
                                        r"\(Tensor\(shape=\(3,\), dtype=torch.float32\)\). Saved signatures:\n"
                                        r"  \(x: float32\[2\]\)"):
        loaded.double(torch.ones(3))


class Encoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(3, 3)

    @ta.function(input_signature=[ROWS])
    def encode(self, x):
        while x.abs().max() > 1:
            x = x / 2
        return self.proj(x)


class Tools:
    """A plain object (not a module) holding a ta.function."""

    def __init__(self, scale: float) -> None:
        self.scale = scale
        self.rescale = ta.function(lambda x: x * scale, input_signature=[ROWS])


class Stack(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.blocks = torch.nn.ModuleList([Encoder(), Encoder()])
        self.head = torch.nn.Linear(3, 1)
        self.tools = Tools(3.0)
        self.tools.owner = self  # a cycle: walked once

    @ta.function(input_signature=[ROWS])
    def score(self, x):
        return self.head(self.blocks[1].encode(self.blocks[0].encode(x)))


def test_functions_of_submodules_and_attribute_objects_are_saved_under_their_paths(tmp_path):
    m = Stack()
    ta.saved_model.save(m, tmp_path)
    meta = json.loads((tmp_path / "saved_model.json").read_text())
    assert sorted(meta["functions"]) == ["blocks.0.encode", "blocks.1.encode", "score", "tools.rescale"]
    assert meta["signatures"] == {}  # four functions with an input_signature: none is the default
    assert "blocks.0.proj.weight" in meta["variables"] and len(set(meta["variables"])) == len(meta["variables"])
    loaded = ta.saved_model.load(tmp_path)
    x = torch.randn(4, 3) * 5
    torch.testing.assert_close(loaded.score(x), eager(m.score, x))
    torch.testing.assert_close(loaded.blocks[1].encode(x), eager(m.blocks[1].encode, x))
    torch.testing.assert_close(loaded.blocks[0].encode(x), eager(m.blocks[0].encode, x))
    torch.testing.assert_close(loaded.tools.rescale(x), eager(m.tools.rescale, x))
    # The programs read one copy of each weight: an update through one path is seen by every function.
    with torch.no_grad():
        loaded.variables["blocks.0.proj.bias"].add_(1.0)
        m.blocks[0].proj.bias.add_(1.0)
    torch.testing.assert_close(loaded.score(x), eager(m.score, x))
    torch.testing.assert_close(loaded.blocks[0].encode(x), eager(m.blocks[0].encode, x))


def test_a_function_saved_alone_loads_as_a_callable(tmp_path):
    @ta.function(input_signature=[ROWS])
    def normalize(x):
        while x.abs().max() > 1:
            x = x / 2
        return x

    ta.saved_model.save(normalize, tmp_path)
    loaded = ta.saved_model.load(tmp_path)
    x = torch.randn(6, 3) * 10
    torch.testing.assert_close(loaded(x), eager(normalize, x))
    assert list(loaded.signatures) == ["serving_default"]


def test_gradients_flow_through_a_loaded_cond_and_while(tmp_path):
    @ta.function(input_signature=[ROWS, COUNT])
    def f(x, n):
        for _ in range(n):
            if x.sum() > 0:
                x = x * x
            else:
                x = torch.sin(x)
        return x.sum()

    ta.saved_model.save(f, tmp_path)
    loaded = ta.saved_model.load(tmp_path)
    for sign in (1.0, -1.0):
        x = (torch.rand(2, 3) * 0.5 + 0.1) * sign
        a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
        loaded(a, torch.tensor(2)).backward()
        eager(f, b, torch.tensor(2)).backward()
        torch.testing.assert_close(a.grad, b.grad)


def test_what_cannot_be_saved_is_named(tmp_path):
    with pytest.raises(TypeError, match="object has no ta.function .* nothing to save"):
        ta.saved_model.save(torch.nn.Linear(2, 2), tmp_path)

    @ta.function
    def scale(x, factor):
        return x * factor.value

    class Box:
        value = 2.0

    scale(torch.ones(2), Box())
    with pytest.raises(TypeError, match=r"^scale: factor was traced for the object Object\[Box at"):
        ta.saved_model.save(scale, tmp_path)


DEFINITIONS = '''
import torch
import torch_autograph as ta


class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.lin = torch.nn.Linear(4, 4)
        self.norm = torch.nn.LayerNorm(4)

    @ta.function(input_signature=[ta.TensorSpec([None, 4], torch.float32), ta.TensorSpec([], torch.int64)])
    def run(self, x, steps):
        outs = []
        for i in range(steps):
            x = torch.relu(self.lin(x))
            if x.mean() > 0.5:
                x = x / 2
            outs.append(x.sum(0))
        assert x.abs().sum() < 1e6, "diverged"
        return self.norm(x), torch.stack(outs)
'''

def _save_counter(out, src) -> None:
    """Saves `counter_defs.Counter` (imported from `src`) into `out` with the expected outputs, eager's; then the
    module leaves this process (sys.modules and sys.path), as it leaves the disk."""
    import importlib

    sys.path.insert(0, str(src))
    try:
        counter_defs = importlib.import_module("counter_defs")
        m = counter_defs.Counter().eval()
        ta.saved_model.save(m, str(out))
        g = torch.Generator().manual_seed(5)
        inputs = [(torch.randn(n, 4, generator=g), torch.tensor(k)) for n, k in ((3, 2), (7, 5), (1, 1))]
        eager = [type(m).run.python_function(m, *a) for a in inputs]  # the reference: eager PyTorch
        torch.save({"inputs": inputs, "outputs": eager}, str(out) + "/expected.pt")
    finally:
        sys.path.remove(str(src))
        sys.modules.pop("counter_defs", None)


LOAD = '''
import sys, torch, torch_autograph as ta
try:
    import counter_defs
    raise SystemExit("the defining module is still importable")
except ImportError:
    pass
loaded = ta.saved_model.load(sys.argv[1])
expected = torch.load(sys.argv[1] + "/expected.pt")
for args, want in zip(expected["inputs"], expected["outputs"]):
    got = loaded.run(*args)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
print("matched", len(expected["inputs"]))
'''


def test_loads_in_a_fresh_process_after_the_defining_module_is_deleted(tmp_path):
    src, out = tmp_path / "src", tmp_path / "saved"
    src.mkdir()
    (src / "counter_defs.py").write_text(textwrap.dedent(DEFINITIONS))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    _save_counter(out, src)  # here: one fresh process (the loading one) is what the test is about
    (src / "counter_defs.py").unlink()
    subprocess.run(["rm", "-rf", str(src)], check=True)
    done = subprocess.run([sys.executable, "-c", LOAD, str(out)], env=env, capture_output=True, text=True,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("matched 3")


def test_a_loaded_model_prints_its_functions_and_signatures(tmp_path):
    model = Model()
    ta.saved_model.save(model, str(tmp_path / "m"))
    loaded = ta.saved_model.load(str(tmp_path / "m"))
    text = repr(loaded)
    assert text.startswith("<loaded saved model>\n")
    assert "  predict(x: float32[None, 3], n: int64[])" in text.splitlines()
    assert "  signatures['serving_default'](x: float32[None, 3], n: int64[])" in text.splitlines()
    assert "object at 0x" not in text
    assert repr(loaded.predict) == "<loaded ta.function predict: (x: float32[None, 3], n: int64[])>"
    add = ta.function(lambda x: x + 1)
    add(torch.ones(2))
    add(torch.ones(3, dtype=torch.int64))
    ta.saved_model.save(add, str(tmp_path / "f"))
    text = repr(ta.saved_model.load(str(tmp_path / "f")))
    assert "  __call__(x: float32[2])" in text and "  __call__(x: int64[3])" in text


def test_a_loaded_function_returns_the_functions_structures(tmp_path):
    import collections

    Pair = collections.namedtuple("Pair", "low high")

    def split(x):
        return {"pair": Pair(x.clamp(max=0), x.clamp(min=0)), "rest": [x.sum(0), None]}

    f = ta.function(split, input_signature=[ROWS])
    ta.saved_model.save(f, tmp_path)
    loaded = ta.saved_model.load(tmp_path)
    x = torch.randn(4, 3)
    got, want = loaded(x), split(x)
    assert list(got) == ["pair", "rest"] and type(got["pair"]).__name__ == "Pair"
    assert got["pair"]._fields == ("low", "high") and got["rest"][1] is None
    torch.testing.assert_close(got["pair"].low, want["pair"].low)
    torch.testing.assert_close(got["pair"].high, want["pair"].high)
    torch.testing.assert_close(got["rest"][0], want["rest"][0])
