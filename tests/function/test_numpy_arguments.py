"""NumPy array arguments: NumPy-to-torch conversions inside the function do what they do eagerly, the array being
an input of the graph (pytorch/examples reinforcement_learning `select_action`: `torch.from_numpy(state).float()`).

NumPy code on the array itself cannot run on the values of each call (it would run once, while tracing): it is
refused at the user's line, never computed on a stand-in.
"""

import numpy as np
import pytest
import torch

import torch_autograph as ta

HERE = __file__.rsplit("/", 1)[-1]


def sel(state):
    return torch.from_numpy(state).float() * 2


def test_from_numpy_as_eager_over_several_calls_keyed_by_dtype_and_shape():
    f = ta.function(sel)
    for arr in (np.ones(3), np.arange(3.0), np.full(3, 7.0), np.ones(3, np.float32), np.ones((2, 2))):
        got, want = f(arr), sel(arr)
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert f.experimental_get_tracing_count() == 3


@pytest.mark.parametrize("convert", [
    lambda a: torch.from_numpy(a),
    lambda a: torch.as_tensor(a),
    lambda a: torch.as_tensor(a, dtype=torch.float32),
    lambda a: torch.tensor(a),
    lambda a: torch.tensor(a, dtype=torch.float16),
    lambda a: torch.asarray(a),
    lambda a: torch.from_numpy(np.asarray(a)),
    lambda a: torch.from_numpy(np.array(a)),
    lambda a: torch.from_numpy(np.asarray(a, dtype=np.float32)),
    lambda a: torch.from_numpy(a.astype(np.int32)),
    lambda a: torch.tensor(a.shape) + a.ndim + len(a) + a.size,
])
def test_conversions_keep_the_eager_dtype_and_value(convert):
    def fn(a):
        return convert(a) + 0
    f = ta.function(fn)
    for arr in (np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(2, 3) * 3):
        got, want = f(arr), fn(arr)
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_an_in_place_update_of_from_numpy_mutates_the_callers_array_as_eager():
    def bump(a):
        t = torch.from_numpy(a)
        t.add_(1)
        c = torch.tensor(a)  # a copy: its update leaves the array alone
        c.mul_(100)
        return t * 2

    f = ta.function(bump)
    mine, ref = np.zeros(3), np.zeros(3)
    for _ in range(3):
        torch.testing.assert_close(f(mine), bump(ref))
        np.testing.assert_array_equal(mine, ref)
    assert mine.tolist() == [3.0, 3.0, 3.0]


def test_select_action_pattern_with_a_policy():
    torch.manual_seed(0)
    policy = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2), torch.nn.Softmax(-1))

    def select_action(state):
        state = torch.from_numpy(state).float().unsqueeze(0)
        return policy(state)

    f = ta.function(select_action)
    rng = np.random.default_rng(0)
    for _ in range(4):
        s = rng.standard_normal(4)
        torch.testing.assert_close(f(s), select_action(s), rtol=0, atol=0)
    assert f.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("code,what", [
    (lambda a: torch.from_numpy(a * 2), "*"),
    (lambda a: torch.from_numpy(a / 255.0), "/"),
    (lambda a: torch.as_tensor(np.sum(a)), "sum"),
    (lambda a: torch.as_tensor(a.mean()), "mean"),
    (lambda a: torch.ones(3) + a, "add"),
    (lambda a: torch.relu(a), "relu"),
    (lambda a: a, "return"),
])
def test_numpy_operations_on_the_array_are_refused_at_the_users_line(code, what):
    f = ta.function(code)
    with pytest.raises(TypeError) as e:
        f(np.ones(3))
    msg = str(e.value)
    assert "NumPy array" in msg and "'a'" in msg and what in msg, msg
    assert HERE in msg, msg


def test_an_input_signature_still_converts_arrays_to_tensors():
    f = ta.function(lambda x: x * 2, input_signature=[ta.TensorSpec([3], torch.float64)])
    torch.testing.assert_close(f(np.ones(3)), torch.full((3,), 2.0, dtype=torch.float64))


def test_a_tensor_and_an_array_of_the_same_type_trace_apart():
    f = ta.function(lambda x: torch.as_tensor(x) * 2)
    torch.testing.assert_close(f(np.ones(3)), torch.full((3,), 2.0, dtype=torch.float64))
    torch.testing.assert_close(f(torch.ones(3, dtype=torch.float64)), torch.full((3,), 2.0, dtype=torch.float64))
    assert f.experimental_get_tracing_count() == 2
    assert "NumPy array" in " ".join(f.trace_history()[1].reasons)


def test_arrays_in_a_list_argument_and_reduce_retracing():
    def fn(xs):
        return torch.stack([torch.from_numpy(x) for x in xs]).sum(0)

    f = ta.function(fn, reduce_retracing=True)
    for n in (3, 4, 5):
        xs = [np.arange(n, dtype=np.float64), np.ones(n)]
        got, want = f(xs), fn(xs)
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want)


def test_torch_conversions_work_in_code_autograph_does_not_convert():
    f = ta.function(sel, autograph=False)
    for arr in (np.ones(3), np.arange(3.0)):
        torch.testing.assert_close(f(arr), sel(arr), rtol=0, atol=0)
    g = ta.function(lambda a: torch.from_numpy(np.asarray(a)), autograph=False)
    with pytest.raises(TypeError, match=r"np.asarray in code AutoGraph does not convert\) on the NumPy array "
                                        r"argument 'a'"):
        g(np.ones(3))


def test_a_list_argument_holding_an_array_is_written_back_with_the_callers_array():
    def fn(xs):
        xs.append(torch.from_numpy(xs[0]) * 2)
        return torch.as_tensor(xs[0]).sum()

    f = ta.function(fn)
    for i in range(3):
        arr = np.full(2, float(i))
        mine, ref = [arr], [arr]
        torch.testing.assert_close(f(mine), fn(ref))
        assert mine[0] is arr and len(mine) == 2
        torch.testing.assert_close(mine[1], ref[1])
