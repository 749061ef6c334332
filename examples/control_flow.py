"""Python control flow over tensors, as graphs: if/while/for/break/return, lists, asserts.

Each function is ordinary Python; AutoGraph converts it and the tracer turns
every tensor-dependent statement into a graph `cond` or `while` node. Every
result (and gradient) is checked against the same function run eagerly.
"""

import torch

import torch_autograph as ta


def first_above(xs, limit):
    total = torch.zeros(())
    found = torch.tensor(-1)
    for i, x in enumerate(xs):  # tensor loop: xs is a graph tensor
        if x > limit:  # tensor condition -> cond
            found = i
            break  # tensor-dependent break
        total += x
    assert total >= 0, "negative total"  # run-time check at this line
    return found, total


def collatz_steps(n):
    steps = torch.zeros((), dtype=torch.int64)
    while n > 1:  # tensor condition -> graph while loop
        n = torch.where(n % 2 == 0, n // 2, 3 * n + 1)
        steps += 1
    return steps


def keep_positive_rows(x):
    rows = []  # a Python list appended to inside a tensor loop (TensorFlow: InaccessibleTensorError)
    for row in x:
        if row.sum() > 0:
            rows.append(row * 2)
    return torch.stack(rows) if len(rows) > 0 else x[:0] * 2


def early_exit(x, steps):
    for _ in range(steps):  # range over a tensor: a graph loop
        x = torch.tanh(x * 1.5)
        if x.abs().max() > 0.9:
            return x * 10  # a conditional return inside a graph loop (TensorFlow: NotImplementedError)
    return x


def main():
    f = ta.function(first_above)
    print(ta.autograph.to_code(first_above))  # the converted Python AutoGraph generated
    xs = torch.tensor([1.0, 2.0, 5.0, 1.0])
    for limit in (3.0, 10.0):
        got, want = f(xs, torch.tensor(limit)), first_above(xs, torch.tensor(limit))
        assert all(torch.equal(g, torch.as_tensor(w)) for g, w in zip(got, want)), (got, want)
    assert f.experimental_get_tracing_count() == 1  # one graph serves both limits
    try:
        f(torch.tensor([-5.0, 1.0]), torch.tensor(10.0))
    except ta.errors.InvalidArgumentError as e:
        print("assert in the graph:", str(e).splitlines()[0])
    else:
        raise AssertionError("the graph's assert did not fire")

    c = ta.function(collatz_steps)
    for n in (1, 6, 27):
        assert torch.equal(c(torch.tensor(n)), collatz_steps(torch.tensor(n)))
    print(c.get_concrete_function(torch.tensor(27)).graph)  # a while node with its cond and body graphs

    k = ta.function(keep_positive_rows)
    x = torch.randn(6, 3)
    assert torch.equal(k(x), keep_positive_rows(x))

    e = ta.function(early_exit)
    for scale in (0.1, 2.0):
        x = torch.full((3,), scale, requires_grad=True)
        out = e(x, torch.tensor(4))
        out.sum().backward()
        graph_grad = x.grad.clone()
        x.grad = None
        want = early_exit(x, 4)
        want.sum().backward()
        torch.testing.assert_close(out, want)
        torch.testing.assert_close(graph_grad, x.grad)  # gradients follow the path taken
    # e.get_concrete_function(x, torch.tensor(4)).graph.python_source is the Python this graph runs as.
    print("control_flow OK: results and gradients match eager")


if __name__ == "__main__":
    main()
