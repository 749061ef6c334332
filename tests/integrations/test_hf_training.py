"""A Hugging Face training step as one graph: forward with `labels`, `loss.backward()`, clipping, AdamW,
`zero_grad`, for 10 steps: losses and final parameters equal eager's. Small random configs, nothing downloaded.

The default backend runs eager's ops in eager's order and draws the same random numbers (GPT-2's dropout, with
the seed set before each step): bitwise equal. Under `jit_compile=True` inductor fuses and reorders (rounding) and
draws its own random numbers, as torch.compile does: dropout 0 there, compared to 1e-3.
"""

import pytest
import torch

import torch_autograph as ta

transformers = pytest.importorskip("transformers")

V, STEPS = 96, 10


def _llama(dropout):
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=128,
        vocab_size=V, attention_dropout=dropout, attn_implementation="sdpa"))


def _gpt2(dropout):
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(
        n_embd=64, n_layer=2, n_head=4, vocab_size=V, n_positions=64, resid_pdrop=dropout, embd_pdrop=dropout,
        attn_pdrop=dropout, attn_implementation="sdpa"))


def _trainer(make, dropout):
    torch.manual_seed(0)
    model = make(dropout).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)

    def step(ids, mask):
        out = model(input_ids=ids, attention_mask=mask, labels=ids)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
        return out.loss.detach()

    return model, step


def _batch():
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1, V, (2, 8), generator=g)
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, :2] = 0
    return ids, mask


def _train_both(make, dropout, **options):
    eager_model, eager_step = _trainer(make, dropout)
    model, step = _trainer(make, dropout)
    f = ta.function(step, **options)
    ids, mask = _batch()
    losses = []
    for i in range(STEPS):
        torch.manual_seed(100 + i)
        want = eager_step(ids, mask)
        torch.manual_seed(100 + i)
        losses.append((f(ids, mask), want))
    return losses, list(model.parameters()), list(eager_model.parameters()), f


@pytest.mark.parametrize("make, dropout", [
    pytest.param(_llama, 0.0, id="llama"),
    pytest.param(_gpt2, 0.1, id="gpt2-dropout", marks=pytest.mark.slow),
])
def test_a_training_step_for_ten_steps_equals_eager_bitwise(make, dropout):
    losses, params, eager_params, f = _train_both(make, dropout)
    for got, want in losses:
        assert torch.equal(got, want), (got, want)
    for p, q in zip(params, eager_params):
        assert torch.equal(p, q)
    assert len(f.trace_history()) == 1


@pytest.mark.slow  # inductor compiles the step: over a minute on 2 cores
def test_a_training_step_under_jit_equals_eager_to_rounding():
    losses, params, eager_params, f = _train_both(_llama, 0.0, jit_compile=True)
    for got, want in losses:
        torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-3)
    for p, q in zip(params, eager_params):
        torch.testing.assert_close(p, q, rtol=1e-3, atol=1e-3)
