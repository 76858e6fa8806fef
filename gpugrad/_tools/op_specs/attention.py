"""Specs of attention's fused row ops: MaskedSoftmax and its gradient MaskedSoftmaxGrad, and
scaled_dot_product_attention as a whole (its MaskedSoftmax between two MatMuls)."""
import numpy as np

import gpugrad as gg
from gpugrad import ops

from . import OpSpec

KEEP = np.array([[True, False, True, True, False], [True, True, True, True, True],
                 [False, False, False, False, False], [False, True, False, False, True]])  # a row keeps nothing
CAUSAL = np.tril(np.ones((3, 3), dtype=bool))


def masked(keep):
    """masked_softmax with bool ``keep`` on the scores' device."""
    return lambda x: ops.masked_softmax(x, gg.tensor(keep, device=x.device))


def softmax_and_dy(shape, keep):
    """A masked softmax output of ``shape`` (zeros where ``keep`` drops) and an upstream gradient."""
    def draw(rng):
        e = np.exp(rng.uniform(-2, 2, size=shape)) * np.broadcast_to(keep, shape)
        total = e.sum(axis=-1, keepdims=True)
        return [e / np.where(total == 0, 1, total), rng.uniform(-1, 1, size=shape)]
    return draw


def sdpa(**kwargs):
    return lambda q, k, v: gg.nn.functional.scaled_dot_product_attention(q, k, v, **kwargs)


SPECS = [
    OpSpec("MaskedSoftmax", ops.masked_softmax, [(4, 5)]),
    OpSpec("MaskedSoftmax", masked(KEEP), [(4, 5)], label="mask"),
    OpSpec("MaskedSoftmax", masked(CAUSAL), [(2, 2, 3, 3)], label="broadcast_mask"),
    OpSpec("MaskedSoftmaxGrad", ops.masked_softmax_grad, [(4, 5), (4, 5)], draw=softmax_and_dy((4, 5), KEEP)),
    OpSpec("MaskedSoftmax", sdpa(is_causal=True), [(2, 3, 4), (2, 3, 4), (2, 3, 2)], label="sdpa_causal"),
    OpSpec("MaskedSoftmax", lambda q, k, v: gg.nn.functional.scaled_dot_product_attention(
        q, k, v, mask=gg.tensor(KEEP[:3, :4], device=q.device), scale=0.7), [(2, 1, 3, 4), (2, 1, 4, 4), (2, 1, 4, 3)],
        label="sdpa_bool_mask"),
]
