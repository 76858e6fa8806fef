"""W2 and W4, one full training step (forward, backward, SGD update) of a ReLU perceptron.

- W2: the digits MLP 64-256-256-10, a batch of 64 standardized digits, softmax
  cross-entropy (mean), SGD at learning rate 0.1; reported in ms per step.
- W4: 512-1024-1024-10, a batch of 256 random inputs, the same loss and step.

gpugrad runs the step as the examples do: ``optimizer.minimize`` of the loss
of a ``gg.nn.Sequential`` of ``Dense`` layers, its variable list found once; and the same step
through ``gg.function`` (traced once, then replayed). Beside them in the same group: the same
step written by hand in NumPy (float32 throughout, no gradient
for the input batch, updates in place; on the CPU), and PyTorch on each device
it can use when it is installed (``nn.Sequential`` of ``Linear`` and ``ReLU``,
``F.cross_entropy``, ``optim.SGD``). Every implementation starts from the same weights and repeats
the step on the same batch; ``test_*_implementations_agree`` checks that one
step gives the same updated weights in all three.
"""
import numpy as np
import pytest

from .conftest import (assert_function_steps_as_eager, device_params, interleave_steps, synchronize, time_step,
                       torch_device, torch_synchronize, traced)
from .workload_mlp import (LR, WORKLOADS, gpugrad_setup, make_problem, numpy_setup,  # noqa: F401 - the workloads
                           torch_setup, torch_weights)

W2_GROUP = "W2 training step (digits MLP 64-256-256-10, batch 64, SGD)"
W4_GROUP = "W4 training step (MLP 512-1024-1024-10, batch 256, SGD)"
LABELS = {"W2": "W2 MLP step 64-256-256-10, b64", "W4": "W4 MLP step 512-1024-1024-10, b256"}


# --------------------------------------------------------------------------- checks


