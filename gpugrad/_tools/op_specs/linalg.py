"""Specs of the linear algebra ops: matmul (batched, vectors, transposed), einsum, tensordot."""
import gpugrad as gg

from . import OpSpec


def einsum(subscripts):
    return lambda *xs: gg.einsum(subscripts, *xs)


SPECS = [
    # matmul
    OpSpec("MatMul", gg.matmul, [(3, 4), (4, 2)]),
    OpSpec("MatMul", lambda a, b: a @ b, [(2, 3, 4), (2, 4, 5)], label="batched"),
    OpSpec("MatMul", gg.matmul, [(2, 1, 3, 4), (5, 4, 2)], label="batch_broadcast"),
    OpSpec("MatMul", gg.matmul, [(2, 3, 4), (4, 5)], label="batch_times_matrix"),
    OpSpec("MatMul", gg.matmul, [(3, 4), (2, 4, 5)], label="matrix_times_batch"),
    OpSpec("MatMul", gg.matmul, [(4,), (4, 3)], label="vector_left"),
    OpSpec("MatMul", gg.matmul, [(2, 3, 4), (4,)], label="vector_right"),
    OpSpec("MatMul", gg.matmul, [(4,), (2, 4, 3)], label="vector_left_batch"),
    OpSpec("MatMul", gg.matmul, [(4,), (4,)], label="dot"),
    OpSpec("MatMul", lambda a, b: gg.matmul(a, b, transpose_a=True), [(4, 3), (4, 2)], label="ta"),
    OpSpec("MatMul", lambda a, b: gg.matmul(a, b, transpose_b=True), [(3, 4), (2, 4)], label="tb"),
    OpSpec("MatMul", lambda a, b: gg.matmul(a, b, transpose_a=True, transpose_b=True),
           [(2, 4, 3), (2, 4)], label="ta_tb"),
    OpSpec("MatMul", lambda a, b: gg.matmul(a, b, transpose_b=True), [(2, 3, 4), (5, 4)],
           label="batch_tb"),
    # einsum
    OpSpec("Einsum", einsum("ij,jk->ik"), [(3, 4), (4, 2)]),
    OpSpec("Einsum", einsum("bij,bjk->bik"), [(2, 3, 4), (2, 4, 2)], label="batched"),
    OpSpec("Einsum", einsum("ij,jk"), [(3, 4), (4, 2)], label="implicit"),
    OpSpec("Einsum", einsum("ba,ca"), [(3, 4), (2, 4)], label="implicit_sorted"),
    OpSpec("Einsum", einsum("...ij,jk->...ik"), [(2, 3, 4), (4, 2)], label="ellipsis"),
    OpSpec("Einsum", einsum("i...,i..."), [(3, 2), (3, 1)], label="ellipsis_broadcast"),
    OpSpec("Einsum", einsum("ij,jk,kl->il"), [(2, 3), (3, 4), (4, 2)], label="three"),
    OpSpec("Einsum", einsum("ij->ji"), [(3, 4)], label="transpose"),
    OpSpec("Einsum", einsum("ij->i"), [(3, 4)], label="sum"),
    OpSpec("Einsum", einsum("ij,j->ij"), [(3, 4), (1,)], label="size1_broadcast"),
    OpSpec("Einsum", einsum("i,j->ij"), [(3,), (4,)], label="outer"),
    OpSpec("Einsum", einsum("ii->i"), [(3, 3)], label="diagonal"),
    OpSpec("Einsum", einsum("ii"), [(3, 3)], label="trace"),
    OpSpec("Einsum", einsum("iij,jk->ik"), [(3, 3, 2), (2, 4)], label="diagonal_contract"),
    OpSpec("Einsum", einsum("iii->"), [(2, 2, 2)], label="triple"),
    OpSpec("Einsum", lambda x: gg.einsum("ij,ij->i", x, x), [(3, 4)], label="same_operand"),
    # tensordot
    OpSpec("TensorDot", gg.tensordot, [(2, 3, 4), (3, 4, 2)]),
    OpSpec("TensorDot", lambda a, b: gg.tensordot(a, b, axes=1), [(2, 3), (3, 4)], label="axes1"),
    OpSpec("TensorDot", lambda a, b: gg.tensordot(a, b, axes=0), [(2, 3), (2,)], label="outer"),
    OpSpec("TensorDot", lambda a, b: gg.tensordot(a, b, axes=([0, 2], [1, 0])), [(2, 3, 4), (4, 2, 3)],
           label="pairs"),
    OpSpec("TensorDot", lambda a, b: gg.tensordot(a, b, axes=(-1, 0)), [(2, 3), (3, 2)], label="negative"),
]

# dense: x @ kernel + bias, then an activation, in one op
DENSE_SPECS = [
    OpSpec("Dense", gg.dense, [(3, 4), (4, 2)], label="no_bias"),
    OpSpec("Dense", gg.dense, [(3, 4), (4, 2), (2,)], label="bias"),
    OpSpec("Dense", lambda x, w, b: gg.dense(x, w, b, activation="relu"), [(3, 4), (4, 2), (2,)], label="relu"),
    OpSpec("Dense", lambda x, w, b: gg.dense(x, w, b, activation="tanh"), [(3, 4), (4, 2), (2,)], label="tanh"),
    OpSpec("Dense", lambda x, w, b: gg.dense(x, w, b, activation="sigmoid"), [(3, 4), (4, 2), (2,)],
           label="sigmoid"),
    OpSpec("Dense", lambda x, w: gg.dense(x, w, activation="relu"), [(3, 4), (4, 2)], label="relu_no_bias"),
    # x @ w + b cancels to near 0 in one output, whose tanh' gradient rounds: float16 reached 6.6 eps of the 8
    OpSpec("Dense", lambda x, w, b: gg.dense(x, w, b, activation="tanh"), [(4,), (4, 3), (3,)], label="vector",
           low_factor=2.0),
    OpSpec("Dense", lambda x, w, b: gg.dense(x, w, b, activation="sigmoid"), [(2, 3, 4), (4, 2), (2,)],
           label="batched"),
]
SPECS += DENSE_SPECS
