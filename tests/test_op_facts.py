"""Op facts (effects and traits) come from torch's schemas and a table keyed by callable objects, never a name."""

import functools
import itertools
import operator

import pytest
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


# ----- torch's OpInfo database as the oracle ---------------------------------------------------------------------
def _storages(x, out: set) -> set:
    if isinstance(x, torch.Tensor):
        if x.layout == torch.strided and x.numel():
            out.add(x.untyped_storage().data_ptr())
    elif isinstance(x, (list, tuple)):
        for y in x:
            _storages(y, out)
    elif isinstance(x, dict):
        for y in x.values():
            _storages(y, out)
    return out


def _changed(before: torch.Tensor, after: torch.Tensor) -> bool:
    """Whether `after` holds other values than `before` (NaN where NaN was is no change)."""
    if torch.equal(before, after):
        return False
    try:
        return not bool((before == after).logical_or(before.isnan() & after.isnan()).all())
    except (RuntimeError, NotImplementedError):  # a dtype without these ops: bitwise
        return True


def _torchs_own(fn) -> bool:
    """torch's callables (not an OpInfo's lambda or partial around one: a trace records the callable inside)."""
    return getattr(fn, "__name__", "<lambda>") != "<lambda>" and not isinstance(fn, functools.partial)


@pytest.mark.filterwarnings("ignore")  # (deprecated and beta ops warn when run)
def test_the_facts_of_every_opinfo_op_hold_on_its_samples():
    """Each op of torch's OpInfo database, run eagerly on its first sample inputs (CPU, float32): an op the facts call
    fresh returns no tensor sharing an input's storage (the alias analysis of CSE and in-place ops trusts it), and an
    op that changes its first argument, or is an in-place variant, has the write among its effects."""
    op_db = pytest.importorskip("torch.testing._internal.common_methods_invocations").op_db
    wrong, checked = [], 0
    for info in op_db:
        variants = [fn for fn in (info.op, info.method_variant, info.inplace_variant) if _torchs_own(fn)]
        try:
            # (the generator itself: `sample_inputs` wraps it in a tracker that walks the stack for each sample)
            samples = list(itertools.islice(info.sample_inputs_func(info, "cpu", torch.float32, False), 2)) \
                if variants else []
        except Exception:  # noqa: BLE001 - a sample generator this build cannot run
            continue
        for fn in variants:
            facts = facts_of(fn)
            for s in samples:
                if not isinstance(s.input, torch.Tensor) or s.input.layout != torch.strided:
                    continue
                before = s.input.detach().clone()
                try:
                    out = fn(s.input, *s.args, **s.kwargs)
                except Exception:  # noqa: BLE001 - torch refuses this sample for this variant
                    continue
                checked += 1
                name = f"{info.name} ({getattr(fn, '__qualname__', fn)})"
                if Trait.FRESH in facts.traits and _storages(out, set()) & _storages((s.input, s.args, s.kwargs), set()):
                    wrong.append(f"{name}: taken as fresh, returns a view of an input")
                writes = fn is info.inplace_variant or _changed(before, s.input.detach())
                if writes and Effect.WRITES_FIRST_ARG not in facts.effects:
                    wrong.append(f"{name}: writes its first argument, no such effect")
    assert checked > 1000 and wrong == []
