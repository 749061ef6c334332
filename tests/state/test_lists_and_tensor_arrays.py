"""Python lists growing in graph loops and `ta.TensorArray`, against eager.

TensorFlow raises InaccessibleTensorError for `lst.append(t)` inside a graph
loop; here the list becomes a graph list value and `torch.stack(lst)` after
the loop sees every element. TensorArray keeps TensorFlow's API and error texts.
"""

import pytest
import torch
from eager_reference import assert_matches_eager, graph_ops, line_of

import torch_autograph as ta

X = torch.tensor([1.0, 2.0, 3.0])


def _notes(e):
    return "\n".join([str(e), *getattr(e, "__notes__", [])])


# ----- Python lists in graph control flow -------------------------------------------------
def append_in_for(x, n):
    lst = []
    for i in range(n):
        lst.append(x * i)
    return torch.stack(lst)


def append_in_while_then_pop(x, n):
    lst = [x, x + 1]
    i = torch.tensor(0)
    while i < n:
        lst.append(x * i)
        i = i + 1
    last = lst.pop()
    return torch.stack(lst), last


def append_in_if(x):
    lst = [x]
    if x.sum() > 0:
        lst.append(x * 2)
    else:
        lst.append(x.exp())
        lst.append(x - 1)
    return torch.stack(lst).sum(0), len(lst)


def append_under_condition_in_loop(x, n):
    lst = [x[0]]
    for i in range(n):
        if x[i % 3] > 1:
            lst.append(x[i % 3] * i)
    return torch.stack(lst)


def pop_until_one_left(x, n):
    lst = []
    for i in range(n):
        lst.append(x * (i + 1))
    while len(lst) > 1:
        lst.pop()
    return torch.cat(lst), len(lst)


def iterate_and_index_a_grown_list(x, n):
    lst = []
    for i in range(n):
        lst.append(x[i % 3] * x[(i + 1) % 3])
    s = torch.zeros(())
    for v in lst:
        s = s + v
    return s, lst[0], lst[-1], torch.stack(lst[1:])


@pytest.mark.parametrize("fn, args", [
    (append_in_for, (X, torch.tensor(4))),
    (append_in_while_then_pop, (X, torch.tensor(3))),
    (append_in_while_then_pop, (X, torch.tensor(0))),
    (append_under_condition_in_loop, (X, torch.tensor(7))),
    (pop_until_one_left, (X, torch.tensor(4))),
    (iterate_and_index_a_grown_list, (X, torch.tensor(5))),
], ids=["for-append-stack", "while-append-pop", "while-0-iterations", "append-in-if-in-loop", "pop-loop",
        "iterate-index-slice"])
def test_lists_grown_in_graph_loops(fn, args):
    g = assert_matches_eager(fn, *args)
    assert "while" in graph_ops(g, *args)
    assert g.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("x", [X, -X], ids=["main", "else"])
def test_appends_inside_a_tensor_if(x):
    g = assert_matches_eager(append_in_if, x)
    assert "cond" in graph_ops(g, x)


def test_list_built_in_a_loop_gives_the_same_list_at_every_call():
    g = ta.function(append_in_for)
    for n in (1, 3, 2):
        torch.testing.assert_close(g(X, torch.tensor(n)), append_in_for(X, torch.tensor(n)))
    assert g.experimental_get_tracing_count() == 1


def test_list_outside_the_function_is_untouched_by_the_graph():
    shared = [X * 10]

    def f(x, n):
        acc = list(shared)
        for i in range(n):
            acc.append(x * i)
        return torch.stack(acc)

    g = assert_matches_eager(f, X, torch.tensor(3))
    g(X, torch.tensor(5))
    assert len(shared) == 1


def test_list_element_dtype_must_stay_the_same():
    def f(x, n):
        lst = [x]
        for i in range(n):
            lst.append(x.int())  # <-
        return lst

    with pytest.raises(TypeError) as info:
        ta.function(f)(X, torch.tensor(2))
    msg = _notes(info.value)
    filename, lineno = line_of(f, "# <-").split(":")
    assert "appending to a graph list at" in msg and "`lst.append(x.int())" in msg and "torch.float32 elements and got torch.int32" in msg
    assert f'{filename}", line {lineno}' in msg


