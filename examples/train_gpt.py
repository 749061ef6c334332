"""Train a small character-level GPT with the whole training step as one `@ta.function`.

    python examples/train_gpt.py               # 2000 steps, about a minute on one CPU core
    python examples/train_gpt.py --quick       # 40 steps (make demo)
    python examples/train_gpt.py --jit         # the same step with jit_compile=True (inductor)
    python examples/train_gpt.py --fp32        # without bf16 autocast (with --jit: a tight check)

The step is ordinary PyTorch: `model.train()`, `optimizer.zero_grad()`,
gradient accumulation over micro-batches (`loss.backward()` per micro-batch),
gradient clipping, `torch.optim.AdamW`, a warmup + cosine LR schedule
(`LambdaLR`), with the forward passes under bf16 autocast (a `with
torch.autocast(...)` inside the step: the graph records the region).
ta.function stages the training-step calls
to run at every call of the graph; with `--jit` inductor compiles the forward
passes between them. The first steps are checked against the same steps run
eagerly on a copy of the model (same initialisation, same batches, same
dropout masks), and the script prints OK when they match.

The text is generated here: sentences from a small grammar, so the model has
something learnable within a minute (the loss falls from ~3.3 to well under 1).
"""

from __future__ import annotations

import argparse
import copy
import math
import random
import time
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_autograph as ta

# ----- data ------------------------------------------------------------------------------------------
_WORDS = {
    "det": ["the", "a", "every", "one"],
    "adj": ["small", "quick", "red", "quiet", "old", "bright"],
    "noun": ["fox", "cat", "bird", "robot", "river", "tree", "ship"],
    "verb": ["sees", "follows", "paints", "finds", "hears", "likes"],
    "adv": ["slowly", "today", "again", "at night"],
}


def make_corpus(sentences: int = 6000, seed: int = 0) -> str:
    """Sentences such as "the quick fox follows a red bird again." from a tiny grammar."""
    rng = random.Random(seed)

    def phrase() -> str:
        words = [rng.choice(_WORDS["det"])]
        if rng.random() < 0.5:
            words.append(rng.choice(_WORDS["adj"]))
        return " ".join(words + [rng.choice(_WORDS["noun"])])

    lines = []
    for _ in range(sentences):
        s = f"{phrase()} {rng.choice(_WORDS['verb'])} {phrase()}"
        if rng.random() < 0.3:
            s += " " + rng.choice(_WORDS["adv"])
        lines.append(s + ".")
    return "\n".join(lines) + "\n"


class CharData:
    """The corpus as int64 character ids, with a fixed sequence of random batches."""

    def __init__(self, text: str, block: int, batch: int, seed: int = 1) -> None:
        self.chars = sorted(set(text))
        self.ids = torch.tensor([self.chars.index(c) for c in text], dtype=torch.int64)
        self.block, self.batch = block, batch
        self.gen = torch.Generator().manual_seed(seed)

    def sample(self, micro_batches: int) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """(inputs, targets): lists of `micro_batches` tensors of shape (batch, block)."""
        starts = torch.randint(0, len(self.ids) - self.block - 1, (micro_batches * self.batch,), generator=self.gen)
        rows = starts[:, None] + torch.arange(self.block + 1)
        chunks = self.ids[rows].view(micro_batches, self.batch, self.block + 1)
        return [c[:, :-1].contiguous() for c in chunks], [c[:, 1:].contiguous() for c in chunks]

    def decode(self, ids: list[int]) -> str:
        return "".join(self.chars[i] for i in ids)


# ----- model -----------------------------------------------------------------------------------------
@dataclass
class Config:
    vocab: int
    block: int = 64
    layers: int = 2
    heads: int = 4
    width: int = 64
    dropout: float = 0.1


