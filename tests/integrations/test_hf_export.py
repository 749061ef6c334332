"""A Hugging Face forward with an attention mask saved with `ta.saved_model.save` and run in a fresh process
(no model source there: the program and its weights only), against eager. Small random configs."""

import subprocess
import sys

import pytest
import torch

import torch_autograph as ta

transformers = pytest.importorskip("transformers")

V = 96


@pytest.mark.slow  # about 25 s on 2 cores (a fresh process imports torch and loads the program)
def test_a_forward_with_a_mask_saved_runs_in_a_fresh_process(tmp_path):
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=128,
        vocab_size=V, attn_implementation="sdpa")).eval()
    ids = torch.randint(1, V, (2, 6))
    mask = torch.ones(2, 6, dtype=torch.long)
    mask[1, :2] = 0
    f = ta.function(lambda ids, mask: model(input_ids=ids, attention_mask=mask).logits)
    with torch.no_grad():
        f(ids, mask)
        ta.saved_model.save(f, str(tmp_path / "saved"))
        want = model(input_ids=ids, attention_mask=mask).logits
    torch.save((ids, mask, want), tmp_path / "check.pt")
    code = (f"import torch, torch_autograph as ta\n"
            f"ids, mask, want = torch.load({str(tmp_path / 'check.pt')!r})\n"
            f"loaded = ta.saved_model.load({str(tmp_path / 'saved')!r})\n"
            f"got = loaded(ids, mask)\n"
            f"got = got if isinstance(got, torch.Tensor) else got[0]\n"
            f"torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)\n"
            f"print('equal')\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and "equal" in run.stdout, run.stderr[-3000:]
