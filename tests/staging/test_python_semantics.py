"""Converted code means what the Python means: closures, `pop`, returns, `try`, recursion.

Each function runs three ways and must agree: the original on Python values,
AutoGraph's converted code on the same Python values, and `ta.function` on
tensors, compared with the same function run eagerly on those tensors
(values, dtypes, shapes and gradients: `eager_reference.assert_matches_eager`).
"""

import torch
from eager_reference import assert_matches_eager, graph_ops, line_of

import torch_autograph as ta


def three_ways(fn, *args):
    """Original == converted on Python values; graph == eager on tensors. Returns the Python result."""
    expected = fn(*args)
    assert ta.autograph.to_graph(fn)(*args) == expected
    tensors = [torch.tensor(a) if isinstance(a, (int, float)) else a for a in args]
    assert_matches_eager(fn, *tensors)
    return expected


# -- closures read the value of the iteration being traced -----------------------------------------


def while_with_closure_call(n):
    i = 0
    s = 0

    def read_i():
        return i

    while i < n:
        s += read_i()
        i += 1
    return s + 20


def test_closure_reads_the_loop_variable_of_the_current_iteration():
    assert three_ways(while_with_closure_call, 2) == 21
    assert three_ways(while_with_closure_call, 5) == 30
    assert "while" in graph_ops(ta.function(while_with_closure_call), torch.tensor(3))


def for_with_lambda(x, n):
    scale = x * 0 + 1
    get = lambda: scale  # noqa: E731
    out = x * 0
    for k in range(n):
        if get().sum() > 2:
            out = out + get()
        scale = scale * 2
    return out, get()


def test_lambda_sees_loop_and_branch_values_and_the_final_value_after_the_loop():
    x = torch.tensor([1.0, 0.5])
    out, last = for_with_lambda(x, 4)
    assert_matches_eager(for_with_lambda, x, torch.tensor(4))
    assert torch.equal(last, torch.tensor([16.0, 16.0])) and torch.equal(out, torch.tensor([14.0, 14.0]))


def closure_assigns(n):
    i = 0

    def bump():
        nonlocal i
        i += 2

    while i < n:
        bump()
    return i


def test_nested_def_assigning_a_loop_variable_through_nonlocal():
    assert three_ways(closure_assigns, 5) == 6


# -- pop, insert and del on lists in tensor loops and branches ---------------------------------------


def simple_empty(n):
    l = [1, 2, 3, 4]
    s = 0
    for _ in range(n):
        s += l.pop()
    return torch.tensor(l), s


def test_pop_inside_an_expression_in_a_tensor_loop():
    eager = simple_empty(2)
    got = ta.function(simple_empty)(torch.tensor(2))
    assert torch.equal(got[0], eager[0]) and torch.equal(got[0], torch.tensor([1, 2]))
    assert int(got[1]) == eager[1] == 7


def pops_inserts_dels(x, n):
    l = [x, x + 1, x + 2, x + 3]
    s = x * 0
    for i in range(n):
        s = s + l[-1] * l.pop() + l.pop(0)
        l.insert(1, s)
        l.insert(0, s * 2)
        del l[1]
    return torch.stack(l), s


def test_pop_insert_and_del_in_a_tensor_loop_match_eager():
    assert_matches_eager(pops_inserts_dels, torch.tensor([1.0, -0.5]), torch.tensor(3))


def pop_in_branch(x):
    ints = [1, 2, 3]
    tensors = [x, x + 1, x + 2]
    s = 0
    t = x * 0
    if x.sum() > 0:
        s = s + ints.pop()
        t = t + tensors.pop(0)
        ints.append(7)
    return torch.tensor(ints), s, torch.stack(tensors), t


def test_list_changed_in_place_in_a_tensor_if_is_changed_on_the_taken_path_only():
    for v in (1.0, -1.0):
        assert_matches_eager(pop_in_branch, torch.tensor([v, 2 * v]))


# -- return: the value is evaluated first ------------------------------------------------------------


def raise_during_return_caught():
    try:
        return 1 / 0
    except ZeroDivisionError:
        pass
    return 1


def raise_during_return_in_tail_branch(x):
    if x > 0:
        try:
            return x + ta_undefined_helper()  # noqa: F821 - raises NameError on purpose
        except NameError:
            pass
        return x * 0 + 1
    return x * 0 + 2


