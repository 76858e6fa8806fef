"""Forward values of the matrix-structure and shape-and-order ops against NumPy, their errors,
the None gradients of the integer results, and what sort does at a tie."""
import numpy as np
import pytest

import gpugrad as gg
from gpugrad.errors import DTypeError, ShapeError

RNG = np.random.default_rng(0)
A = RNG.permutation(24).reshape(2, 3, 4) / 7.0 - 1.5  # distinct values
M = RNG.normal(size=(3, 5))
V = RNG.normal(size=4)


def same(t, expected):
    expected = np.asarray(expected)
    assert t.shape == expected.shape
    np.testing.assert_allclose(t.numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("offset", [-2, -1, 0, 1, 3, 9])
@pytest.mark.parametrize("axes", [(0, 1), (1, 0), (1, 2), (-1, 0), (2, -3)])
def test_diagonal_and_trace(offset, axes):
    same(gg.diagonal(gg.tensor(A), offset, *axes), np.diagonal(A, offset, *axes))
    same(gg.tensor(A).trace(offset, *axes), np.trace(A, offset, *axes))


def test_diagonal_is_a_copy():
    x = gg.Variable(M)
    d = x.diagonal()
    x.assign(np.zeros_like(M))
    same(d, np.diagonal(M))


@pytest.mark.parametrize("k", [-2, 0, 1, 6])
def test_diag_tril_triu(k):
    same(gg.diag(gg.tensor(V), k), np.diag(V, k))
    same(gg.diag(gg.tensor(M), k), np.diag(M, k))
    for x in (A, M, V):
        same(gg.tril(gg.tensor(x), k), np.tril(x, k))
        same(gg.triu(gg.tensor(x), k), np.triu(x, k))


def test_triangle_gradient_masks():
    x = gg.tensor(A)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.tril(x, -1)
    same(tape.gradient(y, x), np.tril(np.ones_like(A), -1))


@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                                    ((2, 3, 4), (5, 4, 6)), ((2, 3, 4), (4,)), ((4,), (2, 4, 3)), ((), (2, 3))])
def test_dot(sa, sb):
    a, b = RNG.normal(size=sa), RNG.normal(size=sb)
    same(gg.dot(gg.tensor(a), gg.tensor(b)), np.dot(a, b))


@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((2, 3), (4, 3)), ((2, 2, 3), (3,)), ((), (2, 3))])
def test_inner(sa, sb):
    a, b = RNG.normal(size=sa), RNG.normal(size=sb)
    same(gg.inner(gg.tensor(a), gg.tensor(b)), np.inner(a, b))


@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((2, 3), (4,)), ((2, 2), (3, 1)), ((2,), (2, 3)),
                                    ((2, 1, 3), (2, 2)), ((), (2,))])
def test_outer_kron(sa, sb):
    a, b = RNG.normal(size=sa), RNG.normal(size=sb)
    same(gg.outer(gg.tensor(a), gg.tensor(b)), np.outer(a, b))
    same(gg.kron(gg.tensor(a), gg.tensor(b)), np.kron(a, b))


def test_vdot_and_cross():
    a, b = RNG.normal(size=(2, 3)), RNG.normal(size=6)
    same(gg.vdot(gg.tensor(a), gg.tensor(b)), np.vdot(a, b))
    a, b = RNG.normal(size=(4, 3)), RNG.normal(size=3)
    same(gg.cross(gg.tensor(a), gg.tensor(b)), np.cross(a, b))
    a, b = RNG.normal(size=(3, 2, 4)), RNG.normal(size=(4, 3))
    same(gg.cross(gg.tensor(a), gg.tensor(b), axisa=0, axisb=1, axisc=1), np.cross(a, b, axisa=0, axisb=1, axisc=1))
    a, b = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    same(gg.cross(gg.tensor(a), gg.tensor(b), axis=0), np.cross(a, b, axis=0))


