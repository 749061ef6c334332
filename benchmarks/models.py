"""The real-model workloads of bench_models.py: each a plain PyTorch function and its arguments.

Every workload is written as a user would write it for eager PyTorch; the benchmark wraps the same function
in each candidate (eager, torch.compile, ta.function with and without jit_compile).

- ResNet-18 (torchvision), eval and a training step (SGD with momentum, BatchNorm in train mode).
- The GPT of examples/train_gpt.py: eval forward, and greedy decoding with a data-dependent stop.
- An LSTM language model, forward and training step, with `nn.LSTM` and with a hand-written cell in a Python
  loop over time.
- Conjugate gradients with a tensor-dependent `break`.
"""

from __future__ import annotations

import math
import os
import sys
from typing import Any, Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
import train_gpt  # noqa: E402


def import_torchvision() -> Any:
    """torchvision, or None when it is not installed.

    The wheel a registry serves next to a CPU-only torch may be a CUDA build whose C++ ops cannot load; its
    import then stops while registering fake kernels for two of those ops (torchvision 0.28). The models are
    plain Python and need none of its ops: declaring the two schemas lets the import finish.
    """
    try:
        import torchvision
        return torchvision
    except ImportError:
        return None
    except RuntimeError as e:
        if "torchvision::" not in str(e):
            raise
    for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
        del sys.modules[name]
    lib = torch.library.Library("torchvision", "FRAGMENT")
    for op in ("nms", "qnms"):
        lib.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    import_torchvision.lib = lib  # the definitions live as long as the Library object
    import torchvision
    return torchvision


# ----- ResNet-18 -------------------------------------------------------------------------------------
def resnet18(batch: int = 8, size: int = 64) -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    """torchvision's ResNet-18 (random weights, 1000 classes), an input batch and integer labels."""
    tv = import_torchvision()
    if tv is None:
        raise RuntimeError("torchvision is not installed (pip install --no-deps torchvision: the bench extra)")
    torch.manual_seed(0)
    model = tv.models.resnet18()
    return model, torch.randn(batch, 3, size, size), torch.randint(0, 1000, (batch,))


def classifier_step(model: nn.Module, opt: torch.optim.Optimizer) -> Callable:
    """A training step: train mode, forward, cross-entropy, backward, optimizer step; returns the loss."""

    def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        model.train()
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    return step


# ----- GPT -------------------------------------------------------------------------------------------
def gpt(layers: int = 2, width: int = 64, block: int = 64, vocab: int = 65) -> nn.Module:
    """The GPT of examples/train_gpt.py (random weights, dropout off), in eval mode."""
    torch.manual_seed(0)
    return train_gpt.GPT(train_gpt.Config(vocab=vocab, block=block, layers=layers, width=width, dropout=0.0)).eval()


def greedy_decoder(model: nn.Module, eos: int, max_new: int) -> Callable:
    """Greedy decoding as eager code writes it: append the argmax token until it is `eos` or `max_new` tokens
    were generated. The sequence grows by one token per step, so each step runs the model on a longer input."""

    def generate(idx: torch.Tensor) -> torch.Tensor:
        limit = idx.size(1) + max_new
        done = torch.zeros((), dtype=torch.bool)
        while not done and idx.size(1) < limit:
            logits = model(idx)
            token = logits[:, -1, :].argmax(dim=-1, keepdim=True)
            idx = torch.cat([idx, token], dim=1)
            done = (token == eos).all()
        return idx

    return generate


def cached_greedy_decoder(model: nn.Module, eos: int, max_new: int) -> Callable:
    """`greedy_decoder` with a key/value cache, as eager code writes it: the prompt runs through the model once,
    then each step runs the one new token, attending to the cached keys and values of the earlier ones (a list
    per layer that grows by one position at each step). Generates the same tokens as `greedy_decoder`."""

    def attend(block: nn.Module, x: torch.Tensor, cache: tuple | None) -> tuple:
        a = block.attn
        B, T, C = x.shape
        q, k, v = (t.view(B, T, a.heads, C // a.heads).transpose(1, 2) for t in a.qkv(block.ln1(x)).split(C, dim=2))
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=cache is None)  # one new query sees every key
        x = x + a.out(y.transpose(1, 2).reshape(B, T, C))
        return x + block.mlp(block.ln2(x)), k, v

    def generate(idx: torch.Tensor) -> torch.Tensor:
        T = idx.size(1)
        x = model.tokens(idx) + model.positions(torch.arange(T, device=idx.device))
        keys, values = [], []
        for block in model.blocks:
            x, k, v = attend(block, x, None)
            keys.append(k)
            values.append(v)
        token = model.head(model.ln(x))[:, -1, :].argmax(dim=-1, keepdim=True)
        idx = torch.cat([idx, token], dim=1)
        done = (token == eos).all()
        while not done and idx.size(1) < T + max_new:
            pos = idx.size(1) - 1
            x = model.tokens(token) + model.positions(torch.arange(pos, pos + 1, device=idx.device))
            for i, block in enumerate(model.blocks):
                x, keys[i], values[i] = attend(block, x, (keys[i], values[i]))
            token = model.head(model.ln(x))[:, -1, :].argmax(dim=-1, keepdim=True)
            idx = torch.cat([idx, token], dim=1)
            done = (token == eos).all()
        return idx

    return generate


def decode_workload(layers: int = 4, width: int = 128, prompt: int = 8, max_new: int = 40, stop_at: int = 30,
                    cached: bool = False) -> tuple[Callable, torch.Tensor, int]:
    """(greedy decoder, prompt, tokens it generates): EOS is the first token the model generates at or after step
    `stop_at` that it has not generated before, so the loop stops there, on data, before `max_new`.
    `cached`: the decoder with a key/value cache (`cached_greedy_decoder`)."""
    model = gpt(layers=layers, width=width)
    with torch.no_grad():  # weights at a scale where greedy decoding does not settle on repeating one token
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.3)
    torch.manual_seed(1)
    idx = torch.randint(0, model.config.vocab, (1, prompt))
    with torch.no_grad():
        free = greedy_decoder(model, eos=-1, max_new=max_new)(idx)[0, prompt:].tolist()
    eos = next(t for i, t in enumerate(free) if i >= stop_at and t not in free[:i])
    decoder = cached_greedy_decoder if cached else greedy_decoder
    return decoder(model, eos=eos, max_new=max_new), idx, free.index(eos) + 1


