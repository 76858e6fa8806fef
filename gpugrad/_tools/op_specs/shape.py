"""Specs of the shape ops: reshape (and the ops recorded as reshapes), broadcast_to,
transpose, concat, stack, split, pad; and the creation ops a tensor fills, recorded as
broadcasts and selections (full and full_like with a tensor fill, linspace with tensor ends)."""
import gpugrad as gg

from . import OpSpec


def split_then_mix(x):
    """Uses two of three equal parts (the engine sends zeros for the third)."""
    a, _, c = gg.split(x, 3, axis=1)
    return a * 2.0 + c * c


def split_sizes_then_concat(x):
    a, b, c = gg.split(x, [1, -1, 2], axis=0)
    return gg.concat([c, a * a, b * 3.0], axis=0)


SPECS = [
    OpSpec("Reshape", lambda x: gg.reshape(x, (4, -1)), [(3, 4)]),
    OpSpec("Reshape", lambda x: x.reshape(2, 6) * x.reshape(2, 6), [(3, 4)], label="method_squared"),
    OpSpec("Reshape", lambda x: gg.expand_dims(x, (0, -1)), [(3, 4)], label="expand_dims"),
    OpSpec("Reshape", lambda x: gg.squeeze(x, 1), [(3, 1, 4)], label="squeeze"),
    OpSpec("Reshape", lambda x: x.flatten(), [(2, 3, 2)], label="flatten"),
    OpSpec("BroadcastTo", lambda x: gg.broadcast_to(x, (2, 3, 4)), [(3, 1)]),
    OpSpec("BroadcastTo", lambda x: gg.broadcast_to(x, (3, 4)) ** 2.0, [(4,)], label="squared"),
    OpSpec("Transpose", lambda x: gg.transpose(x, (2, 0, 1)), [(2, 3, 4)]),
    OpSpec("Transpose", lambda x: x.T * x.T, [(3, 4)], label="T_squared"),
    OpSpec("Transpose", lambda x: x.transpose(0, -1, 1), [(2, 3, 4)], label="negative_axis"),
    OpSpec("Concat", lambda x, y, z: gg.concat([x, y, z]), [(2, 3), (1, 3), (4, 3)]),
    OpSpec("Concat", lambda x, y: gg.concat([x * x, y], axis=-1), [(2, 3), (2, 2)], label="axis_last"),
    OpSpec("Stack", lambda x, y: gg.stack([x, y * y], axis=1), [(3, 4), (3, 4)]),
    OpSpec("Stack", lambda x, y, z: gg.stack([x, y, z], axis=-1), [(2, 3)] * 3, label="axis_last"),
    OpSpec("Split", split_then_mix, [(2, 6)]),
    OpSpec("Split", split_sizes_then_concat, [(6, 2)], label="sizes"),
    OpSpec("Pad", lambda x: gg.pad(x, ((1, 2), (0, 1))), [(2, 3)]),
    OpSpec("Pad", lambda x: gg.pad(x * x, 1), [(2, 2)], label="int_squared"),
    OpSpec("BroadcastTo", lambda v: gg.square(gg.full((2, 3), v)), [()], label="full_tensor_fill"),
    OpSpec("BroadcastTo", lambda x, v: gg.full_like(x, v) * x, [(2, 3), (3,)], label="full_like_tensor_fill"),
    OpSpec("Where", lambda a, b: gg.square(gg.linspace(a, b, 5)), [(3,), (2, 1)], label="linspace_tensor_ends"),
    OpSpec("Mul", lambda a, b: gg.square(gg.linspace(a, b, 4, endpoint=False, axis=-1)), [(3,), ()],
           label="linspace_no_endpoint"),
]
