"""The `:=` rewrite of `if`/`while` tests alone: plain Python keeps its values, binding and evaluation order."""

import torch_autograph as ta


def while_walrus(xs):
    seen = []
    i = 0
    while (v := xs[i]) < 10 and (w := v * 2) < 15:
        seen.append((v, w))
        i += 1
        if i == len(xs):
            break
    return seen, v, i


def if_walrus(a):
    if a > 0 or (b := a * 3) > -3:
        b = 1 if a > 0 else b
    else:
        b = b - 1
    return b


def test_walrus_tests_keep_python_meaning():
    converted = ta.autograph.to_graph(while_walrus)
    for xs in ([1, 2, 3], [1, 9], [11], [5, 7, 12]):
        assert converted(xs) == while_walrus(xs)
    converted = ta.autograph.to_graph(if_walrus)
    for a in (2, 0, -0.5, -4):
        assert converted(a) == if_walrus(a)
