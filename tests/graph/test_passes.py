"""Graph passes: CSE and constant folding, before/after graphs, `Graph.verify()` after every pass, eager results."""

import inspect

import torch

import torch_autograph as ta
from torch_autograph.backends.torch_codegen import compile_graph
from torch_autograph.function.pipeline import finish_outputs as _finish_outputs
from torch_autograph.graph import Graph
from torch_autograph.graph.passes import eliminate_common_subexpressions, eliminate_dead_code, fold_constants
from torch_autograph.tracing import trace as tracer


def trace(fn, *examples):
    """The raw traced graph of `fn` (no passes yet), dead code removed as the pipeline does first."""
    g = Graph(fn.__name__)
    names = list(inspect.signature(fn).parameters)
    with tracer.tracing(g) as state:
        args = [state.placeholder(n, e.dtype, tuple(e.shape), e.device) for n, e in zip(names, examples)]
        _finish_outputs(state, g, fn(*args))
    eliminate_dead_code(g)
    g.verify()
    return g


def body(g):
    """The printed graph without the `# file:line` column (golden text independent of line numbers)."""
    return "\n".join(line.split("  # ")[0].rstrip() for line in str(g).splitlines())


def run(g, *args):
    out = compile_graph(g, return_tuple=True)(*args)
    return out if len(out) > 1 else out[0]


def apply(pass_fn, g):
    n = pass_fn(g)
    g.verify()
    return n


X = torch.randn(4)


# ----- common subexpressions ---------------------------------------------------------------------
def test_cse_merges_a_repeated_pure_expression():
    def f(x):
        return torch.sin(x * 2) + torch.sin(x * 2)

    g = trace(f, X)
    assert body(g) == """\
graph f(x: float32[4] cpu) {
  %mul: float32[4] cpu = %x * 2
  %sin: float32[4] cpu = torch.sin(%mul)
  %mul_1: float32[4] cpu = %x * 2
  %sin_1: float32[4] cpu = torch.sin(%mul_1)
  %add: float32[4] cpu = %sin + %sin_1
  return %add
}"""
    assert apply(eliminate_common_subexpressions, g) == 2
    assert body(g) == """\
graph f(x: float32[4] cpu) {
  %mul: float32[4] cpu = %x * 2
  %sin: float32[4] cpu = torch.sin(%mul)
  %add: float32[4] cpu = %sin + %sin
  return %add
}"""
    torch.testing.assert_close(run(g, X), f(X))


def test_cse_keys_constants_by_type():
    def f(x):
        return x + 1, x + 1.0, x + True

    g = trace(f, torch.arange(3))
    assert apply(eliminate_common_subexpressions, g) == 0
    for got, want in zip(run(g, torch.arange(3)), f(torch.arange(3))):
        assert got.dtype == want.dtype and torch.equal(got, want)


def test_cse_never_merges_random_ops():
    def f(x):
        return x + torch.rand(4), x + torch.rand(4)

    g = trace(f, X)
    assert apply(eliminate_common_subexpressions, g) == 0
    a, b = run(g, X)
    assert not torch.equal(a, b)


def test_cse_never_merges_reads_of_a_capture_across_an_in_place_update():
    p = torch.ones(4)

    def f(x):
        a = p * x
        p.add_(1.0)
        b = p * x
        return a, b

    g = trace(f, X)
    before = body(g)
    assert apply(eliminate_common_subexpressions, g) == 0
    assert body(g) == before
    a, b = run(g, X)
    torch.testing.assert_close(b, a / 1 * 2)  # p was 1, then 2


def test_cse_never_merges_reads_of_a_variable_across_an_assign():
    v = ta.Variable(1.0, trainable=False)

    def f(x):
        a = x * v
        v.assign_add(1.0)
        return a, x * v

    g = trace(f, X)
    assert apply(eliminate_common_subexpressions, g) == 0
    a, b = run(g, X)
    torch.testing.assert_close(b, 2 * a)


def test_cse_never_merges_a_value_written_later():
    def f(x):
        a = x + 1
        b = x + 1
        a.add_(10)
        return a, b

    g = trace(f, X)
    assert apply(eliminate_common_subexpressions, g) == 0
    a, b = run(g, X)
    torch.testing.assert_close(a, b + 10)


def test_cse_does_not_return_one_tensor_for_two_outputs():
    def f(x):
        return x * 3, x * 3

    g = trace(f, X)
    apply(eliminate_common_subexpressions, g)
    a, b = run(g, X)
    assert a is not b


