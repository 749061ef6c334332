"""Small programs with tensor control flow, for `jit_compile=True` against the default backend (and eager).

`program(seed)` writes one function `prog(x, n)` (`x` a float tensor, `n` a 0-d int64 tensor) of two to five
blocks drawn from `BLOCKS`: tensor `if`s and `while`s, `for` over `range(n)` with `break`, `int()`/`float()` of
tensors (as values and as sizes), `.item()`, indexing by ints and by tensors, in-place writes on slices, Python
lists and graph lists, random ops. Straight-line blocks are runs of five tensor ops or more, so inductor compiles
regions (`regions.MIN_REGION_OPS`). Every program terminates; every run starts from the same seed, so random ops
draw the same numbers (inductor's own random stream drew others).

`outcome(fn, args, jit)` runs one program as a `ta.function` and says what happened, in a form that compares
across backends and run orders: `("ok", values)` or `("error", exception type, first line)`.
"""

from __future__ import annotations

import linecache
import random
from typing import Any, Callable

import torch

import torch_autograph as ta

# `{c}`: a threshold drawn per use; `{chain}`: a run of >= 5 elementwise ops on x.
_CHAINS = (
    "torch.sin(x) * 1.5 + torch.cos(x) * 0.5 - 0.25",
    "torch.tanh(x * 0.7) + x * x * 0.1 - torch.sigmoid(x)",
    "torch.where(x > 0, x * 2.0, -x) + torch.relu(x - 0.5) * 3.0",
    "(x * 0.5 + 1.0).abs().sqrt() - torch.exp(-x * x) * 0.3",
    "torch.clamp(x, -2.0, 2.0) * 0.9 + torch.sin(x * 3.0) * 0.2 + 0.1",
)

BLOCKS = {
    "chain": "x = {chain}",
    "if": "if x.sum() > {c}:\n    x = {chain}\nelse:\n    x = x * 0.5 - 1.0",
    "if_elif": "if x.mean() > {c}:\n    x = {chain}\nelif x.mean() > -{c}:\n    x = x + 1.0\nelse:\n    x = -x",
    "if_and_none": "if x.max() > {c} and n is not None:\n    x = {chain}",
    "if_python": "if x.shape[0] > 3:\n    x = {chain}\nelse:\n    x = x * 2.0",
    "while": "i = 0\nwhile x.abs().sum() < 20.0 + {c} and i < 4:\n    x = x * 1.5 + 0.25\n    i += 1",
    "while_tensor_counter": "i = torch.tensor(0)\nwhile i < n:\n    x = {chain}\n    i += 1",
    "for_range_n": "for i in range(n):\n    x = {chain}",
    "for_break": "for i in range(n):\n    if x.mean() > {c}:\n        break\n    x = x + torch.tanh(x) * 0.5 - 0.1",
    "for_continue": "for i in range(n):\n    if i % 2 == 0:\n        continue\n    x = {chain}",
    "int_value": "m = int(n) % 3 + 1\nx = x * m + float(x.sum()) * 0.01",
    "int_size": "m = int(n) + 1\ny = torch.ones(m) * x.sum()\nx = x + y.sum() * 0.1",
    "float_value": "s = float(x.mean())\nx = {chain}\nx = x * s",
    "item": "s = x.max().item()\nx = x - s",
    "index_int": "x[0] = x[-1] * 0.5 + 1.0\nx = {chain}",
    "index_tensor": "j = n % x.shape[0]\nx = x + x[j] * 0.1\nx = {chain}",
    "index_row_col": "r = x[1][n % x.shape[-1]]\nx = x * r + {chain}",
    "inplace_slice": "x = x * 1.0\nx[1:] += torch.sin(x[:-1]) * 0.5\nx = {chain}",
    "inplace_ops": "x = x.clone()\nx.mul_(0.5).add_(1.0)\nx = {chain}",
    "py_list": "acc = []\nfor i in range(3):\n    acc.append(torch.sin(x) * i)\nx = x + torch.stack(acc).sum(0) * 0.1",
    "graph_list": "acc = []\nfor i in range(n):\n    acc.append(x.sum() * 0.1)\nif len(acc) > 0:\n    x = x + acc[-1]",
    "nested": "for i in range(n):\n    if x.sum() > {c}:\n        x = {chain}\n    else:\n        x = x + 0.5",
    "number_or_tensor": "y = 1\nif x.sum() > {c}:\n    y = x.sum() * 2.0\nz = y\ny -= 4\nx = {chain}\nx = x + y + z",
    "reduce_if": "y = x.sum(0)\nif y.max() > {c}:\n    y = y * 2.0\nx = x + y * 0.1",
    "random": "x = x + torch.randn_like(x) * 0.1 + torch.nn.functional.dropout(x, 0.5)\nx = {chain}",
}