def test_an_exception_while_evaluating_the_returned_value_does_not_return():
    assert ta.autograph.to_graph(raise_during_return_caught)() == raise_during_return_caught() == 1
    assert three_ways(raise_during_return_in_tail_branch, 3) == 1
    assert three_ways(raise_during_return_in_tail_branch, -3) == 2


# -- continue in try/finally, a loop of only `continue` ----------------------------------------------


def continue_in_try_finally(n):
    i = 0
    s = 0
    while i < n:
        i += 1
        try:
            if i == 2:
                continue
            s += i
        finally:
            s += 10
    return s


def only_continue(x, n):
    for i in range(n):
        continue
    k = 0
    while k < n:
        k += 1
        if k > 0:
            continue
    return x + k


def test_continue_inside_try_finally_and_a_body_of_only_continue():
    assert three_ways(continue_in_try_finally, 4) == 48
    assert three_ways(only_continue, 3, 3) == 6


# -- recursion --------------------------------------------------------------------------------------


def rec(h, n):
    return h if n == 0 else rec(h * 2, n - 1)


def uses_rec(h):
    return rec(h, 3)


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def detach_state(h):
    return repackage_hidden(h)


def nested_recursion(x, n):
    def countdown(v, k):
        if k <= 0:
            return v
        return countdown(v + k, k - 1)

    return countdown(x, n)


def test_recursive_functions_with_a_python_base_case():
    assert_matches_eager(uses_rec, torch.tensor([1.0, 3.0]))
    assert_matches_eager(nested_recursion, torch.tensor([1.0, 2.0]), 4)  # n: a Python int
    h = (torch.ones(2, requires_grad=True) * 2, (torch.ones(3) * 3,))
    got = ta.function(detach_state)(h)
    assert not got[0].requires_grad and torch.equal(got[0], h[0].detach())
    assert torch.equal(got[1][0], h[1][0])


# -- falling off the end; variables assigned in loops that may not run -------------------------------


def falls_off_the_end(x):
    if x > 0:
        return x * 2


def returns_none_or_falls_off(x, log):
    if x > 0:
        log.append(1)
        return
    log.append(2)


def test_a_graph_value_choosing_between_a_value_and_falling_off_the_end_is_an_error():
    import pytest
    assert ta.autograph.to_graph(falls_off_the_end)(-1) is None
    assert ta.autograph.to_graph(falls_off_the_end)(2) == 4
    with pytest.raises(ValueError) as e:
        ta.function(falls_off_the_end)(torch.tensor(-1))
    assert "falls_off_the_end() returns a value on some paths" in str(e.value)
    assert line_of(falls_off_the_end, "if x > 0") in str(e.value)
    # Every `return` gives None: either way the result is None.
    assert ta.function(returns_none_or_falls_off)(torch.tensor(-1), []) is None


def assigned_in_loop_after_early_return(a, b, y):
    if y > b:
        return a
    for i in range(a % 2):
        t2 = a + i
    return t2


def assigned_in_loop_in_a_branch(x, n):
    if x > 0:
        for i in range(n):
            t = x + i
        x = t
    return x


def returns_from_a_tensor_loop(x, n):
    acc = []
    for i in range(n):
        acc.append(x * i)
        if i > 1:
            return torch.stack(acc)
    return x.unsqueeze(0)


def test_variables_first_assigned_in_a_loop_inside_a_branch_or_after_an_early_return():
    assert three_ways(assigned_in_loop_after_early_return, 3, 1, 0) == 3
    assert three_ways(assigned_in_loop_after_early_return, 3, 1, 5) == 3
    assert three_ways(assigned_in_loop_in_a_branch, 1, 2) == 2
    assert three_ways(assigned_in_loop_in_a_branch, -1, 2) == -1


def test_return_of_a_value_whose_shape_grows_in_a_tensor_loop():
    assert_matches_eager(returns_from_a_tensor_loop, torch.tensor([1.0, 2.0]), torch.tensor(4))
    assert_matches_eager(returns_from_a_tensor_loop, torch.tensor([1.0, 2.0]), torch.tensor(1))


# -- loop else, run-time list indices, loops that may not end ----------------------------------------


def loop_else_reads_loop_variable(x, n):
    for i in range(n):
        t = x * i
    else:
        x = x + t
    k = 0
    while k < n:
        u = x + k
        k += 1
    else:
        x = x + u
    return x


