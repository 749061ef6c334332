"""P3g: the per-call cost of the guards on a trace's modules (a replaced submodule, parameter or buffer traces again).

The P3 model (nn.Sequential of 8 x Linear(32,32)+ReLU, batch 8, no_grad and grad) through two Functions, both
traced once: "ta.function" as shipped, whose call checks the 34 entries of the modules it read
(state/module_guards.py) before running the graph, "no module guard", the same trace with that check
removed, and "per-entry guard (before)", the check as it was before dicts were compared whole (one test per
entry, through the generic `guards_hold`). Interleaved rounds in one process, so the ratio is the guard's share of a P3 call. Also P1's function
(`x + 1`, no module), whose trace has no such guard: its call path is the one without the check.

Target: the guard costs at most 5% of a P3 call.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
from harness import (  # noqa: E402
    Candidate,
    Row,
    Settings,
    check_equal,
    check_no_retrace,
    main_for,
    run_interleaved,
)

import torch_autograph as ta  # noqa: E402

NAME = "P3g module guards, P3 MLP 8x(Linear 32+ReLU)"
TARGET = 1.05


def _without_guard(F, grad):
    cf = next(c for c in F.concrete_functions if c.grad == grad)
    assert cf.structure is not None and len(cf.structure) > 0
    cf.guards = tuple(g for g in cf.guards if g is not cf.structure)
    cf.structure = None


def _as_before(F, grad):
    """The guard as it was before the whole-dict compare: one `d[k] is v` test per entry and one `len` test per
    container (globals of the generated function), called through the generic `guards_hold` method."""
    cf = next(c for c in F.concrete_functions if c.grad == grad)
    structure = cf.structure
    env, tests = {}, []
    for i, (ref, where, key, obj) in enumerate(structure._entries):
        m = ref()
        env[f"d{i}"] = vars(m) if where == "" else vars(m)[where]
        env[f"k{i}"], env[f"v{i}"] = key, obj
        tests.append(f"d{i}[k{i}] is v{i}")
    for i, (ref, where, n) in enumerate(structure._sizes):
        env[f"s{i}"] = vars(ref())[where]
        tests.append(f"len(s{i}) == {n}")
    exec("def holds():\n    try:\n        return " + " and ".join(tests) +  # noqa: S102 (our code)
         "\n    except KeyError:\n        return False\n", env)
    structure.holds = env["holds"]
    cf.guards_hold_outside_autocast = cf.guards_hold  # (the method: structure.holds(), then the other guards)


def run(settings: Settings) -> list[Row]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[m for _ in range(8) for m in (torch.nn.Linear(32, 32), torch.nn.ReLU())])
    x = torch.randn(8, 32)
    rows = []
    for grad in (False, True):
        label = f"{NAME} [{'grad' if grad else 'no_grad'}]"
        with torch.set_grad_enabled(grad):
            F = ta.function(lambda x: model(x))
            G = ta.function(lambda x: model(x))
            H = ta.function(lambda x: model(x))
            want = model(x)
            for fn in (F, G, H):
                check_equal(label, fn(x), want)
                fn(x)
            n = len(next(c for c in F.concrete_functions if c.grad == grad).structure)
            _without_guard(G, grad)
            _as_before(H, grad)
            check_equal(label, H(x), want)
            cands = [Candidate("no module guard", "G(x)", {"G": G, "x": x}),
                     Candidate("ta.function", "F(x)", {"F": F, "x": x}),
                     Candidate("per-entry guard (before)", "H(x)", {"H": H, "x": x})]
            res = run_interleaved(cands, settings, baseline="no module guard")
        check_no_retrace(F, 1, label)
        check_no_retrace(H, 1, label)
        b, o, old = res["no module guard"], res["ta.function"], res["per-entry guard (before)"]
        rows.append(Row(label, "no module guard", b.median_us, None, "", None, "the same trace, check removed"))
        rows.append(Row(label, "per-entry guard (before)", old.median_us, old.ratio, "", None,
                        f"{n} entries, one test each; {old.spread()}"))
        rows.append(Row(label, "ta.function", o.median_us, o.ratio, f"<= {TARGET:.2f}x", o.ratio <= TARGET,
                        f"{n} entries checked; {o.spread()}"))
    return rows


if __name__ == "__main__":
    main_for(run, __doc__)
