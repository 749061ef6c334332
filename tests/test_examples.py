"""The example scripts run and check their own results against eager PyTorch."""

import pathlib
import runpy

import pytest
import torch

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


# What `make demo` may print per example: a screenful.
SCREENFUL = 50


@pytest.mark.parametrize("name", ["quickstart.py", "control_flow.py", "train_classifier.py"])
def test_example_runs(name, capsys):
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    captured = capsys.readouterr()
    assert "OK" in captured.out
    assert len(captured.out.splitlines()) <= SCREENFUL, captured.out
    assert captured.err == "", captured.err
    lines = captured.out.splitlines()
    for i, line in enumerate(lines):  # a generated-code header comes with its code, never alone
        assert not line.startswith("# graph ") or lines[i + 1].startswith("def "), line


def _train_gpt():
    return runpy.run_path(str(EXAMPLES / "train_gpt.py"), run_name="train_gpt")


@pytest.mark.slow  # the --quick demo below runs the same 20 checked steps (and 20 more), with the same asserts
def test_train_gpt_first_20_steps_match_eager(capsys):
    gpt = _train_gpt()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the example runs: small tensors, and intra-op threads fight on shared machines
    # run() checks every loss of the first 20 steps and every parameter after them against the same steps run
    # eagerly on a copy of the model (bf16 autocast, dropout, 2 micro-batches, clipping, AdamW, LambdaLR).
    try:
        result = gpt["run"](gpt["Hyper"](steps=20), check=20)
    finally:
        torch.set_num_threads(threads)
    assert result["traces"] == 1 and result["max_param_diff"] < 1e-5
    assert result["losses"][-1] < result["losses"][0]
    assert "step   19  loss" in capsys.readouterr().out


def test_train_gpt_quick_demo_prints_ok(capsys):
    # run() checks every loss of the first 20 steps and every parameter after them against the same steps run
    # eagerly on a copy of the model (bf16 autocast, dropout, 2 micro-batches, clipping, AdamW, LambdaLR).
    threads = torch.get_num_threads()
    try:
        result = _train_gpt()["main"](["--quick"])  # sets one intra-op thread, as a script may
    finally:
        torch.set_num_threads(threads)
    assert result["traces"] == 1 and result["max_param_diff"] < 1e-5
    assert result["losses"][-1] < result["losses"][0]
    out = capsys.readouterr().out
    assert "OK" in out and "the first 20 steps match eager" in out
    assert len(out.splitlines()) <= SCREENFUL, out


def test_train_ddp_under_torchrun_two_processes():
    """`torchrun --nproc_per_node=2 examples/train_ddp.py`: both ranks check 20 steps against eager DDP."""
    import os
    import re
    import subprocess
    import sys

    from distributed_harness import free_port

    root = EXAMPLES.parent
    env = dict(os.environ, PYTHONPATH=f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--master_addr=127.0.0.1",
           f"--master_port={free_port()}", str(EXAMPLES / "train_ddp.py")]
    done = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for rank in (0, 1):
        assert f"rank {rank}: train_ddp OK" in done.stdout
    means = dict(re.findall(r"rank (\d): step 200 .* mean loss (\S+)$", done.stdout, re.M))
    assert len(means) == 2 and means["0"] == means["1"]  # the all-reduced loss agrees on both ranks


@pytest.mark.slow  # about a minute on 2 cores; tests/integrations/test_hf_decoding.py runs the same loop by default
def test_hf_decode_example_checks_its_tokens_against_eager(capsys):
    pytest.importorskip("transformers")
    runpy.run_path(str(EXAMPLES / "hf_decode.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "OK" in out and "traces: 1" in out, out
