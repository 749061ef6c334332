"""A script for test_cli.py: methods named as Class.method (a default-constructible module, one that needs
arguments), and functions that fail while tracing (a shape error, a library-side TypeError)."""

import torch

import torch_autograph as ta


class Model(torch.nn.Module):
    def __init__(self, width: int = 3) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(width, 2)

    def forward(self, x):
        if x.sum() > 0:
            return self.lin(x).relu()
        return self.lin(x)

    @staticmethod
    def helper(x):
        return x * 2


class NeedsArgs(torch.nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(width, 2)

    def forward(self, x):
        return self.lin(x)


def shape_error(x):
    return x @ torch.ones(5, 5)  # (2, 3) @ (5, 5): fails while tracing


@ta.function(input_signature=[ta.TensorSpec([None], torch.uint8)])
def small(x):
    return x + 1