def program(seed: int) -> tuple[str, list[str]]:
    """The source of `prog(x, n)` for `seed`, and the names of its blocks."""
    rng = random.Random(seed)
    names = rng.sample(sorted(BLOCKS), rng.randint(2, 5))
    lines = ["def prog(x, n):", "    x = x * 1.0"]  # never write into the caller's tensor
    for name in names:
        text = BLOCKS[name]
        while "{chain}" in text or "{c}" in text:
            text = text.replace("{chain}", rng.choice(_CHAINS), 1).replace("{c}", f"{rng.uniform(-1, 3):.2f}", 1)
        lines += ["    " + line for line in text.splitlines()]
    lines.append("    return x" if rng.random() < 0.7 else "    return x, x.sum()")
    return "\n".join(lines) + "\n", names


def load(source: str, tag: str) -> Callable:
    """A live `prog` from `source`, with its source in linecache (AutoGraph reads it)."""
    filename = f"<jit_program {tag}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"torch": torch}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - our own generated test programs
    return namespace["prog"]


def arguments(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    shape = [(4, 3), (6,), (5, 2)][seed % 3]
    return torch.randn(shape, generator=gen), torch.tensor(seed % 4 + 1)


def outcome(fn: Callable, args: tuple, jit: bool) -> tuple:
    """What running `fn` as a ta.function does: ("ok", values) or ("error", type name, first message line)."""
    torch.manual_seed(0)
    try:
        out = ta.function(fn, jit_compile=jit)(*args)
    except Exception as e:  # noqa: BLE001 - the outcome is what is compared
        return ("error", type(e).__name__, (str(e).splitlines() or [""])[0][:200])
    outs = out if isinstance(out, tuple) else (out,)
    return ("ok", tuple(o.detach().clone() for o in outs))


def same(a: tuple, b: tuple) -> bool:
    """Equal outcomes: the same error type, or values equal to rounding (inductor's vectorised sin/cos/exp and
    another order of sums differ from eager's in the last bits, which loops of `x * 2` amplify: seed 83 differs
    by 1.6e-4 relative after five iterations)."""
    if a[0] != b[0]:
        return False
    if a[0] == "error":
        return a[1] == b[1]
    return len(a[1]) == len(b[1]) and all(
        x.shape == y.shape and x.dtype == y.dtype and torch.allclose(x, y, rtol=1e-3, atol=1e-4, equal_nan=True)
        for x, y in zip(a[1], b[1]))


def eager(fn: Callable, args: tuple) -> tuple:
    """The truth: the plain Python function on the same arguments."""
    torch.manual_seed(0)
    try:
        out = fn(*(a.clone() for a in args))
    except Exception as e:  # noqa: BLE001
        return ("error", type(e).__name__, (str(e).splitlines() or [""])[0][:200])
    outs = out if isinstance(out, tuple) else (out,)
    return ("ok", tuple(torch.as_tensor(o).detach().clone() for o in outs))


def run(seeds: list[int], jit: Any = True) -> dict[int, tuple]:
    """Each program of `seeds`, in that order: {seed: (eager, default backend, jit_compile outcomes)}."""
    results = {}
    for seed in seeds:
        source, _ = program(seed)
        args = arguments(seed)
        truth = eager(load(source, f"{seed} eager"), args)
        default = outcome(load(source, f"{seed} default"), args, jit=False)
        results[seed] = (truth, default, outcome(load(source, f"{seed} jit"), args, jit=jit))
    return results


def classify(results: dict[int, tuple]) -> dict[str, list[int]]:
    """Seeds by class: "equal" (jit == default == eager), "eager raises too" (eager, the default backend and jit
    raise the same error type), "refused by the default backend" (eager runs; the default backend refuses it at
    trace time, `.item()`, and jit the same), "wrong value" (a backend differs from eager, or jit from the
    default), "internal error" (jit raises where the default backend runs, or raises another error)."""
    out: dict[str, list[int]] = {"equal": [], "eager raises too": [], "refused by the default backend": [],
                                 "wrong value": [], "internal error": []}
    for seed, (truth, default, jit) in sorted(results.items()):
        if default[0] == "error":
            kind = "eager raises too" if same(truth, default) else "refused by the default backend"
            out[kind if same(default, jit) else "internal error"].append(seed)
        elif jit[0] == "error":
            out["internal error"].append(seed)
        elif not (same(truth, default) and same(default, jit)):
            out["wrong value"].append(seed)
        else:
            out["equal"].append(seed)
    return out


def main(argv: list[str]) -> None:
    """`python jit_programs.py OUT ORDER_SEED N [strict]`: programs 0..N-1 in an order shuffled by ORDER_SEED, in
    this process; their outcomes saved to OUT (torch.save) for a comparison across orders."""
    import warnings

    out, order_seed, n = argv[0], int(argv[1]), int(argv[2])
    ta.config.set_jit_strict("strict" in argv[3:])
    ta.config.set_verbosity(0)
    warnings.simplefilter("ignore")
    seeds = list(range(n))
    random.Random(order_seed).shuffle(seeds)
    torch.save({"order": seeds, "results": run(seeds)}, out)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
