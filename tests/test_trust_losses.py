"""Losses never broadcast a prediction against a target of another shape (the "trust" issue).

``mse`` of (4, 1) predictions against (4,) targets used to average a (4, 4)
matrix of every prediction against every target, silently; PyTorch warns of
exactly this bug, gpugrad raises ShapeError naming the op and both shapes.
Legal shapes, as PyTorch and TensorFlow take them:

- ``mse(pred, target)``, ``sigmoid_cross_entropy(logits, targets)``: one
  shape, or a target that is one number (a Python or NumPy scalar);
- ``softmax_cross_entropy(logits, labels)``: labels of the logits' batch
  shape ``logits.shape[:-1]``; its fused gradient checks the same of its
  labels and upstream gradient (the GPU kernel reads both by row, unchecked).
"""
import numpy as np
import pytest

import gpugrad as gg

from .conftest import device_params

DEVICES = device_params()
DTYPES = ["float64", "float32"]


def tensor(values, dtype="float32", device="cpu"):
    return gg.tensor(np.asarray(values, dtype=np.float64), dtype=dtype, device=device)


# op name in the message -> the loss, and the names its message gives its two operands
ELEMENTWISE_LOSSES = {"mse": (gg.mse, "pred", "target"),
                      "SigmoidCrossEntropy": (gg.sigmoid_cross_entropy, "logits", "targets")}


# ---------------------------------------------------------------- mse, sigmoid_cross_entropy


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["mse", "SigmoidCrossEntropy"])
@pytest.mark.parametrize("shapes", [((4, 1), (4,)), ((4,), (4, 1)), ((3, 4), (4,)), ((4,), ()), ((2, 3), (3, 2))])
def test_mismatched_shapes_raise_naming_the_op_and_both_shapes(shapes, op, dtype, device):
    fn, a_name, b_name = ELEMENTWISE_LOSSES[op]
    a = tensor(np.zeros(shapes[0]), dtype, device)
    b = tensor(np.full(shapes[1], 0.5), dtype, device)
    for reduction in ("mean", "sum", "none"):
        with pytest.raises(gg.ShapeError) as info:
            fn(a, b, reduction=reduction)
        message = str(info.value)
        assert f"op {op!r}" in message
        assert f"{a_name} of shape {shapes[0]}" in message and f"{b_name} of shape {shapes[1]}" in message


@pytest.mark.parametrize("op", ["mse", "SigmoidCrossEntropy"])
def test_the_message_says_what_broadcasting_would_have_made(op):
    fn = ELEMENTWISE_LOSSES[op][0]
    with pytest.raises(gg.ShapeError, match=r"loss of shape \(4, 4\)"):
        fn(tensor(np.zeros((4, 1))), tensor(np.zeros(4)))
    with pytest.raises(gg.ShapeError, match=r"of shape \(3,\) and .* of shape \(2,\); reshape"):
        fn(tensor(np.zeros(3)), tensor(np.zeros(2)))  # shapes that do not even broadcast


