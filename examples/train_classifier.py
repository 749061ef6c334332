"""Train a small classifier with a tape-based training step compiled by ta.function.

Run it with `make demo`. It checks that the loss falls and that the first 20
graph steps match the same steps run eagerly (fresh copies of the model and
optimizer), parameter for parameter.
"""

import copy

import torch
import torch.nn.functional as F

import torch_autograph as ta

torch.manual_seed(0)
N, D, C, BATCH, STEPS = 1200, 20, 3, 32, 300

# A synthetic dataset: three Gaussian clusters in 20 dimensions.
centers = torch.randn(C, D) * 0.4
labels = torch.randint(0, C, (N,))
features = centers[labels] + torch.randn(N, D)
order = torch.randint(0, N, (STEPS, BATCH), generator=torch.Generator().manual_seed(1))


def make_trainer(model):
    """A training step (tape + ta.optimizers.Adam) and the state it updates."""
    optimizer = ta.optimizers.Adam(learning_rate=1e-3)
    steps = ta.Variable(0, name="steps")

    def train_step(x, y):
        with ta.GradientTape() as tape:
            logits = model(x)
            loss = F.cross_entropy(logits, y)
        params = list(model.parameters())
        optimizer.apply_gradients(zip(tape.gradient(loss, params), params))
        steps.assign_add(1)
        accuracy = (logits.argmax(-1) == y).float().mean()
        return loss, accuracy

    return train_step, steps


def progress(step, loss, acc, width=30):
    done = width * step // STEPS
    return f"\r[{'#' * done}{'.' * (width - done)}] step {step:3d}/{STEPS}  loss {loss:.4f}  accuracy {acc:.3f}"


def main():
    model = torch.nn.Sequential(torch.nn.Linear(D, 64), torch.nn.ReLU(), torch.nn.Linear(64, C))
    eager_model = copy.deepcopy(model)
    train_step, steps = make_trainer(model)
    graph_step = ta.function(train_step)
    eager_step, eager_steps = make_trainer(eager_model)

    losses = []
    for i in range(STEPS):
        x, y = features[order[i]], labels[order[i]]
        loss, acc = graph_step(x, y)
        if i < 20:  # the same step run eagerly on fresh copies gives the same numbers
            e_loss, e_acc = eager_step(x, y)
            torch.testing.assert_close(loss, e_loss)
            for p, q in zip(model.parameters(), eager_model.parameters()):
                torch.testing.assert_close(p, q)
        losses.append(loss.item())
        if (i + 1) % 30 == 0:
            print(progress(i + 1, loss.item(), acc.item()), end="", flush=True)
    print()
    first, last = sum(losses[:20]) / 20, sum(losses[-20:]) / 20
    assert last < 0.5 * first, (first, last)
    assert steps.numpy() == STEPS and eager_steps.numpy() == 20
    assert graph_step.experimental_get_tracing_count() == 1
    full_acc = (model(features).argmax(-1) == labels).float().mean().item()
    print(f"train_classifier OK: loss {first:.3f} -> {last:.3f}, accuracy {full_acc:.3f}, "
          f"{steps.numpy()} steps, first 20 steps match eager")


if __name__ == "__main__":
    main()
