"""`try`/`except` around graph ops: what only one path assigns, failing ops nested in the body, `finally`.

The graph fuzz found each of these (minimised by hand); each runs eagerly and as a `ta.function` over
several calls, the guarded op failing on some: values and raised exception types equal eager's. Where the
graph cannot mean what Python means, the error names the variable and the user's line.
"""

from __future__ import annotations

import re

import pytest
import torch

import torch_autograph as ta
from tests.eager_reference import line_of
from tests.subtraces.test_staged_raises import assert_same_outcomes
from torch_autograph.state.python_state import StateEffectError

T = torch.tensor


def catches_a_refusal_of_the_library(a, n):
    y = a * 0
    try:
        for i in range(n):  # the loop line
            if i == 0:
                t = a + 1
            else:
                t = t + 1  # read before the graph loop has a `t`: refused (a ValueError of the library)
            y = y + t
    except ValueError:
        y = y - 1000
    return y


def test_an_except_in_the_program_does_not_catch_the_library_s_own_errors_while_tracing():
    # It did: the trace took the handler's path and returned -1000 for every input, without a word. The
    # refusal is the one the loop gets without the `try`, at the loop's line.
    assert catches_a_refusal_of_the_library(T(7), T(3)) == 27
    with pytest.raises(ValueError, match="'t' must be defined before the loop") as info:
        ta.function(catches_a_refusal_of_the_library)(T(7), T(3))
    assert line_of(catches_a_refusal_of_the_library, "# the loop line") in str(info.value)


def refused_inside_a_try(a, b):
    try:
        if a > 0:
            y = a * 1.5
        else:
            y = a  # int64 in this branch, float32 in the other: refused at the `if`
    except TypeError:
        y = a - 1000
    return y


def test_a_refusal_inside_a_try_body_reaches_the_caller_and_names_its_line():
    with pytest.raises(TypeError, match="both branches must give it the same type") as info:
        ta.function(refused_inside_a_try)(T(1), T(2))
    assert line_of(refused_inside_a_try, "if a > 0:") in str(info.value)


def finally_after_a_refused_try(a, c):
    # The staged `try` is refused as it ends (only the handler binds `w`, read after it); the user's `finally`
    # must not run on the failed trace's values and replace that error with another.
    z = a
    try:
        z = z + torch.arange(3)[c]
    except IndexError:
        w = z + 1
        z = w
    finally:
        z = z * 2
    return z + w


def returns_from_the_handler(a, i):
    y = a * 1
    try:
        y = y + torch.arange(3)[i]
    except IndexError:
        return y - 100  # only this path returns here
    return y * 2


def test_a_return_in_the_handler_only():
    assert_same_outcomes(returns_from_the_handler, [(T(0), T(1)), (T(0), T(5)), (T(2), T(-1)), (T(3), T(4))])


def bound_by_the_handler_in_a_loop(a, c):
    # `w` is first bound in the handler (a walrus in a graph loop's test), read only there: the enclosing graph
    # loop carries it from a placeholder, as for a variable first bound in one branch of a graph `if`.
    z = a
    k = 0
    while k < 2 and z < 100:
        k += 1
        try:
            z = z + torch.arange(3)[z]
        except IndexError:
            j = 0
            while j < 1 and (w := (a + c) * j) < 3:
                j += 1
            z = z + w + 10
    return z


def test_a_variable_first_bound_in_the_handler_inside_a_graph_loop():
    assert_same_outcomes(bound_by_the_handler_in_a_loop, [(T(5), T(-3)), (T(0), T(1)), (T(1), T(2)), (T(-9), T(0))])


def read_after_only_the_handler_binds(a, i):
    try:
        y = a + torch.arange(3)[i]
    except IndexError:
        w = a * 2
        y = a
    return y + w  # the read line: unbound in Python when the body succeeds


