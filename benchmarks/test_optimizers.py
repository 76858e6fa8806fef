"""Optimizer updates of one 1 Mi-parameter float32 Variable: SGD with momentum 0.9, and Adam.

One call is one ``apply_gradients`` of a fixed gradient: on the CPU the NumPy
reference of ``kernels_ref``, on a GPU one fused kernel (``sgd_momentum_update``,
``adam_update``). Beside it: the update written by hand with in-place array
operations (NumPy on the CPU, the same unfused expression in CuPy on a GPU),
and ``torch.optim.SGD`` / ``torch.optim.Adam`` on each device PyTorch can use.
"""
import numpy as np
import pytest

import gpugrad as gg
from gpugrad.optimizers import kernels_ref

from .conftest import (array_module, baseline_impl, device_params, run, synchronize, to_host, torch_device,
                       torch_synchronize)

N = 1 << 20
LR, MOMENTUM = 0.01, 0.9
BETA1, BETA2, EPS = 0.9, 0.999, 1e-7
ROUNDS, WARMUP = 50, 5
OPTIMIZERS = {"sgd_momentum": ("SGD momentum 0.9 update, 1 Mi", "optimizer SGD momentum (1 Mi float32)"),
              "adam": ("Adam update, 1 Mi", "optimizer Adam (1 Mi float32)")}


def make_problem():
    """``(start weights, gradient)``, float32."""
    rng = np.random.default_rng(0)
    return rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)


def gpugrad_setup(name, device):
    """``(step, variable)``: one ``apply_gradients`` of the fixed gradient."""
    start, grad = make_problem()
    var = gg.Variable(start, device=device)
    g = gg.tensor(grad, device=device)
    opt = gg.optimizers.SGD(LR, momentum=MOMENTUM) if name == "sgd_momentum" else \
        gg.optimizers.Adam(LR, beta_1=BETA1, beta_2=BETA2, epsilon=EPS)

    def step():
        opt.apply_gradients([(g, var)])

    return step, var


def hand_setup(name, xp):
    """``(step, param)``: the update by hand, in place (the Keras forms gpugrad uses)."""
    start, grad = make_problem()
    p, g = xp.asarray(start), xp.asarray(grad)
    f32 = np.float32
    if name == "sgd_momentum":
        velocity = xp.zeros_like(p)

        def step():  # velocity = momentum velocity - lr g; p += velocity
            nonlocal velocity, p
            velocity *= f32(MOMENTUM)
            velocity -= f32(LR) * g
            p += velocity

        return step, p
    m, v, t = xp.zeros_like(p), xp.zeros_like(p), [0]

    def step():  # m, v: moving averages of g and g^2; p -= step_size m / (sqrt(v) + eps)
        nonlocal m, v, p
        t[0] += 1
        m *= f32(BETA1)
        m += f32(1 - BETA1) * g
        v *= f32(BETA2)
        v += f32(1 - BETA2) * (g * g)
        p -= f32(kernels_ref.adam_step_size(LR, BETA1, BETA2, t[0])) * m / (xp.sqrt(v) + f32(EPS))

    return step, p


def torch_setup(torch, name, device="cpu"):
    start, grad = make_problem()
    p = torch.nn.Parameter(torch.from_numpy(start).to(device))
    p.grad = torch.from_numpy(grad).to(device)
    opt = torch.optim.SGD([p], lr=LR, momentum=MOMENTUM) if name == "sgd_momentum" else \
        torch.optim.Adam([p], lr=LR, betas=(BETA1, BETA2), eps=EPS)
    return opt.step, p


def reference(name, steps):
    """The weights after ``steps`` updates, by ``kernels_ref`` (the arithmetic of the fused kernels)."""
    p, g = make_problem()
    a, b = np.zeros_like(p), np.zeros_like(p)
    for t in range(1, steps + 1):
        if name == "sgd_momentum":
            kernels_ref.sgd_momentum_update(p, a, g, LR, MOMENTUM)
        else:
            kernels_ref.adam_update(p, a, b, g, kernels_ref.adam_step_size(LR, BETA1, BETA2, t), BETA1, BETA2, EPS)
    return p


# --------------------------------------------------------------------------- checks (not timed)


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_gpugrad_and_hand_written_updates_agree(name, device):
    step, var = gpugrad_setup(name, device)
    hand_step, p = hand_setup(name, array_module(device))
    for _ in range(3):
        step()
        hand_step()
    want = reference(name, 3)
    np.testing.assert_allclose(var.numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(to_host(p), want, rtol=1e-5, atol=1e-6)
    assert not np.allclose(want, make_problem()[0])


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_torch_updates_agree(name, torch):
    step, p = torch_setup(torch, name)
    for _ in range(3):
        step()
    # PyTorch's Adam adds eps after the bias correction of sqrt(v), Keras's before: the steps differ
    # by about lr * eps / sqrt(v): compare where |g| > 0.01, to 2e-5 (the steps are 0.01)
    keep = np.abs(make_problem()[1]) > 1e-2
    np.testing.assert_allclose(p.detach().numpy()[keep], reference(name, 3)[keep], rtol=1e-5, atol=2e-5)


# --------------------------------------------------------------------------- benchmarks


def timed(benchmark, name, impl, device, step, sync):
    label, group = OPTIMIZERS[name]
    benchmark.group = group

    def work():
        step()
        sync()

    run(benchmark, work, workload=name, label=label, impl=impl, device=device, rounds=ROUNDS,
        warmup_rounds=WARMUP)


@pytest.mark.quick
@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_gpugrad(benchmark, name, device):
    timed(benchmark, name, "gpugrad", device, gpugrad_setup(name, device)[0], lambda: synchronize(device))


@pytest.mark.quick
@pytest.mark.parametrize("device", device_params("hand"))
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_hand_written(benchmark, name, device):
    step = hand_setup(name, array_module(device))[0]
    timed(benchmark, name, baseline_impl(device), device, step, lambda: synchronize(device))


@pytest.mark.quick
@pytest.mark.parametrize("device", device_params("torch"))
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_torch(benchmark, torch, name, device):
    step = torch_setup(torch, name, torch_device(torch, device))[0]
    timed(benchmark, name, "torch", device, step, lambda: torch_synchronize(torch, device))
