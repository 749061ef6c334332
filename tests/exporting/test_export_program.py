"""`ConcreteFunction.export()`: each lowering exported, run, and compared with the default backend and eager."""

import warnings

import pytest
import torch

import torch_autograph as ta
from torch_autograph.errors import GraphLoweringError

warnings.filterwarnings("ignore", message=".*(while_loop|cond).*")
torch.manual_seed(0)
ROWS = ta.TensorSpec([None, 3], torch.float32)
COUNT = ta.TensorSpec([], torch.int64)


def _as_graph_returns(value, like):
    """Eager's `value` as a graph returns it: a Python number as a 0-dim tensor (int64, float32, bool), or, where
    a tensor `if` merged it with a float tensor on another path (`like` is floating), as that float."""
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, bool):
        return torch.tensor(value)
    if isinstance(value, int) and like.is_floating_point():
        return torch.tensor(value, dtype=like.dtype)
    return torch.tensor(value, dtype=torch.int64 if isinstance(value, int) else torch.float32)


def exported_matches(fn, signature, calls, compare_eager=True):
    """Export `fn` traced for `signature`; every call's outputs equal eager PyTorch's (`fn` itself), dtypes too.

    `compare_eager=False` only where eager means something else by design (each call site says why): then the
    reference is the default backend's output."""
    f = ta.function(fn, input_signature=signature)
    program = f.get_concrete_function().export()
    module = program.module()
    for args in calls:
        got = module(*args)  # the function's own result: a tensor, or a tuple of them
        want = fn(*args) if compare_eager else f(*args)
        assert isinstance(got, tuple) == isinstance(want, tuple)
        got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            torch.testing.assert_close(g, _as_graph_returns(w, g))  # checks the dtype too
    return program


def rows(n):
    return torch.randn(n, 3)


def _branchy(x):
    if x.sum() > 0:
        y = x * 2
    else:
        y = torch.sin(x)
    return y


def test_cond_becomes_torch_cond_and_batch_is_a_dim():
    program = exported_matches(_branchy, [ROWS], [(rows(4),), (-rows(4).abs(),), (rows(1),), (rows(9),)])
    code = program.graph_module.code
    assert "torch.ops.higher_order.cond" in code
    (dim,) = [str(s) for s in program.range_constraints]
    assert program.range_constraints[next(iter(program.range_constraints))].lower <= 1, dim


def _nested(x):
    s = x.sum()
    if s > 0:
        if x.max() > 1:
            y = x - 1
        else:
            y = x + 1
    else:
        y = -x
    return y


def test_nested_cond():
    cases = [(torch.tensor([[0.5, 0.2, 0.1]]),), (torch.tensor([[2.0, 0.2, 0.1]]),), (-rows(3).abs(),)]
    exported_matches(_nested, [ROWS], cases)


def _while(x, n):
    i = 0
    while x.sum() < n:
        x = x * 2 + 1
        i += 1
    return x, i


def test_tensor_while_loop_with_a_python_counter():
    x = torch.ones(2, 3)
    exported_matches(_while, [ROWS, COUNT], [(x, torch.tensor(0)), (x, torch.tensor(50)), (x * 0.1, torch.tensor(500))])


def _for_range(x, n):
    acc = torch.zeros(3)
    for i in range(n):
        acc = acc + x[i % x.size(0)] * i
    return acc


def test_for_over_a_run_time_range():
    exported_matches(_for_range, [ROWS, COUNT], [(rows(4), torch.tensor(0)), (rows(4), torch.tensor(6)),
                                                 (rows(2), torch.tensor(3))])


def _for_rows(x):
    acc = torch.zeros(3)
    for r in x:
        acc = acc * 0.5 + r
    return acc


def test_for_over_the_rows_of_a_tensor():
    exported_matches(_for_rows, [ROWS], [(rows(5),), (rows(1),), (rows(0),)])


def _jumps(x, n):
    acc = torch.zeros(3)
    for i in range(n):
        if acc.sum() > 20:
            break
        acc = acc + x.sum(0).abs() * i
        if i % 2 == 0:
            continue
        acc = acc - 1
    return acc


def test_break_and_continue():
    x = rows(4)
    exported_matches(_jumps, [ROWS, COUNT], [(x, torch.tensor(k)) for k in (0, 1, 4, 30)])


