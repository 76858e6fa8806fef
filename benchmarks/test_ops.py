"""Per-op forward + backward of the hot ops at three sizes: 1 Ki, 256 Ki and 4 Mi float32 elements.

One call is the op's forward and the gradient of its output (times a fixed
upstream gradient ``dy``; the loss itself for ``softmax_cross_entropy``) with
respect to its float inputs:

- gpugrad: a GradientTape, ``tape.gradient(y, xs, output_gradients=dy)``; on a
  GPU the gradient runs as one fused kernel from ``kernels/``;
- the hand-written baseline: the forward and the chain rule in NumPy on the
  CPU, and the same unfused expression in CuPy on a GPU (fused against
  unfused);
- PyTorch (``torch.autograd.grad``) on each device it can use, when installed.

Shapes: the elementwise ops take a vector of the size; ``softmax_cross_entropy``
takes logits of (size / 64, 64) and integer labels; ``matmul`` multiplies two
square matrices of the size each (32², 512², 2048²). The 256 Ki row is in
``gpugrad bench --quick``.
"""
import dataclasses
import math
from typing import Callable

import numpy as np
import pytest

import gpugrad as gg

from .conftest import (array_module, baseline_impl, device_params, run, synchronize, to_host, torch_device,
                       torch_synchronize)

SIZES = {"1Ki": (1 << 10, 100, 10), "256Ki": (1 << 18, 20, 3), "4Mi": (1 << 22, 5, 1)}  # elements, rounds, warm-up
QUICK_SIZE = "256Ki"
CLASSES = 64


# --------------------------------------------------------------------------- the hand-written forward + backward


def hand_tanh(xp, x, dy):
    y = xp.tanh(x)
    return [dy * (1 - y * y)]


def hand_sigmoid(xp, x, dy):
    y = 1 / (1 + xp.exp(-x))
    return [dy * y * (1 - y)]


def hand_relu(xp, x, dy):
    y = xp.maximum(x, 0)  # noqa: F841 - the forward runs as in the others; the gradient reads x
    return [dy * (x > 0)]


def hand_log(xp, x, dy):
    y = xp.log(x)  # noqa: F841 - the forward runs as in the others; the gradient reads x
    return [dy / x]


def hand_exp(xp, x, dy):
    y = xp.exp(x)
    return [dy * y]


def hand_square(xp, x, dy):
    y = x * x  # noqa: F841 - the forward runs as in the others; the gradient reads x
    return [dy * (2 * x)]


def hand_power2(xp, x, dy):
    y = x ** 2  # noqa: F841 - the forward runs as in the others; the gradient reads x
    return [dy * (2 * x)]


def hand_power3(xp, x, dy):
    y = x ** 3.0  # noqa: F841 - the forward runs as in the others; the gradient reads x
    return [dy * (3.0 * (x * x))]


ROLL = 7  # the shift of the roll rows


def hand_roll(xp, x, dy):
    y = xp.roll(x, ROLL)  # noqa: F841 - the forward runs as in the others
    return [xp.roll(dy, -ROLL)]


def hand_softmax_cross_entropy(xp, logits, labels):
    """Mean cross-entropy of integer labels; its gradient ``(softmax - onehot) / N``."""
    n = logits.shape[0]
    rows = xp.arange(n)
    z = logits - logits.max(axis=1, keepdims=True)
    e = xp.exp(z)
    total = e.sum(axis=1, keepdims=True)
    loss = xp.mean(xp.log(total[:, 0]) - z[rows, labels])  # noqa: F841 - the forward runs as in the others
    d = e / total
    d[rows, labels] -= 1
    d *= d.dtype.type(1.0 / n)
    return [d]


def hand_matmul(xp, a, b, dy):
    y = a @ b  # noqa: F841 - the forward runs as in the others
    return [dy @ b.T, a.T @ dy]


# --------------------------------------------------------------------------- the ops


