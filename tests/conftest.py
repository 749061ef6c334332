"""Shared by every test directory: the helpers in tests/ on sys.path, and the `slow` marker's switch.

`make test` deselects tests marked `slow` (long randomised runs); `make test-slow` runs only them.
"""

from __future__ import annotations

import datetime
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "autograph"))


def pytest_collection_modifyitems(config, items):
    """Tests marked `graphviz` need Graphviz's `dot` program: skipped cleanly where it is not installed."""
    import shutil

    if shutil.which("dot") is None:
        skip = pytest.mark.skip(reason="needs Graphviz's `dot` program (apt-get install graphviz)")
        for item in items:
            if "graphviz" in item.keywords:
                item.add_marker(skip)


# The test modules whose `worker` runs in two spawned gloo processes (tests/distributed_harness.py): one spawn
# serves all of them, each module's `results` fixture takes its part (`spawned_results[__file__]`).
SPAWNED_MODULES = ("interop/test_ddp.py", "interop/test_fsdp.py", "interop/test_collectives.py")


@pytest.fixture(scope="session")
def spawned_results(request):
    """{test module path: its worker's results by rank}, for the modules of SPAWNED_MODULES this session runs."""
    from distributed_harness import run_modules

    here = os.path.dirname(os.path.realpath(__file__))
    collected = {os.path.realpath(str(item.path)) for item in request.session.items}
    paths = [p for p in (os.path.join(here, m) for m in SPAWNED_MODULES) if p in collected]
    return run_modules(paths, nprocs=2, timeout=900)


@pytest.fixture(scope="module")
def one_process_group():
    """A gloo process group of this process alone (world size 1): for trace-time checks of torch.distributed."""
    import torch.distributed as dist

    # A group left by another test would make these checks run against it: a bug of the tests, not a reason to skip.
    assert not dist.is_initialized(), "a process group is already initialized in this process"
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1,
                            timeout=datetime.timedelta(seconds=30))
    yield dist.group.WORLD
    dist.destroy_process_group()
