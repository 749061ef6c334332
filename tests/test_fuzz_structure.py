"""The fuzz's structural rules (tests/fuzz_structure.py) on small programs whose answer is known by reading them."""

import fuzz_structure
import pytest

ONE_BRANCH = "a variable defined in one branch only of a tensor `if`"
LOOP_ONCE = "a variable first defined in a loop that may not run"
TYPE_CHANGE = "a loop variable changing its type (int to float)"
READ_UNBOUND = "a variable first assigned in a loop, read where it may be unassigned"
RANKS = "a list given elements of different ranks in a tensor `if` or loop"


def prog(body: str) -> str:
    return "def prog(a, b, c):\n" + "".join(f"    {line}\n" for line in body.strip().splitlines())


@pytest.mark.parametrize("body, broken", [
    ("if a > 0:\n    t = 1\nreturn t", True),  # read after the `if`: live
    ("if a > 0:\n    for k in range(2):\n        a = a + k\nreturn a", False),  # `k` read in its loop only
    ("x = 0\nif a > 0:\n    x = 1\nreturn x", False),  # bound before
    ("if 1 > 0:\n    t = 1\nreturn t", False),  # a Python condition
    ("if (w := a) > 0:\n    t = w\nelse:\n    t = -w\nreturn t", False),  # both branches, walrus in the test
])
def test_a_name_bound_in_one_branch_breaks_the_rule_only_if_read_after_the_tensor_if(body, broken):
    assert fuzz_structure.breaks(ONE_BRANCH, prog(body), floats=False) is broken


@pytest.mark.parametrize("body, broken", [
    ("for k in range(a):\n    t = k\nreturn t", True),
    ("for k in range(a):\n    if k == 0:\n        t = 1\n    else:\n        t = t + 1\n    a = a + t\nreturn a", False),
    ("k = 0\nwhile k < 2 and (w := a * k) < 5:\n    k += 1\nreturn w", False),  # the test runs at least once
    # Read by the next iteration of a loop around it (fuzz seed 1178), even if only in a dead branch.
    ("for j in range(2):\n    for k in range(a):\n        if j < 9:\n            t = 1\n        else:\n"
     "            t = t + 1\n        a = a + t\nreturn a", True),
])
def test_a_name_first_bound_in_a_tensor_loop_breaks_the_rule_only_if_read_after_it(body, broken):
    assert fuzz_structure.breaks(LOOP_ONCE, prog(body), floats=False) is broken


@pytest.mark.parametrize("body, broken", [
    ("for k in range(a):\n    if k == 0:\n        t = 1\n    else:\n        t = t + 1\n    a = a + t\nreturn a", True),
    ("for k in range(a):\n    t = k\n    a = a + t\nreturn a", False),  # bound before every read
    ("for k in range(a):\n    if k == 0:\n        t = 1\n    else:\n        t = 2\n    a = a + t\nreturn a", False),
    ("t = 0\nfor k in range(a):\n    t = t + k\nreturn t", False),  # bound before the loop
    ("for k in range(3):\n    if k == 0:\n        t = 1\n    else:\n        t = t + 1\nreturn a", False),  # Python loop
])
def test_a_name_read_in_a_tensor_loop_before_its_first_binding_breaks_the_rule(body, broken):
    assert fuzz_structure.breaks(READ_UNBOUND, prog(body), floats=False) is broken


@pytest.mark.parametrize("body, broken", [
    ("l = [a]\nif a > 0:\n    l.append(a)\nelse:\n    l.append(torch.full([1], 9))\nreturn l[0]", True),
    ("l = [a]\nif 1 > 0:\n    l.append(a)\nelse:\n    l.append(torch.full([1], 9))\nreturn l[0]", False),
    ("l = [a]\nif a > 0:\n    l.append(a)\nelse:\n    l.append(a + 1)\nreturn l[0]", False),  # one rank
    # After a tensor `if` that returns, the rest of the function is that `if`'s other branch.
    ("l = [a]\nif a > 0:\n    return a\nif 1 > 0:\n    l.append(a)\nelse:\n    l.append(torch.full([1], 9))\n"
     "return l[0]", True),
])
def test_elements_of_two_ranks_appended_under_a_tensor_condition_break_the_list_rule(body, broken):
    assert fuzz_structure.breaks(RANKS, prog(body), floats=False) is broken


