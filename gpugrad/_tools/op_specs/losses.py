"""Specs of the softmax family and the losses, and the fused SoftmaxCrossEntropyGrad."""
import numpy as np

import gpugrad as gg
from gpugrad import ops

from . import OpSpec

LABELS = np.array([0, 3, 4, 1])  # for logits of shape (4, 5)
LABELS_3D = np.array([[0, 2, 3], [3, 1, 0]])  # for logits of shape (2, 3, 4)


def sce(labels, **kwargs):
    return lambda x: gg.softmax_cross_entropy(x, labels, **kwargs)


def sce_grad(labels):
    """The fused gradient with fixed labels, on the device of the probabilities."""
    return lambda probs, dy: ops.softmax_cross_entropy_grad(probs, gg.tensor(labels, device=probs.device), dy)


def probs_and_dy(shape, dy_shape=None):
    """Probabilities of ``shape`` and an upstream gradient per example (or of ``dy_shape``)."""
    def draw(rng):
        p = rng.uniform(0.1, 1.0, size=shape)
        return [p / p.sum(axis=-1, keepdims=True), rng.uniform(-1, 1, size=shape[:-1] if dy_shape is None else dy_shape)]
    return draw


def logits_and_targets(shape):
    return lambda rng: [rng.uniform(-3, 3, size=shape), rng.uniform(0, 1, size=shape)]


SPECS = [
    OpSpec("Softmax", gg.softmax, [(4, 5)]),
    OpSpec("Softmax", lambda x: gg.softmax(x, axis=0), [(4, 5)], label="axis0"),
    OpSpec("Softmax", lambda x: x.softmax(axis=(1, 2)), [(2, 3, 4)], label="tuple"),
    OpSpec("LogSoftmax", gg.log_softmax, [(4, 5)]),
    OpSpec("LogSoftmax", lambda x: gg.log_softmax(x, axis=0), [(4, 5)], label="axis0"),
    OpSpec("LogSoftmax", lambda x: x.log_softmax(axis=-2), [(2, 3, 4)], label="middle"),
    OpSpec("SoftmaxCrossEntropy", sce(LABELS), [(4, 5)], low=-3, high=3),
    OpSpec("SoftmaxCrossEntropy", sce(LABELS, reduction="sum"), [(4, 5)], low=-3, high=3, label="sum"),
    OpSpec("SoftmaxCrossEntropy", sce(LABELS, reduction="none"), [(4, 5)], low=-3, high=3, label="none"),
    OpSpec("SoftmaxCrossEntropy", sce(LABELS_3D), [(2, 3, 4)], low=-3, high=3, label="3d"),
    OpSpec("SoftmaxCrossEntropy", sce(2, reduction="none"), [(5,)], low=-3, high=3, label="one_example"),
    OpSpec("SoftmaxCrossEntropyGrad", sce_grad(LABELS), [(4, 5), (4,)], draw=probs_and_dy((4, 5))),
    OpSpec("SoftmaxCrossEntropyGrad", sce_grad(LABELS_3D), [(2, 3, 4), (2, 3)], draw=probs_and_dy((2, 3, 4)),
           label="3d"),
    OpSpec("SoftmaxCrossEntropyGrad", sce_grad(LABELS), [(4, 5), ()], draw=probs_and_dy((4, 5), ()),
           label="shared_dy"),  # one dy for every example: the gradient of the mean or sum loss
    OpSpec("SigmoidCrossEntropy", gg.sigmoid_cross_entropy, [(3, 4), (3, 4)], draw=logits_and_targets((3, 4))),
    OpSpec("SigmoidCrossEntropy", lambda x, z: gg.sigmoid_cross_entropy(x, z, reduction="none"),
           [(3, 4), (3, 4)], draw=logits_and_targets((3, 4)), label="none"),
    OpSpec("SigmoidCrossEntropy", lambda x, z: gg.sigmoid_cross_entropy(x, z, reduction="sum"),
           [(3, 4), (3, 4)], draw=logits_and_targets((3, 4)), label="sum"),
    # losses never broadcast tensors (a ShapeError); one number is every element's target
    OpSpec("SigmoidCrossEntropy", lambda x: gg.sigmoid_cross_entropy(x, 0.25, reduction="sum"), [(3, 4)],
           low=-3, high=3, label="number_target_sum"),
    # mse is composed of Sub, Square and Mean: checked here as a whole
    OpSpec("Square", gg.mse, [(3, 4), (3, 4)], label="mse"),
    OpSpec("Square", lambda p, t: gg.mse(p, t, reduction="none"), [(3, 4), (3, 4)], label="mse_none"),
    OpSpec("Square", lambda p, t: gg.mse(p, t, reduction="sum"), [(3, 4), (3, 4)], label="mse_sum"),
    OpSpec("Square", lambda p: gg.mse(p, 0.5, reduction="sum"), [(3, 4)], label="mse_number_target_sum"),
]
