"""What a CUDA graph capture cannot hold, found by inspecting a graph before any capture (`cuda_graphs=True`).

A GPU->CPU sync (`if`/`while`/`assert` on a tensor, `.item()`, `int(t)`),
Python run at every call (`ta.print`, `ta.py_function`, staged
`optimizer.step()`), `.backward()` (accumulates into `.grad`), ops whose
output size depends on data (`nonzero`, `x[mask]`, `unique`), copies between
the CPU and the GPU, and CPU random or in-place ops in a graph that runs on
the GPU: each is an `Obstacle` naming the node, why, and the fix.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Sequence

import torch

from ..errors import GraphLoweringError
from ..graph import CheckOp, CondOp, Effect, Graph, Node, OpKind, Value, ValueKind, WhileOp, walk_nodes


@dataclass(frozen=True)
class Obstacle:
    """A node (or an argument) that a CUDA graph cannot capture faithfully: why, and the fix."""

    node: Node | None
    value: Value | None
    why: str
    fix: str

    def message(self, graph_name: str, also: str = "") -> str:
        loc = self.node.origin if self.node is not None else None
        if self.node is not None:
            what = node_words(self.node)
        else:
            what = f"argument %{self.value.name}"
        where = f' at File "{loc.filename}", line {loc.lineno}' if loc else ""
        code = f"\n    {loc.line}" if loc and loc.line else ""
        return (f"cuda_graphs=True cannot capture graph {graph_name}: {what}{where}: {self.why}.{code}\n{also}"
                f"Fix: {self.fix}; or pass cuda_graphs=False.")


_SYNC = "a GPU->CPU sync, which stops a capture"
_HOST_READS = frozenset({"item", "tolist", "numpy", "__bool__", "__int__", "__float__", "__index__"})
_DATA_DEPENDENT = frozenset({"nonzero", "argwhere", "masked_select", "unique", "unique_consecutive", "bincount"})
_COPIES = frozenset({"to", "cuda", "cpu", "copy_", "type_as", "as_tensor", "asarray", "tensor", "new_tensor"})
_FROM_PYTHON_DATA = frozenset({"tensor", "as_tensor", "asarray", "new_tensor"})
_ACCUMULATES_GRAD = (torch.Tensor.backward, torch.autograd.backward)


def find_obstacles(graph: Graph, arg_devices: Sequence[torch.device | None] | None = None) -> list[Obstacle]:
    """Everything in `graph` that a CUDA graph capture cannot hold, in program order.

    Args:
        graph: a finished graph that runs on a CUDA device.
        arg_devices: the devices of the actual arguments (one per `graph.inputs`), when known;
            else the placeholders' traced devices are used.
    """
    found: list[Obstacle] = []
    devices = list(arg_devices) if arg_devices is not None else [v.device for v in graph.inputs]
    for v, d in zip(graph.inputs, devices):
        if v.kind is ValueKind.TENSOR and _is_cpu(d):
            found.append(Obstacle(None, v, "it is a CPU tensor while the graph runs on the GPU, so a replay "
                                  "would reuse the value read at capture",
                                  "pass it as a CUDA tensor (move it with .cuda() before the call)"))
    cpu_inputs = {id(v) for v, d in zip(graph.inputs, devices) if _is_cpu(d)}
    for node in walk_nodes(graph):
        why_fix = _node_obstacle(node, cpu_inputs)
        if why_fix is not None:
            found.append(Obstacle(node, None, *why_fix))
    return found


def _node_obstacle(node: Node, cpu_inputs: set[int]) -> tuple[str, str] | None:
    """(why, fix) when `node` cannot be captured, else None."""
    op, target = node.op, node.op.target
    ins = [v for v in node.input_values() if v.kind is ValueKind.TENSOR]
    outs = [v for v in node.outputs if v.kind is ValueKind.TENSOR]
    if op.kind is OpKind.CONTROL:
        return _control_obstacle(node)
    name = target if isinstance(target, str) else getattr(target, "__name__", op.name)
    if target in (int, float, bool) and ins or name in _HOST_READS and op.kind is OpKind.METHOD:
        return (f"it reads the value of tensor %{ins[0].name if ins else '?'} on the host ({_SYNC}; a replay "
                f"would reuse the value read at capture)",
                "keep the value a tensor (tensor arithmetic and torch.where instead of Python numbers and branches)")
    host = _host_callable(node)
    if host is not None:
        return host
    if target in _ACCUMULATES_GRAD:
        return ("it accumulates gradients into .grad attributes, which a replay cannot re-bind (after "
                "zero_grad(set_to_none=True) the graph would write into the old tensors)",
                "compute gradients inside the function with ta.GradientTape or torch.autograd.grad")
    data_dependent = _data_dependent(node, name)
    if data_dependent is not None:
        return data_dependent
    cuda_in = any(_is_cuda(_dev(v, cpu_inputs)) for v in ins)
    cuda_out = any(_is_cuda(v.device) for v in outs)
    cpu_in = [v for v in ins if _is_cpu(_dev(v, cpu_inputs))]
    if cuda_in and any(_is_cpu(v.device) for v in outs):
        return ("it copies a GPU tensor to the CPU (a GPU->CPU sync, which stops a capture)",
                "keep the computation on the GPU, and move results to the CPU after the call")
    if cuda_out and any(v.shape != () or name in _COPIES for v in cpu_in):
        return (f"it copies the CPU tensor %{cpu_in[0].name} to the GPU (host-to-device copies cannot be captured)",
                "create that tensor on the GPU (device=x.device), or move it to the GPU before the call")
    if cuda_out and name in _FROM_PYTHON_DATA and not cuda_in:
        return ("it builds a CUDA tensor from Python data (a host-to-device copy, which cannot be captured)",
                "create the tensor once outside the function (it is then captured by reference), or use "
                "torch.full / torch.zeros with device=")
    on_cpu = any(_is_cpu(v.device) for v in outs) or (ins and _is_cpu(_dev(ins[0], cpu_inputs)))
    if op.stateful and on_cpu:
        return (f"it runs on the CPU ({op.name}: a random or in-place op), which a replay of the CUDA graph does "
                f"not repeat (it would happen once, at capture)",
                "run it on the GPU (e.g. device=x.device for random tensors)")
    return None


def _control_obstacle(node: Node) -> tuple[str, str] | None:
    t = node.op.target
    if isinstance(t, CondOp) and _is_tensor(node.args[0]):
        return (f"it reads its tensor predicate %{node.args[0].name} on the host to choose a branch ({_SYNC}; a "
                f"replay could not choose again)",
                "compute both sides and select with torch.where(pred, a, b)")
    if isinstance(t, WhileOp):
        test = node.subgraphs[0].outputs[0]
        if _is_tensor(test) or _is_tensor(t.maximum_iterations):
            return (f"its condition is a tensor, read on the host at every iteration ({_SYNC}; a replay could not "
                    f"change the number of iterations)",
                    "loop a fixed number of times (a Python range), or run the loop outside the function")
    if isinstance(t, CheckOp) and _is_tensor(node.args[0]):
        return (f"a run-time check (assert) reads the tensor %{node.args[0].name} on the host ({_SYNC})",
                "check the condition outside the function")
    return None


def _host_callable(node: Node) -> tuple[str, str] | None:
    """Python that must run at every call: ta.print, ta.py_function, staged optimizer calls."""
    if node.op.effects & Effect.RUNS_PYTHON:
        return (f"{node.op.name} runs Python at every call (ta.print, ta.py_function or a staged optimizer call); a "
                f"replay runs only the recorded GPU work, so it would run once, at capture",
                "call it outside the function (for optimizers: use a ta.optimizers optimizer, whose update is "
                "tensor ops)")
    return None


def _data_dependent(node: Node, name: str) -> tuple[str, str] | None:
    why = f"its output size depends on tensor data, which torch reads on the host ({_SYNC})"
    fix = "use a fixed-size form (torch.where(mask, x, 0) instead of x[mask]; torch.nonzero_static)"
    args, kwargs = node.args, node.kwargs
    if name in _DATA_DEPENDENT or (name == "where" and len(args) == 1 and not kwargs):
        return why, fix
    if name == "repeat_interleave" and "output_size" not in kwargs:
        repeats = kwargs.get("repeats", args[1] if len(args) > 1 else None)
        if _is_tensor(repeats):
            return why, "pass output_size= to repeat_interleave"
    if node.op.kind is OpKind.OPERATOR and node.op.target in (operator.getitem, operator.setitem):
        return _index_obstacle(args[0], args[1], why, fix)
    if name in ("index_put_", "index_put") and len(args) > 1:
        return _index_obstacle(args[0], tuple(args[1]) if isinstance(args[1], (list, tuple)) else args[1], why, fix)
    return None


def _index_obstacle(base: Any, index: Any, why: str, fix: str) -> tuple[str, str] | None:
    items = index if isinstance(index, tuple) else (index,)
    for i in items:
        if _is_tensor(i) and i.dtype in (torch.bool, torch.uint8):
            return why, fix
        if isinstance(i, slice) and any(_is_tensor(b) for b in (i.start, i.stop, i.step)):
            return (f"a slice bound is a tensor, read on the host ({_SYNC})",
                    "use Python numbers as slice bounds, or torch.narrow / index_select with a tensor index")
        on_gpu = isinstance(base, Value) and _is_cuda(base.device)
        if on_gpu and (isinstance(i, list) or (_is_tensor(i) and _is_cpu(i.device))):
            return ("it indexes a CUDA tensor with a Python list or a CPU tensor, which torch first copies to the "
                    "GPU (host-to-device copies cannot be captured)",
                    "make the index a CUDA tensor created outside the function (captured by reference)")
    return None


def _is_tensor(x: Any) -> bool:
    return isinstance(x, Value) and x.kind is ValueKind.TENSOR


def _is_cuda(d: torch.device | None) -> bool:
    return d is not None and d.type == "cuda"


def _is_cpu(d: torch.device | None) -> bool:
    return d is not None and d.type == "cpu"


def _dev(v: Value, cpu_inputs: set[int]) -> torch.device | None:
    return torch.device("cpu") if id(v) in cpu_inputs else v.device


def graph_devices(graph: Graph) -> set[str]:
    """The device types of every tensor value in `graph` ("unknown" for an input with no traced device)."""
    out = {"unknown" if v.device is None else v.device.type for v in graph.inputs if v.kind is ValueKind.TENSOR}
    out |= {t.device.type for t in graph.capture_tensors}
    for node in walk_nodes(graph):
        out |= {v.device.type for v in node.outputs if v.kind is ValueKind.TENSOR and v.device is not None}
    return out


def node_words(node: Node) -> str:
    return f"node %{node.name} ({node.op.name})" if node.outputs else f"the {node.op.name} node"


def raise_obstacles(graph: Graph, obstacles: list[Obstacle]) -> None:
    if not obstacles:
        return
    more = [o for o in obstacles[1:] if o.node is not None][:5]
    also = "Also: " + "; ".join(f"{node_words(o.node)} at {o.node.origin or '?'}" for o in more) + "\n" if more else ""
    raise GraphLoweringError(obstacles[0].message(graph.name, also))
