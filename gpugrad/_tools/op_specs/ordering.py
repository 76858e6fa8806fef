"""Specs of the shape-and-order ops (gpugrad.ops.array.ordering): each is a composition of
differentiable ops, so each spec names the op type it records and the op as its label.
sort and partition draw a permutation of well-separated values, so that finite
differences never cross a tie."""
import numpy as np

import gpugrad as gg

from . import OpSpec


def separated(shape):
    """A draw of one array of ``shape``: a random permutation of values 0.5 apart."""
    def draw(rng):
        n = int(np.prod(shape))
        return [(rng.permutation(n) * 0.5 - n * 0.25).reshape(shape)]
    return draw


SPECS = [
    OpSpec("Identity", lambda x: x.copy() * x, [(2, 3)], label="copy"),
    OpSpec("Reshape", lambda x: x.ravel(), [(2, 3)], label="ravel"),
    OpSpec("Transpose", lambda x: gg.moveaxis(x, (0, 1), (-1, 0)), [(2, 3, 4)], label="moveaxis"),
    OpSpec("Transpose", lambda x: x.swapaxes(-1, 0) ** 2.0, [(2, 3)], label="swapaxes"),
    OpSpec("Gather", lambda x: gg.repeat(x, 2), [(2, 3)], label="repeat"),
    OpSpec("Gather", lambda x: (x * x).repeat([2, 0, 3], axis=1), [(2, 3)], label="repeat_counts"),
    OpSpec("BroadcastTo", lambda x: gg.tile(x * x, (2, 1, 3)), [(2, 3)], label="tile"),
    OpSpec("Roll", lambda x: gg.roll(x, (1, -1), (0, 1)), [(3, 4)]),
    OpSpec("Roll", lambda x: gg.roll(x * x, 5), [(2, 3)], label="flat"),
    OpSpec("Roll", lambda x: gg.roll(x, (2, 4), (1, -1)), [(2, 5)], label="summed_shifts"),
    OpSpec("GetItem", lambda x: gg.flip(x, (0, -1)), [(2, 3, 2)], label="flip"),
    OpSpec("GetItem", lambda x: gg.fliplr(x) * gg.flipud(x), [(3, 3)], label="fliplr_flipud"),
    OpSpec("Transpose", lambda x: gg.rot90(x, 1, (1, 2)), [(2, 3, 4)], label="rot90"),
    OpSpec("GetItem", lambda x: gg.rot90(x * x, -1), [(2, 3)], label="rot90_back"),
    OpSpec("Reshape", lambda x, y: gg.atleast_3d(x) * gg.atleast_2d(y), [(3,), (3,)], label="atleast"),
    OpSpec("Concat", lambda x, y: gg.vstack([x, y * y]), [(3,), (2, 3)], label="vstack"),
    OpSpec("Concat", lambda x, y: gg.hstack([x, y]), [(2, 1), (2, 3)], label="hstack"),
    OpSpec("Concat", lambda x, y: gg.dstack([x, y]), [(2, 3), (2, 3, 2)], label="dstack"),
    OpSpec("Concat", lambda x, y: gg.column_stack([x, y * y]), [(2,), (2, 3)], label="column_stack"),
    OpSpec("Concat", lambda x, y: gg.append(x, y), [(2, 3), (4,)], label="append"),
    OpSpec("Concat", lambda x, y: gg.append(x, y, axis=1), [(2, 3), (2, 1)], label="append_axis"),
    OpSpec("GetItem", lambda x: gg.sort(x) * gg.tensor(np.arange(12.0).reshape(3, 4)),
           [(3, 4)], draw=separated((3, 4)), label="sort"),
    OpSpec("GetItem", lambda x: gg.sort(x, axis=0) ** 2.0, [(3, 4)], draw=separated((3, 4)), label="sort_axis0"),
    OpSpec("GetItem", lambda x: gg.partition(x, (1, 3)) * gg.tensor(np.arange(5.0)),
           [(2, 5)], draw=separated((2, 5)), label="partition"),
    OpSpec("GetItem", lambda x: gg.take_along_axis(x * x, gg.tensor(np.array([[0, 0], [2, 1]])), axis=1),
           [(2, 3)], label="take_along_axis"),
]
