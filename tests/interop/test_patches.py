"""torch is patched only through the one table, only while something needs it, and is torch's own otherwise.

The import test runs in a fresh interpreter: it snapshots every class attribute and function attribute the
table can touch before `import torch_autograph`, then checks each target of the table is the same object after.
The same interpreter then runs a trace and torch.compile after it (the torch.compile test).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

import torch_autograph as ta
from torch_autograph.interop import TAPE_PATCHES, TRACE_PATCHES, WATCH_PATCHES, table

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def fresh() -> dict:
    """The results of `_SNAPSHOT` and then `_COMPILE_AFTER_A_TRACE`, from one fresh interpreter."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", _SNAPSHOT + _COMPILE_AFTER_A_TRACE], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    return {"snapshot": json.loads(lines[-2]), "compile": json.loads(lines[-1])}


_SNAPSHOT = """
import json, sys, torch, torch.distributed, torch.optim, torch.amp, torch.nn.parallel
import torch._refs, torch._prims, torch._decomp
def classes(root):
    out, stack = [], [root]
    while stack:
        c = stack.pop(); out.append(c); stack.extend(c.__subclasses__())
    return out
watched = (classes(torch.optim.Optimizer) + classes(torch.optim.lr_scheduler.LRScheduler)
           + classes(torch.amp.GradScaler) + [torch.nn.Module, torch.Tensor, torch._C.TensorBase,
           torch.nn.parallel.DistributedDataParallel, torch.distributed.ProcessGroup, torch.compiler, torch])
before = {(id(c), n): v for c in watched for n, v in list(vars(c).items())}
import torch_autograph as ta
from torch_autograph.interop import TRACE_PATCHES, WATCH_PATCHES
changed, targets = [], 0
for s in (TRACE_PATCHES, WATCH_PATCHES):
    for p in s.patches:
        for obj, name in getattr(p, "targets", list)():
            targets += 1
            if vars(obj).get(name, "<missing>") is not before.get((id(obj), name), "<missing>"):
                changed.append(f"{obj!r}.{name}")
changed += [f"{c.__qualname__}.{n}" for c in watched for n, v in list(vars(c).items())
            if before.get((id(c), n), "<missing>") is not v]
print(json.dumps({"changed": changed, "targets": targets, "active": TRACE_PATCHES.active() or WATCH_PATCHES.active()}))
"""


def test_importing_the_package_changes_no_torch_attribute(fresh):
    got = fresh["snapshot"]
    assert got == {"changed": [], "targets": got["targets"], "active": False}
    assert got["targets"] > 100  # the table was really walked: optimizers, schedulers, collectives, refs


def test_every_patch_is_on_while_a_trace_runs_and_off_after():
    seen = {}

    def body(x):
        seen["active"] = TRACE_PATCHES.active()
        seen["step_staged"] = hasattr(vars(torch.optim.SGD)["step"], "_ta_staged")
        seen["zero_grad_staged"] = hasattr(vars(torch.nn.Module)["zero_grad"], "_ta_staged")
        return x + 1

    ta.function(body)(torch.ones(2))
    assert seen == {"active": True, "step_staged": True, "zero_grad_staged": True}
    assert not TRACE_PATCHES.active()
    assert not hasattr(vars(torch.optim.SGD)["step"], "_ta_staged")
    assert not hasattr(vars(torch.nn.Module)["zero_grad"], "_ta_staged")


def test_the_table_names_owner_attribute_lifetime_and_reason_of_each_patch():
    rows = table()
    owners = {owner for owner, *_ in rows}
    assert {"torch.Tensor", "torch.nn.Module", "torch.distributed.ProcessGroup"} <= owners
    assert ("torch.Tensor", "data", "while frozen code is alive") in {r[:3] for r in rows}
    assert all(why for *_, why in rows)


def test_a_trace_failing_midway_still_takes_every_patch_off():
    def body(x):
        raise ValueError("user bug")

    with pytest.raises(ValueError, match="user bug"):
        ta.function(body)(torch.ones(2))
    assert not TRACE_PATCHES.active()
    assert not hasattr(vars(torch.optim.Adam)["step"], "_ta_staged")


