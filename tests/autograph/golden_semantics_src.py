"""User functions whose conversions test_to_code_semantics.py pins: closures, list mutations, returns, try."""


def closure_in_loop(n):
    i = 0
    s = 0

    def read_i():
        return i

    while i < n:
        s += read_i()
        i += 1
    return s


def list_mutations(l, n):
    s = 0
    for i in range(n):
        s += l.pop()
        l.insert(0, s)
        del l[-1]
    return s


def falls_off_the_end(x):
    if x > 0:
        return x * 2


def return_skips_try_else(x):
    try:
        if x > 0:
            return x
    except ValueError:
        x = 0
    else:
        x = -x
    return x


def computed_index(l, i):
    return l[i - 1] + l[0]


def assigned_in_a_branch_only(x, n):
    if x > 0:
        for i in range(n):
            t = x + i
        x = t
    return x
