"""A tour of torch_autograph: trace once per signature, inspect the graph, compare with eager.

Run it with `make demo`. Every result is checked against eager PyTorch.
"""

import torch

import torch_autograph as ta

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
traces = []


@ta.function
def predict(x, scale=1.0):
    print("tracing", x.shape)  # a Python side effect: runs while tracing only
    traces.append(tuple(x.shape))
    return model(x).squeeze(-1) * scale


def eager(x, scale=1.0):
    return model(x).squeeze(-1) * scale


x1, x2, x3 = torch.randn(3, 4), torch.randn(3, 4), torch.randn(5, 4)
torch.testing.assert_close(predict(x1), eager(x1))  # traces, runs the graph
torch.testing.assert_close(predict(x2), eager(x2))  # same signature: no trace
torch.testing.assert_close(predict(x3, 2.0), eager(x3, 2.0))  # new shape and scale: a new trace
assert traces == [(3, 4), (5, 4)], traces

# A TensorSpec with a None dim: one graph for every batch size.
cf = predict.get_concrete_function(ta.TensorSpec([None, 4], torch.float32))
torch.testing.assert_close(cf(torch.randn(7, 4) * 0 + x3[:1]), eager(x3[:1].expand(7, 4)))
print(cf.graph)  # readable SSA: dtype/shape per value and the user line per node
print(cf.graph.python_source)  # the Python the default backend generated
# print(cf) lists this trace's signature, outputs and captures; predict.pretty_printed_concrete_signatures()
# does so for every trace.
for event in predict.trace_history():  # why each trace happened
    print(event)

# Gradients flow through the graph with torch.autograd, exactly as in eager mode.
model.zero_grad()
predict(x1).sum().backward()
graph_grads = [p.grad.clone() for p in model.parameters()]
model.zero_grad()
eager(x1).sum().backward()
for g, p in zip(graph_grads, model.parameters()):
    torch.testing.assert_close(g, p.grad)
print(f"quickstart OK: {predict.experimental_get_tracing_count()} traces, graph results and gradients match eager")
