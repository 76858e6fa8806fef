"""One training step of the digits CNN (``gpugrad.training.build_model("cnn")``), batch 64, SGD.

The model: conv 3x3 1->16 (padding 1) + ReLU, conv 3x3 16->32 + ReLU, 2x2 max
pooling, flatten (512), dense 512->64 + ReLU, dense 64->10; softmax
cross-entropy (mean) of 64 standardized 8x8 digits; SGD at learning rate 0.05.

gpugrad runs ``optimizer.minimize`` as the training job does, eagerly and
through ``gg.function`` (traced once, then replayed). Beside it: the
same step written by hand in NumPy (im2col convolutions, on the CPU), and
PyTorch (``Conv2d``, ``MaxPool2d``, ``Linear``, ``optim.SGD``) on each device it
can use. All start from the weights ``build_model`` draws;
``test_*_agree_after_one_step`` checks they take the same step.
"""
import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

from gpugrad.training import build_model, standardized_digits

from .conftest import (assert_function_steps_as_eager, device_params, interleave_steps, load_weights, sgd_step,
                       synchronize, time_step, torch_device, torch_sgd_step, torch_synchronize, traced)

LR = 0.05
BATCH = 64
ROUNDS, WARMUP = 30, 3
GROUP = "CNN training step (digits CNN, batch 64, SGD)"
LABEL = "CNN step digits conv16-conv32-pool-64-10, b64"


def make_problem():
    """``(weights, x, labels)``: the start weights of ``build_model("cnn")`` as NumPy arrays, one batch."""
    weights = [v.numpy() for v in build_model("cnn", seed=0, device="cpu").trainable_variables]
    x_train, y_train, _, _ = standardized_digits(False, "cpu")
    return weights, x_train.numpy()[:BATCH].copy(), y_train.numpy()[:BATCH].copy()


# --------------------------------------------------------------------------- gpugrad


def gpugrad_setup(device):
    """``(step, variables)``: one ``minimize`` of the CNN's loss on the batch."""
    weights, x, labels = make_problem()
    model = build_model("cnn", seed=0, device=device)
    params = model.trainable_variables
    load_weights(params, weights)
    return sgd_step(model, params, x, labels, device=device, lr=LR), params


# --------------------------------------------------------------------------- NumPy by hand


def conv3x3(x, kernel, bias):
    """Stride 1, padding 1: ``(y, columns)``, the columns (N*H*W, C*9) kept for the backward pass."""
    n, c, h, w = x.shape
    windows = sliding_window_view(np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))), (3, 3), axis=(2, 3))
    columns = windows.transpose(0, 2, 3, 1, 4, 5).reshape(n * h * w, c * 9)
    y = columns @ kernel.reshape(kernel.shape[0], -1).T
    y += bias
    return y.reshape(n, h, w, -1).transpose(0, 3, 1, 2), columns


def conv3x3_backward(dy, columns, kernel, x_shape, need_dx=True):
    """``(dx, dkernel, dbias)`` of :func:`conv3x3` from the upstream ``dy`` (N, O, H, W)."""
    n, c, h, w = x_shape
    d = dy.transpose(0, 2, 3, 1).reshape(n * h * w, -1)
    dkernel = (d.T @ columns).reshape(kernel.shape)
    dbias = d.sum(axis=0)
    if not need_dx:
        return None, dkernel, dbias
    dcolumns = (d @ kernel.reshape(kernel.shape[0], -1)).reshape(n, h, w, c, 3, 3)
    dpadded = np.zeros((n, c, h + 2, w + 2), dy.dtype)
    for i in range(3):
        for j in range(3):
            dpadded[:, :, i:i + h, j:j + w] += dcolumns[:, :, :, :, i, j].transpose(0, 3, 1, 2)
    return dpadded[:, :, 1:-1, 1:-1], dkernel, dbias


def numpy_setup():
    """``(step, arrays)``: one hand-written SGD step of the CNN, weights updated in place."""
    weights, x, labels = make_problem()
    params = [w.copy() for w in weights]
    k1, b1, k2, b2, w3, b3, w4, b4 = params
    rows = np.arange(BATCH)
    inv_n, lr = np.float32(1.0 / BATCH), np.float32(LR)

    def step():
        # forward
        a1, cols1 = conv3x3(x, k1, b1)
        np.maximum(a1, 0, out=a1)
        a2, cols2 = conv3x3(a1, k2, b2)
        np.maximum(a2, 0, out=a2)
        windows = a2.reshape(BATCH, 32, 4, 2, 4, 2)
        pooled = windows.max(axis=(3, 5))
        flat = pooled.reshape(BATCH, -1)
        h3 = flat @ w3
        h3 += b3
        np.maximum(h3, 0, out=h3)
        logits = h3 @ w4
        logits += b4
        z = logits - logits.max(axis=1, keepdims=True)
        e = np.exp(z)
        total = e.sum(axis=1, keepdims=True)
        loss = np.mean(np.log(total[:, 0]) - z[rows, labels])
        # backward
        d = e / total
        d[rows, labels] -= 1
        d *= inv_n
        dw4, db4 = h3.T @ d, d.sum(axis=0)
        d = (d @ w4.T) * (h3 > 0)
        dw3, db3 = flat.T @ d, d.sum(axis=0)
        dpooled = (d @ w3.T).reshape(pooled.shape)
        # to the window maxima (a tie is only possible among zeros, which the ReLU mask below clears)
        mask = windows == pooled[:, :, :, None, :, None]
        da2 = (mask * dpooled[:, :, :, None, :, None]).reshape(a2.shape)
        da2 *= a2 > 0
        da1, dk2, db2 = conv3x3_backward(da2, cols2, k2, a1.shape)
        da1 *= a1 > 0
        _, dk1, db1 = conv3x3_backward(da1, cols1, k1, x.shape, need_dx=False)
        for p, g in zip(params, (dk1, db1, dk2, db2, dw3, db3, dw4, db4)):
            p -= lr * g
        return loss

    return step, params