class SelfAttention(nn.Module):
    def __init__(self, c: Config) -> None:
        super().__init__()
        self.qkv = nn.Linear(c.width, 3 * c.width)
        self.out = nn.Linear(c.width, c.width)
        self.heads, self.dropout = c.heads, c.dropout
        self.drop = nn.Dropout(c.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in self.qkv(x).split(C, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0)
        return self.drop(self.out(y.transpose(1, 2).reshape(B, T, C)))


class Block(nn.Module):
    def __init__(self, c: Config) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(c.width), nn.LayerNorm(c.width)
        self.attn = SelfAttention(c)
        self.mlp = nn.Sequential(nn.Linear(c.width, 4 * c.width), nn.GELU(), nn.Linear(4 * c.width, c.width),
                                 nn.Dropout(c.dropout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, c: Config) -> None:
        super().__init__()
        self.config = c
        self.tokens = nn.Embedding(c.vocab, c.width)
        self.positions = nn.Embedding(c.block, c.width)
        self.drop = nn.Dropout(c.dropout)
        self.blocks = nn.ModuleList(Block(c) for _ in range(c.layers))
        self.ln = nn.LayerNorm(c.width)
        self.head = nn.Linear(c.width, c.vocab, bias=False)
        self.head.weight = self.tokens.weight  # tied input and output embeddings
        for name, p in self.named_parameters():
            if name.endswith("out.weight") or name.endswith("mlp.2.weight"):  # residual projections, GPT-2 style
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * c.layers))
            elif p.dim() == 2:
                nn.init.normal_(p, std=0.02)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        T = idx.shape[1]
        x = self.drop(self.tokens(idx) + self.positions(torch.arange(T, device=idx.device)))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


# ----- training ----------------------------------------------------------------------------------------
@dataclass
class Hyper:
    steps: int = 300
    micro_batches: int = 2  # gradient accumulation
    lr: float = 3e-3
    warmup: int = 20
    weight_decay: float = 0.1
    clip: float = 1.0