def _early_return(x, n):
    for i in range(n):
        if x.sum() > 10:
            return x
        x = x + 1
    return x * 100


def test_early_return_from_a_loop():
    x = torch.zeros(2, 3)
    exported_matches(_early_return, [ROWS, COUNT], [(x, torch.tensor(k)) for k in (0, 1, 2, 5)])


def _appends(x, n):
    out = []
    for i in range(n):
        if i % 2 == 0:
            out.append(x.sum(0) * i)
    out.append(x[0])
    return torch.stack(out)


def test_a_list_appended_in_a_loop_and_a_branch():
    exported_matches(_appends, [ROWS, COUNT], [(rows(3), torch.tensor(k)) for k in (0, 1, 5)])


def _tensor_array(x, n):
    arr = ta.TensorArray(torch.float32, size=0, dynamic_size=True, element_shape=[3])  # eager stacks none too
    for i in range(n):
        arr = arr.write(i, x.sum(0) + i)
    total = torch.zeros(3)
    for i in range(n):
        total = total + arr.read(i)
    return arr.stack(), total, arr.size()


def test_tensor_array_written_and_read_in_loops():
    exported_matches(_tensor_array, [ROWS, COUNT], [(rows(2), torch.tensor(k)) for k in (0, 1, 4)])


def _assert(x):
    assert x.sum() > 0, "sum must be positive"
    return x * 2


def test_assert_survives_export_and_names_the_line():
    program = exported_matches(_assert, [ROWS], [(rows(2).abs(),)])
    line = _assert.__code__.co_firstlineno + 1
    with pytest.raises(RuntimeError, match=rf"sum must be positive\n  at .*test_export_program.py:{line}"):
        program.module()(-rows(2).abs())


def test_variable_assigned_in_a_branch_and_a_loop_is_a_mutated_buffer():
    v = ta.Variable(torch.zeros(3))
    count = ta.Variable(torch.tensor(0), trainable=False)

    def step(x, n):
        if x.sum() > 0:
            v.assign_add(x.sum(0))
        for _ in range(n):
            count.assign_add(1)
        return v * 1

    f = ta.function(step, input_signature=[ROWS, COUNT])
    program = f.get_concrete_function().export()
    module = program.module()
    x = rows(2).abs()
    start_v, start_count = v.numpy().copy(), int(count.numpy())
    for args in ((x, torch.tensor(3)), (-x, torch.tensor(2)), (x, torch.tensor(0))):
        got = module(*args)
        want = step(*args)  # eager PyTorch, updating v and count as the program updates its buffers
        torch.testing.assert_close(got, want)
    counts = [int(b) for b in module.buffers() if b.dtype == torch.int64]
    assert start_count + 5 in counts and int(count.numpy()) == start_count + 5
    torch.testing.assert_close(torch.as_tensor(v.numpy()), torch.as_tensor(start_v) + 2 * x.sum(0))


def test_batchnorm_running_statistics_update_in_the_exported_program():
    torch.manual_seed(1)
    bn_ours, bn_exported = torch.nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3)
    bn_exported.load_state_dict(bn_ours.state_dict())

    def norm(x, n):
        y = x
        for _ in range(n):
            y = bn(y)
        return y

    bn = bn_exported
    cf = ta.function(norm).get_concrete_function(rows(4), torch.tensor(2))
    program = cf.export()
    exported_stats = {k: v.clone() for k, v in program.state_dict.items()}
    module = program.module()
    x = rows(4)
    got = module(x, torch.tensor(2))
    bn = bn_ours
    want = norm(x, torch.tensor(2))  # eager PyTorch: the reference (and bn_ours' statistics)
    torch.testing.assert_close(got, want)
    for name in ("running_mean", "running_var"):
        updated = next(b for k, b in module.named_buffers() if k.endswith(name))
        torch.testing.assert_close(updated, getattr(bn_ours, name))
        assert not torch.equal(updated, next(v for k, v in exported_stats.items() if k.endswith(name)))


def test_random_ops_draw_the_same_numbers_as_the_default_backend():
    def noisy(x, n):
        for _ in range(n):
            x = x + torch.rand(3)
        return torch.nn.functional.dropout(x, 0.5, training=True)

    f = ta.function(noisy)
    x = rows(4)
    module = f.get_concrete_function(x, torch.tensor(3)).export().module()
    torch.manual_seed(7)
    got = module(x, torch.tensor(3))
    torch.manual_seed(7)
    want = noisy(x, torch.tensor(3))  # eager PyTorch draws the same numbers
    torch.testing.assert_close(got, want)


