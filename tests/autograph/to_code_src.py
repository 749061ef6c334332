"""Functions whose default `to_code` output test_to_code_staged.py pins (and compares with TensorFlow's, in
docs/debugging.md). Python values in, Python values out, so the staged code can be run against them."""

import torch

import torch_autograph as ta


def simple_relu(x):
    if x > 0:
        return x
    else:
        return 0


def decide(x):
    if x < 5:
        y = 15
    else:
        y = 1
    return y


def shrink(x):
    while torch.sum(x) > 1:
        ta.print(x)
        x = torch.tanh(x)
    return x


def fizzbuzz(max_num):
    counter = 0
    for num in range(max_num):
        if num % 3 == 0 and num % 5 == 0:
            print('Fizzbuzz')
        elif num % 3 == 0:
            print('Fizz')
        elif num % 5 == 0:
            print('Buzz')
        else:
            print(num)
        counter += 1
    return counter


def nested(x, n):
    total = torch.zeros(())
    i = 0
    while i < n:
        j = 0
        while j < i:
            if x[j] > 0:
                total += x[j] * i
            j += 1
        i += 1
    return total


def first_above(xs, limit):
    found = -1
    for i, x in enumerate(xs):
        if x > limit:
            found = i
            break
    return found
