"""A script for test_cli.py: a ta.function with a loop and a branch, a plain function, and a __main__ block
that calls the function with two shapes (one retrace)."""

import sys

import torch

import torch_autograph as ta


@ta.function
def step(x, n):
    total = torch.zeros(())
    i = 0
    while i < n:
        if x.sum() > 0:
            total += x.sum() * i
        i += 1
    return total


def plain(x):
    if x.mean() > 0:
        return x * 2
    return -x


if __name__ == "__main__":
    for k in (3, 3, 4):
        step(torch.randn(k), torch.tensor(int(sys.argv[1]) if len(sys.argv) > 1 else 2))
    print("script done")