def test_a_variable_only_the_handler_binds_read_after_the_try_is_refused_at_the_try():
    for fn in (read_after_only_the_handler_binds, finally_after_a_refused_try):
        with pytest.raises(ValueError, match="'w' must also be initialised in the `try` body") as info:
            ta.function(fn)(T(1), T(5))
        assert line_of(fn, "except IndexError:") in str(info.value)


def float_in_the_handler_int_tensor_in_the_body(a, i):
    x = 0.5
    try:
        x = torch.arange(3)[i]
    except IndexError:
        x = 0.5
    return x


def float_in_the_body_int_tensor_in_the_handler(a, i):
    x = torch.as_tensor(7)
    try:
        a = a + torch.arange(3)[i]
    except IndexError:
        x = 1.5
    return x + a


@pytest.mark.parametrize("fn", [float_in_the_handler_int_tensor_in_the_body,
                                float_in_the_body_int_tensor_in_the_handler])
def test_a_float_on_one_path_of_a_try_and_an_int_tensor_on_another_is_refused_not_cast(fn):
    # As a tensor of the int64 dtype the other path gives it, 0.5 would become 0 (the handler's path, i = 5).
    with pytest.raises(TypeError, match="'x' is a torch.int64 tensor on one path of the `except IndexError`") as info:
        ta.function(fn)(T(1), T(5))
    assert "but float" in str(info.value) and line_of(fn, "except IndexError:") in str(info.value)


def failing_op_in_a_nested_if(a, i):
    y = a * 1
    try:
        if a > 0:
            torch.arange(3)[i]  # unused: it still runs, and fails for i out of range
        y = y + 1
    except IndexError:
        y = y - 100
    return y


def test_a_failing_op_inside_a_nested_tensor_if_in_the_body_still_runs():
    assert_same_outcomes(failing_op_in_a_nested_if, [(T(3), T(4)), (T(3), T(1)), (T(-1), T(4)), (T(2), T(-5))])


def failing_op_in_a_nested_loop(a, i):
    y = a * 1
    try:
        for k in range(int(a) % 3):
            torch.arange(3)[i + k]  # unused, in a graph loop
        y = y + 1
    except IndexError:
        y = y - 100
    return y


def test_a_failing_op_inside_a_nested_tensor_loop_in_the_body_still_runs():
    assert_same_outcomes(failing_op_in_a_nested_loop, [(T(2), T(2)), (T(1), T(1)), (T(0), T(7)), (T(2), T(0))])


COUNTER = ta.Variable(torch.tensor(0), trainable=False)


def finally_counts(a, i):
    y = a * 1
    try:
        y = y + torch.arange(3)[i]
    except KeyError:  # never what the body raises: the IndexError goes on
        y = y - 100
    finally:
        COUNTER.assign_add(1)  # the finally line
    return y


def test_finally_runs_its_graph_ops_when_the_try_raises_an_uncaught_exception():
    f = ta.function(finally_counts)
    for i, raises in ((1, False), (5, True), (0, False), (-7, True)):
        for fn in (finally_counts, f):
            COUNTER.assign(0)
            if raises:
                with pytest.raises(IndexError):
                    fn(T(1), T(i))
            else:
                assert int(fn(T(1), T(i))) == 1 + i
            assert int(COUNTER.read_value()) == 1, (fn, i)


def fail(v):
    raise ValueError("fail")


def nested_try_after_a_body_that_raised_while_traced(a, b, c):
    # The outer body raises while traced (plain Python catches it); the handler's graph loop holds a staged
    # `try` whose numbers (`y - 2`, `y` a run-time int) stay before its body, and whose unused failing op runs.
    x = 0
    y = 1
    z = a
    try:
        x = x + fail(y)
    except ValueError:
        k = 0
        while k < 3 and (z <= a or y < c):
            k += 1
            try:
                if z != z or x >= 0:
                    torch.arange(3)[a % 4]
                y = y + 1
            except IndexError:
                y = y - 2
            else:
                y = y * 2
    return y + a * 0