def make_trainer(model: GPT, h: Hyper):
    """The training step of `model` (a plain Python function), with its optimizer and LR schedule."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": h.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=h.lr, betas=(0.9, 0.95))

    def lr_factor(step: int) -> float:  # linear warmup, then cosine decay to 10%
        if step < h.warmup:
            return (step + 1) / h.warmup
        progress = min(1.0, (step - h.warmup) / max(1, h.steps - h.warmup))
        return 0.1 + 0.45 * (1.0 + math.cos(math.pi * progress))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)
    params = list(model.parameters())

    def train_step(xs: list[torch.Tensor], ys: list[torch.Tensor]) -> torch.Tensor:
        model.train()
        opt.zero_grad(set_to_none=True)
        losses = []
        for x, y in zip(xs, ys):  # Python lists: unrolled, one forward and backward per micro-batch
            with autocast():  # bf16 forward, recorded in the graph
                logits = model(x)
                loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), y.reshape(-1)) / len(xs)
            losses.append(loss.detach())
            loss.backward()
        torch.nn.utils.clip_grad_norm_(params, h.clip)  # reads this call's gradients (graph values)
        opt.step()
        sched.step()
        return torch.stack(losses).sum()

    return train_step, opt, sched


AUTOCAST = True  # --fp32 turns it off


def autocast() -> torch.autocast:
    """bf16 autocast on CPU for the forward passes, inside the step (the graph records the region)."""
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=AUTOCAST)


def build(seed: int = 0, dropout: float = 0.1, block: int = 64, batch: int = 16) -> tuple[CharData, GPT]:
    data = CharData(make_corpus(), block=block, batch=batch)
    torch.manual_seed(seed)
    return data, GPT(Config(vocab=len(data.chars), block=block, dropout=dropout))


@torch.no_grad()
def sample(model: GPT, data: CharData, prompt: str, n: int = 80) -> str:
    model.eval()
    ids = [data.chars.index(c) for c in prompt]
    gen = torch.Generator().manual_seed(0)
    for _ in range(n):
        x = torch.tensor([ids[-model.config.block:]])
        with autocast():
            probs = F.softmax(model(x)[0, -1].float(), dim=-1)
        ids.append(int(torch.multinomial(probs, 1, generator=gen)))
    return data.decode(ids)


def run(h: Hyper, jit: bool = False, check: int = 20, dropout: float = 0.1, log_every: int = 20,
        loss_tol: tuple[float, float] = (1e-5, 1e-6), param_tol: tuple[float, float] | None = (1e-5, 1e-6)) -> dict:
    """Train with the graph step; the first `check` steps also run eagerly on a copy and must match.

    `loss_tol` and `param_tol` are (rtol, atol) for the losses of those steps and the parameters after
    them (`param_tol=None`: parameters reported, not checked).
    """
    data, model = build(dropout=dropout)
    eager_model = copy.deepcopy(model)
    train_step, _, sched = make_trainer(model, h)
    eager_step, _, _ = make_trainer(eager_model, h)
    graph_step = ta.function(train_step, jit_compile=jit)

    losses, mismatch, start = [], 0.0, time.perf_counter()
    for step in range(h.steps):
        xs, ys = data.sample(h.micro_batches)
        seed = 1000 + step
        torch.manual_seed(seed)  # dropout masks: the graph draws the same random numbers as eager code
        loss = graph_step(xs, ys)
        losses.append(loss.item())
        if step < check:
            torch.manual_seed(seed)
            want = eager_step(xs, ys)
            torch.testing.assert_close(loss, want, rtol=loss_tol[0], atol=loss_tol[1],
                                       msg=lambda m: f"step {step}: the graph's loss differs from eager: {m}")
        if step == check - 1:
            pairs = list(zip(model.named_parameters(), eager_model.parameters()))
            mismatch = max((p - q).abs().max().item() for (_, p), q in pairs)
            for (name, p), q in pairs if param_tol is not None else ():
                torch.testing.assert_close(p, q, rtol=param_tol[0], atol=param_tol[1],
                                           msg=lambda m: f"{name} after {check} steps differs from eager: {m}")
        if log_every and (step % log_every == 0 or step == h.steps - 1):
            print(f"step {step:4d}  loss {losses[-1]:.4f}  lr {sched.get_last_lr()[0]:.2e}  "
                  f"{time.perf_counter() - start:6.1f} s", flush=True)
    return {"losses": losses, "traces": graph_step.experimental_get_tracing_count(), "model": model, "data": data,
            "max_param_diff": mismatch, "seconds": time.perf_counter() - start}


def main(argv: list[str] | None = None) -> dict:
    global AUTOCAST
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--quick", action="store_true", help="40 steps (make demo)")
    p.add_argument("--jit", action="store_true", help="jit_compile=True: inductor compiles the forward passes")
    p.add_argument("--fp32", action="store_true", help="no bf16 autocast")
    p.add_argument("--dropout", type=float, default=0.1)
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    AUTOCAST = not a.fp32
    h = Hyper(steps=40 if a.quick else a.steps)
    check = min(20, h.steps)
    if not a.jit:  # the graph runs eager's ops in eager's order: equal to float32 rounding (bitwise in practice)
        result = run(h, check=check, dropout=a.dropout)
    elif a.fp32:  # inductor's fused kernels round differently, and draw other dropout masks
        result = run(h, jit=True, check=check, dropout=0.0, loss_tol=(1e-4, 1e-5), param_tol=(1e-4, 1e-5))
    else:
        # Under bf16 autocast inductor keeps intermediates in float32 where eager rounds each op to bf16: the
        # losses agree to ~0.1%; AdamW's normalised steps turn those differences into up to ~lr per step in
        # parameters whose gradients are near zero, so parameters are reported, not checked.
        result = run(h, jit=True, check=check, dropout=0.0, loss_tol=(5e-3, 1e-3), param_tol=None)
    losses = result["losses"]
    print(f"{h.steps} steps in {result['seconds']:.1f} s ({'jit_compile=True' if a.jit else 'default backend'}, "
          f"{'float32' if a.fp32 else 'bf16 autocast'}), {result['traces']} trace; the first {check} steps match "
          f"eager (max parameter difference after them {result['max_param_diff']:.2g})")
    print("sample:", sample(result["model"], result["data"], "the ").splitlines()[0])
    assert result["traces"] == 1 and losses[-1] < losses[0] * 0.75, losses
    print("OK")
    return result


if __name__ == "__main__":
    main()
