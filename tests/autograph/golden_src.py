"""User functions whose conversions test_to_code.py pins (one construct each)."""

from torch_autograph.autograph import experimental


def if_only(x):
    y = 0
    if x > 0:
        y = x
    return y


def if_else(x):
    if x > 0:
        y = x
    else:
        y = -x
    return y


def if_elif(x):
    if x > 0:
        s = 1
    elif x < 0:
        s = -1
    else:
        s = 0
    return s


def while_loop(x, n):
    i = 0
    while i < n:
        x = x * 2
        i += 1
    return x


def for_loop(xs):
    s = 0
    for x in xs:
        s += x
    return s


def for_break(xs):
    s = 0
    for x in xs:
        if x < 0:
            break
        s += x
    return s


def while_continue(n):
    i = 0
    s = 0
    while i < n:
        i += 1
        if i % 2 == 0:
            continue
        s += i
    return s


def return_in_loop(xs):
    for x in xs:
        if x > 0:
            return x
    return -1


def ternary(x):
    return 1 if x > 0 else -1


def logical(a, b, c):
    return a and b or not c


def chained(a, b, c):
    return a < b <= c


def asserts(x):
    assert x > 0, "x must be positive"
    return x


def list_append(n):
    l = []
    for i in range(n):
        l.append(i * i)
    return l


def undefined_before_if(c):
    if c:
        z = 1
    else:
        z = 2
    return z


def loop_options(x):
    while x < 100:
        experimental.set_loop_options(maximum_iterations=3, shape_invariants=[(x, (None,))])
        x = x * 2
    return x


def calls(f, xs):
    print(len(xs))
    return f(*xs, k=1)