def test_a_staged_try_in_the_handler_of_a_body_that_raised_while_traced():
    assert_same_outcomes(nested_try_after_a_body_that_raised_while_traced,
                         [(T(0), T(-3), T(-4)), (T(7), T(3), T(1)), (T(3), T(0), T(2))])


def finally_writes_what_the_body_changed(a, i):
    y = a * 1
    try:
        y = y + torch.arange(3)[i]
    except KeyError:
        y = y - 100
    finally:
        COUNTER.assign(y)  # the refused finally
    return y


def test_a_finally_whose_effect_reads_a_value_the_body_changes_is_refused_at_its_line():
    with pytest.raises(TypeError, match="the `finally:` of the `except KeyError`.*reading 'y'") as info:
        ta.function(finally_writes_what_the_body_changed)(T(1), T(1))
    assert line_of(finally_writes_what_the_body_changed, "# the refused finally") in str(info.value)


class Box:
    pass


BOX = Box()
BOX.v = 0
CALLS = 0


def finally_caught_by_its_own_handler(a, i):
    # The handler catches what the body raises: the `finally:` runs after either path as plain Python, its
    # rebinding of `z` (outside the try's state), of an attribute and of a global (graph values: written back
    # at every call) holding on both paths.
    global CALLS
    y = a * 1
    z = 0
    try:
        y = y + torch.arange(3)[i]
    except IndexError:
        y = y - 100
    finally:
        z = z + 5
        BOX.v = BOX.v + y
        CALLS = CALLS + a
    return y, z


def test_a_finally_after_a_handler_that_catches_rebinds_on_both_paths():
    global CALLS
    f = ta.function(finally_caught_by_its_own_handler)
    for i in (1, 5, 0, 7, 2):
        got = []
        for fn in (finally_caught_by_its_own_handler, f):
            BOX.v, CALLS = T(10), T(0)
            y, z = fn(T(1), T(i))
            got.append((int(y), int(z), int(BOX.v), int(CALLS)))
        assert got[0] == got[1], (i, got)


def inner_finally_rebinds(a, i):
    # The inner `try` has no handler (or one that does not catch): what the body raises goes through its
    # `finally:` to the outer handler, so eagerly `z` is 5 after the outer `try` on both paths.
    y = a * 1
    z = 0
    try:
        try:
            y = y + torch.arange(3)[i]
        finally:
            z = z + 5  # the rebinding finally
    except IndexError:
        y = y - 100
    return y + z


def inner_finally_after_a_handler_that_does_not_catch(a, i):
    y = a * 1
    z = 0
    try:
        try:
            y = y + torch.arange(3)[i]
        except KeyError:
            y = y - 1
        finally:
            z = z + 5  # the rebinding finally
    except IndexError:
        y = y - 100
    return y + z


def test_a_finally_that_rebinds_the_outer_try_s_state_on_the_raise_path_is_refused_at_its_line():
    # It was silent: on the path where the body failed as the graph ran, the outer handler's path took `z`
    # from before the outer body (0), eagerly 5.
    for fn in (inner_finally_rebinds, inner_finally_after_a_handler_that_does_not_catch):
        assert [int(fn(T(1), T(i))) for i in (1, 5)] == [7, -94]
        with pytest.raises(TypeError, match="'z' is rebound by the `finally:`") as info:
            ta.function(fn)(T(1), T(1))
        assert line_of(fn, "# the rebinding finally") in str(info.value)
        assert line_of(fn, "except IndexError:") in str(info.value)


def inner_finally_of_a_local_only(a, i):
    # The inner `finally:` rebinds a name the outer `try` does not carry (nothing reads it after): nothing to
    # refuse, and both paths give eager's values.
    y = a * 1
    try:
        try:
            y = y + torch.arange(3)[i]
        finally:
            unused = 5  # noqa: F841
    except IndexError:
        y = y - 100
    return y


def test_an_inner_finally_rebinding_a_name_no_one_reads_after_runs_both_paths():
    assert_same_outcomes(inner_finally_of_a_local_only, [(T(1), T(1)), (T(1), T(5)), (T(2), T(0)), (T(0), T(-9))])