def test_a_grown_list_can_be_returned():
    def f(x, n):
        lst = []
        for i in range(n):
            lst.append(x[i] * x.sum())
        return lst

    assert_matches_eager(f, X, torch.tensor(3))


# ----- TensorArray, eagerly -------------------------------------------------------------
def test_tensor_array_eager_api():
    arr = ta.TensorArray(torch.float32, size=3)
    arr = arr.write(0, X).write(2, X * 3)
    assert arr.size() == 3 and arr.dtype == torch.float32 and arr.element_shape == (3,)
    torch.testing.assert_close(arr.stack(), torch.stack([X, torch.zeros(3), X * 3]))
    arr = ta.TensorArray(torch.float32, size=3).unstack(torch.eye(3))
    torch.testing.assert_close(arr.gather(torch.tensor([2, 0])), torch.eye(3)[[2, 0]])
    torch.testing.assert_close(arr.read(1), torch.eye(3)[1])
    grown = ta.TensorArray(torch.float32, size=0, dynamic_size=True).write(4, X)
    assert grown.size() == 5
    torch.testing.assert_close(grown.stack(), torch.cat([torch.zeros(4, 3), X[None]]))
    torch.testing.assert_close(ta.TensorArray(torch.float32, size=2).split(X, [1, 2]).concat(), X)


def test_tensor_array_eager_double_read_is_cleared():
    arr = ta.TensorArray(torch.float32, size=1).write(0, X)
    arr.read(0)
    with pytest.raises(ta.errors.InvalidArgumentError, match=r"Could not read index 0 twice because it was cleared "
                       r"after a previous read \(perhaps try setting clear_after_read = false\?\)"):
        arr.read(0)
    kept = ta.TensorArray(torch.float32, size=1, clear_after_read=False).write(0, X)
    torch.testing.assert_close(kept.read(0) + kept.read(0), X * 2)


@pytest.mark.parametrize("make, exc, text", [
    (lambda: ta.TensorArray(torch.float32, size=2).write(5, X), ta.errors.OutOfRangeError,
     "Tried to write to index 5 but array is not resizeable and size is: 2"),
    (lambda: ta.TensorArray(torch.float32, size=3).write(0, X).read(5), ta.errors.OutOfRangeError,
     "Tried to read from index 5 but array size is: 3"),
    (lambda: ta.TensorArray(torch.float32, size=3, element_shape=[2]).write(0, X), ValueError,
     "Incompatible shape for value ((3,)), expected ((2,))"),
    (lambda: ta.TensorArray(torch.float32, size=3).write(0, X[:2]).write(1, X), ValueError,
     "Incompatible shape for value ((3,)), expected ((2,))"),
], ids=["write-past-fixed-size", "read-out-of-range", "element-shape", "inferred-element-shape"])
def test_tensor_array_eager_errors_have_tensorflow_texts(make, exc, text):
    with pytest.raises(exc) as info:
        make()
    assert str(info.value) == text


# ----- TensorArray in graphs ------------------------------------------------------------
def ta_write_in_loop(x, n):
    arr = ta.TensorArray(torch.float32, size=0, dynamic_size=True)
    for i in range(n):
        arr = arr.write(i, x * (i + 1))
    return arr.stack(), arr.size()


def ta_fixed_size_from_tensor(x, n):
    arr = ta.TensorArray(torch.float32, size=n)
    for i in range(n):
        arr = arr.write(i, x.sin() * i)
    return arr.stack()


def ta_unstack_read_gather(x):
    arr = ta.TensorArray(torch.float32, size=3)
    arr = arr.unstack(torch.stack([x, x * 2, x.exp()]))
    s = torch.zeros(3)
    for i in range(arr.size()):
        s = s + arr.read(i) * (i + 1)
    return s, arr.gather(torch.tensor([2, 0]))


