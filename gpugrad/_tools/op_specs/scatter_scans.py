"""Specs of issue 28's indexing and cumulative ops: Scatter, ScatterReduce (amax/amin), LogCumSumExp with
rules of their own, and the compositions (scatter_add, index_add, scatter_reduce sum/mean, segment_*,
gather with batch_dims, topk, cummax/cummin, masked_fill, meshgrid) under the op types they record."""
import numpy as np

import gpugrad as gg

from . import OpSpec

IDX = np.array([[0, 2, 0, 1], [2, 2, 1, 0], [1, 0, 0, 2]])  # for a (3, 4) tensor along axis 0
MASK = np.array([[True, False, True, False], [False, False, True, True], [True, False, False, False]])
SEG = np.array([0, 0, 1, 3, 3, 3])


def spread(shape):
    """Values far apart (no ties: max/min and sorts stay away from their kinks)."""
    def draw(rng):
        return [rng.permutation(np.prod(shape)).reshape(shape) * 0.37 - 1.5 + rng.uniform(-0.05, 0.05, shape)
                for shape in [shape]]
    return draw


def spread2(a, b):
    def draw(rng):
        n = int(np.prod(a) + np.prod(b))
        v = rng.permutation(n) * 0.37 - 2.0
        return [v[:np.prod(a)].reshape(a), v[np.prod(a):].reshape(b)]
    return draw


SPECS = [
    OpSpec("Scatter", lambda x, s: gg.scatter(x, 0, [[0, 2, 1, 1], [2, 0, 0, 2]], s) ** 2.0, [(3, 4), (2, 5)], label="src"),
    OpSpec("Scatter", lambda x: gg.scatter(x, 1, [[3], [0], [1]], value=0.5) * x, [(3, 4)], label="value"),
    OpSpec("GetItemGrad", lambda x, s: gg.scatter_add(x, 0, IDX, s) ** 2.0, [(3, 4), (3, 4)], label="scatter_add"),
    OpSpec("GetItemGrad", lambda x, s: gg.index_add(x, 1, [2, 0, 2], s, alpha=1.5) ** 2.0, [(2, 4), (2, 3)],
           label="index_add"),
    OpSpec("GetItemGrad", lambda x, s: gg.scatter_reduce(x, 0, IDX, s, "sum", include_self=False) ** 2.0,
           [(3, 4), (3, 4)], label="scatter_reduce_sum"),
    OpSpec("Div", lambda x, s: gg.scatter_reduce(x, 0, IDX, s, "mean") ** 2.0, [(3, 4), (3, 4)],
           label="scatter_reduce_mean"),
    OpSpec("Div", lambda x, s: gg.scatter_reduce(x, 0, IDX[:, :3], s, "mean", include_self=False) ** 2.0,
           [(3, 4), (3, 3)], label="scatter_reduce_mean_no_self"),
    OpSpec("ScatterReduce", lambda x, s: gg.scatter_reduce(x, 0, IDX, s, "amax") ** 2.0, [(3, 4), (3, 4)],
           draw=spread2((3, 4), (3, 4)), label="amax"),
    OpSpec("ScatterReduce", lambda x, s: gg.scatter_reduce(x, 0, IDX, s, "amin", include_self=False) ** 2.0,
           [(3, 4), (3, 4)], draw=spread2((3, 4), (3, 4)), label="amin_no_self"),
    OpSpec("ScatterReduce", lambda d: gg.segment_max(d, SEG) ** 2.0, [(6, 2)], draw=spread((6, 2)),
           label="segment_max"),
    OpSpec("ScatterReduce", lambda d: gg.segment_min(d, [3, -1, 0, 3, 1, 2], num_segments=4) ** 2.0, [(6,)],
           draw=spread((6,)), label="unsorted_segment_min"),
    OpSpec("GetItemGrad", lambda d: gg.segment_sum(d, SEG) ** 2.0, [(6, 2)], label="segment_sum"),
    OpSpec("Div", lambda d: gg.segment_mean(d, IDX, num_segments=4) ** 2.0, [(3, 4, 2)], label="segment_mean"),
    OpSpec("Where", lambda x, v: gg.masked_fill(x, MASK, v[0]) ** 2.0, [(3, 4), (1,)], label="masked_fill"),
    OpSpec("GetItem", lambda x: gg.gather(x, np.array([[2, 0, 2], [1, 1, 0]]), axis=2, batch_dims=1) ** 2.0,
           [(2, 3, 3)], label="gather_batch_dims"),
    OpSpec("GetItem", lambda x: gg.topk(x, 2, axis=1)[0] ** 2.0, [(3, 4)], draw=spread((3, 4)), label="topk"),
    OpSpec("GetItem", lambda x: gg.topk(x, 3, axis=0, largest=False)[0] ** 2.0, [(4, 2)], draw=spread((4, 2)),
           label="topk_smallest"),
    OpSpec("GetItem", lambda x: gg.cummax(x, axis=1)[0] ** 2.0, [(3, 5)], draw=spread((3, 5)), label="cummax"),
    OpSpec("GetItem", lambda x: gg.cummin(x, axis=0)[0] ** 2.0, [(4, 3)], draw=spread((4, 3)), label="cummin"),
    OpSpec("LogCumSumExp", lambda x: gg.logcumsumexp(x, axis=1), [(3, 5)]),
    OpSpec("LogCumSumExp", lambda x: gg.logcumsumexp(x, axis=0) ** 2.0, [(6, 2)], label="axis0_squared"),
    OpSpec("LogCumSumExp", lambda x: gg.logcumsumexp(x), [(2, 3)], low=-30.0, high=30.0, label="flat_wide"),
    OpSpec("BroadcastTo", lambda a, b: gg.meshgrid(a, b)[0] * gg.meshgrid(a, b, indexing="ij")[1].T,
           [(3,), (2,)], label="meshgrid"),
]


def with_zeros(rng):
    """x and src (3, 4) for IDX with zeros where the product's rule counts them: two src zeros meeting at
    (2, 1), one at (0, 2), a zero of x at (1, 3); the rest of magnitude in [0.5, 1.5], either sign."""
    x, src = (rng.uniform(0.5, 1.5, (3, 4)) * rng.choice([-1.0, 1.0], (3, 4)) for _ in range(2))
    src[0, 1] = src[1, 1] = src[0, 2] = 0.0
    x[1, 3] = 0.0
    return [x, src]


SPECS += [
    OpSpec("ScatterProd", lambda x, s: gg.scatter_reduce(x, 0, IDX, s, "prod"), [(3, 4), (3, 4)], draw=with_zeros,
           label="zeros"),
    OpSpec("ScatterProd", lambda x, s: gg.scatter_reduce(x, 0, IDX, s, "prod", include_self=False) * x,
           [(3, 4), (3, 4)], draw=with_zeros, label="zeros_no_self"),
    OpSpec("ScatterProd", lambda x, s: gg.scatter_reduce(x, 1, IDX[:2], s, "prod") ** 2.0, [(2, 4), (2, 4)],
           label="axis1_squared"),
]
