"""The branch-free CPU formulas give np.where's bits exactly.

NumPy 2.4's where branches per element (slow on a mask of mixed signs), so the
hot CPU paths blend bits instead (``gpugrad.backend.cpu_fast``: ``select``,
``select_or_zero``, ``split_by_mask``). Each is checked here against the
np.where formula it replaced, bit for bit: NaNs with payloads and signs (a
signaling one too), +-inf, +-0.0, subnormals, the largest finite values, random
data; float16/32/64; broadcast shapes; 0-d arrays; masks below and above
SELECT_MIN (where the helpers hand over to np.where themselves).
"""
import operator

import numpy as np
import pytest

import gpugrad as gg
from gpugrad.ops import activations, arithmetic
from gpugrad.backend.cpu_fast import SELECT_MIN, select

from .conftest import DTYPES, assert_same, data, specials  # shared bit-exact helpers


def pairs(dtype, seed=0):
    """(a, b) arrays holding every pair of special values, plus random data: past SELECT_MIN."""
    s = specials(dtype)
    a, b = np.repeat(s, s.size), np.tile(s, s.size)
    return np.concatenate([a, data(dtype, SELECT_MIN, seed)]), np.concatenate([b, data(dtype, SELECT_MIN, seed + 1)])


def shapes(dtype, seed=0):
    """(x, other) operand pairs: flat past SELECT_MIN, short (np.where's path), broadcast, 0-d."""
    a, b = pairs(dtype, seed)
    col = data(dtype, 64, seed + 2).reshape(64, 1)
    row = data(dtype, 64, seed + 3)[::-1].reshape(1, 64)  # 64 * 64 = 4096 >= SELECT_MIN
    yield a, b
    yield a[:100], b[:100]
    yield col, row
    yield row, col
    yield col, np.broadcast_to(row, (64, 64))  # a broadcast view as an operand
    for v in specials(dtype)[[0, 1, 6, 16]]:
        yield np.array(v), np.array(dtype(-3.0))
        yield np.array(dtype(2.0)), np.array(v)


def test_the_cases_reach_both_paths_of_the_helpers():
    a, _ = pairs(np.float32)
    assert a.size >= SELECT_MIN and 100 < SELECT_MIN and 64 * 64 >= SELECT_MIN


# ---------------------------------------------------------------- select itself


@pytest.mark.parametrize("dtype", DTYPES)
def test_select_is_where_bit_for_bit(dtype):
    rng = np.random.default_rng(1)
    for a, b in shapes(dtype):
        for mask in (rng.random(np.broadcast_shapes(a.shape, b.shape)) < 0.5, a > 0, b > 0, np.isnan(a)):
            assert_same(select(mask, a, b), np.where(mask, a, b))


def test_select_of_0d_operands_is_a_0d_array_as_where_gives():
    out = select(np.array(True), np.array(np.float32(1.5)), np.float32(2.0))
    assert isinstance(out, np.ndarray) and out.shape == () and out.dtype == np.float32 and out == 1.5


def test_select_with_a_0d_operand_past_select_min():
    x = data(np.float32, 4096, 5)
    assert_same(select(x > 0, x, np.float32(-0.0)), np.where(x > 0, x, np.float32(-0.0)))
    assert_same(select(x > 0, np.array(np.nan, np.float32), x), np.where(x > 0, np.array(np.nan, np.float32), x))


def test_select_hands_other_cases_to_where():
    x = np.arange(-2048, 2048)
    m = x % 3 == 0
    np.testing.assert_array_equal(select(m, x, -x), np.where(m, x, -x))  # integers
    f = x.astype(np.float32)
    out = select(m, f, f.astype(np.float64))  # two dtypes: promoted as np.where does
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, np.where(m, f, f.astype(np.float64)))
    out = select(x % 3, f, -f)  # a non-boolean mask: nonzero is true
    np.testing.assert_array_equal(out, np.where(x % 3, f, -f))


def test_select_raises_on_shapes_that_do_not_broadcast():
    with pytest.raises(ValueError):
        select(np.ones(4096, bool), np.ones(4096, np.float32), np.ones(3, np.float32))


# ---------------------------------------------------------------- the formulas


def leaky_relu_where(x, alpha):
    return np.where(x > 0, x, x * x.dtype.type(alpha))


def leaky_relu_grad_where(x, dy, alpha):
    return np.where(x > 0, dy, dy * dy.dtype.type(alpha))


def elu_grad_where(x, dy, alpha):
    return dy * np.where(x > 0, 1, np.exp(np.minimum(x, 0)) * x.dtype.type(alpha)).astype(dy.dtype, copy=False)


