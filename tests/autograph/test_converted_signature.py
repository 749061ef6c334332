"""A converted function reads as the original to code that introspects it (decorators, inspect)."""

import functools
import inspect

from torch_autograph.autograph import convert


def _f(a, b=2, *args, c, d=4, **kw):
    total = a + b + c + d
    return total


def test_converted_function_keeps_code_parameters_defaults_and_signature():
    g = convert(_f)
    assert g is not _f
    for attr in ("co_argcount", "co_kwonlyargcount", "co_posonlyargcount"):
        assert getattr(g.__code__, attr) == getattr(_f.__code__, attr), attr
    n = 6  # a, b, c, d, args, kw: the parameters come first in co_varnames
    assert g.__code__.co_varnames[:n] == _f.__code__.co_varnames[:n] == ("a", "b", "c", "d", "args", "kw")
    assert g.__defaults__ == _f.__defaults__ and g.__kwdefaults__ == _f.__kwdefaults__
    assert inspect.signature(g) == inspect.signature(_f)
    assert g(1, c=3) == _f(1, c=3)


def test_a_decorator_that_reads_co_varnames_works_on_the_converted_function():
    def defaults_from_names(func):  # like transformers' merge_with_config_defaults
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            if "b" in func.__code__.co_varnames and len(args) <= func.__code__.co_varnames.index("b"):
                kwargs.setdefault("b", 10)
            return func(*args, **kwargs)
        return wrapper

    assert defaults_from_names(convert(_f))(1, c=3) == defaults_from_names(_f)(1, c=3) == 18


def test_converted_function_wraps_the_original():
    g = convert(_f)
    assert g.__wrapped__ is _f and inspect.unwrap(g) is _f
    assert inspect.signature(g, follow_wrapped=False) == inspect.signature(_f)


def test_a_converted_closure_dies_with_its_function():
    import gc
    import weakref

    def make():
        big = [1.0]

        def h(x):
            return x + big[0]
        return h

    h = make()
    g = convert(h)
    assert g(1.0) == h(1.0) == 2.0 and g.__wrapped__ is h
    ref = weakref.ref(h)
    del h, g
    gc.collect()
    assert ref() is None  # the conversion cache does not keep the original (nor its closure) alive
