"""Op facts (effects and traits) come from torch's schemas and a table keyed by callable objects, never a name."""

import operator

import torch
import torch.nn.functional as F

import torch_autograph as ta
from torch_autograph.graph import Effect, Trait
from torch_autograph.graph.passes.effects import returns_fresh
from torch_autograph.op_facts import draws_nothing, facts_of
from torch_autograph.tracing.classify import classify


def add(x, y):  # a user's functions, named like torch ops
    return x


def conv2d(x, w):
    return x


def empty(*size):
    return size


def rand(*size):
    return size


def normal_(t):
    return t


def test_a_user_function_named_like_a_torch_op_gets_no_fact():
    for fn in (add, conv2d, empty, rand, normal_):
        assert facts_of(fn).effects is Effect.NONE and facts_of(fn).traits is Trait.NONE, fn.__name__
        op = classify(fn)[0]
        assert op.effects is Effect.NONE and op.traits is Trait.NONE and op.pure, fn.__name__


def test_torchs_bindings_take_their_facts_from_the_schema():
    assert facts_of(torch.add).traits is Trait.FRESH and facts_of(torch.Tensor.add).traits is Trait.FRESH
    assert facts_of(torch.Tensor.add_).effects is Effect.WRITES_FIRST_ARG
    assert Trait.FRESH not in facts_of(torch.Tensor.add_).traits
    assert facts_of(torch.rand).effects is Effect.RANDOM
    assert facts_of(torch.Tensor.uniform_).effects == Effect.RANDOM | Effect.WRITES_FIRST_ARG
    assert Trait.NOT_A_VALUE in facts_of(torch.empty).traits
    assert Trait.CONVOLUTION in facts_of(F.conv2d).traits and Trait.CONVOLUTION in facts_of(torch.convolution).traits
    assert facts_of(torch.Tensor.view).traits is Trait.NONE  # returns `Tensor(a)`: a view
    assert facts_of(torch.ops.aten.mul.Tensor).traits is Trait.FRESH  # an overload that reached dispatch


def test_what_a_name_list_got_wrong_eager_shows():
    x = torch.randn(3, 4)
    # A composite op's unannotated return may be its input: not fresh.
    assert x.type_as(x) is x and Trait.FRESH not in facts_of(torch.Tensor.type_as).traits
    assert torch.einsum("ij->ji", x)._base is x and Trait.FRESH not in facts_of(torch.einsum).traits
    # torch tags dropout `maybe_aliasing_or_mutating`: not training, it returns its input.
    assert torch.dropout(x, 0.5, False) is x and Trait.FRESH not in facts_of(torch.dropout).traits
    # Seeded ops no name list held.
    for fn in (torch.binomial, torch._standard_gamma, torch.poisson, F.scaled_dot_product_attention):
        assert Effect.RANDOM in facts_of(fn).effects, fn
    for fn in (torch.nn.init.kaiming_uniform_, torch.nn.init.orthogonal_):
        assert facts_of(fn).effects == Effect.RANDOM | Effect.WRITES_FIRST_ARG


def test_every_overridable_in_place_callable_writes_and_every_seeded_op_draws():
    """torch's own conventions as the oracle: a single trailing underscore is in place; a binding of an op
    tagged `nondeterministic_seeded` draws."""
    missing_writes, missing_draws = [], []
    for namespace, functions in torch.overrides.get_overridable_functions().items():
        for fn in functions:
            name = getattr(fn, "__name__", "")
            if name.endswith("_") and not name.endswith("__") and fn is not torch.Tensor.__ipow__ and \
                    Effect.WRITES_FIRST_ARG not in facts_of(fn).effects:
                missing_writes.append(f"{namespace.__name__}.{name}")
            packet = getattr(torch.ops.aten, name, None) if name else None
            seeded = isinstance(packet, torch._ops.OpOverloadPacket) and any(
                torch.Tag.nondeterministic_seeded in getattr(packet, o).tags for o in packet.overloads())
            if seeded and getattr(torch._C._VariableFunctions, name, None) is fn and \
                    Effect.RANDOM not in facts_of(fn).effects:
                missing_draws.append(name)
    assert missing_writes == [] and missing_draws == []


def test_dropout_like_calls_that_cannot_draw_are_pure():
    x = torch.ones(2, 3)
    assert draws_nothing(F.dropout, (x, 0.5, False), {}) and draws_nothing(F.dropout, (x,), {"p": 0.0})
    assert not draws_nothing(F.dropout, (x,), {})  # p=0.5, training=True by default
    assert draws_nothing(F.scaled_dot_product_attention, (x, x, x), {})  # dropout_p=0.0 by default
    assert not draws_nothing(F.scaled_dot_product_attention, (x, x, x), {"dropout_p": 0.1})
    assert draws_nothing(torch.lstm, (x, [x, x], [x], True, 1, 0.0, True, False, False), {})
    assert not draws_nothing(torch.lstm, (x, [x, x], [x], True, 2, 0.3, True, False, False), {})
    assert not draws_nothing(add, (x, 0.0, False), {})


def test_draws_of_a_seeded_op_no_name_list_held_follow_eagers_stream():
    """`torch.binomial` is tagged `nondeterministic_seeded`. Taken as pure (no name list held it), its draws on
    constant inputs were folded into constants when tracing: the same numbers at every call, and two calls merged."""
    def f(x):
        count, prob = torch.full((64,), 10.0), torch.full((64,), 0.5)
        return x + torch.binomial(count, prob), x + torch.binomial(count, prob)

    traced = ta.function(f, autograph=False)
    x = torch.zeros(64)
    for seed in (0, 1, 2):
        torch.manual_seed(seed)
        want = f(x)
        torch.manual_seed(seed)
        got = traced(x)
        assert not torch.equal(want[0], want[1])
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_an_out_call_returns_its_out_argument_not_a_fresh_tensor():
    def f(a, b, buf):
        return torch.add(a, b, out=buf)

    cf = ta.function(f, autograph=False).get_concrete_function(torch.ones(3), torch.ones(3), torch.zeros(3))
    node = next(n for n in cf.graph.get_operations() if n.op.target is torch.add)
    assert Trait.FRESH in node.op.traits and Effect.WRITES_OUT in node.op.effects
    assert not returns_fresh(node)
    assert facts_of(operator.add).traits is Trait.FRESH