@pytest.mark.parametrize("body, floats, broken", [
    ("x = 0\nfor k in range(a):\n    x = x + 0.5\nreturn x", False, True),  # a Python int, then a Python float
    ("x = 0\nfor k in range(a):\n    x = x + a\nreturn x", True, False),  # an int becomes the float tensor it meets
    ("x = torch.as_tensor(0)\nfor k in range(a):\n    x = x + a\nreturn x", True, True),  # int64, then float64
    ("x = torch.as_tensor(0)\nfor k in range(a):\n    x = 0.5\nreturn x", False, True),  # 0.5 is no int64 tensor
])
def test_a_loop_variable_changing_its_kind_of_value_breaks_the_type_rule(body, floats, broken):
    assert fuzz_structure.breaks(TYPE_CHANGE, prog(body), floats=floats) is broken


@pytest.mark.parametrize("body, skips", [
    ("z = a\nz += 1\nreturn z", True),  # updates the argument `a` too
    ("x = b + 1\ny = x\nx += 1\nreturn y", True),  # `y` sees the update
    ("k = 0\nk += 1\nreturn k", False),  # a counter: nothing shares it
    ("x = a + 1\nx += 2\nreturn x", False),  # a fresh tensor
])
def test_python_is_skipped_only_for_an_in_place_update_of_a_shared_name(body, skips):
    assert fuzz_structure.skips_python(prog(body)) is skips


def test_an_argument_no_other_name_holds_may_be_updated_in_place():
    assert not fuzz_structure.skips_python(prog("b += 1\nreturn b"))
    assert fuzz_structure.skips_python(prog("l = [b]\nb += 1\nreturn l[0]"))


MUTATES = "a Python object that outlives the call changed inside a tensor `if` or loop"


@pytest.mark.parametrize("body, broken", [
    ("for k in range(a):\n    CAPL.append(a)\nreturn a", True),
    ("if a > 0:\n    d['k'] = a\nreturn a", True),
    ("if a > 0:\n    OBJ.n = a\nreturn a", True),
    ("CAPL.append(a)\nd['l'].append(a)\nreturn a", False),  # outside any tensor `if` or loop
    ("for k in range(a):\n    l.append(a)\nreturn a", False),  # a local list
])
def test_a_change_of_an_outliving_object_under_a_tensor_condition_breaks_the_state_rule(body, broken):
    assert fuzz_structure.breaks(MUTATES, prog(body), floats=False) is broken


PATH_TYPES = "a variable or the return value given different types by the paths of a tensor `if`"
DTYPES = "a list given elements of different dtypes in a tensor `if` or loop"
TRY_NUMBER = "a run-time number made in a tensor `if` or loop of a `try` body around graph ops, read on a handler's path"


@pytest.mark.parametrize("rule, body, floats, broken", [
    # A number merged with a tensor becomes a tensor of its dtype where that keeps its value (an int in a float
    # tensor), and is refused where not (a float in an int tensor); tensors of two dtypes are refused.
    (PATH_TYPES, "x = 0\nif a > 0:\n    x = a\nreturn x", True, False),
    (PATH_TYPES, "x = 0.5\nif a > 0:\n    x = torch.as_tensor(1)\nreturn x", True, True),
    (PATH_TYPES, "x = torch.as_tensor(1)\nif a > 0:\n    x = a\nreturn x", True, True),  # int64 and float64
    (PATH_TYPES, "x = torch.as_tensor(1)\nif a > 0:\n    x = a\nreturn x", False, False),  # int64 both
    (PATH_TYPES, "x = True\nif a > 0:\n    x = 1\nreturn x", False, True),  # a Python bool and an int
    (PATH_TYPES, "if a > 0:\n    return (a.long(), a)\nreturn (a, a)", True, True),  # the return value's first item
    (PATH_TYPES, "if a > 0:\n    return (1, a)\nreturn (a, a)", True, False),
    (PATH_TYPES, "if a > 0:\n    return (a, a)\nreturn (b, c)", True, False),
    # (the paths of a `try` around graph ops: an int and a float are refused too)
    (PATH_TYPES, "y = 0\ntry:\n    y = a + torch.arange(3)[b]\n    y = 1\nexcept IndexError:\n    y = 0.5\nreturn y",
     False, True),
    # A number takes the dtype of the tensors a list holds (an int's length, a run-time number), unless the list
    # was emptied: then the number starts it again (a Python float: float32).
    (DTYPES, "l = [a]\nif a > 0:\n    l.append(len(l))\nreturn l[0]", True, False),
    (DTYPES, "l = [a]\nif a > 0:\n    l.append(torch.as_tensor(len(l)))\nreturn l[0]", True, True),
    (DTYPES, "u = torch.as_tensor(0)\ny = 1 + u\nl = [a]\nif a > 0:\n    l.append(y + 1)\nreturn l[0]", True, True),
    (DTYPES, "l = [a]\nfor k in range(a):\n    del l[:]\n    l.append(1 / 2)\n    l.append(a)\nreturn l[0]",
     True, True),
    (DTYPES, "l = [a]\nif a > 0:\n    l.append(b)\nreturn l[0]", True, False),
    (TRY_NUMBER, "y = 0\ntry:\n    for k in range(a):\n        y = y + 1\nexcept Exception:\n    y = 2\nreturn y",
     False, True),
    (TRY_NUMBER, "y = 0\ntry:\n    for k in range(a):\n        q = k\nexcept Exception:\n    y = 2\nreturn y",
     False, False),  # what the loop binds is read on no path after it
])
def test_the_type_rules_follow_the_kinds_of_the_values(rule, body, floats, broken):
    assert fuzz_structure.breaks(rule, prog(body), floats=floats) is broken


