"""Specs of the indexing ops: GetItem (basic, integer arrays, masks), Gather (take, gather)
and their shared scatter, GetItemGrad."""
import numpy as np

import gpugrad as gg
from gpugrad.ops.array.indexing import getitem_grad

from . import OpSpec

MASK = np.array([[True, False, True, True], [False, False, True, False], [True, True, False, True]])
REPEATS = np.array([0, 2, 0, 0, 1])


SPECS = [
    OpSpec("GetItem", lambda x: x[1:, ::-2], [(4, 5)], label="negative_step"),
    OpSpec("GetItem", lambda x: x[::-1, 2] * x[:, 1], [(4, 5)], label="reversed_squared"),
    OpSpec("GetItem", lambda x: x[..., None, -1], [(2, 3, 4)], label="ellipsis_newaxis"),
    OpSpec("GetItem", lambda x: x[[0, 2, 0, 0]], [(3, 4)], label="repeated_rows"),
    OpSpec("GetItem", lambda x: x[[0, 2, 0, 0]] ** 2.0, [(3, 4)], label="repeated_rows_squared"),
    OpSpec("GetItem", lambda x: x[[2, 0, 2], 1:3], [(3, 4)], label="array_and_slice"),
    OpSpec("GetItem", lambda x: x[np.array([[0, 1], [1, 1]]), :, gg.tensor([[3, 3], [0, 3]])],
           [(2, 2, 4)], label="two_arrays_broadcast"),
    OpSpec("GetItem", lambda x: x[MASK] * x[MASK], [(3, 4)], label="bool_mask"),
    OpSpec("GetItemGrad", lambda dy: getitem_grad(dy, (REPEATS,), (3, 4)), [(5, 4)], label="repeated"),
    OpSpec("GetItemGrad", lambda dy: getitem_grad(dy, (slice(None, None, -2), 1), (5, 3), False) ** 2.0,
           [(3,)], label="basic_squared"),
    OpSpec("Gather", lambda x: gg.gather(x, [2, 0, 2, 1]), [(3, 4)]),
    OpSpec("Gather", lambda x: gg.gather(x, np.array([[1, 3], [3, 3], [0, 2]]), axis=1) ** 2.0,
           [(2, 4, 3)], label="axis1_2d_indices"),
    OpSpec("Gather", lambda x: gg.take(x, [5, 0, 5, -1]), [(2, 3)], label="take_flat"),
    OpSpec("Gather", lambda x: gg.take(x, gg.tensor([1, 1, 0]), axis=-1), [(2, 2)], label="take_last_axis"),
]
