"""Specs of the losses of PyTorch's names: nll_loss, softmax_cross_entropy's options, binary_cross_entropy,
sigmoid_cross_entropy's pos_weight, huber, smooth_l1, kl_div, cosine_similarity.

A composite (nll_loss, the cross-entropy options, pos_weight, cosine_similarity) is checked as a whole under
an op type it records, as ``mse`` is under ``Square``.
"""
import numpy as np

import gpugrad as gg

from . import OpSpec

LABELS = np.array([0, 3, -100, 1])  # for (4, 5) inputs; -100 ignored (PyTorch's default ignore_index)
LABELS_3D = np.array([[0, 2, 1], [3, 1, 0]])  # for nll_loss's (2, 4, 3): classes on axis 1
WEIGHT = np.array([0.5, 2.0, 1.0, 3.0, 1.5])


def normalized(shape, axis=-1):
    """Probabilities along ``axis`` (and their log) drawn away from 0."""
    def draw(rng):
        p = rng.uniform(0.1, 1.0, size=shape)
        return p / p.sum(axis=axis, keepdims=True)
    return draw


def log_probs(shape, axis=-1):
    return lambda rng: [np.log(normalized(shape, axis)(rng))]


def logits_and_probs(shape):
    return lambda rng: [rng.uniform(-3, 3, size=shape), normalized(shape)(rng)]


def probs_and_targets(shape):
    return lambda rng: [rng.uniform(0.1, 0.9, size=shape), rng.uniform(0, 1, size=shape)]


def away_from(delta, shape):
    """pred, target with |pred - target| at least 0.1 away from the kink at ``delta``."""
    def draw(rng):
        t = rng.uniform(-1, 1, size=shape)
        d = rng.uniform(0.0, 2.0 * delta, size=shape)
        d = np.where(np.abs(d - delta) < 0.1, d + 0.25, d) * rng.choice([-1.0, 1.0], size=shape)
        return [t + d, t]
    return draw


def kl_inputs(shape, log_target=False):
    def draw(rng):
        q, p = normalized(shape)(rng), normalized(shape)(rng)
        return [np.log(q), np.log(p) if log_target else p]
    return draw


SPECS = [
    # nll_loss: a Mul of the log-probabilities by a constant and a Sum
    OpSpec("Mul", lambda x: gg.nll_loss(x, LABELS), [(4, 5)], draw=log_probs((4, 5)), label="nll_loss"),
    OpSpec("Mul", lambda x: gg.nll_loss(x, LABELS, weight=WEIGHT, reduction="sum"), [(4, 5)],
           draw=log_probs((4, 5)), label="nll_loss_weight_sum"),
    OpSpec("Mul", lambda x: gg.nll_loss(x, LABELS_3D, weight=WEIGHT[:4], reduction="none"), [(2, 4, 3)],
           draw=log_probs((2, 4, 3), axis=1), label="nll_loss_3d_none"),
    # softmax_cross_entropy's options: LogSoftmax and linear ops
    OpSpec("LogSoftmax", lambda x: gg.softmax_cross_entropy(x, LABELS, ignore_index=-100, label_smoothing=0.1,
                                                            weight=WEIGHT), [(4, 5)], low=-3, high=3,
           label="cross_entropy_options"),
    OpSpec("LogSoftmax", lambda x, t: gg.softmax_cross_entropy(x, t, label_smoothing=0.2, reduction="none"),
           [(4, 5), (4, 5)], draw=logits_and_probs((4, 5)), label="cross_entropy_probabilities"),
    OpSpec("BinaryCrossEntropy", gg.binary_cross_entropy, [(3, 4), (3, 4)], draw=probs_and_targets((3, 4))),
    OpSpec("BinaryCrossEntropy", lambda p, t: gg.binary_cross_entropy(p, t, weight=np.array([1.0, 2.0, 0.5, 1.0]),
                                                                      reduction="none"),
           [(3, 4), (3, 4)], draw=probs_and_targets((3, 4)), label="weight_none"),
    # pos_weight: softplus terms; the pos_weight gets a gradient too
    OpSpec("Softplus", lambda x, z, pw: gg.sigmoid_cross_entropy(x, z, pos_weight=pw, reduction="sum"),
           [(3, 4), (3, 4), (4,)],
           draw=lambda rng: [rng.uniform(-3, 3, (3, 4)), rng.uniform(0, 1, (3, 4)), rng.uniform(0.5, 3, (4,))],
           label="pos_weight"),
    OpSpec("Huber", lambda p, t: gg.huber(p, t, delta=0.5), [(3, 4), (3, 4)], draw=away_from(0.5, (3, 4))),
    OpSpec("Huber", lambda p, t: gg.huber(p, t, reduction="none"), [(3, 4), (3, 4)], draw=away_from(1.0, (3, 4)),
           label="none"),
    OpSpec("Huber", lambda p, t: gg.smooth_l1(p, t, beta=0.5, reduction="sum"), [(3, 4), (3, 4)],
           draw=away_from(0.5, (3, 4)), label="smooth_l1"),
    OpSpec("KLDiv", lambda x, t: gg.kl_div(x, t, reduction="batchmean"), [(3, 4), (3, 4)], draw=kl_inputs((3, 4))),
    OpSpec("KLDiv", lambda x, t: gg.kl_div(x, t, reduction="none", log_target=True), [(3, 4), (3, 4)],
           draw=kl_inputs((3, 4), log_target=True), label="log_target"),
    OpSpec("Sqrt", lambda a, b: gg.cosine_similarity(a, b), [(3, 4), (3, 4)], label="cosine_similarity"),
    OpSpec("Sqrt", lambda a, b: gg.cosine_similarity(a, b, dim=-1), [(2, 3, 4), (3, 4)],
           label="cosine_similarity_broadcast"),
]
