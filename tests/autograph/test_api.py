"""converted_call / convert / to_graph / to_code / do_not_convert, end to end."""

from __future__ import annotations

import warnings

import api_src
import pytest
from fake_backend import Staged, unwrap

from torch_autograph import errors
from torch_autograph.autograph import api, convert, converted_call, do_not_convert, experimental, to_code, to_graph
from torch_autograph.autograph.pyct import origin_info


@pytest.mark.parametrize("name,args,kwargs", [
    ("calls_helper", (3,), {}), ("calls_helper", (-3,), {}),
    ("with_try", (0,), {}), ("with_try", (1,), {}), ("with_try", (3,), {}),
    ("while_else", (3,), {}), ("while_else", (7,), {}), ("nested", ([1, -2, 3],), {}),
    ("defaults", (1,), {}), ("defaults", (1, 2, 3, 4), {"z": 1}), ("defaults", (0,), {}),
    ("undefined_after", (3,), {}), ("undefined_after", (0,), {}),
    ("tuple_target", ([(1, 2), (3, 4)],), {}), ("lambdas", (-3,), {}), ("uses_gen", (7,), {}),
    ("while_true", (4,), {}), ("chained_call", (1, 2, 5), {}), ("chained_call", (0, 2, 5), {}),
    ("list_ops", (7,), {}), ("list_ops", (0,), {}), ("walrus", ([1, 2, 3],), {}),
    ("walrus", ([],), {}), ("annotated", (5,), {}), ("annotated", (1, 2), {}),
    ("deletes", (True,), {}), ("deletes", (False,), {}),
    ("test_reads_overwritten_var", (1,), {}), ("test_reads_overwritten_var", (-1,), {}),
    ("branch_local_overwritten", (1, 1), {}), ("branch_local_overwritten", (1, -1), {}),
])
def test_converted_matches_original(name, args, kwargs):
    fn = getattr(api_src, name)

    def run(f):
        try:
            return ("ok", f(*args, **kwargs))
        except Exception as e:  # the same exception type must come out
            return ("raised", type(e))

    assert run(to_graph(fn)) == run(fn)


def test_annotations_and_defaults_are_kept():
    g = to_graph(api_src.annotated)
    assert g.__annotations__ == api_src.annotated.__annotations__
    assert g.__defaults__ == (3,) and g.__name__ == "annotated"


def test_global_and_nonlocal():
    api_src.G = 0
    expected = api_src.use_global(4)
    api_src.G = 0
    assert to_graph(api_src.use_global)(4) == expected == api_src.G
    c1, c2 = api_src.make_counter(), convert(api_src.make_counter)()
    assert [c1(3), c1(-1), c1(2)] == [convert(c2)(3), convert(c2)(-1), convert(c2)(2)]


def test_closures_rebound_per_function_object():
    add2, add5 = api_src.make_adder(2), api_src.make_adder(5)
    assert convert(add2)(1) == 3 and convert(add5)(1) == 6 and convert(add5)(-1) == -6
    # One template per code object, one binding per function object.
    assert convert(add2).__code__ is convert(add5).__code__
    assert convert(add2) is convert(add2)


def test_methods_super_and_callable_objects():
    child = api_src.Child()
    assert convert(child.val)(3) == child.val(3) == 4
    assert convert(child.val)(-3) == 0
    assert converted_call(child.val, (3,), None) == 4
    scaler = api_src.Scaler(3)
    assert converted_call(scaler, (2,), None) == 6 and convert(scaler)(-1) == 0
    assert "ag__.if_exp" in to_code(scaler)


def test_converted_call_uses_builtin_overloads(backend):
    assert unwrap(converted_call(abs, (Staged(-2),), None)) == 2
    assert converted_call(sorted, ([2, 1],), {"reverse": True}) == [2, 1]
    assert backend.calls["abs"] == 1


def test_converted_call_leaves_library_and_generators_alone():
    import json
    assert not api._convertible(json.dumps)
    assert converted_call(json.dumps, ([1],), None) == "[1]"
    assert not api._convertible(api_src.gen)
    assert list(converted_call(api_src.gen, (3,), None)) == [0, 1, 2]
    assert convert(api_src.gen) is api_src.gen
    # functools wrappers are callable objects from the standard library: called as-is.
    assert converted_call(api_src.cached, (4,), None) == 8


def test_converted_functions_are_not_converted_twice():
    g = to_graph(api_src.calls_helper)
    assert converted_call(g, (2,), None) == 3
    assert not api._convertible(g)


def test_do_not_convert_decorator_and_factory(backend):
    @do_not_convert
    def plain(x):
        if x > 0:  # would need conversion for a staged x
            return 1
        return 0

    @do_not_convert()
    def plain2(x):
        return x

    assert plain.__autograph_do_not_convert__ and plain2(5) == 5
    assert convert(plain) is plain
    with pytest.raises(errors.OperatorNotAllowedInGraphError):
        converted_call(plain, (Staged(1),), None)
    assert experimental.do_not_convert is do_not_convert