# ----- LSTM language model ---------------------------------------------------------------------------
class HandLSTM(nn.Module):
    """One LSTM layer written out: the gates of each time step from two matmuls, in a Python loop over time."""

    def __init__(self, inputs: int, hidden: int) -> None:
        super().__init__()
        self.hidden = hidden
        self.w_ih = nn.Linear(inputs, 4 * hidden)
        self.w_hh = nn.Linear(hidden, 4 * hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.new_zeros(x.size(0), self.hidden)
        c = x.new_zeros(x.size(0), self.hidden)
        xs = self.w_ih(x)  # the input projection of every step at once
        outs = []
        for t in range(x.size(1)):
            i, f, g, o = (xs[:, t] + self.w_hh(h)).chunk(4, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outs.append(h)
        return torch.stack(outs, dim=1)


class LSTMLanguageModel(nn.Module):
    """Embedding -> LSTM (`nn.LSTM`, or `HandLSTM` layers) -> linear head over the vocabulary."""

    def __init__(self, vocab: int = 96, width: int = 128, layers: int = 2, hand: bool = False) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.hand = hand
        if hand:
            self.rnn = nn.ModuleList(HandLSTM(width, width) for _ in range(layers))
        else:
            self.rnn = nn.LSTM(width, width, num_layers=layers, batch_first=True)
        self.head = nn.Linear(width, vocab)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.embed(idx)
        if self.hand:
            for layer in self.rnn:
                x = layer(x)
        else:
            x, _ = self.rnn(x)
        return self.head(x)


def lstm_lm(hand: bool, batch: int = 16, steps: int = 32, vocab: int = 96) -> tuple[nn.Module, torch.Tensor,
                                                                                     torch.Tensor]:
    torch.manual_seed(0)
    model = LSTMLanguageModel(vocab=vocab, hand=hand)
    idx = torch.randint(0, vocab, (batch, steps + 1))
    return model, idx[:, :-1].contiguous(), idx[:, 1:].contiguous()


def lm_step(model: nn.Module, opt: torch.optim.Optimizer) -> Callable:
    """A language-model training step: next-token cross-entropy, backward, gradient clipping, optimizer step."""

    def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss.detach()

    return step


# ----- conjugate gradients ---------------------------------------------------------------------------
def conjugate_gradient(A: torch.Tensor, b: torch.Tensor, max_iter: torch.Tensor, tol: float = 1e-5) -> torch.Tensor:
    """Solve A x = b for a symmetric positive definite A; stops when the residual's norm falls below `tol`.

    `max_iter` is a 0-dim int tensor (eager `range` takes it too): a loop over `range` of a tensor is a graph loop,
    where `range` of a Python int would unroll all `max_iter` iterations into the graph.
    """
    x = torch.zeros_like(b)
    r = b - A @ x
    p = r
    rs = r @ r
    for _ in range(max_iter):
        Ap = A @ p
        alpha = rs / (p @ Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        rs_new = r @ r
        if torch.sqrt(rs_new) < tol:
            break
        p = r + (rs_new / rs) * p
        rs = rs_new
    return x


def spd_system(n: int = 128, condition: float = 1e3) -> tuple[torch.Tensor, torch.Tensor]:
    """A symmetric positive definite float64 matrix with eigenvalues spread over `condition`, and a right side."""
    g = torch.Generator().manual_seed(0)
    q, _ = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=torch.float64))
    eig = torch.logspace(0, math.log10(condition), n, dtype=torch.float64)
    return (q * eig) @ q.T, torch.randn(n, generator=g, dtype=torch.float64)


def cg_iterations(A: torch.Tensor, b: torch.Tensor, tol: float = 1e-5, max_iter: int = 200) -> int:
    """How many iterations `conjugate_gradient` runs on this system (for the benchmark's note)."""
    x, r = torch.zeros_like(b), b.clone()
    p, rs = r, r @ r
    for i in range(max_iter):
        Ap = A @ p
        alpha = rs / (p @ Ap)
        x, r = x + alpha * p, r - alpha * Ap
        rs_new = r @ r
        if torch.sqrt(rs_new) < tol:
            return i + 1
        p, rs = r + (rs_new / rs) * p, rs_new
    return max_iter