def pick_grad_where(x_is_picked, x, y, dy):
    x_wins = x_is_picked(x, y)
    zero = dy.dtype.type(0)
    return np.where(x_wins, dy, zero), np.where(x_wins, zero, dy)


def clip_grad_where(x, dy, lo, hi):
    return np.where((x >= lo) & (x <= hi), dy, dy.dtype.type(0))


ALPHAS = [0.2, 0.0, -0.0, 1.0, 1.7, -0.3, 1e-30]


@pytest.mark.parametrize("dtype", DTYPES)
def test_leaky_relu_forward(dtype):
    with np.errstate(all="ignore"):
        for x, _ in shapes(dtype):
            for alpha in ALPHAS:
                out = gg.leaky_relu(gg.tensor(x), alpha=alpha).numpy()
                assert_same(out, leaky_relu_where(x, alpha))


@pytest.mark.parametrize("dtype", DTYPES)
def test_leaky_relu_grad(dtype):
    with np.errstate(all="ignore"):
        for x, dy in shapes(dtype):
            for alpha in ALPHAS:
                assert_same(activations._leaky_relu_grad_cpu(x, dy, alpha=alpha), leaky_relu_grad_where(x, dy, alpha))
                assert_same(activations._leaky_relu_grad_cpu(dy, x, alpha=alpha), leaky_relu_grad_where(dy, x, alpha))


@pytest.mark.parametrize("dtype", DTYPES)
def test_elu_grad(dtype):
    with np.errstate(all="ignore"):
        for x, dy in shapes(dtype):
            for alpha in ALPHAS + [np.inf, np.nan]:
                assert_same(activations._elu_grad_cpu(x, dy, alpha=alpha), elu_grad_where(x, dy, alpha))
                assert_same(activations._elu_grad_cpu(dy, x, alpha=alpha), elu_grad_where(dy, x, alpha))


def test_elu_grad_of_a_float16_x_and_a_float32_dy():
    x, dy = data(np.float16, 4096, 7), data(np.float32, 4096, 8)
    with np.errstate(all="ignore"):
        assert_same(activations._elu_grad_cpu(x, dy, alpha=0.5), elu_grad_where(x, dy, 0.5))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("picked", [operator.ge, operator.le])
def test_maximum_minimum_grad(dtype, picked):
    rng = np.random.default_rng(3)
    with np.errstate(all="ignore"):
        for x, y in shapes(dtype):
            full = np.broadcast_shapes(x.shape, y.shape)
            ties = np.where(rng.random(full) < 0.2, x, y)  # x == y often: the tie goes to x
            for dy in (data(dtype, int(np.prod(full)), 4).reshape(full), y, np.array(dtype(-0.0))):
                for yy in (y, ties):
                    new = arithmetic._pick_grad_cpu(picked, x, yy, dy)
                    old = pick_grad_where(picked, x, yy, dy)
                    assert_same(new[0], old[0])
                    assert_same(new[1], old[1])


@pytest.mark.parametrize("dtype", DTYPES)
def test_clip_grad(dtype):
    with np.errstate(all="ignore"):
        for x, dy in shapes(dtype):
            for lo, hi in ((-1.0, 1.0), (0.0, 0.0), (-np.inf, np.inf), (np.nan, 1.0),
                           (np.full((64, 1), -0.5, dtype), np.array(dtype(2.0)))):
                try:
                    old = clip_grad_where(x, dy, lo, hi)
                except ValueError:  # a (64, 1) bound against a flat x
                    continue
                assert_same(arithmetic._clip_grad_cpu(x, dy, lo=lo, hi=hi), old)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gg_where_forward(dtype):
    for x, y in shapes(dtype):
        for mask in (x > 0, np.broadcast_to(y > 0, np.broadcast_shapes(x.shape, y.shape))):
            assert_same(gg.where(mask, gg.tensor(x), gg.tensor(y)).numpy(), np.where(mask, x, y))


@pytest.mark.parametrize("dtype", DTYPES)
def test_gg_where_gradient(dtype):
    x, y = pairs(dtype)
    mask = x > y
    dy = data(dtype, x.size, 9)
    tx, ty = gg.Variable(x), gg.Variable(y)
    with gg.GradientTape() as tape:
        out = gg.where(mask, tx, ty)
    gx, gy = tape.gradient(out, [tx, ty], output_gradients=gg.tensor(dy))
    assert_same(gx.numpy(), np.where(mask, dy, dtype(0)))
    assert_same(gy.numpy(), np.where(mask, dtype(0), dy))
