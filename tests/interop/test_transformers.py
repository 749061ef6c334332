"""Hugging Face transformers models (library code AutoGraph does not convert) traced as they are, against eager.

Small random configs, nothing downloaded. While a trace runs `torch.compiler.is_compiling()` is True in the
tracing thread, so transformers' masking builds its masks as tensors instead of taking data-dependent shortcuts.
Skipped without transformers.
"""

import pytest
import torch

import torch_autograph as ta

transformers = pytest.importorskip("transformers")

B, T, V = 2, 6, 128


def _llama():
    return transformers.LlamaModel(transformers.LlamaConfig(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, vocab_size=V,
        attn_implementation="sdpa"))


def _gpt2():
    return transformers.GPT2Model(transformers.GPT2Config(
        n_embd=64, n_layer=2, n_head=4, vocab_size=V, n_positions=64, bos_token_id=0, eos_token_id=0,
        attn_implementation="sdpa"))


def _bert():
    return transformers.BertModel(transformers.BertConfig(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, vocab_size=V,
        attn_implementation="sdpa"))


def _t5():
    return transformers.T5EncoderModel(transformers.T5Config(
        d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4, vocab_size=V, dropout_rate=0.0,
        attn_implementation="sdpa"))


def _masks():
    ones = torch.ones(B, T, dtype=torch.long)
    left = ones.clone()
    left[1, :2] = 0
    other = ones.clone()
    other[0, :3] = 0
    return ones, left, other


_MODELS = [_llama, _gpt2, _bert, _t5]
_CASES = [pytest.param(m, False, id=f"{m.__name__[1:]}-eval") for m in _MODELS] + [
    pytest.param(m, True, id=f"{m.__name__[1:]}-train", marks=[] if m is _gpt2 else [pytest.mark.slow])
    for m in _MODELS]


@pytest.mark.parametrize("make, train", _CASES)
def test_forward_with_an_attention_mask_equals_eager(make, train):
    torch.manual_seed(0)
    model = make()
    model.train(train)
    for m in model.modules():  # train mode without dropout: the same numbers as eager
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    if hasattr(model.config, "use_cache"):
        model.config.use_cache = False
    f = ta.function(lambda ids, mask: model(input_ids=ids, attention_mask=mask).last_hidden_state)
    ids = torch.randint(0, V, (B, T))
    for mask in _masks():
        torch.testing.assert_close(f(ids, mask), model(input_ids=ids, attention_mask=mask).last_hidden_state)


def test_the_module_itself_as_a_function_returns_its_model_output():
    # transformers' merge_with_config_defaults reads the call's keywords; the ModelOutput drops None fields.
    torch.manual_seed(0)
    model = _bert().eval()
    f = ta.function(model)
    ids = torch.randint(0, V, (B, T))
    for mask in _masks()[:2]:
        got, want = f(ids, attention_mask=mask), model(ids, attention_mask=mask)
        assert type(got) is type(want) and list(got.keys()) == list(want.keys())
        for k in want.keys():
            torch.testing.assert_close(got[k], want[k])
