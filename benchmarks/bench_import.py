"""P9: import and first call, each in a fresh process, on top of `import torch`.

Every sample is a new Python process that times, with `time.perf_counter`:
  import torch             the baseline every PyTorch program pays
  import torch_autograph   what we add at import
  first call              the first call of `ta.function(relu2)`, `def relu2(x): return torch.relu(x) * 2` in a
                           module of its own, on a (3, 4) tensor: AutoGraph conversion (a warning that it could
                           not convert fails the sample), the trace, shape inference, code generation, the run
and reports which heavy modules that left loaded (`torch._dynamo`, `torch._inductor`, `sympy`).
Medians over the processes. Target: import + first call <= 0.3 s on top of `import torch`.

Also measured, for tracing with FakeTensor and ShapeEnv: the import time of `torch._subclasses.fake_tensor` and
`torch.fx.experimental.symbolic_shapes` after `import torch`, the first `FakeTensorMode()` and `ShapeEnv()`,
and which heavy modules each step loads.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Row, Settings, main_for  # noqa: E402

NAME = "P9 import + first call (fresh process)"
TARGET_S = 0.3
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_HEAVY = ("torch._dynamo", "torch._inductor", "sympy")

# The function lives in a file, as in a program: AutoGraph reads its source and converts it.
_USER_MODULE = """
import torch


def relu2(x):
    return torch.relu(x) * 2
"""

_FIRST_CALL = """
import json, sys, time
t0 = time.perf_counter()
import torch
t1 = time.perf_counter()
import torch_autograph as ta
t2 = time.perf_counter()
import p9_user
f = ta.function(p9_user.relu2)
x = torch.randn(3, 4)
y = f(x)
t3 = time.perf_counter()
assert torch.equal(y, torch.relu(x) * 2)
print(json.dumps({"torch": t1 - t0, "import": t2 - t1, "first_call": t3 - t2,
                  "loaded": [m for m in HEAVY if m in sys.modules]}))
"""

_SYMBOLIC = """
import json, sys, time
import torch
t0 = time.perf_counter()
import torch._subclasses.fake_tensor
t1 = time.perf_counter()
import torch.fx.experimental.symbolic_shapes
t2 = time.perf_counter()
loaded_by_imports = [m for m in HEAVY if m in sys.modules]
mode = torch._subclasses.fake_tensor.FakeTensorMode()
t3 = time.perf_counter()
env = torch.fx.experimental.symbolic_shapes.ShapeEnv()
t4 = time.perf_counter()
print(json.dumps({"fake_tensor": t1 - t0, "symbolic_shapes": t2 - t1, "mode": t3 - t2, "shape_env": t4 - t3,
                  "loaded_by_imports": loaded_by_imports, "loaded": [m for m in HEAVY if m in sys.modules]}))
"""


def _sample(code: str, user_dir: str) -> dict:
    path = os.pathsep.join(filter(None, [_ROOT, user_dir, os.environ.get("PYTHONPATH")]))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # time imports as users see them
    done = subprocess.run([sys.executable, "-W", "error::UserWarning:torch_autograph.autograph.api", "-c",
                           f"HEAVY = {_HEAVY!r}\n" + code], env=dict(env, PYTHONPATH=path),
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the P9 sample process failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _median(samples: list[dict], key: str) -> float:
    return statistics.median(s[key] for s in samples)


def run(settings: Settings) -> list[Row]:
    n = 3 if settings.quick else 7
    with tempfile.TemporaryDirectory() as user_dir:
        with open(os.path.join(user_dir, "p9_user.py"), "w") as f:
            f.write(_USER_MODULE)
        _sample(_FIRST_CALL, user_dir)  # writes the .pyc files: later processes import as an installed package does
        calls = [_sample(_FIRST_CALL, user_dir) for _ in range(n)]
        symbolic = [_sample(_SYMBOLIC, user_dir) for _ in range(n)]
    torch_s, import_s, first_s = (_median(calls, k) for k in ("torch", "import", "first_call"))
    on_top = statistics.median(s["import"] + s["first_call"] for s in calls)
    loaded = sorted({m for s in calls for m in s["loaded"]})
    sym_loaded = sorted({m for s in symbolic for m in s["loaded"]})
    return [
        Row(NAME, "import torch", torch_s * 1e6, None, "", None, f"baseline; median of {n} processes"),
        Row(NAME, "import torch_autograph", import_s * 1e6, import_s / torch_s, "", None, "after import torch"),
        Row(NAME, "first call relu(x) * 2", first_s * 1e6, None, "", None,
            "convert + trace + codegen + run; left loaded: " + (", ".join(loaded) or "none of " + ", ".join(_HEAVY))),
        Row(NAME, "import + first call", on_top * 1e6, on_top / torch_s, f"<= {TARGET_S} s", on_top <= TARGET_S,
            "on top of import torch (ratio: vs import torch)"),
        Row(NAME, "import fake_tensor", _median(symbolic, "fake_tensor") * 1e6, None, "", None,
            "after import torch (already loaded by it)"),
        Row(NAME, "import symbolic_shapes", _median(symbolic, "symbolic_shapes") * 1e6, None, "", None,
            "after import torch; loads " + (", ".join(sorted({m for s in symbolic for m in s["loaded_by_imports"]}))
                                            or "none of " + ", ".join(_HEAVY))),
        Row(NAME, "FakeTensorMode()", _median(symbolic, "mode") * 1e6, None, "", None,
            "its first construction (its __init__ imports torch._dynamo.config)"),
        Row(NAME, "ShapeEnv()", _median(symbolic, "shape_env") * 1e6, None, "", None,
            "after FakeTensorMode(); left loaded: " + ", ".join(sym_loaded)),
    ]


if __name__ == "__main__":
    main_for(run, __doc__)