def rebinds_after_an_inner_finally(a, i):
    # `z` is rebound after the inner `try` (not by its `finally:`): eagerly not when the index fails, as on the
    # graph's handler path; and a `finally:` whose converted code hands `y` through unchanged needs nothing.
    y = a * 1
    z = 0
    try:
        try:
            y = y + torch.arange(3)[i]
        finally:
            if len(LOG) > 100:
                LOG.clear()
        z = z + 5
    except IndexError:
        y = y - 100
    return y + z


LOG = []


def test_a_name_rebound_after_an_inner_finally_is_not_refused():
    assert_same_outcomes(rebinds_after_an_inner_finally, [(T(1), T(1)), (T(1), T(5)), (T(2), T(0)), (T(0), T(-9))])


TOTALS = {"n": T(0)}


def handler_changes_a_captured_dict(a, i):
    y = a * 1
    try:
        y = y + torch.arange(3)[i]
    except IndexError:
        TOTALS["n"] = TOTALS["n"] + a  # the handler's write
    return y


def test_a_handler_changing_an_object_that_outlives_the_call_is_refused():
    # The handler's graph value stayed in the dict (nothing carries it out of the handler): "out of scope" at
    # the caller's line, an error of the library's own making.
    with pytest.raises(StateEffectError, match=r"a dict that outlives the call is changed inside .*`except`") as info:
        ta.function(handler_changes_a_captured_dict)(T(1), T(1))
    assert line_of(handler_changes_a_captured_dict, "except IndexError:") in str(info.value)
    assert type(TOTALS["n"]) is torch.Tensor and int(TOTALS["n"]) == 0  # (nothing of the trace stays in it)


def handler_reads_a_value_the_body_changed_first(a, i):
    y = a * 1
    try:
        y = y + 1  # rebound before the op that fails
        y = y + torch.arange(3)[i]
    except IndexError:
        y = y - 100  # eagerly reads y + 1
    return y


def test_a_handler_reading_a_variable_the_body_rebound_before_the_failing_op():
    assert_same_outcomes(handler_reads_a_value_the_body_changed_first, [(T(1), T(1)), (T(1), T(5))])


HIDDEN = {"n": T(0)}


def _note(v):
    HIDDEN["n"] = HIDDEN["n"] + v


def finally_changes_a_list_and_a_dict(a, i):
    # The `finally:` calls something, so its effects are also traced for when the node raises; that trace
    # changed the list and the dict too, so the clause's Python run made its changes twice.
    y = a * 1
    xs = [a, a + 1, a + 2]
    try:
        y = y + torch.arange(3)[i]
    except IndexError:
        y = y - 100
        xs = [a, a]
    finally:
        _note(a)
        del xs[0]
    return y + len(xs) * 10 + HIDDEN["n"]


def test_a_finally_traced_for_the_raise_path_changes_lists_and_objects_once():
    f = ta.function(finally_changes_a_list_and_a_dict)
    for i in (1, 5, 0):
        got = []
        for fn in (finally_changes_a_list_and_a_dict, f):
            HIDDEN["n"] = T(0)
            got.append((int(fn(T(2), T(i))), int(HIDDEN["n"])))
        assert got[0] == got[1], (i, got)


# ----- the handler starts from the values at the op that failed -------------------------------------------------
def handler_passes_the_rebound_value_on(a, i):
    y = a * 1
    try:
        y = y + 1
        y = y + torch.arange(3)[i]
    except IndexError:
        pass  # y stays as the body left it: y + 1
    return y


def fails_in_a_tensor_if_of_the_body(a, i):
    y = a * 1
    try:
        y = y + 1
        if a > 0:
            y = y * 3
            y = y + torch.arange(3)[i]  # fails with y * 3 bound
        else:
            y = y - torch.arange(3)[i]  # fails with y + 1 bound
        y = y + 10
    except IndexError:
        y = y - 100
    return y


