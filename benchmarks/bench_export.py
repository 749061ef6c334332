"""P11: exported graphs: export latency, and what runs the exported program vs our default backend.

P11a  export latency of a function with a 3-deep loop nest (a `for` over a
      run-time range holding a tensor `while` holding a `for`, with an `if`):
      `ta.export(f)` (AutoGraph conversion, trace, exportable code, torch.export)
      vs `torch.export.export` of the same function hand-written with
      `torch.while_loop` / `torch.cond`. Alternating rounds, medians; fresh
      ta.function each round (conversion cache cleared), so nothing is reused.
P11b  run time on the P5 loop (1000 iterations of `x * a + b` on 16 floats,
      the loop count a tensor) and on the P3 MLP (8 x Linear(32,32)+ReLU,
      batch 8, no_grad): the loaded program (`torch.export.load(...).module()`),
      the AOTInductor package (compiled once before timing, called through its
      loader's `run` as C++ calls it: `aoti_load_package(...)(*args)` adds
      ~15 µs of Python pytree handling per call)
      and ONNX Runtime (an InferenceSession on one thread) vs our default
      backend (`ta.function`), interleaved rounds. Every candidate's result is
      checked against the default backend's first.
"""

from __future__ import annotations

import logging
import os
import statistics
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
from harness import Candidate, Row, Settings, main_for, run_interleaved  # noqa: E402

import torch_autograph as ta  # noqa: E402
from torch_autograph.autograph import api as ag_api  # noqa: E402

NAME_A = "P11a export latency, 3-deep loop nest"
NAME_B5 = "P11b exported P5 loop (1000 iterations)"
NAME_B3 = "P11b exported P3 MLP, batch 8, no_grad"
ROWS = ta.TensorSpec([None, 8], torch.float32)
COUNT = ta.TensorSpec([], torch.int64)


def nest3(x, n):
    for i in range(n):
        while x.abs().sum() > 10:
            for _ in range(2):
                x = x * 0.5
        if x.sum() > 0:
            x = x + i
        else:
            x = x - i
    return x


class Nest3ByHand(torch.nn.Module):
    """`nest3` written by hand with torch.while_loop / torch.cond, as PyTorch's export documentation advises."""

    def forward(self, x, n):
        def outer_cond(i, x):
            return i < n

        def outer_body(i, x):
            def mid_cond(x):
                return x.abs().sum() > 10

            def mid_body(x):
                def inner_cond(k, x):
                    return k < 2

                def inner_body(k, x):
                    return k + 1, x * 0.5

                return (torch.while_loop(inner_cond, inner_body, (torch.zeros((), dtype=torch.int64), x))[1],)

            (x,) = torch.while_loop(mid_cond, mid_body, (x,))
            x = torch.cond(x.sum() > 0, lambda x, i: x + i, lambda x, i: x - i, (x, i))
            return i + 1, x

        return torch.while_loop(outer_cond, outer_body, (torch.zeros((), dtype=torch.int64), x))[1]


def loop_tensor(x, n, a, b):
    for _ in range(n):
        x = x * a + b
    return x


def make_mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(32, 32), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers)


def export_latency(settings: Settings) -> list[Row]:
    x, n = torch.randn(4, 8), torch.tensor(3)
    dims = {"x": {0: torch.export.Dim("batch")}, "n": None}
    ours_s, hand_s = [], []
    for r in range(3 if settings.quick else 7):
        for which in (("ours", "hand") if r % 2 == 0 else ("hand", "ours")):
            ag_api.clear_cache()
            t0 = time.perf_counter()
            if which == "ours":
                program = ta.export(ta.function(nest3, input_signature=[ROWS, COUNT]))
                ours_s.append(time.perf_counter() - t0)
            else:
                hand = torch.export.export(Nest3ByHand(), (x, n), dynamic_shapes=dims)
                hand_s.append(time.perf_counter() - t0)
    for k in (0, 1, 4):
        xs = torch.randn(5, 8) * 4
        torch.testing.assert_close(program.module()(xs, torch.tensor(k))[0], nest3(xs, k))
        torch.testing.assert_close(hand.module()(xs, torch.tensor(k)), nest3(xs, k))
    o, h = statistics.median(ours_s), statistics.median(hand_s)
    return [Row(NAME_A, "torch.export by hand", h * 1e6, None, "", None, f"{h:.2f} s (while_loop/cond written out)"),
            Row(NAME_A, "ta.export", o * 1e6, o / h, "", None, f"{o:.2f} s (convert + trace + export)")]