@pytest.mark.parametrize("call", [
    lambda: gg.diagonal(gg.tensor(V)),
    lambda: gg.diagonal(gg.tensor(M), 0, 1, 1),
    lambda: gg.diagonal(gg.tensor(M), 0, 0, 2),
    lambda: gg.diag(gg.tensor(A)),
    lambda: gg.tril(gg.tensor(1.0)),
    lambda: gg.dot(gg.tensor(M), gg.tensor(M)),
    lambda: gg.inner(gg.tensor(V), gg.tensor(M)),
    lambda: gg.vdot(gg.tensor(V), gg.tensor(M)),
    lambda: gg.cross(gg.tensor([1.0, 2.0]), gg.tensor([3.0, 4.0])),
    lambda: gg.cross(gg.ones((2, 3)), gg.ones((4, 3))),
    lambda: gg.rot90(gg.tensor(M), axes=(0, 0)),
    lambda: gg.rot90(gg.tensor(V)),
    lambda: gg.fliplr(gg.tensor(V)),
    lambda: gg.flip(gg.tensor(M), (0, 0)),
    lambda: gg.repeat(gg.tensor(M), [1, 2], axis=0),
    lambda: gg.repeat(gg.tensor(M), -1),
    lambda: gg.roll(gg.tensor(M), (1, 2, 3), (0, 1)),
    lambda: gg.moveaxis(gg.tensor(A), (0, 1), 0),
    lambda: gg.swapaxes(gg.tensor(A), 0, 3),
    lambda: gg.vstack([gg.ones(3), gg.ones(4)]),
    lambda: gg.append(gg.tensor(M), gg.tensor(V), axis=0),
    lambda: gg.sort(gg.tensor(1.0)),
    lambda: gg.partition(gg.tensor(V), 4),
    lambda: gg.searchsorted(gg.tensor(M), 0.0),
    lambda: gg.nonzero(gg.tensor(1.0)),
    lambda: gg.take_along_axis(gg.tensor(M), gg.tensor([0, 1]), 0),
])
def test_errors(call):
    with pytest.raises(ShapeError):
        call()


def test_type_errors():
    with pytest.raises(DTypeError):
        gg.repeat(gg.tensor(V), 1.5)
    with pytest.raises(TypeError):
        gg.where(gg.tensor([True]), 1.0)
    with pytest.raises(ValueError):
        gg.searchsorted(gg.tensor(V), 0.0, side="middle")


def test_repeat_tile_roll_flip():
    x = gg.tensor(A)
    same(gg.repeat(x, 2), np.repeat(A, 2))
    same(x.repeat([1, 0, 2], axis=1), np.repeat(A, [1, 0, 2], axis=1))
    same(x.repeat(3, axis=-1), np.repeat(A, 3, axis=-1))
    for reps in [2, (2, 1), (1, 2, 1, 3), (0, 2)]:
        same(gg.tile(x, reps), np.tile(A, reps))
    for shift, axis in [(1, None), (-5, None), (2, 1), ((1, 2), (0, 2)), (1, (0, 1)), ((1, 1), (1, 1)), (7, -1)]:
        same(gg.roll(x, shift, axis), np.roll(A, shift, axis))
    for axis in [None, 0, -1, (0, 2)]:
        same(gg.flip(x, axis), np.flip(A, axis))
    same(gg.fliplr(x), np.fliplr(A))
    same(gg.flipud(x), np.flipud(A))


def test_repeat_gradient_sums_groups():
    x = gg.tensor(V)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.repeat(x, [1, 0, 2, 3])
    same(tape.gradient(y, x), [1.0, 0.0, 2.0, 3.0])


@pytest.mark.parametrize("k", range(-2, 6))
@pytest.mark.parametrize("axes", [(0, 1), (1, 0), (2, 0), (-1, 1)])
def test_rot90(k, axes):
    same(gg.rot90(gg.tensor(A), k, axes), np.rot90(A, k, axes))


def test_axes_and_ravel():
    x = gg.tensor(A)
    for s, d in [(0, -1), ((0, 1), (2, 0)), (-1, 0)]:
        same(gg.moveaxis(x, s, d), np.moveaxis(A, s, d))
    same(x.swapaxes(0, -1), A.swapaxes(0, -1))
    same(x.ravel(), A.ravel())
    same(gg.ravel(x), np.ravel(A))


@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
def test_atleast(name):
    fn, np_fn = getattr(gg, name), getattr(np, name)
    for x in [np.array(2.0), np.ones(3), np.ones((2, 3)), A]:
        same(fn(gg.tensor(x)), np_fn(x))
    several = fn(gg.tensor(1.0), gg.tensor([1.0, 2.0]))
    assert isinstance(several, tuple)
    for t, e in zip(several, np_fn(np.array(1.0), np.array([1.0, 2.0]))):
        same(t, e)


