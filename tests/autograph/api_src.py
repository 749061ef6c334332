"""User code for test_api.py (a real file, so inspect finds the source)."""

import functools

G = 0


def add_one(x):
    return x + 1


def calls_helper(x):
    if x > 0:
        y = add_one(x)
    else:
        y = -add_one(-x)
    return y


def use_global(n):
    global G
    for i in range(n):
        G += i
    return G


def make_counter():
    count = 0

    def inc(k):
        nonlocal count
        if k > 0:
            count += k
        return count

    return inc


def make_adder(k):
    def add(x):
        if x > 0:
            return x + k
        return x - k

    return add


class Base:
    def val(self, x):
        return x + 1


class Child(Base):
    def val(self, x):
        if x > 0:
            y = super().val(x)
        else:
            y = 0
        return y


class Scaler:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return x * self.k if x > 0 else 0


def with_try(x):
    try:
        if x > 0:
            y = 1 // (x - 1)
        else:
            y = -1
    except ZeroDivisionError:
        y = 99
    return y


def while_else(n):
    i = 0
    while i < n:
        i += 1
        if i == 5:
            break
    else:
        i = -i
    return i


def nested(xs):
    def sq(v):
        if v < 0:
            return -v * v
        return v * v

    total = 0
    for v in xs:
        total += sq(v)
    return total


def defaults(a, b=G, *args, c=[1], **kw):
    if a:
        return (a, b, args, c, sorted(kw))
    return None


def undefined_after(n):
    for i in range(n):
        last = i
    return last


def tuple_target(pairs):
    s = 0
    for i, (a, b) in enumerate(pairs):
        s += i * a - b
    return s, i


def lambdas(x):
    f, g = (lambda v: v + 1), (lambda v: v * 2)
    return f(x), g(x), (lambda q: q if q > 0 else -q)(x)


def gen(n):
    for i in range(n):
        yield i


def uses_gen(n):
    return [v for v in gen(n) if v % 2 == 0]


def while_true(n):
    i = 0
    while True:
        i += 1
        if i >= n:
            break
    return i


def chained_call(a, b, c):
    return a < add_one(b) <= c, not a, a and b or c


def list_ops(n):
    l = []
    for i in range(n):
        l.append(i)
        if i % 3 == 0:
            l.pop()
    while l:
        x = l.pop()
        if x > 100:
            break
    return l, x if n > 1 else None


def walrus(xs):
    if (n := len(xs)) > 2:
        return n
    return -n


def fails_at_line(x):
    if x > 0:
        y = x // 0
    else:
        y = x
    return y


@functools.lru_cache(maxsize=None)
def cached(x):
    return x * 2


def annotated(x: int, n: "SomeUndefinedType" = 3) -> int:  # noqa: F821
    if x > n:
        return x
    return n


def staged_loop_var_first_assigned(n):
    for i in range(n):
        last = i * 2
    return last


one_line_lambdas = (lambda a: a + 1, lambda b: b * 2)
same_args_lambdas = (lambda a: a + 1, lambda a: a * 2)
nested_same_args = lambda a: (lambda a: a * 10)(a) + 1  # noqa: E731


def deletes(c):
    x = 1
    y = 2
    if c:
        del x
    del y
    if c:
        return 0
    return x


def test_reads_overwritten_var(c):
    x = 0
    if x < c:
        x = 2
    else:
        x = 3
    return x


def branch_local_overwritten(a, b):
    y = 0
    if a > 0:
        if b > 0:
            y = 1
        else:
            y = 2
        z = y * 10
    else:
        z = 0
    return z
