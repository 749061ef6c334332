"""Only a call to Python's own `super` (and print, locals, ...) is left unconverted or rewritten, not a user's
function of that name; compared with plain Python."""

import torch_autograph as ta


def super(v=10):  # a module-level function shadowing the builtin
    return v + 1


def uses_global_super(x):
    return super() + x


def uses_local_super(x):
    def super():
        return x * 3
    return super() + 1


def uses_parameter_super(x, super):
    if x > 0:
        y = super()
    else:
        y = -x
    return y


def test_a_users_function_named_super_is_called_as_written():
    for x in (1, -2):
        assert ta.autograph.to_graph(uses_global_super)(x) == uses_global_super(x)
        assert ta.autograph.to_graph(uses_local_super)(x) == uses_local_super(x)
        assert ta.autograph.to_graph(uses_parameter_super)(x, lambda: 7) == uses_parameter_super(x, lambda: 7)
    assert "super(__class__" not in ta.autograph.to_code(uses_local_super)


def test_the_builtin_super_in_control_flow_still_works():
    from super_src import Child

    for x in (1, -1):
        assert ta.autograph.to_graph(Child.f)(Child(), x) == Child().f(x)
    assert "super(__class__, self)" in ta.autograph.to_code(Child.f)
