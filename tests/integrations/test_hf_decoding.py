"""Greedy decoding written by hand around Hugging Face causal LMs, as one graph: tokens equal eager's.

The loop has a data-dependent stop (`if done.all(): break` on a tensor) and, with a KV cache, calls the model
on one token at a time while `DynamicCache.update` grows the cache's tensors inside the model's forward: the
cache's entries are carried through the graph loop like loop variables. Small random configs, nothing
downloaded; skipped without transformers.
"""

import inspect

import pytest
import torch

import torch_autograph as ta

transformers = pytest.importorskip("transformers")

V, T, STEPS = 96, 5, 6


def _llama():
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=128,
        vocab_size=V, attn_implementation="sdpa"))


def _gpt2():
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(
        n_embd=64, n_layer=2, n_head=4, vocab_size=V, n_positions=64, attn_implementation="sdpa"))


def _qwen2():
    return transformers.Qwen2ForCausalLM(transformers.Qwen2Config(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=128,
        vocab_size=V, attn_implementation="sdpa"))


def _mistral():
    return transformers.MistralForCausalLM(transformers.MistralConfig(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=128,
        vocab_size=V, sliding_window=4, attn_implementation="sdpa"))


def _cache_keyword(model):
    # transformers 5.24 renamed `past_key_values` to `cache` (the old name warns until it goes in 5.40)
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _decoders(model):
    """The two loops a user writes: with a KV cache (one token per step) and without (the whole sequence)."""
    kw = _cache_keyword(model)

    def with_cache(ids, mask, eos):
        cache = transformers.DynamicCache(config=model.config)
        out = model(input_ids=ids, attention_mask=mask, **{kw: cache}, use_cache=True)
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        toks = torch.cat([ids, nxt], 1)
        done = nxt == eos
        for _ in range(STEPS):
            mask = torch.cat([mask, torch.ones_like(nxt)], 1)
            out = model(input_ids=nxt, attention_mask=mask, **{kw: cache}, use_cache=True)
            nxt = torch.where(done, eos, out.logits[:, -1].argmax(-1, keepdim=True))
            toks = torch.cat([toks, nxt], 1)
            done = done | (nxt == eos)
            if done.all():
                break
        return toks

    def without_cache(ids, mask, eos):
        done = torch.zeros(ids.shape[0], 1, dtype=torch.bool)
        for _ in range(STEPS):
            logits = model(input_ids=ids, attention_mask=mask).logits
            nxt = torch.where(done, eos, logits[:, -1].argmax(-1, keepdim=True))
            ids = torch.cat([ids, nxt], 1)
            mask = torch.cat([mask, torch.ones_like(nxt)], 1)
            done = done | (nxt == eos)
            if done.all():
                break
        return ids

    return with_cache, without_cache


def _prompts(batch):
    ids = torch.randint(1, V, (batch, T))
    mask = torch.ones(batch, T, dtype=torch.long)
    if batch > 1:
        mask[1, :2] = 0  # left padding
    return ids, mask


_SLOW = [pytest.mark.slow]  # about 15 s each on 2 cores: `make test` runs the left-padded Llama batch


