"""More Hugging Face models as one graph each, against eager: T5's encoder-decoder greedy decoding with a tensor
EOS `break`, ViT's forward, BERT with `token_type_ids`. Small random configs, nothing downloaded."""

import pytest
import torch

import torch_autograph as ta

transformers = pytest.importorskip("transformers")

V = 96


def _prompt():
    ids = torch.randint(1, V, (2, 5))
    mask = torch.ones(2, 5, dtype=torch.long)
    mask[1, 3:] = 0  # T5 pads on the right
    return ids, mask


@pytest.mark.slow  # about 25 s on 2 cores
def test_t5_greedy_decoding_with_an_eos_break_equals_eager():
    torch.manual_seed(0)
    model = transformers.T5ForConditionalGeneration(transformers.T5Config(
        d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2, num_heads=4, vocab_size=V,
        dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0)).eval()

    def decode(ids, mask, eos):
        enc = model.get_encoder()(input_ids=ids, attention_mask=mask).last_hidden_state
        dec = torch.zeros(ids.shape[0], 1, dtype=torch.long)
        done = torch.zeros(ids.shape[0], 1, dtype=torch.bool)
        for _ in range(6):
            logits = model(encoder_outputs=(enc,), attention_mask=mask, decoder_input_ids=dec).logits
            nxt = torch.where(done, eos, logits[:, -1].argmax(-1, keepdim=True))
            dec = torch.cat([dec, nxt], 1)
            done = done | (nxt == eos)
            if done.all():
                break
        return dec

    ids, mask = _prompt()
    f = ta.function(decode)
    with torch.no_grad():
        eager = decode(ids, mask, torch.tensor(-1))
        for eos in (torch.tensor(-1), eager[0, 3]):
            assert torch.equal(f(ids, mask, eos), decode(ids, mask, eos))


def test_vit_forward_equals_eager():
    torch.manual_seed(0)
    model = transformers.ViTModel(transformers.ViTConfig(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, image_size=32,
        patch_size=8)).eval()
    f = ta.function(lambda p: model(pixel_values=p).last_hidden_state)
    with torch.no_grad():
        for _ in range(2):
            px = torch.randn(2, 3, 32, 32)
            torch.testing.assert_close(f(px), model(pixel_values=px).last_hidden_state, rtol=1e-4, atol=1e-5)


def test_bert_with_token_type_ids_equals_eager():
    torch.manual_seed(0)
    model = transformers.BertModel(transformers.BertConfig(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, vocab_size=V)).eval()
    ids, mask = _prompt()
    types = torch.zeros(2, 5, dtype=torch.long)
    types[:, 3:] = 1
    f = ta.function(lambda i, m, t: model(input_ids=i, attention_mask=m, token_type_ids=t).last_hidden_state)
    with torch.no_grad():
        torch.testing.assert_close(f(ids, mask, types), model(input_ids=ids, attention_mask=mask,
                                                              token_type_ids=types).last_hidden_state,
                                   rtol=1e-4, atol=1e-5)
