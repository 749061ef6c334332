"""The LBFGS training loop of pytorch/examples `time_sequence_prediction`, its step a `ta.function`, against eager.

Ported from https://github.com/pytorch/examples, time_sequence_prediction/train.py at commit
e27e2585a5b6a557e3512c3f5bd742ff4850f364 (BSD-3-Clause license). The `Sequence` module is unchanged; the training
step of the script's loop is a function of (input, target) so that it can be a `ta.function`. Changes, API
spellings only: the closure's `print('loss:', loss.item())` is `ta.print('loss:', loss)`; `torch.load('traindata.pt')`
is data made here the way generate_sine_wave.py makes it (fewer and shorter sequences: 6 x 11 instead of
100 x 1000), and the prediction runs 5 steps into the future instead of 1000; no plotting.
"""

import copy

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.optim as optim

import torch_autograph as ta


class Sequence(nn.Module):
    def __init__(self):
        super(Sequence, self).__init__()
        self.lstm1 = nn.LSTMCell(1, 51)
        self.lstm2 = nn.LSTMCell(51, 51)
        self.linear = nn.Linear(51, 1)

    def forward(self, input, future = 0):  # noqa: E251 (as in the original)
        outputs = []
        h_t = torch.zeros(input.size(0), 51, dtype=torch.double)
        c_t = torch.zeros(input.size(0), 51, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), 51, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), 51, dtype=torch.double)

        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):# if we should predict the future  # noqa: E261,E262
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        outputs = torch.cat(outputs, dim=1)
        return outputs


def _data():
    np.random.seed(2)
    T, L, N = 20, 12, 6
    x = np.empty((N, L), 'int64')
    x[:] = np.array(range(L)) + np.random.randint(-4 * T, 4 * T, N).reshape(N, 1)
    return np.sin(x / 1.0 / T).astype('float64')


def _trainer(seq, optimizer, criterion, printing):
    def train_step(input, target):
        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            printing('loss:', loss)
            loss.backward()
            return loss
        return optimizer.step(closure)

    def predict(test_input, test_target):
        with torch.no_grad():
            future = 5
            pred = seq(test_input, future=future)
            loss = criterion(pred[:, :-future], test_target)
            return pred, loss

    return train_step, predict


@pytest.mark.slow  # LBFGS's own step (20 evaluations, 1,000s of dot products) takes ~10 s eagerly alone
def test_lbfgs_training_of_the_sequence_model_matches_eager():
    data = _data()
    input = torch.from_numpy(data[3:, :-1])
    target = torch.from_numpy(data[3:, 1:])
    test_input = torch.from_numpy(data[:3, :-1])
    test_target = torch.from_numpy(data[:3, 1:])
    torch.manual_seed(0)
    seq = Sequence()
    seq.double()
    ref = copy.deepcopy(seq)
    criterion = nn.MSELoss()
    step, predict = _trainer(seq, optim.LBFGS(seq.parameters(), lr=0.8), criterion, ta.print)
    step, predict = ta.function(step), ta.function(predict)
    ref_step, ref_predict = _trainer(ref, optim.LBFGS(ref.parameters(), lr=0.8), criterion, lambda *a: None)
    for i in range(3):
        torch.testing.assert_close(step(input, target), ref_step(input, target), rtol=0, atol=1e-9)
        for p, q in zip(seq.parameters(), ref.parameters()):
            torch.testing.assert_close(p, q, rtol=0, atol=1e-9)
        (pred, loss), (ref_pred, ref_loss) = predict(test_input, test_target), ref_predict(test_input, test_target)
        torch.testing.assert_close(pred, ref_pred, rtol=0, atol=1e-9)
        torch.testing.assert_close(loss, ref_loss, rtol=0, atol=1e-9)
    assert step.experimental_get_tracing_count() == 1 and predict.experimental_get_tracing_count() == 1
