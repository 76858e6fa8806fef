"""One training step of an LSTM sequence classifier, batch 64, SGD.

The model: ``gg.nn.LSTM(32, 128, batch_first=True)`` over 32 time steps, then
``Dense(128, 10)`` on the last hidden state; softmax cross-entropy (mean) of
random labels; SGD at learning rate 0.1. gpugrad runs ``optimizer.minimize``,
eagerly and through ``gg.function`` (the loop over the 32 steps traced once,
then replayed). Beside it: PyTorch's ``nn.LSTM(batch_first=True)`` and
``nn.Linear`` with ``optim.SGD`` on each device it can use, from the same
weights (PyTorch's parameters copied in by name). There is no hand-written
NumPy LSTM step; ``ratios.py`` prints ``n/a`` for that peer.
``test_torch_agrees_after_one_step`` checks that both take the same step.
"""
import numpy as np
import pytest

import gpugrad as gg

from .conftest import (assert_function_steps_as_eager, device_params, interleave_steps, sgd_step, synchronize,
                       time_step, torch_device, torch_sgd_step, torch_synchronize, traced)

LR = 0.1
BATCH, SEQ, INPUT, HIDDEN, CLASSES = 64, 32, 32, 128, 10
ROUNDS, WARMUP = 30, 3
GROUP = "LSTM training step (LSTM 32-128 over 32 steps, dense 128-10, batch 64, SGD)"
LABEL = "LSTM step 32-128 x32 steps, b64"


class Classifier(gg.nn.Module):
    def __init__(self, device):
        super().__init__()
        self.lstm = gg.nn.LSTM(INPUT, HIDDEN, batch_first=True, device=device, seed=0)
        self.head = gg.nn.Dense(HIDDEN, CLASSES, device=device, seed=1)

    def forward(self, x):
        _, (h_n, _) = self.lstm(x)
        return self.head(h_n[-1])


def make_problem():
    """``(weights, x, labels)``: the start weights (PyTorch's names; the head's kernel as (in, out)), one batch."""
    model = Classifier("cpu")
    weights = {name: v.numpy() for name, v in model.named_variables()}
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, SEQ, INPUT)).astype(np.float32)
    labels = rng.integers(0, CLASSES, BATCH).astype(np.int64)
    return weights, x, labels


# --------------------------------------------------------------------------- gpugrad


def gpugrad_setup(device):
    """``(step, variables)``: one ``minimize`` of the classifier's loss on the batch."""
    weights, x, labels = make_problem()
    model = Classifier(device)
    for name, var in model.named_variables():
        var.assign(weights[name])
    params = model.trainable_variables
    return sgd_step(model, params, x, labels, device=device, lr=LR), params


# --------------------------------------------------------------------------- PyTorch


def torch_setup(torch, device="cpu"):
    """``(step, (lstm, head))``: the same classifier in PyTorch, from the same weights."""
    weights, x, labels = make_problem()
    lstm = torch.nn.LSTM(INPUT, HIDDEN, batch_first=True)
    head = torch.nn.Linear(HIDDEN, CLASSES)
    with torch.no_grad():
        for name, param in lstm.named_parameters():
            param.copy_(torch.from_numpy(weights[f"lstm.{name}"]))
        head.weight.copy_(torch.from_numpy(weights["head.kernel"].T.copy()))
        head.bias.copy_(torch.from_numpy(weights["head.bias"]))
    lstm, head = lstm.to(device), head.to(device)

    def logits_of(xb):
        _, (h_n, _) = lstm(xb)
        return head(h_n[-1])

    step = torch_sgd_step(torch, logits_of, list(lstm.parameters()) + list(head.parameters()), x, labels,
                          device=device, lr=LR)
    return step, (lstm, head)


# --------------------------------------------------------------------------- checks (not timed)


def test_torch_agrees_after_one_step(torch):
    step, (lstm, head) = torch_setup(torch)
    step()
    want = [p.detach().numpy() for p in lstm.parameters()] + [head.weight.detach().numpy().T,
                                                              head.bias.detach().numpy()]
    g_step, variables = gpugrad_setup("cpu")
    g_step()
    start = make_problem()[0]
    for var, expected, before in zip(variables, want, start.values(), strict=True):
        np.testing.assert_allclose(var.numpy(), expected, rtol=1e-4, atol=2e-6)
        assert not np.array_equal(var.numpy(), before)  # the step moved every weight


def test_function_steps_to_the_same_bits_as_eager():
    """On the CPU the replayed step makes the eager step's NumPy calls in its order: the same weights."""
    assert_function_steps_as_eager(lambda: gpugrad_setup("cpu"))


def test_the_loss_decreases_over_steps():
    """Repeating the step on one batch (what the benchmarks time) keeps training: full-batch SGD descends."""
    step, _ = gpugrad_setup("cpu")
    losses = [step().item() for _ in range(5)]
    assert all(b < a for a, b in zip(losses, losses[1:])) and losses[-1] < 0.99 * losses[0], losses


# --------------------------------------------------------------------------- benchmarks


def timed(benchmark, impl, step, device, sync):
    time_step(benchmark, step, sync, workload="LSTM", label=LABEL, impl=impl, device=device, rounds=ROUNDS,
              warmup_rounds=WARMUP)


@pytest.mark.benchmark(group=GROUP)
@pytest.mark.parametrize("device", device_params())
def test_lstm_gpugrad(benchmark, device):
    timed(benchmark, "gpugrad", gpugrad_setup(device)[0], device, lambda: synchronize(device))


@pytest.mark.benchmark(group=GROUP)
@pytest.mark.parametrize("device", device_params("gpugrad-function"))
def test_lstm_gpugrad_function(benchmark, device):
    timed(benchmark, "gpugrad-function", traced(gpugrad_setup(device)[0]), device, lambda: synchronize(device))


@pytest.mark.benchmark(group=GROUP)
@pytest.mark.parametrize("device", device_params("torch"))
def test_lstm_torch(benchmark, torch, device):
    step = torch_setup(torch, torch_device(torch, device))[0]
    timed(benchmark, "torch", step, device, lambda: torch_synchronize(torch, device))


@pytest.mark.benchmark(group=GROUP)
def test_lstm_interleaved(benchmark, torch):
    """The three LSTM steps (gpugrad eager and through ``gg.function``, PyTorch) on the CPU in
    alternating blocks of 5: the ratios that spells of load on a shared machine cannot tilt
    (see ``run_interleaved``)."""
    interleave_steps(benchmark, lambda: gpugrad_setup("cpu")[0], {"torch": torch_setup(torch)[0]}, workload="LSTM",
                     block=5, cycles=15)