def test_two_inputs_sharing_a_none_dim_share_one_dim():
    def add(x, y):
        return x + y

    f = ta.function(add, input_signature=[ROWS, ROWS])
    program = f.get_concrete_function(rows(4), rows(4)).export()
    module = program.module()
    torch.testing.assert_close(module(torch.ones(6, 3), torch.ones(6, 3)), torch.full((6, 3), 2.0))


def test_save_and_load_round_trip(tmp_path):
    f = ta.function(_jumps, input_signature=[ROWS, COUNT])
    program = f.get_concrete_function().export()
    torch.export.save(program, tmp_path / "jumps.pt2")
    loaded = torch.export.load(tmp_path / "jumps.pt2").module()
    x = rows(5)
    for k in (0, 3, 9):
        torch.testing.assert_close(loaded(x, torch.tensor(k)), _jumps(x, torch.tensor(k)))


# ----- what cannot be exported -----------------------------------------------------------------------------
def _with_py_function(x):
    y = ta.py_function(lambda t: t * 2, [x], ta.TensorSpec([2, 3], torch.float32))
    return y + 1


def test_py_function_is_a_clear_error_at_the_user_line():
    cf = ta.function(_with_py_function).get_concrete_function(rows(2))
    line = _with_py_function.__code__.co_firstlineno + 1
    with pytest.raises(GraphLoweringError) as e:
        cf.export()
    msg = str(e.value)
    assert "(<lambda>)" in msg and "it runs Python at every call (ta.py_function" in msg
    assert f'test_export_program.py", line {line}' in msg and "to torch.export" in msg and "Fix:" in msg


def _grows_in_while(x):
    out = []
    while x.sum() < 10:
        x = x + 1
        out.append(x)
    return torch.stack(out)


def test_a_list_grown_by_a_while_of_unknown_length_names_the_line():
    cf = ta.function(_grows_in_while).get_concrete_function(torch.zeros(3))
    line = _grows_in_while.__code__.co_firstlineno + 2
    with pytest.raises(GraphLoweringError, match=rf'(?s)line {line} to torch.export: a list grows in a `while` '
                                                 r"loop whose number of iterations is known only as it runs.*"
                                                 r"Fix: write the loop as `for i in range"):
        cf.export()


def _returns_list(x, n):
    out = []
    for i in range(n):
        out.append(x * i)
    return out


def test_returning_a_graph_list_is_a_clear_error():
    cf = ta.function(_returns_list).get_concrete_function(torch.ones(3), torch.tensor(2))
    with pytest.raises(GraphLoweringError, match=r"(?s)returns the graph list %out_1.*Fix: return torch.stack\(lst\)"):
        cf.export()


def _nested_appends(x, n, m):
    out = []
    for i in range(n):
        for j in range(m):
            out.append(x[0] * i + j)
    return torch.stack(out).sum(0), torch.stack(out).size(0)


def test_a_list_appended_in_nested_loops_reserves_their_product():
    exported_matches(_nested_appends, [ROWS, COUNT, COUNT],
                     [(rows(2), torch.tensor(a), torch.tensor(b)) for a, b in ((1, 3), (2, 3), (3, 1))])


def _bounded_while(x):
    out = []
    while x.sum() < 100:
        ta.autograph.experimental.set_loop_options(maximum_iterations=4)
        x = x * 2 + 1
        out.append(x)
    return torch.stack(out)


def test_maximum_iterations_bounds_a_while_that_grows_a_list():
    # maximum_iterations bounds graph loops only (as in TensorFlow): eager runs the loop to its end.
    exported_matches(_bounded_while, [ta.TensorSpec([3], torch.float32)],
                     [(torch.zeros(3),), (torch.full((3,), 10.0),), (torch.full((3,), 20.0),)], compare_eager=False)


def test_ta_export_decorates_a_plain_function_with_its_signature():
    program = ta.export(_branchy, input_signature=[ROWS])
    x = rows(7)
    torch.testing.assert_close(program.module()(x), _branchy(x))