def ta_in_while_with_cond(x):
    arr = ta.TensorArray(torch.float32, size=0, dynamic_size=True)
    i = torch.tensor(0)
    while x.sum() < 30:
        if i % 2 == 0:
            arr = arr.write(i, x)
        else:
            arr = arr.write(i, -x)
        x = x * 2
        i = i + 1
    return arr.stack().sum(0), x


@pytest.mark.parametrize("fn, args", [
    (ta_write_in_loop, (X, torch.tensor(4))),
    (ta_fixed_size_from_tensor, (X, torch.tensor(3))),
    (ta_unstack_read_gather, (X,)),
    (ta_in_while_with_cond, (X,)),
], ids=["dynamic-write", "size-from-tensor", "unstack-read-gather", "write-in-if-in-while"])
def test_tensor_array_in_graph_loops_matches_eager(fn, args):
    g = assert_matches_eager(fn, *args)
    assert "while" in graph_ops(g, *args)


def test_tensor_array_dynamic_write_grows_with_zeros_in_a_graph():
    def f(x):
        arr = ta.TensorArray(torch.float32, size=0, dynamic_size=True)
        arr = arr.write(4, x)
        return arr.stack(), arr.size()

    assert_matches_eager(f, X)
    stacked, size = ta.function(f)(X)
    assert int(size) == 5 and torch.equal(stacked[:4], torch.zeros(4, 3))


def test_tensor_array_double_read_is_allowed_in_a_graph():
    def f(x):
        arr = ta.TensorArray(torch.float32, size=1).write(0, x)
        return arr.read(0) + arr.read(0)

    torch.testing.assert_close(ta.function(f)(X), X * 2)


def test_tensor_array_errors_in_graphs():
    def write_past(x, n):
        arr = ta.TensorArray(torch.float32, size=2)
        for i in range(n):
            arr = arr.write(i, x)  # <-
        return arr.stack()

    def read_past(x, n):
        arr = ta.TensorArray(torch.float32, size=3).write(0, x)
        return arr.read(n)  # <-

    def bad_shape(x):
        arr = ta.TensorArray(torch.float32, size=3).write(0, x)
        return arr.write(1, x[:2]).stack()  # <-

    def empty_stack(n):
        return ta.TensorArray(torch.float32, size=0, dynamic_size=True).stack()

    g = ta.function(write_past)
    torch.testing.assert_close(g(X, torch.tensor(2)), torch.stack([X, X]))
    with pytest.raises(ta.errors.OutOfRangeError) as info:
        g(X, torch.tensor(5))
    assert "Tried to write to index 2 but array is not resizeable and size is: 2" in str(info.value)
    assert line_of(write_past, "# <-") in _notes(info.value)
    with pytest.raises(ta.errors.OutOfRangeError) as info:
        ta.function(read_past)(X, torch.tensor(5))
    assert str(info.value) == "Tried to read from index 5 but array size is: 3"
    assert line_of(read_past, "# <-") in _notes(info.value)
    with pytest.raises(ValueError, match=r"Incompatible shape for value \(\(2,\)\), expected \(\(3,\)\)"):
        ta.function(bad_shape)(X)
    with pytest.raises(ta.errors.InvalidArgumentError, match="tried to read elements of a list with "
                       "non-fully-defined element_shape: <unknown>") as info:
        ta.function(empty_stack)(torch.tensor(0))  # found while tracing: nothing is ever written to it
    assert line_of(empty_stack, "return ta.TensorArray") in str(info.value)


def test_tensor_array_empty_loop_with_known_element_shape_stacks_to_zero_rows():
    def f(x, n):
        arr = ta.TensorArray(torch.float32, size=0, dynamic_size=True, element_shape=[3])
        for i in range(n):
            arr = arr.write(i, x)
        return arr.stack()

    out = ta.function(f)(X, torch.tensor(0))
    assert out.shape == (0, 3)
    torch.testing.assert_close(ta.function(f)(X, torch.tensor(2)), torch.stack([X, X]))