@pytest.mark.parametrize("make, batch", [
    pytest.param(_llama, 2, id="llama-2"),
    pytest.param(_llama, 1, id="llama-1", marks=_SLOW),
    pytest.param(_gpt2, 1, id="gpt2-1", marks=_SLOW),
    pytest.param(_gpt2, 2, id="gpt2-2", marks=_SLOW),
    pytest.param(_qwen2, 1, id="qwen2-1", marks=_SLOW),
    pytest.param(_qwen2, 2, id="qwen2-2", marks=_SLOW),
    # The prompt fills the sliding window (4 <= T): the cache's count of tokens seen enters the loop at T and
    # only grows, so its comparison with the window (`is_full`) decides as eagerly at every step.
    pytest.param(_mistral, 2, id="mistral-2", marks=_SLOW),
    pytest.param(_mistral, 1, id="mistral-1", marks=_SLOW),
])
def test_greedy_decoding_with_a_kv_cache_and_an_eos_break_equals_eager(make, batch):
    torch.manual_seed(0)
    model = make().eval()
    with_cache, _ = _decoders(model)
    ids, mask = _prompts(batch)
    no_eos = torch.tensor(-1)
    with torch.no_grad():
        eager = with_cache(ids, mask, no_eos)
        early = eager[:, T + 2].max()  # a token every row emits by step 3 at the latest, if the rows agree
        f = ta.function(with_cache)
        for eos in (no_eos, eager[0, T + 1], early):
            expected = with_cache(ids, mask, eos)
            assert torch.equal(f(ids, mask, eos), expected), eos
    assert len(f.trace_history()) == 1  # one graph: the stop is decided when it runs


def _while_decoder(model):
    """The same KV-cache decode as a `while` on the tensor stop flag: one graph loop from the first step."""
    kw = _cache_keyword(model)

    def decode(ids, mask, eos):
        cache = transformers.DynamicCache(config=model.config)
        out = model(input_ids=ids, attention_mask=mask, **{kw: cache}, use_cache=True)
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        toks = torch.cat([ids, nxt], 1)
        done = nxt == eos
        step = 0
        while not done.all() and step < STEPS:
            mask = torch.cat([mask, torch.ones_like(nxt)], 1)
            out = model(input_ids=nxt, attention_mask=mask, **{kw: cache}, use_cache=True)
            nxt = torch.where(done, eos, out.logits[:, -1].argmax(-1, keepdim=True))
            toks = torch.cat([toks, nxt], 1)
            done = done | (nxt == eos)
            step += 1
        return toks

    return decode


def test_greedy_decoding_in_a_while_loop_on_the_stop_flag_equals_eager():
    # The left-padded batch: the attention mask and the cache grow together in one graph loop, and the
    # library's padding of the mask to the cache's length (`F.pad` by their difference) decides as eagerly.
    torch.manual_seed(0)
    model = _llama().eval()
    decode = _while_decoder(model)
    ids, mask = _prompts(2)
    no_eos = torch.tensor(-1)
    with torch.no_grad():
        eager = decode(ids, mask, no_eos)
        f = ta.function(decode)
        for eos in (no_eos, eager[0, T + 1], eager[:, T + 2].max()):
            assert torch.equal(f(ids, mask, eos), decode(ids, mask, eos)), eos
    assert len(f.trace_history()) == 1


def _static_decoder(model):
    """The decode with a `StaticCache`: keys, values, the mask and the tokens in buffers of the final length,
    written at a position carried as a tensor (`cache_position`), so every loop variable keeps one shape."""
    kw = _cache_keyword(model)
    total = T + STEPS + 1

    def decode(ids, mask, eos):
        b = ids.shape[0]
        cache = transformers.StaticCache(config=model.config, max_cache_len=total)
        full = torch.zeros(b, total, dtype=mask.dtype)
        full[:, :T] = mask
        out = model(input_ids=ids, attention_mask=full, cache_position=torch.arange(T), **{kw: cache},
                    use_cache=True)
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        toks = torch.full((b, total), -1, dtype=ids.dtype)
        toks[:, :T] = ids
        toks[:, T:T + 1] = nxt
        done = nxt == eos
        pos = torch.tensor([T])
        step = 0
        while not done.all() and step < STEPS:
            full = full.index_fill(1, pos, 1)
            out = model(input_ids=nxt, attention_mask=full, cache_position=pos, **{kw: cache}, use_cache=True)
            nxt = torch.where(done, eos, out.logits[:, -1].argmax(-1, keepdim=True))
            toks = toks.index_copy(1, pos + 1, nxt)
            done = done | (nxt == eos)
            pos = pos + 1
            step += 1
        return toks

    return decode