def test_cse_rewrites_the_values_a_cond_branch_reads():
    def f(x):
        a = x * 2
        b = x * 2
        return ta.cond(x.sum() > 0, lambda: b + 1, lambda: a - 1)

    g = trace(f, X)
    assert apply(eliminate_common_subexpressions, g) == 1
    cond = g.nodes[-1]
    assert [v.name for v in cond.subgraphs[0].inputs] == ["mul"]
    assert [v.name for v in cond.subgraphs[1].inputs] == ["mul"]
    for x in (X.abs(), -X.abs()):
        torch.testing.assert_close(run(g, x), f(x))


def test_cse_inside_a_branch():
    def f(x):
        return ta.cond(x.sum() > 0, lambda: torch.cos(x) + torch.cos(x), lambda: x)

    g = trace(f, X)
    assert apply(eliminate_common_subexpressions, g) == 1
    assert "%cos_1" not in body(g)
    torch.testing.assert_close(run(g, X.abs()), f(X.abs()))


# ----- constant folding ------------------------------------------------------------------------
def test_folding_turns_a_constant_expression_into_a_captured_tensor():
    def f(x):
        return x * (torch.tensor([1.0, 2.0, 3.0, 4.0]) + torch.ones(4))

    g = trace(f, X)
    assert body(g) == """\
graph f(x: float32[4] cpu) {
  %tensor: float32[4] cpu = torch.tensor([1.0, 2.0, 3.0, 4.0])
  %ones: float32[4] cpu = torch.ones(4)
  %add: float32[4] cpu = %tensor + %ones
  %mul: float32[4] cpu = %x * %add
  return %mul
}"""
    assert apply(fold_constants, g) == 1
    assert body(g) == """\
graph f(x: float32[4] cpu) {
  captures:
    %add: float32[4] cpu
  %mul: float32[4] cpu = %x * %add
  return %mul
}"""
    torch.testing.assert_close(g.captures[0][1], torch.tensor([2.0, 3.0, 4.0, 5.0]))
    torch.testing.assert_close(run(g, X), f(X))


def test_folding_never_folds_random_ops():
    def f(x):
        return x + torch.rand(4) * 2

    g = trace(f, X)
    assert apply(fold_constants, g) == 0
    assert not torch.equal(run(g, X), run(g, X))


def test_folding_never_folds_captured_tensors():
    p = torch.ones(4)

    def f(x):
        return x + p * 2

    g = trace(f, X)
    assert apply(fold_constants, g) == 0
    p.fill_(5.0)  # a capture can change between calls
    torch.testing.assert_close(run(g, X), X + 10)


def test_folding_leaves_values_written_in_place_or_returned():
    def f(x):
        acc = torch.zeros(4) + 1
        acc.add_(x)
        return acc, torch.ones(4) * 2

    g = trace(f, X)
    assert apply(fold_constants, g) == 0
    a1, b1 = run(g, X)
    a2, b2 = run(g, X)
    torch.testing.assert_close(a2, X + 1)  # not X + X + 1: each call starts from a fresh constant
    assert b1 is not b2


def test_folding_keeps_factories_asked_for_grad():
    def f(x):
        w = torch.ones(4, requires_grad=True)
        return x * (w * 2)

    g = trace(f, X)
    assert apply(fold_constants, g) == 0


def test_passes_run_in_ta_function():
    def f(x):
        scale = torch.tensor(2.0) * 3
        return torch.exp(x) * scale + torch.exp(x)

    traced = ta.function(f, autograph=False)
    with torch.no_grad():
        cf = traced.get_concrete_function(X)
        assert [n.op.name for n in cf.graph.get_operations()] == ["exp", "mul", "add"]
        assert [v.name for v, _ in cf.graph.captures] == ["mul"]
        torch.testing.assert_close(traced(X), f(X))


def test_under_grad_mode_floating_nodes_are_not_merged_and_gradients_are_eagers_bitwise():
    # One `a + (a / 3 - a)` for three would get the three gradients summed before its backward runs; eagerly
    # each backward runs and their results are summed, which rounds differently (0.9999999999999998, not 1.0).
    def f(a):
        return (a + (a / 3 - a)) + (a + (a / 3 - a)) + (a + (a / 3 - a))

    traced = ta.function(f, autograph=False)
    names = [n.op.name for n in traced.get_concrete_function(torch.tensor(1.0, dtype=torch.float64)).graph.nodes]
    assert names.count("div") == 3, names
    grads = []
    for fn in (f, traced):
        a = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
        fn(a).backward()
        grads.append(a.grad.item())
    assert grads[0] == grads[1] == 0.9999999999999998
