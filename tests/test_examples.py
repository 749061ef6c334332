"""The example scripts run and check their own results against eager PyTorch."""

import pathlib
import runpy

import pytest
import torch

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize("name", ["quickstart.py", "control_flow.py", "train_classifier.py"])
def test_example_runs(name, capsys):
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    out = capsys.readouterr().out
    assert "OK" in out


def _train_gpt():
    return runpy.run_path(str(EXAMPLES / "train_gpt.py"), run_name="train_gpt")


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
    threads = torch.get_num_threads()
    try:
        _train_gpt()["main"](["--quick"])  # sets one intra-op thread, as a script may
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    assert "OK" in out and "the first 20 steps match eager" in out