def fails_in_a_tensor_loop_of_the_body(a, n):
    y = a * 0
    j = n * 0
    try:
        while j < n:
            y = y + 1
            y = y + torch.arange(3)[j]  # fails with the partial sum + 1 bound
            j = j + 1
    except IndexError:
        y = y - 100
    return y


def fails_in_a_for_loop_of_the_body(a, n):
    y = a * 0
    try:
        for j in range(n):
            y = y + torch.arange(3)[j]
    except IndexError:
        y = y - 100
    return y


def nested_tries_rebinding(a, i, k):
    y = a * 1
    try:
        y = y + 1
        try:
            y = y * 2
            y = y + torch.arange(3)[i]
        except IndexError:
            y = y - 100
        y = y + 5
        y = y + torch.arange(3)[k]
    except IndexError:
        y = y - 1000
    return y


def rebinds_to_values_made_earlier(a, i):
    y = a * 1
    w = a * 2
    try:
        b = a + 7
        c = a + 8
        y = c
        y = b  # (made before `c`)
        w = w + 1
        z = torch.arange(3)[i]
        y = y + z
        w = w + torch.arange(3)[i + 1]
    except IndexError:
        y = y - 100
        w = w - 100
    return y + 1000 * w


def reads_a_python_number_the_body_set(a, i):
    k = 1
    try:
        k = 2  # before every op of the body
        y = a + torch.arange(3)[i]
    except IndexError:
        y = a * k
    return y


def a_number_then_a_tensor(a, i):
    y = 0
    try:
        y = y + a  # (were this op to fail, the handler would start from 0: a 0-dim tensor of y's type)
        y = y + torch.arange(3)[i]
    except IndexError:
        y = y - 100
    return y


def sets_python_numbers_between_ops(a, i):
    k = 1
    try:
        y = a + torch.arange(3)[i]  # fails with k == 1
        k = 2
        y = y + torch.arange(3)[i + 1]  # fails with k == 2: k is a 0-dim tensor for the handler
    except IndexError:
        y = a * k
    return y


def reads_a_run_time_number_made_in_the_body(a, i, n):
    y = a * 1
    try:
        k = n.shape[0] - 1  # a run-time number (n's size)
        y = y + torch.arange(3)[i]
        k = k * 2
        y = y + torch.arange(3)[i + 1]
    except IndexError:
        y = y * 10 + k
    return y


def becomes_float_in_the_body(a, i):
    y = a * 1
    try:
        y = y * 1.5  # (an op that cannot fail: the handler never starts from the int tensor)
        y = y + torch.arange(3)[i]
    except IndexError:
        y = y - 100
    return y


def rebinds_then_finally(a, i):
    y = a * 1
    try:
        y = y + 1
        y = y + torch.arange(3)[i]
    except IndexError:
        y = y - 100
    finally:
        y = y * 2
    return y


@pytest.mark.parametrize("fn, calls", [
    (handler_passes_the_rebound_value_on, [(T(1), T(1)), (T(1), T(5)), (T(2), T(-1))]),
    (fails_in_a_tensor_if_of_the_body, [(T(1), T(1)), (T(1), T(5)), (T(-1), T(5)), (T(-1), T(0)), (T(2), T(9))]),
    (fails_in_a_tensor_loop_of_the_body, [(T(1), T(2)), (T(1), T(5)), (T(1), T(3)), (T(2), T(9))]),
    (fails_in_a_for_loop_of_the_body, [(T(1), T(2)), (T(1), T(5)), (T(1), T(3)), (T(1), T(4))]),
    (nested_tries_rebinding, [(T(1), T(1), T(1)), (T(1), T(5), T(1)), (T(1), T(1), T(5)), (T(1), T(5), T(5))]),
    (rebinds_to_values_made_earlier, [(T(1), T(0)), (T(1), T(2)), (T(1), T(5))]),
    (reads_a_python_number_the_body_set, [(T(1), T(1)), (T(1), T(5))]),
    (rebinds_then_finally, [(T(1), T(1)), (T(1), T(5))]),
    (a_number_then_a_tensor, [(T(1), T(1)), (T(1), T(5)), (T(3), T(-7))]),
    (sets_python_numbers_between_ops, [(T(1), T(0)), (T(1), T(2)), (T(1), T(5))]),
    (becomes_float_in_the_body, [(T(1), T(1)), (T(1), T(5))]),
], ids=lambda x: getattr(x, "__name__", ""))
def test_the_handler_starts_from_the_values_at_the_op_that_failed(fn, calls):
    assert_same_outcomes(fn, calls)