def runners(cf: ta.ConcreteFunction, flat: list[torch.Tensor], workdir: str) -> dict[str, object]:
    """The loaded program, the AOTI package and an ONNX Runtime session of `cf`, each checked on `flat`."""
    out: dict[str, object] = {}
    program = cf.export(*flat, flat=True)  # the flat convention C++ (the AOTI loader's run) and ONNX use
    path = os.path.join(workdir, f"{cf.name}.pt2")
    torch.export.save(program, path)
    loaded = torch.export.load(path).module()
    out["loaded program"] = lambda *a: loaded(*a)[0]
    try:
        from torch._inductor import aoti_compile_and_package, aoti_load_package

        package = aoti_compile_and_package(program, package_path=os.path.join(workdir, f"{cf.name}_aoti.pt2"))
        aoti = aoti_load_package(package)
        run = aoti.loader.run  # what C++'s AOTIModelPackageLoader::run is: no per-call pytree (de)serialising
        out["AOTI package"] = lambda *a: run(list(a))[0]
    except Exception as e:  # noqa: BLE001 - no compiler: report the others
        print(f"  AOTI skipped: {type(e).__name__}: {str(e).splitlines()[0][:100]}", file=sys.stderr)
    try:
        import onnxruntime

        onnx_program = ta.onnx.export(cf, None, *flat)
        opts = onnxruntime.SessionOptions()
        opts.intra_op_num_threads = opts.inter_op_num_threads = 1
        session = onnxruntime.InferenceSession(onnx_program.model_proto.SerializeToString(), opts,
                                               providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        out["ONNX Runtime"] = lambda *a: session.run(None, {k: v.numpy() for k, v in zip(names, a)})[0]
    except ImportError as e:
        print(f"  ONNX Runtime skipped: {e}", file=sys.stderr)
    return out


def run_time(settings: Settings, name: str, f: ta.Function, args: tuple) -> list[Row]:
    cf = f.get_concrete_function(*args)
    want = f(*args)
    with tempfile.TemporaryDirectory() as workdir:
        cands = [Candidate("ta.function (default backend)", "f(*a)", {"f": f, "a": args})]
        for label, fn in runners(cf, list(args), workdir).items():
            got = torch.as_tensor(fn(*args))
            torch.testing.assert_close(got, want, msg=lambda m, label=label: f"{name} {label}: {m}")
            cands.append(Candidate(label, "g(*a)", {"g": fn, "a": args}))
        res = run_interleaved(cands, settings)
    base = cands[0].name
    rows = [Row(name, base, res[base].median_us, None, "", None, "generated Python")]
    for c in cands[1:]:
        r = res[c.name]
        rows.append(Row(name, c.name, r.median_us, r.ratio, "", None, r.spread()))
    return rows


def run(settings: Settings) -> list[Row]:
    warnings.filterwarnings("ignore")
    logging.getLogger("torch_autograph").setLevel(logging.ERROR)
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    rows = export_latency(settings)
    x, n = torch.randn(16), torch.tensor(1000)
    a, b = torch.full((16,), 0.99), torch.full((16,), 0.01)
    rows += run_time(settings, NAME_B5, ta.function(loop_tensor), (x, n, a, b))
    model = make_mlp()
    with torch.no_grad():
        rows += run_time(settings, NAME_B3, ta.function(lambda x: model(x)), (torch.randn(8, 32),))
    return rows


if __name__ == "__main__":
    main_for(run, __doc__)