def test_a_gradient_inside_the_graph_is_a_clear_error():
    w = torch.ones(3, requires_grad=True)

    def step(x):
        with ta.GradientTape() as tape:
            loss = (x * w).sum()
        return tape.gradient(loss, w)

    cf = ta.function(step).get_concrete_function(torch.ones(3))
    with pytest.raises(GraphLoweringError, match=r"(?s)runs autograd inside the graph.*Fix: export the inference "
                                                 r"function"):
        cf.export()


def _updates_in_place(x, n):
    acc = torch.zeros(3)
    start = acc
    for _ in range(n):
        acc.add_(x.sum(0))  # the same tensor at every iteration: threaded through the loop, copied back
    return acc * 1, start * 1


def test_a_tensor_updated_in_place_in_a_loop_is_seen_through_every_alias():
    exported_matches(_updates_in_place, [ROWS, COUNT], [(rows(2), torch.tensor(k)) for k in (0, 1, 3)])


def _updates_its_start(x, n):
    acc = torch.zeros(3)
    start = acc
    for _ in range(n):
        acc.add_(x.sum(0))  # the first iteration updates `start`'s tensor, later ones others
        acc = acc * 2
    return acc, start


def test_a_loop_variable_updated_in_place_and_read_after_the_loop_is_refused():
    cf = ta.function(_updates_its_start).get_concrete_function(rows(2), torch.tensor(2))
    with pytest.raises(GraphLoweringError, match=r"the loop updates loop variable %acc in place and its "
                                                 r"initial tensor %zeros is read after the loop"):
        cf.export()


def test_in_place_ops_inside_branches_are_functionalized():
    hits = torch.zeros(())

    def f(x):
        y = x.clone()
        if x.sum() > 0:
            y.add_(1)  # a tensor of the enclosing code, updated in a branch
            hits.add_(1)  # a captured tensor: the program's buffer
        else:
            y.mul_(-1)
        return y

    f_graph = ta.function(f, input_signature=[ROWS])
    module = f_graph.get_concrete_function().export().module()
    before = hits.clone()
    for x in (rows(3).abs(), -rows(3).abs(), rows(2).abs()):
        torch.testing.assert_close(module(x), f(x))  # eager: updates `hits` as the program its buffer
    (buffer,) = list(module.buffers())
    torch.testing.assert_close(buffer - before, hits - before)  # two positive calls on each side


def _updates_a_loop_variable(x, n):
    acc = x.sum(0)
    for _ in range(n):
        acc.add_(1)  # a loop variable updated in place: cloned in the loop body
        acc = acc * 2
    return acc


def test_a_loop_variable_updated_in_place():
    exported_matches(_updates_a_loop_variable, [ROWS, COUNT], [(rows(2), torch.tensor(k)) for k in (0, 1, 3)])