@pytest.mark.parametrize("name", ["vstack", "hstack", "dstack", "column_stack"])
def test_stacks(name):
    fn, np_fn = getattr(gg, name), getattr(np, name)
    for xs in [[np.ones(3), np.zeros(3)], [np.ones((2, 3)), np.zeros((2, 3))], [np.ones((2, 2, 2)), A[:, :2, :2]]]:
        same(fn([gg.tensor(x) for x in xs]), np_fn(xs))


def test_append():
    same(gg.append(gg.tensor(A), [1.0, 2.0]), np.append(A, [1.0, 2.0]))
    same(gg.append(gg.tensor(A), gg.tensor(A), axis=1), np.append(A, A, axis=1))


@pytest.mark.parametrize("axis", [-1, 0, 1, None])
def test_sort_argsort_take_along_axis(axis):
    x = gg.tensor(A)
    same(gg.sort(x, axis), np.sort(A, axis))
    same(gg.argsort(x, axis), np.argsort(A, axis))
    assert gg.argsort(x, axis).dtype == np.int64
    same(gg.take_along_axis(x, np.argsort(A, axis), axis), np.take_along_axis(A, np.argsort(A, axis), axis))


@pytest.mark.parametrize("kth", [0, 2, -1, (0, 3)])
def test_partition(kth):
    got = gg.partition(gg.tensor(A), kth).numpy()
    ref = np.sort(A, -1)
    for k in np.atleast_1d(kth) % A.shape[-1]:
        np.testing.assert_array_equal(got[..., k], ref[..., k])
        assert (got[..., :k] <= got[..., k:k + 1]).all() and (got[..., k + 1:] >= got[..., k:k + 1]).all()
    np.testing.assert_array_equal(np.sort(got, -1), ref)


def test_partition_gradient_follows_elements():
    x = gg.tensor(V)
    w = gg.tensor(np.arange(4.0))
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.sum(gg.partition(x, 1) * w)
    order = np.argpartition(V, 1)
    expected = np.zeros(4)
    expected[order] = np.arange(4.0)
    same(tape.gradient(y, x), expected)


def test_searchsorted_and_nonzero():
    s, v = np.sort(RNG.normal(size=6)), RNG.normal(size=(2, 3))
    same(gg.searchsorted(gg.tensor(s), gg.tensor(v)), np.searchsorted(s, v))
    same(gg.tensor(s).searchsorted(0.1, side="right"), np.searchsorted(s, 0.1, side="right"))
    order = RNG.permutation(6)
    same(gg.searchsorted(gg.tensor(s[order]), v, sorter=np.argsort(order)),
         np.searchsorted(s[order], v, sorter=np.argsort(order)))
    b = (A > 0) * A
    for got in (gg.nonzero(gg.tensor(b)), gg.tensor(b).nonzero(), gg.where(gg.tensor(b))):
        assert isinstance(got, tuple) and len(got) == 3
        for t, e in zip(got, np.nonzero(b)):
            same(t, e)
            assert t.dtype == np.int64


def test_integer_results_have_no_gradient():
    x = gg.tensor(A)
    with gg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        outs = [gg.argsort(x), gg.searchsorted(gg.reshape(gg.sort(x, None), -1), x)] + list(gg.nonzero(x))
    for out in outs:  # integer targets cannot be differentiated; as floats they are not connected to x
        assert tape.gradient(gg.cast(out, np.float64), x) is None
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.sum(x * gg.cast(gg.argsort(x), np.float64))
    same(tape.gradient(y, x), np.argsort(A).astype(np.float64))


def test_copy():
    x = gg.tensor(A)
    c = x.copy()
    same(c, A)
    assert c.data is not x.data
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.copy(x) * 2.0
    same(tape.gradient(y, x), np.full_like(A, 2.0))


def test_sort_at_a_tie():
    """At a tie the derivative of sort is not defined: each tied element gets the gradient of the
    position the stable order puts it in (the first of equal values takes the earlier position)."""
    x = gg.tensor([2.0, 1.0, 2.0])
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.sum(gg.sort(x) * gg.tensor([1.0, 10.0, 100.0]))
    same(tape.gradient(y, x), [10.0, 1.0, 100.0])