def reads_list_at_run_time_index(x, n):
    l = [x, x + 1, x + 2]
    ints = [10, 20, 30]
    s = x * 0
    for i in range(1, n):
        s = s + l[i - 1] * ints[i - 1]
    return s + l[n - 1]


def test_loop_else_and_lists_read_at_an_index_known_when_the_graph_runs():
    assert_matches_eager(loop_else_reads_loop_variable, torch.tensor([1.0, 2.0]), torch.tensor(3))
    for n in (1, 3):
        assert_matches_eager(reads_list_at_run_time_index, torch.tensor([1.0, -1.0]), torch.tensor(n))


def reads_strings_at_run_time_index(x, n):
    names = ["a", "b"]
    return x, names[n - 1]  # the error line


def test_a_list_that_cannot_be_read_at_a_run_time_index_is_an_error_at_the_line():
    import pytest
    with pytest.raises(TypeError) as e:
        ta.function(reads_strings_at_run_time_index)(torch.tensor(1.0), torch.tensor(1))
    assert "cannot read list ['a', 'b'] at an index known only when the graph runs" in str(e.value)
    assert line_of(reads_strings_at_run_time_index, "# the error line") in str(e.value)


def unused_while(x, n):
    i = 0
    while i < n:  # may never end: kept although nothing reads `i`
        i = i + 1
    for j in range(n):  # ends: dropped when unused
        x = x + 0 * j
    return x * 2


def test_a_while_loop_is_kept_even_when_its_results_are_unused():
    ops = graph_ops(ta.function(unused_while), torch.tensor(1.0), torch.tensor(3))
    assert ops.count("while") == 2  # the `for` too: `x` is returned
    ops = graph_ops(ta.function(lambda x, n: unused_while(x * 0, n) * 0 + x), torch.tensor(1.0), torch.tensor(3))
    assert ops.count("while") >= 1


# -- in-place subscript writes in a tensor loop keep gradients ----------------------------------------


def subscript_write_in_while(b, n):
    z = torch.zeros(3)
    x = b
    i = 0
    while i < n:
        z[1] = b[0]
        x = z * b
        i += 1
    return x.sum()


def test_subscript_assignment_in_a_tensor_loop_is_not_written_again():
    assert_matches_eager(subscript_write_in_while, torch.tensor([1.0, 2.0, 3.0]), torch.tensor(2))


# -- element writes on a list in a tensor loop or branch (a key/value cache) --------------------------


def cache_in_while(x, n):
    keys = [x, x * 2]  # grows along dim 0 at every step, as a key/value cache does
    while n > 0:
        for i in range(2):
            keys[i] = torch.cat([keys[i], keys[i][-1:] + 1])
        n -= 1
    return keys[0].sum() + keys[1].sum() * 10 + keys[0].size(0)


def element_write_in_tensor_for(x, n):
    acc = [x, x]
    for k in range(n):  # a graph loop: n is a tensor
        for j in range(2):
            acc[j] = acc[j] * 2 + k * (j + 1)
    return acc[0] + acc[1]


def element_write_in_branch(x):
    parts = [x, x + 1]
    j = 1
    if x.sum() > 0:
        parts[j] = parts[j] * 3
    else:
        parts[j - 1] = -parts[j - 1]
    return parts[0] * parts[1]


def dict_element_write_in_while(x, n):
    state = {"h": x, "c": x * 0}
    names = ("h", "c")
    while n > 0:
        for name in names:
            state[name] = state[name] + 1
        n -= 1
    return state["h"] * state["c"]


def tensor_element_write_in_while(b, n):
    z = torch.zeros(3)
    i = 0
    while i < n:
        z[i] = b[i] * 2  # an in-place write on a tensor: the tensor itself, not a loop variable
        i += 1
    return z * b


def element_writes_seen_through_an_alias(x, n):
    keys = [x, x * 2]
    other = keys  # the same list: it sees the loop's writes
    table = {"h": x, "c": x}
    same_table = table
    while n > 0:
        for i in range(2):
            keys[i] = keys[i] + 1
        for name in ("h", "c"):
            table[name] = table[name] * 2
        n = n - 1
    return other[0] + keys[0] * 10 + other[1] * 100 + same_table["h"] * 1000


def element_writes_in_a_branch_seen_through_an_alias(x):
    parts = [x, x + 1]
    alias = parts
    j = 1
    if x.sum() > 0:
        parts[j] = parts[j] * 3
    else:
        parts[j - 1] = -parts[j - 1]
    return alias[0] * 10 + alias[1]