def test_autocast_inside_and_around_the_traced_call_is_in_the_program():
    lin = torch.nn.Linear(3, 3)

    def f(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = lin(x)
        return y, lin(x)

    g = ta.function(f, input_signature=[ROWS])
    module = g.get_concrete_function().export().module()
    x = rows(4)
    got, want = module(x), f(x)
    assert [t.dtype for t in got] == [torch.bfloat16, torch.float32]
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        cf = g.get_concrete_function(x)
        want = f(x)
    got = cf.export(x).module()(x)  # called without autocast: the program enters the trace's own
    assert [t.dtype for t in got] == [torch.bfloat16, torch.bfloat16]
    torch.testing.assert_close(got[1], want[1])


def _halves(x):
    while x.size(0) > 1:
        x = x[::2] + 1
    return x


def test_a_loop_variable_that_changes_shape_is_named_at_the_loop():
    cf = ta.function(_halves, input_signature=[ta.TensorSpec([None])]).get_concrete_function(torch.randn(8))
    line = _halves.__code__.co_firstlineno + 1
    with pytest.raises(GraphLoweringError, match=rf'(?s)line {line} to torch.export: loop variable %x_\d+ changes '
                                                 r"shape between iterations \(dim 0: .* before the loop, .* in it\)"):
        cf.export()


def test_a_dim_the_trace_found_derived_from_another_is_a_derived_dim():
    def f(x, y):
        return torch.cat([x, x]) + y

    g = ta.function(f, input_signature=[ROWS, ROWS])
    program = g.get_concrete_function(rows(2), rows(4)).export()
    module = program.module()
    for n in (1, 3, 5):
        x, y = rows(n), rows(2 * n)
        torch.testing.assert_close(module(x, y), f(x, y))
    with pytest.raises(AssertionError, match=r"2 \* x.size\(\)\[0\] == y.size\(\)\[0\]"):
        module(rows(3), rows(5))  # 5 != 2 * 3: the program checks its inputs, as the trace assumed


def _number_or_tensor(x):
    y = 0
    if x.sum() > 0:
        y = x.sum()
    z = y
    y -= 4  # rebinds `y` where it is the number 0, updates the tensor where it is a tensor (z sees that)
    return z, y


def _number_or_tensor_unaliased(x):
    y = 0
    if x.sum() > 0:
        y = x.sum()
    y -= 4
    return y


def test_an_augmented_assignment_on_a_number_or_a_tensor():
    exported_matches(_number_or_tensor_unaliased, [ROWS], [(rows(2).abs(),), (-rows(2).abs(),)])
    cf = ta.function(_number_or_tensor, input_signature=[ROWS]).get_concrete_function()
    line = _number_or_tensor.__code__.co_firstlineno + 5
    with pytest.raises(GraphLoweringError, match=rf"(?s)line {line} to torch.export: %y is a Python number on "
                                                 r"one path of an `if` and a tensor on the other, and it is read "
                                                 r"again after `sub_`"):
        cf.export()


def _updates_what_a_branch_passed_on(x):
    if x.sum() > 0:
        y = x
    else:
        y = x * 2
    y.add_(1)  # on the first path this is x itself
    return x * 1


def test_an_update_of_a_tensor_a_branch_passed_on_is_refused_when_the_original_is_seen():
    x = rows(2)
    cf = ta.function(_updates_what_a_branch_passed_on).get_concrete_function(x)
    line = _updates_what_a_branch_passed_on.__code__.co_firstlineno + 5
    with pytest.raises(GraphLoweringError, match=rf"(?s)line {line} to torch.export: it updates %y in place, which "
                                                 r"may be the tensor %x that a branch or loop passed on as is"):
        cf.export()


def test_a_conv_net_with_batchnorm_traces_exports_and_saves_from_its_signature_alone(tmp_path):
    # BatchNorm's ATen code decides on `numel() == 0` of a batch known only when the graph runs: from a
    # TensorSpec alone there was no size to decide with (NeedsSizeError). A hint size decides now, and
    # the decision is a guard of every call: a batch of 0 traces again.
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU()).eval()
    net[1].running_mean.uniform_(-1, 1)
    f = ta.function(lambda x: net(x), input_signature=[ta.TensorSpec([None, 3, 8, 8])])
    cf = f.get_concrete_function()
    assert any("traced from the signature alone" in n for n in cf.notes)
    batches = [torch.randn(n, 3, 8, 8) for n in (5, 1, 17, 2)]
    program = exported_matches(lambda x: net(x), [ta.TensorSpec([None, 3, 8, 8])], [(x,) for x in batches])
    assert program is not None
    for x in batches + [torch.randn(0, 3, 8, 8)]:
        torch.testing.assert_close(f(x), net(x))
    ta.saved_model.save(f, tmp_path)
    loaded = ta.saved_model.load(tmp_path)
    for x in batches:
        torch.testing.assert_close(loaded(x), net(x))


def test_a_hint_too_small_for_the_model_gives_back_the_original_error():
    # 17 stands for the None dims where code must decide; a 21x21 kernel leaves no output at that size: the
    # error is still the one about the undecidable size at the user's line, not one about 17.
    from torch_autograph.errors import OperatorNotAllowedInGraphError

    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 21), torch.nn.BatchNorm2d(4)).eval()

    def forward(x):
        return net(x)  # the model line

    f = ta.function(forward, input_signature=[ta.TensorSpec([None, 3, None, None])])
    with pytest.raises(OperatorNotAllowedInGraphError) as info:
        f.get_concrete_function()
    assert "needs the value of a size" in str(info.value) and "17" not in str(info.value).split("Fix:")[0]
    x = torch.randn(2, 3, 30, 30)
    torch.testing.assert_close(f(x), net(x))  # a call's sizes decide
