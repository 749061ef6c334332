"""`try`/`except` around graph ops: the `except` body runs when the guarded op fails as the graph runs.

Each case runs eagerly and as a `ta.function` over several calls, some failing, some not: values and
gradients equal eager's; an exception no clause catches propagates with eager's type; where a graph cannot
run the handler (export, a handler reading the exception), a warning or error names the `except` line.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import torch_autograph as ta
from tests.eager_reference import assert_matches_eager, line_of
from tests.subtraces.test_staged_raises import assert_same_outcomes
from torch_autograph import errors

GOOD = torch.tensor([[2.0, 0.5], [0.5, 3.0]])
BAD = torch.tensor([[1.0, 2.0], [2.0, 1.0]])  # not positive-definite: cholesky raises LinAlgError


def cholesky_or_zeros(a):
    try:
        return torch.linalg.cholesky(a)
    except torch.linalg.LinAlgError:  # the except line
        return torch.zeros(2, 2)


def test_the_issue_example_runs_the_handler_when_the_op_fails_at_run_time():
    assert_same_outcomes(cholesky_or_zeros, [(GOOD,), (BAD,), (GOOD * 2,), (BAD,)])
    f = ta.function(cholesky_or_zeros)
    for a in (GOOD, BAD, GOOD):
        torch.testing.assert_close(f(a), cholesky_or_zeros(a))
    assert_matches_eager(cholesky_or_zeros, GOOD)
    assert_matches_eager(cholesky_or_zeros, BAD)
    assert "try(" in str(f.get_concrete_function(GOOD).graph)


def state_after_try(a, scale):
    y = a * scale
    ok = 1.0
    try:
        y = torch.linalg.cholesky(y) + 1
        n = 2
    except (torch.linalg.LinAlgError, ValueError):
        y = y - 1
        ok = 0.0
        n = 3
    return y * ok + n


def test_variables_assigned_in_the_body_or_the_handler_merge_numbers_and_tensors():
    assert_same_outcomes(state_after_try, [(GOOD, 1.0), (BAD, 1.0), (GOOD, 2.0), (BAD, 3.0)])
    assert_matches_eager(state_after_try, GOOD, 2.0)
    assert_matches_eager(state_after_try, BAD, 2.0)


def uncaught_kind(a):
    try:
        return torch.linalg.cholesky(a)
    except KeyError:
        return a


def test_an_exception_no_clause_catches_propagates_as_eagerly():
    assert_same_outcomes(uncaught_kind, [(GOOD,), (BAD,)])
    with pytest.raises(torch.linalg.LinAlgError):
        ta.function(uncaught_kind)(BAD)


def lookup_or_default(x, d):
    try:
        v = d["k"]
        y = x * v
    except KeyError:
        y = x - 1
    return y


def test_an_exception_raised_while_tracing_is_caught_as_plain_python():
    f = ta.function(lookup_or_default)
    x = torch.ones(2)
    torch.testing.assert_close(f(x, {"k": 3}), lookup_or_default(x, {"k": 3}))
    torch.testing.assert_close(f(x, {}), lookup_or_default(x, {}))
    assert "try(" not in str(f.get_concrete_function(x, {}).graph)


def handler_raises(a):
    try:
        return torch.linalg.cholesky(a)
    except torch.linalg.LinAlgError:
        raise ValueError("matrix is not positive-definite")


def test_a_raise_in_the_handler_raises_the_user_exception_when_the_op_fails():
    assert_same_outcomes(handler_raises, [(GOOD,), (BAD,), (GOOD,)])


def guarded_branch(a, flag):
    try:
        if flag.sum() > 0:
            raise ValueError("flagged")
        out = a + 1
    except ValueError:
        out = a - 1
    return out


def test_a_staged_raise_inside_the_body_is_caught_by_the_handler():
    assert_same_outcomes(guarded_branch, [(torch.ones(2), torch.ones(1)), (torch.ones(2), -torch.ones(1)),
                                          (torch.zeros(2), torch.ones(1))])
    assert_matches_eager(guarded_branch, torch.ones(2), torch.ones(1))


def in_a_loop(xs):
    total = torch.zeros(2, 2)
    for k in range(xs.shape[0]):
        try:
            total = total + torch.linalg.cholesky(xs[k])
        except torch.linalg.LinAlgError:
            total = total - 1
    return total


def test_try_inside_a_tensor_loop():
    xs = torch.stack([GOOD, BAD, GOOD, BAD])
    assert_same_outcomes(in_a_loop, [(xs,), (xs[:2],), (torch.stack([GOOD, GOOD]),)])


def validation_idiom(a):
    ok = True
    try:
        torch.linalg.cholesky(a)  # result unused: still run, it may fail
    except torch.linalg.LinAlgError:
        ok = False
    return torch.tensor(ok)


def test_an_unused_guarded_op_still_runs():
    assert_same_outcomes(validation_idiom, [(GOOD,), (BAD,)])


def escapes_through_a_list(a, box):
    try:
        y = torch.linalg.cholesky(a)
        box.append(y)
    except torch.linalg.LinAlgError:  # the escaping except
        pass
    return box[0] + 1


def test_a_body_value_kept_outside_the_try_variables_is_refused_naming_the_except_line():
    with pytest.raises(errors.InaccessibleTensorError, match="made inside the `try` body") as info:
        ta.function(escapes_through_a_list)(GOOD, [])
    # (The list argument's new item is read when the call's effects on it are planned, after the body.)
    assert line_of(escapes_through_a_list, "# the escaping except") in str(info.value)


def reads_the_exception(a):
    try:
        return torch.linalg.cholesky(a)
    except torch.linalg.LinAlgError as e:  # the reading except
        print(e)
        return torch.zeros(2, 2)


def test_a_handler_that_reads_the_exception_warns_at_its_line():
    with pytest.warns(UserWarning, match="reads the exception it catches") as record:
        ta.function(reads_the_exception)(GOOD)
    assert any(line_of(reads_the_exception, "# the reading except") in str(w.message) for w in record)


def test_export_refuses_a_try_node_naming_the_except_line():
    f = ta.function(cholesky_or_zeros)
    with pytest.raises(errors.GraphLoweringError, match="except") as info:
        ta.export(f, GOOD)
    assert line_of(cholesky_or_zeros, "# the except line") in str(info.value)


def test_jit_compile_runs_the_handler_too():
    f = ta.function(cholesky_or_zeros, jit_compile=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for a in (GOOD, BAD, GOOD):
            torch.testing.assert_close(f(a), cholesky_or_zeros(a))


def with_else_and_finally(a):
    y = a * 0
    try:
        c = torch.linalg.cholesky(a)
    except torch.linalg.LinAlgError:
        y = y - 1
    else:
        y = y + c  # only when the body raised nothing
    finally:
        y = y * 2
    return y


def test_else_runs_only_when_the_body_succeeded_at_run_time():
    assert_same_outcomes(with_else_and_finally, [(GOOD,), (BAD,), (GOOD * 3,), (BAD,)])
    assert_matches_eager(with_else_and_finally, GOOD)
    assert_matches_eager(with_else_and_finally, BAD)


# ----- `except NotImplementedError`: a missing kernel, decided by the trace's types -----------------------------
# torch raises NotImplementedError for an op that has no kernel for its arguments' device, dtype or layout
# (library code falls back on another op then: transformers' static cache around `index_copy_`). Those are part
# of a trace's signature: where each op of the body runs on zeros of its types, the handler cannot run for any
# call of the trace, and the body is plain graph ops (so the function exports); where one has no kernel, the
# handler stays and runs as the graph runs.

@torch.library.custom_op("ta_tests::cuda_only", mutates_args=(), device_types="cuda")
def cuda_only(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@cuda_only.register_fake
def _(x):
    return torch.empty_like(x)


def copy_or_fall_back(buf, pos, x):
    buf = buf.clone()
    try:
        buf.index_copy_(0, pos, x)
    except NotImplementedError:  # the except line
        buf[pos] = x
    return buf * 2


def kernel_or_fall_back(x):
    try:
        y = cuda_only(x)
    except NotImplementedError:
        y = x * 3
    return y + 1


def test_an_except_not_implemented_error_whose_body_has_its_kernels_is_no_try_in_the_graph_and_exports():
    f = ta.function(copy_or_fall_back)
    args = (torch.zeros(5, 2), torch.tensor([3]), torch.ones(1, 2))
    assert_matches_eager(copy_or_fall_back, *args, traced=f)
    assert_matches_eager(copy_or_fall_back, torch.zeros(5, 2), torch.tensor([0]), torch.full((1, 2), 4.0), traced=f)
    graph = str(f.get_concrete_function(*args).graph)
    assert "try(" not in graph and "index_copy_" in graph
    program = ta.export(f, *args)
    for pos in (0, 4):
        got = program.module()(torch.zeros(5, 2), torch.tensor([pos]), torch.ones(1, 2))
        assert torch.equal(got, copy_or_fall_back(torch.zeros(5, 2), torch.tensor([pos]), torch.ones(1, 2)))


def test_an_except_not_implemented_error_stays_where_an_op_has_no_kernel_for_the_trace_s_device():
    x = torch.ones(3)
    with pytest.raises(NotImplementedError):
        cuda_only(x)  # (registered for CUDA only: on CPU the dispatcher has no kernel)
    f = ta.function(kernel_or_fall_back)
    assert_matches_eager(kernel_or_fall_back, x, traced=f)
    assert "try(" in str(f.get_concrete_function(x).graph)


def test_a_handler_catching_more_than_a_missing_kernel_stays_a_try():
    # An IndexError depends on the values (an index out of range): the handler may run.
    def f(buf, pos, x):
        buf = buf.clone()
        try:
            buf.index_copy_(0, pos, x)
        except (NotImplementedError, IndexError):
            buf = buf - 1
        return buf

    g = ta.function(f)
    args = (torch.zeros(5, 2), torch.tensor([3]), torch.ones(1, 2))
    assert_matches_eager(f, *args, traced=g)
    assert_matches_eager(f, torch.zeros(5, 2), torch.tensor([9]), torch.ones(1, 2), traced=g)  # out of range: handler
    assert "try(" in str(g.get_concrete_function(*args).graph)
