"""Specs of the matrix-structure ops (gpugrad.ops.matrix.structure): each is a composition of
differentiable ops, so each spec names the op type it records and the op as its label."""
import gpugrad as gg

from . import OpSpec

SPECS = [
    OpSpec("GetItem", lambda x: gg.diagonal(x, 1, 0, 2), [(3, 2, 4)], label="diagonal"),
    OpSpec("GetItem", lambda x: gg.diagonal(x * x, -1), [(4, 3)], label="diagonal_squared"),
    OpSpec("GetItem", lambda x: x.trace(axis1=-1, axis2=0), [(3, 2, 3)], label="trace"),
    OpSpec("GetItemGrad", lambda v: gg.diag(v, 1), [(3,)], label="diag_vector"),
    OpSpec("GetItemGrad", lambda v: gg.diag(v * v, -2) * 3.0, [(2,)], label="diag_vector_squared"),
    OpSpec("GetItem", lambda x: gg.diag(x), [(3, 4)], label="diag_matrix"),
    OpSpec("Where", lambda x: gg.tril(x, -1), [(2, 3, 4)], label="tril_batched"),
    OpSpec("Where", lambda x: gg.triu(x * x, 1), [(4, 3)], label="triu_squared"),
    OpSpec("Where", lambda x: gg.triu(x), [(3,)], label="triu_vector"),
    OpSpec("Mul", gg.outer, [(3,), (2, 2)], label="outer"),
    OpSpec("TensorDot", gg.inner, [(2, 3), (4, 3)], label="inner"),
    OpSpec("TensorDot", lambda a, b: gg.inner(a * a, b), [(3,), (3,)], label="inner_vectors_squared"),
    OpSpec("MatMul", gg.dot, [(2, 3), (3, 4)], label="dot_matrices"),
    OpSpec("MatMul", gg.dot, [(2, 3, 4), (4,)], label="dot_nd_vector"),
    OpSpec("TensorDot", lambda a, b: a.dot(b), [(2, 3), (2, 3, 4)], label="dot_nd_md"),
    OpSpec("MatMul", lambda a, b: gg.vdot(a, b * b), [(2, 3), (6,)], label="vdot"),
    OpSpec("Mul", gg.kron, [(2, 3), (2, 1)], label="kron"),
    OpSpec("Mul", lambda a, b: gg.kron(a, b * b), [(2,), (2, 2)], label="kron_broadcast"),
    OpSpec("Stack", gg.cross, [(2, 3), (3,)], label="cross"),
    OpSpec("Stack", lambda a, b: gg.cross(a, b, axisa=0, axisb=1, axisc=0), [(3, 2), (2, 3)], label="cross_axes"),
]