# A walrus after `and`/`or` may not run: what it binds is not bound for sure (fuzz seeds 4427, 8329, 8991).
@pytest.mark.parametrize("body, broken", [
    ("for j in range(2):\n    if a > 0:\n        k = 0\n        while k < 2 and (w := a * k) < 7:\n            k += 1\n"
     "        b = b + w\nreturn b", True),  # read where only the previous iteration may have bound it
    ("for j in range(2):\n    if a > 0:\n        w = a\n        b = b + w\nreturn b", False),  # bound before it is read
    # A `break` in a tensor `if` makes the rest of the loop's body its other path (seed 4030); a `return` in a loop,
    # the next test of a `while` too (seed 7958).
    ("for j in range(2):\n    if a > j:\n        break\n    k = 0\n    while k < 1 and (w := a * k) < 2:\n"
     "        k += 1\n    b = b + w\nreturn b", True),
    ("for j in range(2):\n    if a > j:\n        break\n    w = j * 2\n    b = b + w\nreturn b", False),
    ("k = 0\nwhile k < 1 and (w := a * k) < 6:\n    k += 1\n    if b > 2:\n        return b\nreturn w", True),
])
def test_a_name_bound_maybe_on_one_path_of_a_tensor_if_breaks_the_branch_rule(body, broken):
    assert fuzz_structure.breaks(ONE_BRANCH, prog(body), floats=False) is broken


def test_a_return_in_a_tensor_loop_puts_what_follows_the_loop_under_a_tensor_condition():
    # (seed 6506) AutoGraph's "has it returned" flag is a loop variable: the code after the loop runs under it.
    body = "k = 0\nwhile k < a:\n    k += 1\n    if k > 9:\n        return a\nCAPL.append(a)\nreturn a"
    assert fuzz_structure.breaks(MUTATES, prog(body), floats=False)
    assert not fuzz_structure.breaks(MUTATES, prog("k = 0\nwhile k < a:\n    k += 1\nCAPL.append(a)\nreturn a"),
                                     floats=False)


FINALLY_EFFECT = "a `finally:` of a `try` around graph ops changing state from what the body or a handler changes"


@pytest.mark.parametrize("body, broken", [
    # (seed 5972) an in-place update of the argument `a`, in a `finally:` reading a list the body changes
    ("l = [a]\ntry:\n    l.append(a + torch.arange(3)[b])\nexcept ValueError:\n    del l[0]\nfinally:\n"
     "    a += 1\n    l.append(a)\nreturn a", True),
    ("y = a\ntry:\n    y = a + torch.arange(3)[b]\nexcept ValueError:\n    y = a\nfinally:\n    V.assign_add(y)\n"
     "return y", True),
    ("y = a\ntry:\n    y = a + torch.arange(3)[b]\nexcept ValueError:\n    y = a\nfinally:\n    V.assign_add(c)\n"
     "return y", False),  # the effect reads nothing the body changes
    ("y = a\ntry:\n    y = a + torch.arange(3)[b]\nexcept ValueError:\n    y = a\nfinally:\n    q = y + 1\n"
     "return q", False),  # no effect
])
def test_a_finally_changing_state_from_what_the_try_changes_breaks_its_rule(body, broken):
    assert fuzz_structure.breaks(FINALLY_EFFECT, prog(body), floats=False) is broken
