"""torch._dynamo stays unloaded through a first trace, and torch's own behaviour returns once it loads.

Both run in one fresh interpreter (the test process has long imported dynamo), in this order: the first
trace, then a trace that imports dynamo.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


_SCRIPT = """
import json, sys, traceback, torch, torch_autograph as ta
from torch_autograph.interop import lazy_dynamo
results = {}
def first_trace():
    during = []
    def body(x):
        during.append(lazy_dynamo.prefilled_count())
        return (torch.relu(x) * 2 + x.mean()).tanh()
    f = ta.function(body)
    x = torch.randn(5, 3)
    same = torch.equal(f(x), (torch.relu(x) * 2 + x.mean()).tanh())
    results['first_trace'] = ({"same": same, "dynamo": "torch._dynamo" in sys.modules, "during": during[0],
                      "after": lazy_dynamo.prefilled_count()})
def dynamo_import():
    import torch._refs
    inner = torch._refs.add  # torch's chain: out wrapper -> _disable_dynamo's `inner` -> the function it guards
    while not (inner.__code__.co_name == "inner" and inner.__code__.co_filename.endswith("_compile.py")):
        inner = inner.__wrapped__
    prefilled_fn = inner.__closure__[inner.__code__.co_freevars.index("fn")].cell_contents
    seen = {}
    def body(x):
        # dynamo starts to import in the middle of a trace: torch's own behaviour comes back at once
        seen["before"] = prefilled_fn.__dict__.get("__dynamo_disable") is prefilled_fn
        import torch._dynamo
        seen["after_import"] = "__dynamo_disable" in prefilled_fn.__dict__
        return torch.relu(x) + 1
    ta.function(body)(torch.randn(3))
    before, after_import = seen["before"], seen["after_import"]
    torch.empty(2, device="meta") + 1   # torch's wrapper now builds its real disabled version
    real = prefilled_fn.__dict__.get("__dynamo_disable")
    results['dynamo_import'] = ({"was_prefilled": before, "after_import": after_import,
                      "real_is_dynamo_disable": real is not None and real is not prefilled_fn,
                      "count": lazy_dynamo.prefilled_count(),
                      "finder_gone": not any(type(f).__name__ == "_RestoreOnDynamoImport" for f in sys.meta_path)})
for part in (first_trace, dynamo_import):  # in this order: the second imports dynamo
    try:
        part()
    except Exception:
        results[part.__name__] = {"error": traceback.format_exc()}
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def fresh():
    """The script's results by part, from one fresh interpreter."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_first_trace_leaves_dynamo_unloaded_and_computes_the_same(fresh):
    # The pre-filled attributes are torch patches of the trace: on while it runs, gone after it.
    got = fresh["first_trace"]
    assert "error" not in got, got["error"]
    assert got["same"]
    assert not got["dynamo"]
    assert got["during"] > 50  # the refs of elementwise ops, at least
    assert got["after"] == 0


def test_importing_dynamo_gives_every_wrapper_back_to_torch(fresh):
    got = fresh["dynamo_import"]
    assert got == {"was_prefilled": True, "after_import": False, "real_is_dynamo_disable": True, "count": 0,
                   "finder_gone": True}
