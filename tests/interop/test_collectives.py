"""torch.distributed collectives inside ta.function: recorded, run at every call in program order, equal to eager.

The two-process results come from one spawn (gloo on CPU, `distributed_harness`); the trace-time errors run in
this process on a one-process gloo group.
"""

import inspect
import os

import pytest
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

import torch_autograph as ta

HERE = __file__.rsplit("/", 1)[-1]
pytestmark = pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not available")


def _line_of(fn, text):
    src, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(src) if text in line)


# ----- the scenarios, run in each spawned process ---------------------------------------------------------
def _direct_all_reduce(rank):
    def step(x):
        y = x * (rank + 1)
        dist.all_reduce(y)
        dist.all_reduce(y, op=dist.ReduceOp.MAX)  # order matters: SUM then MAX
        return y + 1

    graph = ta.function(step)
    inputs = [torch.arange(4.0) + i + 10 * rank for i in range(4)]
    got = [graph(x).tolist() for x in inputs]
    want = [step(x).tolist() for x in inputs]
    names = [n.op.name for n in graph.get_concrete_function(inputs[0]).graph.nodes]
    return {"got": got, "want": want, "traces": graph.experimental_get_tracing_count(), "names": names}


def _input_written_in_place(rank):
    @ta.function
    def step(x):
        dist.all_reduce(x)
        return x * 2

    out = []
    for i in range(3):
        x = torch.full((3,), float(rank + i))
        y = step(x)
        out.append((x.tolist(), y.tolist()))
    return out


