"""Hugging Face programs exported: a forward with an attention mask, and a greedy decoding loop with a
`StaticCache` and a tensor EOS stop, saved with `ta.saved_model.save` and run in a fresh process (no model
source there: the program and its weights only), against eager. Small random configs."""

import subprocess
import sys

import pytest
import torch

import torch_autograph as ta

transformers = pytest.importorskip("transformers")

V = 96


def _decode():
    """The static-cache decode of `test_hf_decoding` (its `while not done.all()` loop), with a Llama and the
    left-padded batch of 2, eagerly: (the decode, its inputs, EOS ids that stop it at steps 1, 2 and never,
    eager's tokens for each)."""
    import tests.integrations.test_hf_decoding as hf

    torch.manual_seed(0)
    decode = hf._static_decoder(hf._llama().eval())
    ids, mask = hf._prompts(2)
    no_eos = torch.tensor(-1)
    with torch.no_grad():
        first = decode(ids, mask, no_eos)
        eoses = [first[0, hf.T + 1], first[:, hf.T + 2].max(), no_eos]
        return decode, (ids, mask), eoses, [decode(ids, mask, e) for e in eoses]


def test_a_static_cache_decode_loop_exports_with_its_data_dependent_stop():
    # The cache's update wraps `index_copy_` in `try: ... except NotImplementedError:` (a fallback for devices
    # without the kernel); the CPU has it, so the trace holds no handler and the loop is one torch.while_loop.
    decode, (ids, mask), eoses, wants = _decode()
    f = ta.function(decode)
    with torch.no_grad():
        program = ta.export(f, ids, mask, eoses[0]).module()
        for eos, want in zip(eoses, wants):
            assert torch.equal(program(ids, mask, eos), want), eos


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
    _equal_in_a_fresh_process(tmp_path, ("ids", "mask", "want"), (ids, mask, want),
                              "got = loaded(ids, mask)\n"
                              "got = got if isinstance(got, torch.Tensor) else got[0]\n"
                              "torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)\n")


@pytest.mark.slow  # about 30 s on 2 cores
def test_a_static_cache_decode_loop_saved_runs_in_a_fresh_process(tmp_path):
    decode, (ids, mask), eoses, wants = _decode()
    f = ta.function(decode)
    with torch.no_grad():
        f(ids, mask, eoses[0])
        ta.saved_model.save(f, str(tmp_path / "saved"))
    _equal_in_a_fresh_process(tmp_path, ("ids", "mask", "eoses", "wants"), (ids, mask, eoses, wants),
                              "assert all(torch.equal(loaded(ids, mask, e), w) for e, w in zip(eoses, wants))\n")


def _equal_in_a_fresh_process(tmp_path, names, values, check):
    """Run `check` in a fresh process, with `loaded` the program saved in tmp_path/saved and `names` bound to
    `values` (loaded from a file): no model source there."""
    torch.save(values, tmp_path / "check.pt")
    code = (f"import torch, torch_autograph as ta\n"
            f"{', '.join(names)}, = torch.load({str(tmp_path / 'check.pt')!r})\n"
            f"loaded = ta.saved_model.load({str(tmp_path / 'saved')!r})\n"
            f"{check}print('equal')\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and "equal" in run.stdout, run.stderr[-3000:]
