"""H1-H2 Hugging Face transformers: a Llama forward with an attention mask, and hand-written KV-cache greedy decoding.

H1 LlamaForCausalLM (random config: width 128, 4 layers, 4 heads, vocab 512), batch 2 x 32 tokens, the second row
   left-padded: forward with the attention mask, logits compared with eager
H2 the same model, greedy decoding of 32 new tokens written by hand: the prompt fills a `DynamicCache`, then each
   step runs the model on one token against the cache, with a tensor EOS `break` (`if done.all(): break`:
   examples/hf_decode.py's loop); the EOS
   token is one the model never emits here, so every candidate runs all 32 steps. Tokens compared exactly

Candidates as in bench_models (eager baseline, torch.compile, ta.function default / jit / "auto"), interleaved,
per-call medians, ratios vs eager from the same rounds. Skipped without transformers (the test extra).

The "first call" in a candidate's note is measured in the benchmark's process, after the candidates before it
(ta.function, jit, "auto", then torch.compile) and with the user's inductor cache: not a cold compile. A full run
adds H2's compile latency: each of jit and torch.compile in fresh processes with an inductor cache directory of
its own, empty (cold), then reused (warm).

    python benchmarks/bench_hf.py [H1|H2] [--quick]
"""

from __future__ import annotations

import os
import sys
from typing import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "examples")]
import hf_decode  # noqa: E402
import torch  # noqa: E402
from bench_models import Workload, latency_rows, run_workload  # noqa: E402
from harness import Row, Settings, main_for, print_rows, torch_compile_available  # noqa: E402

import torch_autograph as ta  # noqa: E402

NAME = "H1-H2 Hugging Face"
NEW_TOKENS = 32


def _model():
    import transformers

    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(hidden_size=128, intermediate_size=256, num_hidden_layers=4, num_attention_heads=4,
                                   num_key_value_heads=4, vocab_size=512, attn_implementation="sdpa")
    return transformers.LlamaForCausalLM(cfg).eval(), transformers


def _inputs(batch: int = 2, length: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1, 512, (batch, length), generator=g)
    mask = torch.ones(batch, length, dtype=torch.long)
    mask[1:, :4] = 0
    return ids, mask


def _forward() -> tuple[Callable, tuple]:
    model, _ = _model()
    return (lambda ids, mask: model(input_ids=ids, attention_mask=mask).logits), _inputs()


def _decode() -> tuple[Callable, tuple]:
    model, transformers = _model()
    greedy = hf_decode.decoder(model, transformers.DynamicCache, NEW_TOKENS)  # the example's loop
    ids, mask = _inputs(batch=1, length=8)
    return greedy, (ids, mask, torch.tensor(-1))


WORKLOADS = [
    Workload("H1 HF Llama forward with a mask (4x128, 2x32)", _forward, exact_default=False, rtol=1e-4, atol=1e-4,
             targets={"ta.function": ("<= 1.0x", lambda r: r["ta.function"].ratio <= 1.0),
                      "ta.function jit": ("<= torch.compile", lambda r: "torch.compile" not in r or
                                          r["ta.function jit"].ratio <= r["torch.compile"].ratio)}),
    Workload("H2 HF Llama KV-cache greedy decode (32 tokens)", _decode,
             targets={"ta.function jit": ("<= 0.5x and <= 0.67 torch.compile", lambda r: r["ta.function jit"].ratio
                                          <= min(0.5, r["torch.compile"].ratio * 0.67 if "torch.compile" in r
                                                 else 1))}),
]


def run(settings: Settings, only: str = "") -> list[Row]:
    try:
        import transformers  # noqa: F401
    except ImportError:
        return [Row(w.label, "eager", None, None, "", None, "skipped: transformers not installed (test extra)")
                for w in WORKLOADS]
    threads, threshold = torch.get_num_threads(), ta.config.get_jit_threshold()
    torch.set_num_threads(1)
    ta.config.set_jit_threshold(3)
    rows: list[Row] = []
    try:
        for w in WORKLOADS:
            if only and w.label.split()[0] != only:
                continue
            try:
                rows += run_workload(w, settings)
            except Exception as e:  # noqa: BLE001 - one workload failing leaves the other
                msg = str(e).strip().splitlines()[0][:150] if str(e).strip() else ""
                rows.append(Row(w.label, "ERROR", None, None, "", False, f"{type(e).__name__}: {msg}"))
        if not settings.quick and only in ("", "H2") and torch_compile_available()[0]:
            rows += latency_rows(("H2",), WORKLOADS, "bench_hf")
    finally:
        torch.set_num_threads(threads)
        ta.config.set_jit_threshold(threshold)
    return rows


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1].startswith("H"):  # one workload: bench_hf.py H2 [--quick]
        only = sys.argv.pop(1)
        print_rows(run(Settings.from_argv(description=__doc__), only=only), title=__doc__.splitlines()[0])
    else:
        main_for(run, __doc__)