def _tensor_collectives(rank):
    group = dist.group.WORLD

    def step(x):
        b = x.clone()
        dist.broadcast(b, src=1)
        gathered = torch.empty(2 * x.shape[0])
        dist.all_gather_into_tensor(gathered, x, group=group)
        shard = torch.empty(x.shape[0] // 2)
        dist.reduce_scatter_tensor(shard, x * 3)
        dist.barrier()
        return b, gathered, shard

    graph = ta.function(step)
    inputs = [torch.arange(4.0) * (rank + 1) + i for i in range(3)]
    return {"got": [[t.tolist() for t in graph(x)] for x in inputs],
            "want": [[t.tolist() for t in step(x)] for x in inputs],
            "names": [n.op.name for n in graph.get_concrete_function(inputs[0]).graph.nodes]}


def _async_all_reduce(rank):
    def step(x):
        y = x + rank
        work = dist.all_reduce(y, async_op=True)
        z = x * 2
        work.wait()
        return y + z

    graph = ta.function(step)
    inputs = [torch.ones(3) * i for i in range(3)]
    return {"got": [graph(x).tolist() for x in inputs], "want": [step(x).tolist() for x in inputs]}


def _functional(rank):
    group = dist.group.WORLD

    def step(x):
        s = funcol.all_reduce(x * (rank + 1), "sum", group)
        g = funcol.all_gather_tensor(x, 0, group)
        r = funcol.reduce_scatter_tensor(x, "sum", 0, group)
        return s + 1, g * 2, r

    graph = ta.function(step)
    inputs = [torch.arange(4.0) + i + rank for i in range(3)]
    got = [[t.tolist() for t in graph(x)] for x in inputs]
    want = [[torch.as_tensor(t).tolist() for t in step(x)] for x in inputs]
    return {"got": got, "want": want}


def _in_a_graph_branch(rank):
    def step(x):
        if x.sum() > 0:
            dist.all_reduce(x)
        else:
            x = x - 1
        return x

    graph = ta.function(step)
    inputs = [torch.ones(2), -torch.ones(2), torch.ones(2) * 3]
    return {"got": [graph(x.clone()).tolist() for x in inputs], "want": [step(x.clone()).tolist() for x in inputs],
            "traces": graph.experimental_get_tracing_count()}


def worker(rank, world):
    return {"direct": _direct_all_reduce(rank), "inplace": _input_written_in_place(rank),
            "tensor": _tensor_collectives(rank), "async": _async_all_reduce(rank), "functional": _functional(rank),
            "branch": _in_a_graph_branch(rank)}


@pytest.fixture(scope="module")
def results(spawned_results):
    """`worker`'s results by rank (the one spawn of tests/conftest.py's `spawned_results` runs it)."""
    return spawned_results[os.path.realpath(__file__)]


# ----- two processes ---------------------------------------------------------------------------------------
def test_direct_all_reduce_runs_at_every_call_in_order(results):
    for r in results:
        d = r["direct"]
        assert d["got"] == d["want"]
        assert d["traces"] == 1
        assert d["names"].count("all_reduce") == 2
    # x*1 + x*2 summed, then MAX of equal values: the same on both ranks, different on each call.
    assert results[0]["direct"]["got"] == results[1]["direct"]["got"]
    assert len({tuple(v) for v in results[0]["direct"]["got"]}) == 4


def test_all_reduce_of_an_input_writes_the_callers_tensor(results):
    for i in range(3):
        x0, y0 = results[0]["inplace"][i]
        x1, y1 = results[1]["inplace"][i]
        total = float(0 + i) + float(1 + i)
        assert x0 == x1 == [total] * 3
        assert y0 == y1 == [2 * total] * 3


def test_broadcast_all_gather_reduce_scatter_and_barrier_match_eager(results):
    for r in results:
        assert r["tensor"]["got"] == r["tensor"]["want"]
        names = r["tensor"]["names"]
        assert "broadcast" in names and "barrier" in names
        # torch 2.13 routes all_gather_into_tensor / reduce_scatter_tensor to their `_single` forms
        assert {"all_gather_into_tensor", "all_gather_single"} & set(names)
        assert {"reduce_scatter_tensor", "reduce_scatter_single"} & set(names)
    assert results[0]["tensor"]["got"][0][0] == results[1]["tensor"]["got"][0][0]  # broadcast from rank 1


def test_async_op_waits_where_the_program_waits(results):
    for r in results:
        assert r["async"]["got"] == r["async"]["want"]


def test_functional_collectives_match_eager(results):
    for r in results:
        assert r["functional"]["got"] == r["functional"]["want"]


def test_collective_inside_a_graph_if(results):
    for r in results:
        assert r["branch"]["got"] == r["branch"]["want"]
        assert r["branch"]["traces"] == 1


# ----- trace-time errors (one process: the `one_process_group` fixture of tests/conftest.py) ----------------


def test_collective_in_unconverted_code_is_an_error_naming_the_line(one_process_group):
    def sync_everyone():
        dist.barrier()

    @ta.function(autograph=False)
    def step(x):
        sync_everyone()
        return x + 1

    with pytest.raises(ta.errors.DistributedTracingError) as e:
        step(torch.ones(2))
    msg = str(e.value)
    assert "ProcessGroup.barrier" in msg and "ran while tracing" in msg
    assert f"{HERE}:{_line_of(sync_everyone, 'dist.barrier()')}" in msg


def test_object_collective_is_an_error(one_process_group):
    @ta.function
    def step(x):
        out = [None]
        dist.all_gather_object(out, "hello")
        return x + 1

    with pytest.raises(ta.errors.DistributedTracingError) as e:
        step(torch.ones(2))
    msg = str(e.value)
    assert "torch.distributed.all_gather_object()" in msg and "Python objects" in msg
    assert f"{HERE}:{_line_of(step.python_function, 'all_gather_object')}" in msg


def test_work_handle_answers_only_wait(one_process_group):
    @ta.function
    def step(x):
        work = dist.all_reduce(x, async_op=True)
        done = work.is_completed()
        return x + done

    with pytest.raises(ta.errors.DistributedTracingError) as e:
        step(torch.ones(2))
    msg = str(e.value)
    assert "work.is_completed()" in msg and "only work.wait()" in msg
    assert f"{HERE}:{_line_of(step.python_function, 'is_completed')}" in msg


def test_work_handle_returned_from_the_function_cannot_be_waited_outside(one_process_group):
    @ta.function
    def step(x):
        return dist.all_reduce(x, async_op=True)

    work = step(torch.ones(2))
    with pytest.raises(ta.errors.DistributedTracingError, match="after the trace that made it ended"):
        work.wait()


def test_graph_prints_the_collective(one_process_group):
    @ta.function
    def step(x):
        y = x * 2
        dist.all_reduce(y)
        return y

    text = str(step.get_concrete_function(torch.ones(2)).graph)
    assert "torch.distributed.all_reduce(%mul" in text
    torch.testing.assert_close(step(torch.ones(2)), torch.full((2,), 2.0))
