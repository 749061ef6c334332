"""Train the small classifier of train_classifier.py with DistributedDataParallel, the whole step one graph.

Run it with

    torchrun --nproc_per_node=2 examples/train_ddp.py

(gloo on CPU; NCCL, one GPU per process, when CUDA is there). Each process
trains on its own shard of the batches; the step (zero_grad, forward through
DDP, loss, backward with DDP's gradient all-reduce, optimizer step, and an
all_reduce of the loss for logging) is one `ta.function` graph. The script
checks that the first 20 steps match the same steps run with eager DDP on
copies of the model, that the loss falls, and that every process ends with
the same parameters.
"""

import copy
import gc
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import torch_autograph as ta

N, D, C, BATCH, STEPS, CHECK = 1200, 20, 3, 32, 200, 20


def dataset():
    """Three Gaussian clusters in 20 dimensions (the same on every process)."""
    g = torch.Generator().manual_seed(0)
    centers = torch.randn(C, D, generator=g) * 0.4
    labels = torch.randint(0, C, (N,), generator=g)
    return centers[labels] + torch.randn(N, D, generator=g), labels


def make_step(model, optimizer, world):
    def train_step(x, y):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()  # DDP all-reduces the gradients here, at every call of the graph
        optimizer.step()
        mean_loss = loss.detach().clone()
        dist.all_reduce(mean_loss)  # a collective inside the graph, run at every call too
        return loss, mean_loss / world

    return train_step


def train(rank, world, device):
    cuda = device.type == "cuda"
    features, labels = dataset()
    features, labels = features.to(device), labels.to(device)
    # This process's batches: a different shard of the data on each rank.
    order = torch.randint(0, N, (STEPS, BATCH), generator=torch.Generator().manual_seed(1 + rank)).to(device)

    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Linear(D, 64), torch.nn.ReLU(), torch.nn.Linear(64, C)).to(device)
    ids = [device.index] if cuda else None
    model, eager_model = DDP(copy.deepcopy(base), device_ids=ids), DDP(copy.deepcopy(base), device_ids=ids)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    eager_optimizer = torch.optim.Adam(eager_model.parameters(), lr=1e-3)
    graph_step = ta.function(make_step(model, optimizer, world))
    eager_step = make_step(eager_model, eager_optimizer, world)

    losses = []
    for i in range(STEPS):
        x, y = features[order[i]], labels[order[i]]
        loss, mean_loss = graph_step(x, y)
        if i < CHECK:  # the same step with eager DDP on copies: the same numbers
            e_loss, e_mean = eager_step(x, y)
            torch.testing.assert_close(loss, e_loss)
            torch.testing.assert_close(mean_loss, e_mean)
            for p, q in zip(model.parameters(), eager_model.parameters()):
                torch.testing.assert_close(p, q)
        losses.append(mean_loss.item())
        if (i + 1) % 50 == 0:
            say(f"rank {rank}: step {i + 1:3d}  local loss {loss.item():.4f}  mean loss {mean_loss.item():.4f}")

    first, last = sum(losses[:20]) / 20, sum(losses[-20:]) / 20
    assert last < 0.7 * first, (first, last)
    assert graph_step.experimental_get_tracing_count() == 1
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    assert all(torch.equal(flat, other) for other in gathered), "the processes hold different parameters"
    say(f"rank {rank}: train_ddp OK: mean loss {first:.3f} -> {last:.3f} on {world} processes, first {CHECK} "
        f"steps match eager DDP, parameters equal on every rank")


def say(line):
    """One write per line, so the lines of the processes do not interleave within a line."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main():
    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    torch.set_num_threads(1)
    train(dist.get_rank(), dist.get_world_size(), device)
    # The DDP models (and the graphs that call them) hold the process group: free them first, so that
    # destroy_process_group really shuts its backend down. A gloo group still alive when the interpreter
    # exits can abort the process ("terminate called without an active exception"), in eager DDP too.
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