@pytest.mark.parametrize("op", ["mse", "SigmoidCrossEntropy"])
def test_array_and_list_targets_are_checked_too(op):
    fn = ELEMENTWISE_LOSSES[op][0]
    with pytest.raises(gg.ShapeError):
        fn(tensor(np.zeros((4, 1))), np.zeros(4))
    with pytest.raises(gg.ShapeError):
        fn(tensor(np.zeros((4, 1))), [0.0, 1.0, 0.0, 1.0])
    fn(tensor(np.zeros((4, 1))), np.zeros((4, 1)))  # the same shape: fine


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_mse_of_equal_shapes_and_of_a_number_target(dtype, device):
    p = tensor([[1.0], [2.0], [4.0]], dtype, device)
    t = tensor([[0.0], [0.0], [1.0]], dtype, device)
    assert gg.mse(p, t).item() == pytest.approx((1 + 4 + 9) / 3)
    assert gg.mse(p, 1.0, reduction="sum").item() == pytest.approx(0 + 1 + 9)
    assert gg.mse(p, np.float32(1.0)).item() == pytest.approx(10 / 3)
    assert gg.mse(p, 2, reduction="none").shape == (3, 1)
    with gg.GradientTape() as tape:
        tape.watch(p)
        loss = gg.mse(p, 1.0)
    np.testing.assert_allclose(tape.gradient(loss, p).numpy(), [[0.0], [2.0 / 3], [2.0]], rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_sigmoid_cross_entropy_of_equal_shapes_and_of_a_number_target(dtype, device):
    x = tensor([[0.0], [2.0]], dtype, device)
    want = np.log1p(np.exp(-np.array([0.0, 2.0])))  # target 1: softplus(-x)
    got = gg.sigmoid_cross_entropy(x, 1.0, reduction="none").numpy()
    np.testing.assert_allclose(got[:, 0], want, rtol=1e-6)
    np.testing.assert_allclose(gg.sigmoid_cross_entropy(x, tensor([[1.0], [1.0]], dtype, device),
                                                        reduction="none").numpy(), got, rtol=1e-6)
    with gg.GradientTape() as tape:
        tape.watch(x)
        loss = gg.sigmoid_cross_entropy(x, 1.0, reduction="sum")
    np.testing.assert_allclose(tape.gradient(loss, x).numpy()[:, 0], 1 / (1 + np.exp(-np.array([0.0, 2.0]))) - 1,
                               rtol=1e-6)


def test_a_zero_d_tensor_target_must_match_too():
    # only a number stands for every element; a 0-d tensor is a tensor of shape ()
    with pytest.raises(gg.ShapeError, match=r"target of shape \(\)"):
        gg.mse(tensor([1.0, 2.0]), tensor(1.0))
    assert gg.mse(tensor(3.0), tensor(1.0)).item() == 4.0


def test_a_dense_layer_output_against_flat_targets_raises():
    # the bug as it happens: a (N, 1) regression head against (N,) labels
    rng = np.random.default_rng(0)
    x, y = tensor(rng.standard_normal((8, 3))), tensor(rng.standard_normal(8))
    w = gg.Variable(rng.standard_normal((3, 1)).astype(np.float32))
    with pytest.raises(gg.ShapeError, match=r"op 'mse'.*pred of shape \(8, 1\) and target of shape \(8,\)"):
        gg.mse(x @ w, y)
    assert gg.mse(gg.reshape(x @ w, (8,)), y).shape == ()


# ---------------------------------------------------------------- softmax_cross_entropy


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("labels", [[[0], [1], [2], [0]], [0, 1, 2], [[0, 1], [2, 0]], 1])
def test_softmax_cross_entropy_labels_need_the_batch_shape(labels, device):
    logits = tensor(np.zeros((4, 3)), "float32", device)
    with pytest.raises(gg.ShapeError) as info:
        gg.softmax_cross_entropy(logits, labels)
    message = str(info.value)
    assert "op 'SoftmaxCrossEntropy'" in message and "(4,)" in message and "(4, 3)" in message
    assert str(np.shape(labels)) in message


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("labels, dy", [([0, 1], [1.0, 1.0, 1.0]), ([0, 1], [1.0]), ([0, 1, 2], [1.0, 1.0]),
                                        ([[0, 1]], [1.0, 1.0]), ([0, 1], [[1.0, 1.0]])])
def test_fused_softmax_cross_entropy_gradient_checks_its_shapes(labels, dy, device):
    # the kernel reads labels and dy by row without bounds: (2,) rows with a (1,) dy would read past it
    probs = tensor([[0.25, 0.75], [0.5, 0.5]], "float32", device)
    labels = gg.tensor(np.asarray(labels, np.int64), device=device)
    with pytest.raises(gg.ShapeError) as info:
        gg.ops.softmax_cross_entropy_grad(probs, labels, tensor(dy, "float32", device))
    message = str(info.value)
    assert "op 'SoftmaxCrossEntropyGrad'" in message and "probs of shape (2, 2)" in message
    assert f"labels of shape {labels.shape}" in message and f"dy of shape {np.shape(dy)}" in message


@pytest.mark.parametrize("device", DEVICES)
def test_fused_softmax_cross_entropy_gradient_of_legal_shapes(device):
    probs = tensor([[0.25, 0.75], [0.5, 0.5]], "float32", device)
    labels = gg.tensor(np.array([1, 0]), device=device)
    per_row = gg.ops.softmax_cross_entropy_grad(probs, labels, tensor([2.0, 1.0], "float32", device))
    np.testing.assert_allclose(per_row.numpy(), [[0.5, -0.5], [-0.5, 0.5]])
    shared = gg.ops.softmax_cross_entropy_grad(probs, labels, tensor(1.0, "float32", device))
    np.testing.assert_allclose(shared.numpy(), [[0.25, -0.25], [-0.5, 0.5]])
