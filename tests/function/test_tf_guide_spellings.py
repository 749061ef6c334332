"""Spellings from TensorFlow's tf.function guide and API docs, written with `ta.`, behave as TensorFlow documents.

Each test states the documented TensorFlow behaviour it checks (tf.py_function, tf.function's
`experimental_relax_shapes`, ConcreteFunction literals, `input_signature`); values are checked against eager.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import torch_autograph as ta


def test_py_function_with_an_empty_tout_runs_its_side_effect_at_every_call():
    # TF: `tf.py_function(func, inp, Tout=[])` calls func for its effect at every run and returns [].
    seen = []

    def side_effect(x):
        seen.append(x.clone())

    @ta.function
    def f(x):
        out = ta.py_function(side_effect, inp=[x], Tout=[])
        assert out == []
        return x + 1

    for k in (1.0, 2.0, 3.0):
        torch.testing.assert_close(f(torch.full((2,), k)), torch.full((2,), k + 1))
    assert [t.tolist() for t in seen] == [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]
    assert f.experimental_get_tracing_count() == 1
    # Eagerly too: it runs and gives back an empty list.
    assert ta.py_function(side_effect, inp=[torch.zeros(1)], Tout=[]) == [] and len(seen) == 4


def test_py_function_with_tout_none_gives_none_and_runs_every_call():
    calls, results = [], []

    @ta.function
    def f(x):
        results.append(ta.py_function(lambda t: calls.append(float(t)), inp=[x.sum()], Tout=None))
        return x * 2

    f(torch.ones(3))
    f(torch.ones(3) * 2)
    assert calls == [3.0, 6.0] and results == [None]


def test_experimental_relax_shapes_is_the_deprecated_name_of_reduce_retracing():
    # TF: tf.function(experimental_relax_shapes=True) warns that it is deprecated in favour of reduce_retracing
    # and then behaves as reduce_retracing=True: a second shape gives a trace with None dims, reused after.
    with pytest.warns(DeprecationWarning, match="reduce_retracing"):
        f = ta.function(lambda x: x * 2, experimental_relax_shapes=True)
    for n in (2, 3, 4, 5):
        torch.testing.assert_close(f(torch.ones(n)), torch.full((n,), 2.0))
    assert f.experimental_get_tracing_count() == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = ta.function(lambda x: x * 2)  # no warning without the old name
    for n in (2, 3, 4):
        g(torch.ones(n))
    assert g.experimental_get_tracing_count() == 3


def test_experimental_relax_shapes_as_a_decorator_argument():
    with pytest.warns(DeprecationWarning, match="experimental_relax_shapes is deprecated, use reduce_retracing"):
        @ta.function(experimental_relax_shapes=True)
        def f(x):
            return x + 1

    for n in (2, 3, 4):
        f(torch.ones(n))
    assert f.experimental_get_tracing_count() == 2


def test_a_concrete_function_binds_the_literal_it_was_traced_with():
    # TF guide ("Obtaining concrete functions"): square = pow.get_concrete_function(a=TensorSpec(None), b=2);
    # square(tf.constant(10.0)) == 100; square(tf.constant(10.0), b=3) is a TypeError.
    @ta.function
    def power(a, b):
        return a ** b

    square = power.get_concrete_function(a=ta.TensorSpec([], torch.float32), b=2)
    t = torch.tensor(10.0)
    torch.testing.assert_close(square(t), t ** 2)
    torch.testing.assert_close(square(a=t), t ** 2)
    torch.testing.assert_close(square(t, 2), t ** 2)  # the same literal again is fine
    with pytest.raises(TypeError, match=r"argument b was traced as"):
        square(t, b=3)
    with pytest.raises(TypeError, match=r"Binding inputs to .*power.* failed: missing a required argument: 'a'.*may be left out"):
        square()


def test_a_literal_before_a_tensor_is_bound_too():
    @ta.function
    def scaled(k, x):
        return x * k

    cf = scaled.get_concrete_function(3, ta.TensorSpec([2], torch.float32))
    x = torch.tensor([1.0, 2.0])
    torch.testing.assert_close(cf(x=x), x * 3)
    torch.testing.assert_close(cf(3, x), x * 3)


def test_an_input_signature_that_is_not_a_list_is_a_type_error_saying_to_pass_one():
    # TF: input_signature must be a tuple or list of TensorSpecs; anything else is a TypeError.
    spec = ta.TensorSpec([None], torch.float32)
    with pytest.raises(TypeError, match=r"input_signature must be a list or tuple .*input_signature=\[TensorSpec"):
        ta.function(lambda x: x, input_signature=spec)
    with pytest.raises(TypeError, match=r"f: input_signature must be a list"):
        @ta.function(input_signature=spec)
        def f(x):
            return x
    f = ta.function(lambda x: x + 1, input_signature=[spec])  # the list form works
    torch.testing.assert_close(f(torch.ones(3)), torch.full((3,), 2.0))