def test_element_writes_on_a_list_in_a_tensor_loop_are_loop_state():
    x, n = torch.tensor([1.0, 2.0]), torch.tensor(3)
    assert_matches_eager(cache_in_while, x, n)
    assert "while" in graph_ops(ta.function(cache_in_while), x, n)
    assert_matches_eager(element_write_in_tensor_for, x, torch.tensor(5))
    assert_matches_eager(dict_element_write_in_while, x, n)
    assert_matches_eager(tensor_element_write_in_while, torch.tensor([1.0, 2.0, 3.0]), torch.tensor(2))
    assert_matches_eager(element_writes_seen_through_an_alias, x, n)
    for x in (torch.tensor([1.0, 2.0]), torch.tensor([-1.0, -2.0])):
        assert_matches_eager(element_writes_in_a_branch_seen_through_an_alias, x)


def test_element_writes_on_a_list_in_a_tensor_branch_are_branch_state():
    for x in (torch.tensor([1.0, 2.0]), torch.tensor([-1.0, -2.0])):
        assert_matches_eager(element_write_in_branch, x)
    assert "cond" in graph_ops(ta.function(element_write_in_branch), torch.tensor([1.0, 2.0]))


def element_write_at_a_graph_index(x, n):
    acc = [x, x]
    for k in range(n):
        acc[k % 2] = acc[k % 2] * 2  # the graph index line
    return acc[0] + acc[1]


def test_an_element_write_at_a_graph_index_on_a_python_list_is_refused_at_its_line():
    import pytest

    from torch_autograph import errors
    with pytest.raises(errors.OperatorNotAllowedInGraphError) as e:
        ta.function(element_write_at_a_graph_index)(torch.tensor([1.0]), torch.tensor(3))
    assert line_of(element_write_at_a_graph_index, "# the graph index line") in str(e.value)
    assert "assigning an element of a Python list at an index known only when the graph runs" in str(e.value)


def test_element_writes_in_plain_python_control_flow_are_python():
    assert cache_in_while(torch.tensor([1.0, 2.0]), 2) == ta.function(cache_in_while)(torch.tensor([1.0, 2.0]), 2)

    def in_place(n):
        parts = [1, 2]
        for k in range(n):
            parts[k % 2] += k
        return parts

    assert [int(v) for v in ta.function(in_place)(3)] == in_place(3) == [3, 3]


# -- clear errors: formatting, py_function without Tout, endless recursion ----------------------------


def formats_a_graph_tensor(x):
    return f"{x.sum():.3f}"  # the format line


def calls_py_function_without_tout(x):
    return ta.py_function(lambda t: t * 2, [x])


def factorial(n):
    if n <= 1:  # the base case
        return n * 0 + 1
    return n * factorial(n - 1)


def test_clear_errors_for_what_a_graph_cannot_do():
    import pytest

    from torch_autograph import errors
    with pytest.raises(TypeError) as e:
        ta.function(formats_a_graph_tensor)(torch.tensor([1.0, 2.0]))
    assert "formatting a graph tensor with '.3f'" in str(e.value) and "%sum" in str(e.value)
    assert line_of(formats_a_graph_tensor, "# the format line") in str(e.value)
    assert ta.function(lambda x: f"{x}")(torch.tensor(1.0)).startswith("GraphTensor(")  # a trace-time string
    with pytest.raises(TypeError, match=r"needs Tout: the type of what <lambda> returns"):
        ta.function(calls_py_function_without_tout)(torch.tensor(1.0))
    with pytest.raises(errors.OperatorNotAllowedInGraphError) as e:
        ta.function(factorial)(torch.tensor(4))
    assert "maximum recursion depth exceeded while tracing the branches of the `if`" in str(e.value)
    assert line_of(factorial, "# the base case") in str(e.value)
    assert int(ta.function(factorial)(4)) == 24  # a Python base case


def test_a_ragged_list_argument_is_named():
    import pytest

    def identity(x):
        return x

    concrete = ta.function(identity).get_concrete_function(ta.TensorSpec([None, None]))
    with pytest.raises(TypeError, match=r"argument x expected a tensor matching .* got \[\[1, 2, 3\], \[1\]\]"):
        concrete([[1, 2, 3], [1]])


# -- try/else after a jump, exceptions raised while tracing a branch ----------------------------------


def fail(v):
    raise ValueError(v)


