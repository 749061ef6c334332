"""torch's RNN cells in a loop over time trace with every dim symbolic (time and batch None), equal to eager."""

import pytest
import torch

import torch_autograph as ta

CELLS = {
    "lstm": lambda: torch.nn.LSTMCell(8, 4),
    "gru": lambda: torch.nn.GRUCell(8, 4),
    "rnn_tanh": lambda: torch.nn.RNNCell(8, 4),
    "rnn_relu": lambda: torch.nn.RNNCell(8, 4, nonlinearity="relu"),
}


def _loop(cell):
    def run(x):
        h = torch.zeros(x.size(1), 4)
        state = (h, torch.zeros(x.size(1), 4)) if isinstance(cell, torch.nn.LSTMCell) else h
        outs = []
        for t in range(x.size(0)):
            state = cell(x[t], state)
            outs.append(state[0] if isinstance(state, tuple) else state)
        return torch.stack(outs)
    return run


@pytest.mark.parametrize("kind", sorted(CELLS))
@pytest.mark.parametrize("how", ["signature", "reduce_retracing"])
def test_cell_loop_with_all_dims_none_equals_eager(kind, how):
    torch.manual_seed(0)
    cell = CELLS[kind]()
    run = _loop(cell)
    if how == "signature":
        f = ta.function(run, input_signature=[ta.TensorSpec([None, None, 8])])
    else:
        f = ta.function(run, reduce_retracing=True)
    for shape in [(5, 3, 8), (2, 6, 8), (7, 1, 8), (1, 2, 8)]:
        x = torch.randn(shape)
        got, want = f(x), run(x)
        torch.testing.assert_close(got, want)
        g1 = torch.autograd.grad(got.sum(), cell.weight_ih)[0]
        g2 = torch.autograd.grad(want.sum(), cell.weight_ih)[0]
        torch.testing.assert_close(g1, g2)
    assert f.experimental_get_tracing_count() == (1 if how == "signature" else 2)


def test_a_cell_on_a_none_batch_is_not_specialised_to_the_first_call():
    cell = torch.nn.LSTMCell(8, 4)
    f = ta.function(lambda x: cell(x)[1], input_signature=[ta.TensorSpec([None, 8])])
    for n in (3, 5, 1):
        x = torch.randn(n, 8)
        torch.testing.assert_close(f(x), cell(x)[1])
    assert f.experimental_get_tracing_count() == 1  # no `x.size(0) == 3` assumed by the cell


def test_a_cell_given_a_wrong_hidden_batch_raises_torchs_error():
    cell = torch.nn.GRUCell(8, 4)
    f = ta.function(lambda x, h: cell(x, h))
    with pytest.raises(RuntimeError, match="batch size"):
        f(torch.randn(3, 8), torch.randn(2, 4))
