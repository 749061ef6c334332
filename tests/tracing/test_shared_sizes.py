"""Sizes known only when the graph runs that are equal by construction get one symbol, so code comparing them
decides while tracing, as Python does: two tensors a loop grows alike (a KV cache and its attention mask), two
outputs of a tensor `if` grown in the same branch, and a merged size's bounds (`numel() == 0` of a cache that is
never empty)."""

import torch
import torch.nn.functional as F

import torch_autograph as ta


def pad_to(a, b):
    """Library code: pad `b` to `a`'s length when it is shorter (transformers' `prepare_padding_mask`)."""
    if (n := a.shape[0] - b.shape[0]) > 0:
        b = F.pad(b, (0, n))
    return b


def grown_alike_in_a_while(x, stop):
    cache, mask = x, torch.ones_like(x)
    while cache.sum() < stop:
        mask = torch.cat([mask, torch.ones(1)])
        cache = torch.cat([cache, x[:1]])
        mask = pad_to(cache, mask)
    return cache, mask


def grown_alike_with_a_break(x, stop):
    cache, mask = x, torch.ones_like(x)
    for _ in range(6):
        mask = torch.cat([mask, torch.ones(1)])
        cache = torch.cat([cache, x[:1]])
        mask = pad_to(cache, mask)
        if (cache.sum() > stop).all():
            break
    return cache, mask


def grown_apart(x, stop):
    a, b = x, x
    while a.sum() < stop:
        a = torch.cat([a, x[:1]])
        b = torch.cat([b, x[:1], x[:1]])
    return a, b


def test_tensors_a_while_grows_alike_compare_equal_in_library_code():
    f = ta.function(grown_alike_in_a_while)
    for stop in (3.0, 7.0, 1.0):
        for out, expected in zip(f(torch.ones(2), torch.tensor(stop)), grown_alike_in_a_while(torch.ones(2), stop)):
            assert torch.equal(out, expected)
    assert len(f.trace_history()) == 1


def test_tensors_an_unrolled_loop_with_a_tensor_break_grows_alike_compare_equal():
    f = ta.function(grown_alike_with_a_break)
    for stop in (3.0, 5.0, 100.0):
        for out, expected in zip(f(torch.ones(2), torch.tensor(stop)), grown_alike_with_a_break(torch.ones(2), stop)):
            assert torch.equal(out, expected)


def test_tensors_equal_on_entry_that_a_loop_grows_differently_keep_their_own_sizes():
    f = ta.function(grown_apart)
    for stop in (3.0, 6.0):
        for out, expected in zip(f(torch.ones(2), torch.tensor(stop)), grown_apart(torch.ones(2), stop)):
            assert torch.equal(out, expected)


def test_a_size_merged_by_a_tensor_if_keeps_its_bounds():
    def f(x, stop):
        for _ in range(3):
            x = torch.cat([x, x[:1]])
            if (x.sum() > stop).all():
                break
        # Decided while tracing (the length is between 3 and 5): plain Python `if`s, whose branches may return
        # different structures, as a graph `if` could not.
        if x.numel() == 0:
            return x, x
        if x.shape[0] < 3:
            return None
        return x * 2

    for stop in (2.0, 100.0):
        assert torch.equal(ta.function(f)(torch.ones(2), torch.tensor(stop)), f(torch.ones(2), stop))