def return_in_try_skips_else(a, b):
    x = 0
    try:
        if b > a:
            return a, x
        x = x + fail(a)
    except ValueError:
        x = x + 1
    else:
        x = x + 100  # never: the body returned or raised
    finally:
        x = x + 10
    for i in range(3):
        try:
            if i == 1:
                break
        finally:
            x = x + 1
    return b, x


def break_in_try_skips_else(x, n):
    for i in range(n):
        try:
            if i == 1:
                break
            x = x * 2
        except ValueError:
            x = x - 100
        else:
            x = x + 1
        finally:
            x = x + 10
    return x


def test_else_of_a_try_does_not_run_after_return_or_break():
    # (With tensors the raise after the tensor `if` is refused: see the next test.)
    convert = ta.autograph.to_graph(return_in_try_skips_else)
    assert convert(1, 2) == return_in_try_skips_else(1, 2) == (1, 0)
    assert convert(2, 1) == return_in_try_skips_else(2, 1) == (1, 13)
    assert three_ways(break_in_try_skips_else, 1.5, 3) == 24.0


def raises_in_a_tensor_branch(a, b):
    try:
        if b > a:
            return a
        return fail(a)  # the raising line
    except ValueError:
        return b


def test_an_exception_raised_in_one_branch_whose_message_holds_a_graph_tensor_is_refused_at_its_line():
    # A raise in a tensor branch is raised when the graph takes the branch (test_staged_raises.py), but this
    # one's message is the graph tensor `a`, which has no value while tracing.
    import pytest

    from torch_autograph import errors
    assert raises_in_a_tensor_branch(1, 2) == 1 and raises_in_a_tensor_branch(2, 1) == 1
    with pytest.raises(errors.StagedBranchError, match="holds the graph value") as e:
        ta.function(raises_in_a_tensor_branch)(torch.tensor(1), torch.tensor(2))
    assert "the ValueError raised at" in str(e.value)
    assert f"{fail.__code__.co_filename.rsplit('/', 1)[-1]}:{fail.__code__.co_firstlineno + 1}" in str(e.value)


def list_grown_in_nested_tensor_branches(a, b, c):
    l = [a, b + 1]
    n = a * 0
    if c < 0:
        for k in range(3):
            if a >= k:
                l.append(b - k)
    l.append(n + len(l))  # a run-time int once `l` is a graph list
    return torch.stack(l), sum(l)


def test_lists_grown_in_nested_tensor_branches_hold_run_time_numbers_too():
    for c in (-1, 1):
        assert_matches_eager(list_grown_in_nested_tensor_branches, torch.tensor(2), torch.tensor(5),
                             torch.tensor(c))


# -- numbers: int and float from the two branches, min/max of ints and floats, ties ------------------


def int_or_float(x, n):
    y = 2 if x.sum() > 0 else 0.5
    k = len(range(n))  # a run-time int
    z = k if x.sum() > 1 else k / 4
    # max(k, 2.5) is an int or a float: the graph gives the float that equals it.
    return x * y + z + max(k, 2.5) - min(k, 7)


def min_max_ties(a, b):
    return min(a, b) * 3 + max(a, b) * 5 + min(b, a, a * 2)


def test_numbers_keep_python_values_and_eager_gradients():
    for v in (1.0, 0.7, -1.0):
        for n in (1, 3):
            assert_matches_eager(int_or_float, torch.tensor([v, 0.5]), torch.tensor(n))
    for a, b in ((2.0, 2.0), (1.0, 3.0), (3.0, 1.0)):
        assert_matches_eager(min_max_ties, torch.tensor(a), torch.tensor(b))


def min_of_number_and_tensor_then_in_place(a, c):
    z = a
    x = min(abs(a), 0)  # eagerly the Python 0: abs(a) is not kept for backward
    z += c  # changes `a` in place
    return x, z


def test_min_keeps_only_the_picked_argument_for_backward():
    for v in (1.0, -2.0):
        a, c = torch.tensor(v, requires_grad=True), torch.tensor(0.5, requires_grad=True)
        out = ta.function(min_of_number_and_tensor_then_in_place)(a * 1, c * 1)
        eager = min_of_number_and_tensor_then_in_place(a * 1, c * 1)
        assert float(out[0]) == float(eager[0]) and float(out[1]) == float(eager[1])
        out[1].backward()  # no "modified by an inplace operation": abs(a) is not in the graph
        assert float(a.grad) == 1.0 and float(c.grad) == 1.0