def reference_step(workload):
    """The weights after one step, in float64 from the same float32 start."""
    weights, x, labels = make_problem(workload)
    params = [(k.astype(np.float64), b.astype(np.float64)) for k, b in weights]
    inputs, h = [], x.astype(np.float64)
    for i, (kernel, bias) in enumerate(params):
        inputs.append(h)
        h = h @ kernel + bias
        if i < len(params) - 1:
            h = np.maximum(h, 0)
    p = np.exp(h - h.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    d = (p - np.eye(h.shape[1])[labels]) / h.shape[0]
    grads = []
    for i in range(len(params) - 1, -1, -1):
        grads.append((inputs[i].T @ d, d.sum(axis=0)))
        d = (d @ params[i][0].T) * (inputs[i] > 0)
    grads.reverse()
    return [(k - LR * dk, b - LR * db) for (k, b), (dk, db) in zip(params, grads)]


def assert_same_weights(found, expected):
    for (kernel, bias), (want_kernel, want_bias) in zip(found, expected, strict=True):
        np.testing.assert_allclose(kernel, want_kernel, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(bias, want_bias, rtol=1e-4, atol=1e-6)


def gpugrad_weights(variables):
    arrays = [v.numpy() for v in variables]
    return list(zip(arrays[0::2], arrays[1::2]))


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_numpy_and_gpugrad_agree_after_one_step(workload):
    expected = reference_step(workload)
    step, params = numpy_setup(workload)
    step()
    assert_same_weights(params, expected)
    step, variables = gpugrad_setup(workload, "cpu")
    step()
    assert_same_weights(gpugrad_weights(variables), expected)
    start = make_problem(workload)[0]
    assert not np.allclose(params[0][0], start[0][0], rtol=0, atol=1e-7)  # the step moved the weights


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_torch_agrees_after_one_step(workload, torch):
    step, model = torch_setup(torch, workload)
    step()
    assert_same_weights(torch_weights(model), reference_step(workload))


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_function_steps_to_the_same_bits_as_eager(workload):
    """On the CPU the replayed step makes the eager step's NumPy calls in its order: the same weights."""
    assert_function_steps_as_eager(lambda: gpugrad_setup(workload, "cpu"))


def test_the_loss_decreases_over_steps():
    """Repeating the step on one batch (what the benchmarks time) keeps training: the loss falls."""
    step, _ = gpugrad_setup("W2", "cpu")
    numpy_step, _ = numpy_setup("W2")
    losses = [(step().item(), float(numpy_step())) for _ in range(20)]
    assert losses[-1][0] < 0.5 * losses[0][0]
    np.testing.assert_allclose([g for g, _ in losses], [n for _, n in losses], rtol=1e-3)


# --------------------------------------------------------------------------- benchmarks


def timed(benchmark, workload, impl, step, device="cpu", sync=None):
    _, _, rounds, warmup = WORKLOADS[workload]
    time_step(benchmark, step, sync or (lambda: synchronize(device)), workload=workload, label=LABELS[workload],
              impl=impl, device=device, rounds=rounds, warmup_rounds=warmup)


def timed_torch(benchmark, torch, workload, device):
    where = torch_device(torch, device)
    step = torch_setup(torch, workload, where)[0]
    timed(benchmark, workload, "torch", step, device, sync=lambda: torch_synchronize(torch, device))


@pytest.mark.quick
@pytest.mark.benchmark(group=W2_GROUP)
@pytest.mark.parametrize("device", device_params())
def test_w2_gpugrad(benchmark, device):
    timed(benchmark, "W2", "gpugrad", gpugrad_setup("W2", device)[0], device)


@pytest.mark.quick
@pytest.mark.benchmark(group=W2_GROUP)
@pytest.mark.parametrize("device", device_params("gpugrad-function"))
def test_w2_gpugrad_function(benchmark, device):
    timed(benchmark, "W2", "gpugrad-function", traced(gpugrad_setup("W2", device)[0]), device)


@pytest.mark.quick
@pytest.mark.benchmark(group=W2_GROUP)
def test_w2_numpy(benchmark):
    timed(benchmark, "W2", "numpy", numpy_setup("W2")[0])


@pytest.mark.quick
@pytest.mark.benchmark(group=W2_GROUP)
@pytest.mark.parametrize("device", device_params("torch"))
def test_w2_torch(benchmark, torch, device):
    timed_torch(benchmark, torch, "W2", device)


@pytest.mark.benchmark(group=W4_GROUP)
@pytest.mark.parametrize("device", device_params())
def test_w4_gpugrad(benchmark, device):
    timed(benchmark, "W4", "gpugrad", gpugrad_setup("W4", device)[0], device)


@pytest.mark.benchmark(group=W4_GROUP)
@pytest.mark.parametrize("device", device_params("gpugrad-function"))
def test_w4_gpugrad_function(benchmark, device):
    timed(benchmark, "W4", "gpugrad-function", traced(gpugrad_setup("W4", device)[0]), device)


@pytest.mark.benchmark(group=W4_GROUP)
def test_w4_numpy(benchmark):
    timed(benchmark, "W4", "numpy", numpy_setup("W4")[0])


@pytest.mark.benchmark(group=W4_GROUP)
@pytest.mark.parametrize("device", device_params("torch"))
def test_w4_torch(benchmark, torch, device):
    timed_torch(benchmark, torch, "W4", device)


@pytest.mark.benchmark(group=W2_GROUP)
def test_w2_interleaved(benchmark, optional_torch):
    """W2's steps (gpugrad eager, through ``gg.function``, and fused with ``jit_compile=True`` where numba is
    installed; NumPy; PyTorch where installed) on the CPU in alternating blocks of 100 (about 0.1 s each): the
    ratios that spells of load on a shared machine cannot tilt (see ``run_interleaved``)."""
    others = {"numpy": numpy_setup("W2")[0]}
    if optional_torch is not None:
        others["torch"] = torch_setup(optional_torch, "W2")[0]
    interleave_steps(benchmark, lambda: gpugrad_setup("W2", "cpu")[0], others, workload="W2", block=100, cycles=15)


@pytest.mark.benchmark(group=W4_GROUP)
def test_w4_interleaved(benchmark):
    """W4's gpugrad steps (eager, through ``gg.function``, and fused where numba is installed) and NumPy's in
    alternating blocks of 5 (about 0.1 s each): its must-show ratios, which spells of load cannot tilt.
    PyTorch stays out of this one: its OpenMP threads keep spinning after its block, and the step after it
    ran 19 % slower (``test_w4_torch`` times it)."""
    interleave_steps(benchmark, lambda: gpugrad_setup("W4", "cpu")[0], {"numpy": numpy_setup("W4")[0]}, workload="W4",
                     block=5, cycles=15)
