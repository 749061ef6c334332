"""Greedy decoding of a Hugging Face Llama, written by hand, as one graph: KV cache, attention mask, EOS break.

    python examples/hf_decode.py            # a small random Llama (no download), checked against eager, timed

The loop is what a user writes around `model(...)`: the prompt fills a `DynamicCache`, then each step runs the model
on the last token against the cache and stops when every row has emitted EOS (`if done.all(): break` on a tensor).
`ta.function` traces it once: the cache's tensors, which `DynamicCache.update` grows inside the model's forward,
are carried through the graph's loop; the stop is decided when the graph runs. torch.compile breaks its graph at
that `if` and compiles again as the sequence grows.
"""

from __future__ import annotations

import inspect
import os
import statistics
import sys
import time
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch  # noqa: E402

import torch_autograph as ta  # noqa: E402

NEW_TOKENS = 24


def make_model():
    import transformers

    torch.manual_seed(0)
    config = transformers.LlamaConfig(hidden_size=128, intermediate_size=256, num_hidden_layers=4,
                                      num_attention_heads=4, num_key_value_heads=2, vocab_size=512,
                                      attn_implementation="sdpa")
    return transformers.LlamaForCausalLM(config).eval(), transformers.DynamicCache


def decoder(model, DynamicCache, new_tokens: int = NEW_TOKENS):
    # transformers 5.24 renamed `past_key_values` to `cache` (the old name warns until it goes in 5.40)
    kw = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"

    def greedy(ids, mask, eos):
        cache = DynamicCache(config=model.config)
        out = model(input_ids=ids, attention_mask=mask, **{kw: cache}, use_cache=True)
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        toks = torch.cat([ids, nxt], 1)
        done = nxt == eos
        for _ in range(new_tokens - 1):
            mask = torch.cat([mask, torch.ones_like(nxt)], 1)
            out = model(input_ids=nxt, attention_mask=mask, **{kw: cache}, use_cache=True)
            nxt = torch.where(done, eos, out.logits[:, -1].argmax(-1, keepdim=True))
            toks = torch.cat([toks, nxt], 1)
            done = done | (nxt == eos)
            if done.all():
                break
        return toks

    return greedy


def per_call_ms(f, args, calls: int = 5) -> float:
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        f(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main() -> None:
    try:
        model, DynamicCache = make_model()
    except ImportError:
        print("skipped: transformers is not installed (pip install transformers)")
        return
    greedy = decoder(model, DynamicCache)
    ids = torch.randint(1, 512, (2, 8), generator=torch.Generator().manual_seed(1))
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, :3] = 0  # the second prompt is left-padded
    f = ta.function(greedy)
    with torch.no_grad():
        eager = greedy(ids, mask, torch.tensor(-1))
        eos = eager[0, 8 + 5]  # a token the first row emits at step 6: that row stops there
        for stop in (torch.tensor(-1), eos):
            got, want = f(ids, mask, stop), greedy(ids, mask, stop)
            assert torch.equal(got, want), (got, want)
        print(f"tokens equal eager's, {NEW_TOKENS} new tokens and with EOS {int(eos)} (row 0 stops at step 6, "
              f"row 1 runs on); traces: {len(f.trace_history())}")
        args = (ids, mask, torch.tensor(-1))
        eager_ms, ours_ms = per_call_ms(greedy, args), per_call_ms(f, args)
        line = f"per call: eager {eager_ms:.1f} ms, ta.function {ours_ms:.1f} ms ({ours_ms / eager_ms:.2f}x)"
        if "--compile" in sys.argv:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                c = torch.compile(greedy)
                assert torch.equal(c(*args), eager)
                line += f", torch.compile {per_call_ms(c, args):.1f} ms"
        print(line)
    print("OK")


if __name__ == "__main__":
    main()
