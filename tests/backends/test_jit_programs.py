"""Programs with tensor control flow under jit_compile=True after the default backend, in random orders: jit equals
the default backend (which equals eager) or both refuse alike; no outcome depends on the order.

The default run takes 6 programs (inductor compiles take seconds each) in two orders in one process;
`make test-slow` takes 240 in three orders, each order in its own process with an empty inductor cache. The programs: tests/backends/jit_programs.py.
"""

import os
import random
import shutil
import subprocess
import sys

import jit_programs as jp
import pytest
import torch

import torch_autograph as ta

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="inductor on CPU needs a C++ compiler")
HERE = os.path.dirname(os.path.abspath(__file__))
FAST = [0, 24, 64, 157, 48, 205]  # every kind of block among them (a greedy cover)


@pytest.fixture
def strict(monkeypatch):
    monkeypatch.setattr(ta.config._config, "jit_strict", True)


def test_programs_give_the_default_backends_values_in_two_orders(strict):
    orders = [list(FAST), random.Random(7).sample(FAST, len(FAST))]
    runs = [jp.run(order) for order in orders]
    for results in runs:
        classes = jp.classify(results)
        assert not classes["wrong value"] and not classes["internal error"], classes
    for seed in FAST:
        assert all(jp.same(a, b) for a, b in zip(runs[0][seed], runs[1][seed])), seed


def test_the_program_set_covers_every_block():
    seen = {name for seed in range(240) for name in jp.program(seed)[1]}
    assert seen == set(jp.BLOCKS)
    assert {name for seed in FAST for name in jp.program(seed)[1]} == set(jp.BLOCKS)


@pytest.mark.slow
def test_240_programs_in_three_orders_each_in_its_own_process(tmp_path):
    # Each order compiles from an empty inductor cache: a cache hit would skip the compile whose state could leak.
    # About 7 s per program on 2 busy cores: TA_JIT_PROGRAMS=60 runs fewer.
    n, runs = int(os.environ.get("TA_JIT_PROGRAMS", 240)), []
    for order_seed in (1, 2, 3):
        out = tmp_path / f"order{order_seed}.pt"
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / f"cache{order_seed}"),
                   PYTHONPATH=os.pathsep.join(sys.path))
        subprocess.run([sys.executable, os.path.join(HERE, "jit_programs.py"), str(out), str(order_seed), str(n),
                        "strict"], check=True, cwd=os.path.dirname(os.path.dirname(HERE)), env=env)
        runs.append(torch.load(out, weights_only=False))
    for run in runs:
        classes = jp.classify(run["results"])
        print({k: len(v) for k, v in classes.items()})
        assert not classes["wrong value"] and not classes["internal error"], classes
    assert runs[0]["order"] != runs[1]["order"]
    for seed in range(n):
        outcomes = [run["results"][seed] for run in runs]
        assert all(jp.same(a, b) for o in outcomes[1:] for a, b in zip(outcomes[0], o)), seed