def test_marked_objects_called_as_is():
    class Fn:
        __autograph_do_not_convert__ = True

        def __call__(self, x):
            return x if x > 0 else -x

    f = Fn()
    assert convert(f) is f and converted_call(f, (-2,), None) == 2


def test_no_source_warns_once_and_runs_as_is():
    namespace = {}
    exec("def hidden(x):\n    return x * 2\n", namespace)  # noqa: S102
    hidden = namespace["hidden"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert converted_call(hidden, (2,), None) == 4
        assert converted_call(hidden, (3,), None) == 6
        assert convert(hidden) is hidden
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "hidden" in message and "will run it as-is" in message
    assert "source code" in message and "do_not_convert" in message
    with pytest.raises(errors.ConversionError, match="source code"):
        to_code(hidden)


def test_lambdas_on_one_line():
    first, second = api_src.one_line_lambdas
    assert to_graph(first)(1) == 2 and to_graph(second)(3) == 6
    # Same arguments on one line: told apart by the columns of their code.
    a, b = api_src.same_args_lambdas
    assert to_graph(a)(1) == 2 and to_graph(b)(3) == 6


def test_nested_lambdas_with_same_arguments():
    outer = api_src.nested_same_args
    assert to_graph(outer)(2) == 21
    inner = outer.__code__.co_consts  # the inner lambda's code is a constant of the outer
    assert any(getattr(c, "co_name", "") == "<lambda>" for c in inner)


def test_lambda_without_matching_source_raises_conversion_error():
    import linecache
    src = "f = (lambda a: a + 1)\n"
    ns = {}
    exec(compile(src, "<lambda src>", "exec"), ns)  # noqa: S102
    # The registered text no longer contains the lambda (source edited after import).
    text = "f = None\n"
    linecache.cache["<lambda src>"] = (len(text), None, [text], "<lambda src>")
    with pytest.raises(errors.ConversionError) as e:
        to_code(ns["f"])
    assert "<lambda src>:1" in str(e.value) and "f = None" in str(e.value)
    assert "own line" in str(e.value)


def test_python_function_attribute_is_unwrapped():
    class FakeFunction:
        python_function = staticmethod(api_src.calls_helper)

    assert to_code(FakeFunction()) == to_code(api_src.calls_helper)


def test_origin_lookup_maps_generated_lines_to_user_lines():
    g = to_graph(api_src.fails_at_line)
    with pytest.raises(ZeroDivisionError) as e:
        g(3)
    tb = e.value.__traceback__
    found = []
    while tb is not None:
        code = tb.tb_frame.f_code
        found.append(origin_info.lookup(code.co_filename, tb.tb_lineno))
        tb = tb.tb_next
    mapped = [f for f in found if f is not None]
    user_file, user_line, fn_name, text = mapped[-1]
    assert user_file == api_src.__file__ and text == "y = x // 0"
    assert fn_name == "fails_at_line"
    assert user_line == api_src.fails_at_line.__code__.co_firstlineno + 2
    assert origin_info.lookup("not generated", 1) is None


def test_generated_source_is_in_linecache():
    import linecache
    g = to_graph(api_src.calls_helper)
    filename = g.__code__.co_filename
    assert filename.startswith("<autograph calls_helper")
    assert "def calls_helper(x):" in "".join(linecache.getlines(filename))


def test_conversion_error_names_user_line():
    ns = {}
    src = ("from torch_autograph.autograph import experimental\n"
           "def bad(x):\n"
           "    while x < 3:\n"
           "        experimental.set_loop_options(bogus=1)\n"
           "        x += 1\n"
           "    return x\n")
    import linecache
    linecache.cache["<bad options>"] = (len(src), None, src.splitlines(True), "<bad options>")
    exec(compile(src, "<bad options>", "exec"), ns)  # noqa: S102
    with pytest.raises(errors.ConversionError, match=r"<bad options>:4.*set_loop_options.*'bogus'"):
        to_code(ns["bad"])


def test_set_loop_options_is_a_no_op_outside_conversion():
    assert experimental.set_loop_options(maximum_iterations=3) is None


def test_staged_loop_var_first_assigned_in_loop_reaches_backend_undefined(backend):
    seen = {}

    def for_loop(iterable, extra_test, body_fn, init_vars, names, options, origin):
        seen.update(zip(names, init_vars))
        return type(backend).for_loop(backend, iterable, extra_test, body_fn, init_vars, names,
                                      options, origin)

    backend.for_loop = for_loop
    assert unwrap(to_graph(api_src.staged_loop_var_first_assigned)(Staged(3))) == 4
    from torch_autograph.autograph.operators import is_undefined
    assert is_undefined(seen["last"]) and seen["last"].symbol_name == "last"