# --------------------------------------------------------------------------- PyTorch


def torch_setup(torch, device="cpu"):
    """``(step, model)``: the same CNN in PyTorch, from the same weights (dense kernels transposed)."""
    weights, x, labels = make_problem()
    nn = torch.nn
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(512, 64), nn.ReLU(), nn.Linear(64, 10))
    layers = [m for m in model if hasattr(m, "weight")]
    with torch.no_grad():
        for layer, kernel, bias in zip(layers, weights[0::2], weights[1::2], strict=True):
            layer.weight.copy_(torch.from_numpy(kernel if kernel.ndim == 4 else kernel.T.copy()))
            layer.bias.copy_(torch.from_numpy(bias))
    model = model.to(device)
    return torch_sgd_step(torch, model, model.parameters(), x, labels, device=device, lr=LR), model


def torch_weights(model):
    arrays = []
    for layer in (m for m in model if hasattr(m, "weight")):
        kernel = layer.weight.detach().cpu().numpy()
        arrays += [kernel if kernel.ndim == 4 else kernel.T, layer.bias.detach().cpu().numpy()]
    return arrays


# --------------------------------------------------------------------------- checks (not timed)


def assert_same_weights(found, expected):
    for got, want in zip(found, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-6)


def gpugrad_after_one_step(device="cpu"):
    step, variables = gpugrad_setup(device)
    step()
    return [v.numpy() for v in variables]


def test_numpy_and_gpugrad_agree_after_one_step():
    step, params = numpy_setup()
    step()
    expected = gpugrad_after_one_step()
    assert_same_weights(params, expected)
    start = make_problem()[0]
    assert all(not np.allclose(p, s, rtol=0, atol=1e-7) for p, s in zip(params, start))  # every weight moved


def test_torch_agrees_after_one_step(torch):
    step, model = torch_setup(torch)
    step()
    assert_same_weights(torch_weights(model), gpugrad_after_one_step())


def test_function_steps_to_the_same_bits_as_eager():
    """On the CPU the replayed step makes the eager step's NumPy calls in its order: the same weights."""
    assert_function_steps_as_eager(lambda: gpugrad_setup("cpu"))


def test_the_loss_decreases_over_steps():
    step, _ = gpugrad_setup("cpu")
    numpy_step, _ = numpy_setup()
    losses = [(step().item(), float(numpy_step())) for _ in range(10)]
    assert losses[-1][0] < 0.9 * losses[0][0]
    np.testing.assert_allclose([g for g, _ in losses], [n for _, n in losses], rtol=1e-3)


# --------------------------------------------------------------------------- benchmarks


def timed(benchmark, impl, step, device, sync):
    time_step(benchmark, step, sync, workload="CNN", label=LABEL, impl=impl, device=device, rounds=ROUNDS,
              warmup_rounds=WARMUP)


@pytest.mark.quick
@pytest.mark.benchmark(group=GROUP)
@pytest.mark.parametrize("device", device_params())
def test_cnn_gpugrad(benchmark, device):
    timed(benchmark, "gpugrad", gpugrad_setup(device)[0], device, lambda: synchronize(device))


@pytest.mark.quick
@pytest.mark.benchmark(group=GROUP)
@pytest.mark.parametrize("device", device_params("gpugrad-function"))
def test_cnn_gpugrad_function(benchmark, device):
    timed(benchmark, "gpugrad-function", traced(gpugrad_setup(device)[0]), device, lambda: synchronize(device))


@pytest.mark.quick
@pytest.mark.benchmark(group=GROUP)
def test_cnn_numpy(benchmark):
    timed(benchmark, "numpy", numpy_setup()[0], "cpu", lambda: None)


@pytest.mark.quick
@pytest.mark.benchmark(group=GROUP)
@pytest.mark.parametrize("device", device_params("torch"))
def test_cnn_torch(benchmark, torch, device):
    step = torch_setup(torch, torch_device(torch, device))[0]
    timed(benchmark, "torch", step, device, lambda: torch_synchronize(torch, device))


@pytest.mark.benchmark(group=GROUP)
def test_cnn_interleaved(benchmark, optional_torch):
    """The CNN steps (gpugrad eager, through ``gg.function``, and fused with ``jit_compile=True`` where numba is
    installed; NumPy; PyTorch where installed) on the CPU in alternating blocks of 4 (0.03 to 0.04 s each): the
    ratios that spells of load on a shared machine cannot tilt (see ``run_interleaved``)."""
    others = {"numpy": numpy_setup()[0]}
    if optional_torch is not None:
        others["torch"] = torch_setup(optional_torch)[0]
    interleave_steps(benchmark, lambda: gpugrad_setup("cpu")[0], others, workload="CNN", block=4, cycles=15)