# ----- torch behaves as without the package after a trace ------------------------------------------------------
def _trained(opt_cls, steps=3):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    opt = opt_cls(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    x, y = torch.randn(8, 4), torch.randn(8, 2)
    for _ in range(steps):
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        sched.step()
    return [p.detach().clone() for p in model.parameters()], sched.get_last_lr()


def test_torch_optim_after_a_trace_is_torchs_own():
    want = _trained(torch.optim.Adam)
    ta.function(lambda x: x * 2)(torch.ones(2))  # a trace in between
    got = _trained(torch.optim.Adam)
    for a, b in zip(got[0], want[0]):
        assert torch.equal(a, b)
    assert got[1] == want[1]
    assert torch.optim.Adam.step.__qualname__ == "Adam.step"


def test_tensor_data_after_frozen_code_is_collected_is_torchs_own():
    base = vars(torch._C.TensorBase)["data"]
    assert "data" not in vars(torch.Tensor) or vars(torch.Tensor)["data"] is not base
    before = vars(torch.Tensor).get("data")
    from torch_autograph.interop import FrozenDataWatch

    w = torch.ones(3)
    watch = FrozenDataWatch([w])
    assert WATCH_PATCHES.active() and vars(torch.Tensor)["data"] is not before
    w.data.mul_(2)
    assert w._version > 0  # seen while watched
    watch.close()
    assert not WATCH_PATCHES.active() and vars(torch.Tensor).get("data") is before
    v = torch.ones(3)
    version = v._version
    v.data.mul_(2)
    assert v._version == version  # torch's own `.data`: its own version counter again


def test_the_watch_switch_leaves_torch_alone():
    from torch_autograph.interop import FrozenDataWatch

    before = vars(torch.Tensor).get("data")
    ta.config.set_watch_frozen_data(False)
    try:
        watch = FrozenDataWatch([torch.ones(2)])
        assert not WATCH_PATCHES.active() and vars(torch.Tensor).get("data") is before
        watch.close()
    finally:
        ta.config.set_watch_frozen_data(True)


def test_ddp_and_process_groups_after_a_trace_are_torchs_own(one_process_group):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    originals = {n: vars(DDP)[n] for n in ("_pre_forward", "_post_forward", "no_sync")}
    pg_allreduce = vars(dist.ProcessGroup)["allreduce"]
    model = DDP(torch.nn.Linear(3, 1))
    f = ta.function(lambda x: model(x).sum())
    torch.testing.assert_close(f(torch.ones(2, 3)), model(torch.ones(2, 3)).sum())
    assert {n: vars(DDP)[n] for n in originals} == originals
    assert vars(dist.ProcessGroup)["allreduce"] is pg_allreduce
    t = torch.ones(2)
    dist.all_reduce(t)  # eager, after the trace: torch's own collective
    torch.testing.assert_close(t, torch.ones(2))


# Run after `_SNAPSHOT`, in its interpreter (the fixture `fresh`).
_COMPILE_AFTER_A_TRACE = """
ta.function(lambda x: torch.relu(x) * 2)(torch.randn(3))
x = torch.randn(4)
c = torch.compile(lambda x: torch.sin(x) + 1, backend="eager")
print(json.dumps({"same": bool(torch.equal(c(x), torch.sin(x) + 1))}))
"""


def test_torch_compile_after_a_trace_behaves_as_without_the_package(fresh):
    assert fresh["compile"] == {"same": True}


def test_the_docs_page_lists_every_patch_of_the_table():
    page = open(os.path.join(ROOT, "docs", "torch-patches.md")).read()
    for patch_set in (TRACE_PATCHES, WATCH_PATCHES, TAPE_PATCHES):
        for p in patch_set.patches:
            row = next((line for line in page.splitlines() if line.startswith(f"| {p.owner} |") and p.why in line),
                       None)
            assert row is not None, p.owner
            assert patch_set.name in row and p.why in row
            assert all(f"`{a}`" in row for a in p.attributes[:4])


def test_is_compiling_is_true_in_the_tracing_thread_only():
    import threading

    seen = {}

    def other():
        seen["other"] = torch.compiler.is_compiling()

    def body(x):
        seen["traced"] = (torch.compiler.is_compiling(), torch._dynamo.is_compiling())
        t = threading.Thread(target=other)
        t.start()
        t.join()
        with ta.init_scope():
            seen["init_scope"] = torch.compiler.is_compiling()
        return x + 1

    ta.function(body)(torch.ones(2))
    assert seen["traced"] == (True, True) and seen["other"] is False and seen["init_scope"] is False
    assert torch.compiler.is_compiling() is False


# ----- process-wide registrations: in the table, gone when the last user leaves --------------------------------
def _process_wide() -> dict:
    """sys.meta_path and torch's global module and optimizer hooks (each as (key, hook) pairs, by identity)."""
    from torch.nn.modules import module
    from torch.optim import optimizer

    def pairs(d):
        return [(k, id(v)) for k, v in d.items()]

    return {"meta_path": [id(f) for f in sys.meta_path],
            "module_pre": pairs(module._global_forward_pre_hooks),
            "module_post": pairs(module._global_forward_hooks),
            "module_always": sorted(module._global_forward_hooks_always_called),
            "step_pre": pairs(optimizer._global_optimizer_pre_hooks),
            "step_post": pairs(optimizer._global_optimizer_post_hooks)}


def test_after_a_trace_sys_meta_path_and_torchs_global_hooks_are_as_before():
    from torch.optim import optimizer

    other = optimizer.register_optimizer_step_pre_hook(lambda *a: None)  # a user's own hook keeps its place
    try:
        before, seen = _process_wide(), {}

        def body(x):
            seen["during"] = _process_wide()
            return torch.nn.functional.relu(x) + 1

        ta.function(body)(torch.ones(2))
        assert len(seen["during"]["module_pre"]) == len(before["module_pre"]) + 1
        assert len(seen["during"]["module_post"]) == len(before["module_post"]) + 1
        assert seen["during"]["step_pre"][1:] == before["step_pre"]  # ours first, the others in their order
        assert _process_wide() == before
        assert not TRACE_PATCHES.active()
    finally:
        other.remove()


def test_after_a_tape_watching_accessed_variables_torchs_global_hooks_are_as_before():
    before, lin = _process_wide(), torch.nn.Linear(2, 2)
    with ta.GradientTape() as tape:
        assert len(_process_wide()["module_pre"]) == len(before["module_pre"]) + 1
        y = lin(torch.ones(1, 2)).sum()
    assert _process_wide() == before and not TAPE_PATCHES.active()
    assert [tuple(g.shape) for g in tape.gradient(y, list(lin.parameters()))] == [(2, 2), (2,)]


_FINDER_IN_A_FRESH_PROCESS = """
import json, sys, torch
import torch_autograph as ta
before = list(sys.meta_path)
seen = {}
def body(x):
    seen["finder"] = any(type(f).__name__ == "_RestoreOnDynamoImport" for f in sys.meta_path)
    return torch.relu(x) * 2
ta.function(body)(torch.randn(3))
print(json.dumps({"during": seen["finder"], "after": sys.meta_path == before,
                  "dynamo": "torch._dynamo" in sys.modules}))
"""


def test_the_import_finder_is_there_only_while_a_trace_runs():
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", _FINDER_IN_A_FRESH_PROCESS], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"during": True, "after": True, "dynamo": False}