@dataclasses.dataclass(frozen=True)
class HotOp:
    """One benchmarked op: how to draw its inputs, run it in gpugrad and PyTorch, and by hand."""

    name: str
    gpugrad: Callable  # (*float tensors[, labels]) -> tensor
    torch_name: str  # an attribute of torch, or "cross_entropy" of torch.nn.functional
    hand: Callable  # (xp, *float arrays[, labels or dy]) -> gradients
    low: float = -2.0
    high: float = 2.0
    kind: str = "elementwise"  # or "loss" (logits, labels) or "matmul" (two square matrices)
    torch_args: tuple = ()  # arguments after the tensors in the PyTorch call (an exponent, a shift)

    def draw(self, size):
        """``(float inputs, labels or None, dy or None)`` as float32 NumPy arrays (labels int64)."""
        rng = np.random.default_rng(0)
        if self.kind == "loss":
            logits = rng.uniform(-3, 3, (size // CLASSES, CLASSES)).astype(np.float32)
            return [logits], rng.integers(0, CLASSES, size // CLASSES), None
        shapes = [(size,)] if self.kind == "elementwise" else [(math.isqrt(size),) * 2] * 2
        xs = [rng.uniform(self.low, self.high, s).astype(np.float32) for s in shapes]
        return xs, None, rng.uniform(-1, 1, shapes[0]).astype(np.float32)  # the output has the first shape

    def torch_fn(self, torch):
        if self.kind == "loss":
            return torch.nn.functional.cross_entropy
        fn = getattr(torch, self.torch_name)
        return (lambda *xs: fn(*xs, *self.torch_args)) if self.torch_args else fn


OPS = [
    HotOp("tanh", gg.tanh, "tanh", hand_tanh),
    HotOp("sigmoid", gg.sigmoid, "sigmoid", hand_sigmoid),
    HotOp("relu", gg.relu, "relu", hand_relu),
    HotOp("log", gg.log, "log", hand_log, low=0.5, high=2.0),
    HotOp("exp", gg.exp, "exp", hand_exp),
    HotOp("square", gg.square, "square", hand_square),
    HotOp("power2", lambda x: x ** 2, "pow", hand_power2, torch_args=(2,)),  # records Square, as gg.square
    HotOp("power3", lambda x: x ** 3.0, "pow", hand_power3, torch_args=(3.0,)),  # Pow and its fused gradient
    HotOp("roll", lambda x: gg.roll(x, ROLL), "roll", hand_roll, torch_args=(ROLL,)),
    HotOp("softmax_cross_entropy", gg.softmax_cross_entropy, "cross_entropy", hand_softmax_cross_entropy,
          kind="loss"),
    HotOp("matmul", gg.matmul, "matmul", hand_matmul, kind="matmul"),
]


def op_params():
    """One param per (op, size); the quick size carries the ``quick`` mark."""
    return [pytest.param(op, size, id=f"{op.name}-{size}", marks=[pytest.mark.quick] if size == QUICK_SIZE else [])
            for op in OPS for size in SIZES]


def group(op, size):
    return f"op {op.name} fwd+bwd ({size} float32)"


def tag(op, size):
    """``(workload, label)`` of the benchmark's row."""
    return f"{op.name} {size}", f"{op.name} fwd+bwd {size}"


def gpugrad_forward_backward(op, xs, labels, dy):
    """The gradients of ``op`` at ``xs`` through a GradientTape."""
    with gg.GradientTape() as tape:
        tape.watch(xs)
        y = op.gpugrad(*xs, labels) if labels is not None else op.gpugrad(*xs)
    return tape.gradient(y, xs, output_gradients=dy)


def hand_forward_backward(op, xp, xs, labels, dy):
    return op.hand(xp, *xs, labels if labels is not None else dy)


def torch_forward_backward(torch, fn, xs, labels, dy):
    y = fn(*xs, labels) if labels is not None else fn(*xs)
    return torch.autograd.grad(y, xs, dy)


def reference(op, size):
    """The gradients in float64, by hand in NumPy."""
    xs, labels, dy = op.draw(size)
    xs = [x.astype(np.float64) for x in xs]
    return hand_forward_backward(op, np, xs, labels, None if dy is None else dy.astype(np.float64))


def assert_close(found, op, size):
    for got, want in zip(found, reference(op, size), strict=True):
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=1e-5 * max(1.0, float(np.max(np.abs(want)))))


# --------------------------------------------------------------------------- checks (not timed)


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("op", OPS, ids=[op.name for op in OPS])
def test_gpugrad_and_the_hand_written_gradients_agree(op, device):
    xs, labels, dy = op.draw(1 << 10)
    tensors = [gg.tensor(x, device=device) for x in xs]
    found = gpugrad_forward_backward(op, tensors, None if labels is None else gg.tensor(labels, device=device),
                                     None if dy is None else gg.tensor(dy, device=device))
    assert_close([g.numpy() for g in found], op, 1 << 10)
    xp = array_module(device)
    hand = hand_forward_backward(op, xp, [xp.asarray(x) for x in xs], None if labels is None else xp.asarray(labels),
                                 None if dy is None else xp.asarray(dy))
    assert_close([to_host(g) for g in hand], op, 1 << 10)
    assert all(to_host(g).dtype == np.float32 for g in hand)


@pytest.mark.parametrize("op", OPS, ids=[op.name for op in OPS])
def test_torch_gradients_agree(op, torch):
    xs, labels, dy = op.draw(1 << 10)
    found = torch_forward_backward(torch, op.torch_fn(torch), [torch.from_numpy(x).requires_grad_(True) for x in xs],
                                   None if labels is None else torch.from_numpy(labels),
                                   None if dy is None else torch.from_numpy(dy))
    assert_close([g.numpy() for g in found], op, 1 << 10)


# --------------------------------------------------------------------------- benchmarks


def timed(benchmark, op, size, impl, device, work):
    n, rounds, warmup = SIZES[size]
    if op.kind == "matmul" and size == "4Mi":
        rounds = 3  # three 2048x2048 products per call: about a second on two CPU cores
    workload, label = tag(op, size)
    return run(benchmark, work, workload=workload, label=label, impl=impl, device=device, rounds=rounds,
               warmup_rounds=warmup)


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("op, size", op_params())
def test_op_gpugrad(benchmark, op, size, device):
    benchmark.group = group(op, size)
    xs, labels, dy = op.draw(SIZES[size][0])
    tensors = [gg.tensor(x, device=device) for x in xs]
    labels = None if labels is None else gg.tensor(labels, device=device)
    dy = None if dy is None else gg.tensor(dy, device=device)

    def work():
        grads = gpugrad_forward_backward(op, tensors, labels, dy)
        synchronize(device)
        return grads

    grads = timed(benchmark, op, size, "gpugrad", device, work)
    assert [g.shape for g in grads] == [x.shape for x in xs]


@pytest.mark.parametrize("device", device_params("hand"))
@pytest.mark.parametrize("op, size", op_params())
def test_op_hand_written(benchmark, op, size, device):
    benchmark.group = group(op, size)
    xp = array_module(device)
    xs, labels, dy = op.draw(SIZES[size][0])
    xs = [xp.asarray(x) for x in xs]
    labels = None if labels is None else xp.asarray(labels)
    dy = None if dy is None else xp.asarray(dy)

    def work():
        grads = hand_forward_backward(op, xp, xs, labels, dy)
        synchronize(device)
        return grads

    grads = timed(benchmark, op, size, baseline_impl(device), device, work)
    assert [g.shape for g in grads] == [x.shape for x in xs]


@pytest.mark.parametrize("device", device_params("torch"))
@pytest.mark.parametrize("op, size", op_params())
def test_op_torch(benchmark, torch, op, size, device):
    benchmark.group = group(op, size)
    where = torch_device(torch, device)
    xs, labels, dy = op.draw(SIZES[size][0])
    xs = [torch.from_numpy(x).to(where).requires_grad_(True) for x in xs]
    labels = None if labels is None else torch.from_numpy(labels).to(where)
    dy = None if dy is None else torch.from_numpy(dy).to(where)
    fn = op.torch_fn(torch)

    def work():
        grads = torch_forward_backward(torch, fn, xs, labels, dy)
        torch_synchronize(torch, device)
        return grads

    grads = timed(benchmark, op, size, "torch", device, work)
    assert [tuple(g.shape) for g in grads] == [tuple(x.shape) for x in xs]