def test_a_run_time_number_the_handler_reads_is_its_value_at_the_op_that_failed():
    f = ta.function(reads_a_run_time_number_made_in_the_body)
    for i, n in ((1, 4), (5, 4), (2, 6), (1, 3), (7, 2)):  # (n's size varies: a run-time number)
        args = (T(1), T(i), torch.zeros(n))
        torch.testing.assert_close(f(*args), reads_a_run_time_number_made_in_the_body(*args))


def test_the_handler_starts_from_the_values_at_the_op_that_failed_with_jit_compile():
    import warnings
    for fn, calls in [(fails_in_a_tensor_if_of_the_body, [(T(1), T(1)), (T(1), T(5)), (T(-1), T(5))]),
                      (fails_in_a_for_loop_of_the_body, [(T(1), T(2)), (T(1), T(5))])]:
        f = ta.function(fn, jit_compile=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for args in calls:
                torch.testing.assert_close(f(*args), fn(*args))


def changes_shape_in_the_body(a, i):
    y = a * 1
    try:
        y = y + torch.ones(2)
        y = y + torch.arange(3)[i]  # the op of another shape
    except IndexError:
        y = y - 100
    return y


def sets_a_python_string_between_ops(a, i):
    mode = "first"
    try:
        y = a + torch.arange(3)[i]
        mode = "second"
        y = y + torch.arange(3)[i + 1]  # the op after mode = "second"
    except IndexError:
        y = a * (2 if mode == "first" else 3)
    return y


@pytest.mark.parametrize("fn, what", [(changes_shape_in_the_body, "'y' is float32[2] cpu"),
                                      (sets_a_python_string_between_ops, "'mode' is str 'second'")])
def test_a_handler_reading_a_variable_whose_type_differs_between_the_body_s_ops_is_refused(fn, what):
    # The handler starts from the value at the op that fails, which the graph can give one type only: refused at
    # the op, naming the variable and the `except`, where eagerly each op has its own.
    with pytest.raises(TypeError, match=re.escape(what) + r".*an op of the `try` body of the `except IndexError`") \
            as info:
        ta.function(fn)(T(1), T(1))
    assert line_of(fn, "# the op") in str(info.value)
    assert line_of(fn, "except IndexError:") in str(info.value)


def keeps_a_loop_number_the_handler_reads(a, n):
    y = a * 1
    k = 0
    try:
        for j in range(int(n)):  # a graph loop: `j` and `k` are run-time numbers of its body
            k = j * 2
            y = y + torch.arange(3)[j]  # the failing op
    except IndexError:
        y = y + k
    return y


def test_a_handler_reading_a_number_the_graph_has_not_at_the_failing_op_is_refused_as_it_runs():
    # The number is the loop body's, which the graph has no value of where the op fails: refused when (and only
    # when) the handler starts there, chained to the user's error, naming the variable and the op's line.
    f = ta.function(keeps_a_loop_number_the_handler_reads)
    torch.testing.assert_close(f(T(1), T(2)), keeps_a_loop_number_the_handler_reads(T(1), T(2)))
    with pytest.raises(TypeError, match="'k' is a run-time number the graph does not have at") as info:
        f(T(1), T(5))
    assert line_of(keeps_a_loop_number_the_handler_reads, "# the failing op") in str(info.value)
    assert line_of(keeps_a_loop_number_the_handler_reads, "except IndexError:") in str(info.value)
    assert isinstance(info.value.__context__, IndexError)