@pytest.mark.parametrize("batch", [pytest.param(2, id="batch-2"), pytest.param(1, id="batch-1", marks=_SLOW)])
def test_greedy_decoding_with_a_static_cache_equals_eager(batch):
    torch.manual_seed(0)
    model = _llama().eval()
    decode = _static_decoder(model)
    ids, mask = _prompts(batch)
    no_eos = torch.tensor(-1)
    with torch.no_grad():
        eager = decode(ids, mask, no_eos)
        # the same tokens as the dynamic cache's decode (the rest of the buffer is -1)
        assert torch.equal(eager, _while_decoder(model)(ids, mask, no_eos))
        f = ta.function(decode)
        for eos in (no_eos, eager[0, T + 1], eager[:, T + 2].max()):
            assert torch.equal(f(ids, mask, eos), decode(ids, mask, eos)), eos
    assert len(f.trace_history()) == 1


@pytest.mark.slow
def test_a_sliding_window_that_fills_during_the_decode_is_refused_at_the_attention():
    # Window 8, prompt 5: the cache grows for three steps, then crops to the window. Which of the two it does
    # at a step is known only when the graph runs, and so is the mask's length against the keys' for SDPA.
    torch.manual_seed(0)
    model = transformers.MistralForCausalLM(transformers.MistralConfig(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=128,
        vocab_size=V, sliding_window=8, attn_implementation="sdpa")).eval()
    decode = _while_decoder(model)
    ids, mask = _prompts(1)
    with torch.no_grad(), pytest.raises(ta.errors.OperatorNotAllowedInGraphError,
                                        match=r"scaled_dot_product_attention\(\) needs the value of a size .* at "
                                              r".*sdpa_attention\.py:\d+"):
        ta.function(decode)(ids, mask, torch.tensor(-1))


@pytest.mark.parametrize("make", [pytest.param(_llama, id="llama", marks=_SLOW), pytest.param(_gpt2, id="gpt2", marks=_SLOW),
                                  pytest.param(_mistral, id="mistral", marks=_SLOW)])
def test_greedy_decoding_without_a_cache_equals_eager(make):
    torch.manual_seed(0)
    model = make().eval()
    _, without_cache = _decoders(model)
    ids, mask = _prompts(2)
    with torch.no_grad():
        eager = without_cache(ids, mask, torch.tensor(-1))
        f = ta.function(without_cache)
        for eos in (torch.tensor(-1), eager[0, T + 1]):
            assert torch.equal(f(ids, mask, eos), without_cache(ids, mask, eos))


def test_a_forward_with_use_cache_returns_a_cache_eager_code_can_go_on_with():
    torch.manual_seed(0)
    model = _llama().eval()
    f = ta.function(lambda ids: model(input_ids=ids, use_cache=True))
    with torch.no_grad():
        for n in (5, 6):
            ids = torch.randint(1, V, (1, n))
            out, want = f(ids), model(input_ids=ids, use_cache=True)
            assert type(out.past_key_values) is type(want.past_key_values)
            assert out.past_key_values.get_seq_length() == n
            nxt = want.logits[:, -1:].argmax(-1)
            kw = _cache_keyword(model)
            torch.testing.assert_close(model(input_ids=nxt, **{kw: out.past_key_values}).logits,
                                       model(input_ids=nxt, **{kw: want.past_key_values}).logits)


def test_generate_inside_a_function_runs_or_names_what_stops_it():
    torch.manual_seed(0)
    model = _llama().eval()
    ids = torch.randint(1, V, (1, T))
    f = ta.function(lambda i: model.generate(i, max_new_tokens=3, do_sample=False))
    with torch.no_grad():
        eager = model.generate(ids, max_new_tokens=3, do_sample=False)
        try:
            got = f(ids)
        except (TypeError, ValueError, RuntimeError) as e:  # refused: a clear error at a line, not an internal one
            assert "bug in torch_autograph" not in str(e) and ".py:" in str(e), e
        else:
            assert torch.equal(got, eager)
