"""torch.nn's Transformer modules (library code AutoGraph does not convert) traced as they are, against eager.

torch's `_detect_is_causal_mask` decides on the mask's values (`bool((mask == causal).all())`): the trace
takes the call's answer and checks it at every call (tracing/decisions.py).
"""

import warnings

import pytest
import torch
import torch.nn as nn

import torch_autograph as ta

warnings.filterwarnings("ignore", message="enable_nested_tensor is True")
S, B, E = 5, 2, 16


def _encoder(batch_first=False, train=False):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(E, 2, 32, dropout=0.0, batch_first=batch_first)
    return nn.TransformerEncoder(layer, 2).train(train)


def _padding():
    pad = torch.zeros(B, S, dtype=torch.bool)
    pad[1, 3:] = True
    return pad


@pytest.mark.parametrize("train", [False, True])
def test_encoder_with_a_captured_causal_mask_equals_eager(train):
    enc = _encoder(train=train)
    mask = nn.Transformer.generate_square_subsequent_mask(S)
    f = ta.function(lambda x: enc(x, mask=mask))
    x = torch.randn(S, B, E)
    torch.testing.assert_close(f(x), enc(x, mask=mask))


@pytest.mark.parametrize("train", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_with_mask_padding_and_is_causal_as_arguments_equals_eager(train, batch_first):
    enc = _encoder(batch_first, train)
    f = ta.function(lambda x, m, pad: enc(x, mask=m, src_key_padding_mask=pad, is_causal=True))
    x = torch.randn(B, S, E) if batch_first else torch.randn(S, B, E)
    mask = nn.Transformer.generate_square_subsequent_mask(S)
    torch.testing.assert_close(f(x, mask, _padding()), enc(x, mask=mask, src_key_padding_mask=_padding(),
                                                          is_causal=True))


def test_a_mask_that_changes_causality_traces_again_and_stays_equal_to_eager():
    enc = _encoder()
    f = ta.function(lambda x, m: enc(x, mask=m))
    x = torch.randn(S, B, E)
    causal = nn.Transformer.generate_square_subsequent_mask(S)
    other = torch.zeros(S, S)
    other[0, 1] = float("-inf")
    for m in (causal, other, causal, other):
        torch.testing.assert_close(f(x, m), enc(x, mask=m))
    history = f.trace_history()
    assert len(history) == 2
    assert any("a tensor used as a Python bool was True" in r and "which this call breaks" in r
               for r in history[1].reasons), history[1].reasons


def test_encoder_in_eval_under_no_grad_with_padding_equals_eager_where_not_padded():
    # Eager takes the nested-tensor fast path, which writes 0 at padded positions; the trace takes the path
    # torch.compile takes (torch.compiler.is_compiling() is True while tracing), which computes them.
    enc = _encoder(batch_first=True).eval()
    f = ta.function(lambda x, pad: enc(x, src_key_padding_mask=pad))
    x = torch.randn(B, S, E)
    with torch.no_grad():
        got, want = f(x, _padding()), enc(x, src_key_padding_mask=_padding())
    kept = ~_padding()
    torch.testing.assert_close(got[kept], want[kept])
    assert torch.count_nonzero(want[~kept]) == 0


@pytest.mark.parametrize("train", [False, True])
def test_transformer_and_decoder_with_masks_equal_eager(train):
    torch.manual_seed(0)
    model = nn.Transformer(E, 2, 1, 1, 32, dropout=0.0).train(train)
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(4)
    f = ta.function(lambda src, tgt, pad: model(src, tgt, tgt_mask=tgt_mask, src_key_padding_mask=pad,
                                                memory_key_padding_mask=pad, tgt_is_causal=True))
    src, tgt = torch.randn(S, B, E), torch.randn(4, B, E)
    torch.testing.assert_close(f(src, tgt, _padding()),
                               model(src, tgt, tgt_mask=tgt_mask, src_key_padding_mask=_padding(),
                                     memory_key_padding_mask=_padding(), tgt_is_causal=True))
    dec = model.decoder
    g = ta.function(lambda t, mem: dec(t, mem, tgt_mask=tgt_mask))
    torch.testing.assert_close(g(tgt, src), dec(tgt, src, tgt_mask=tgt_mask))


def test_encoder_with_a_mask_under_jit_compile_equals_eager():
    enc = _encoder()
    mask = nn.Transformer.generate_square_subsequent_mask(S)
    f = ta.function(lambda x: enc(x, mask=mask), jit_compile=True)
    x = torch.randn(S, B, E)
    torch.testing.assert_close(f(x), enc(x, mask=mask), rtol=1e-4, atol=1e-4)


def test_a_trace_from_a_signature_alone_keeps_the_error():
    enc = _encoder()
    mask = nn.Transformer.generate_square_subsequent_mask(S)
    f = ta.function(lambda x: enc(x, mask=mask), input_signature=[ta.TensorSpec([S, B, E])])
    with pytest.raises(ta.errors.OperatorNotAllowedInGraphError, match=r"as a Python bool.*test_torch_nn"):
        f.get_concrete_function()
