"""erf on the CPU against Python's math.erf, and gelu against its closed form."""
import math

import numpy as np
import pytest

import gpugrad as gg
from gpugrad.ops.elementwise.special import erf_numpy, erfc_numpy

# fdlibm's region boundaries, and the values just below them
EDGES = np.array([0.84375, 1.25, float.fromhex("0x1.6db6ep+1"), 6.0, 28.0])
GRID = np.concatenate([
    np.linspace(-30.0, 30.0, 400_001),
    np.geomspace(1e-310, 1e-3, 2_000), -np.geomspace(1e-310, 1e-3, 2_000),  # tiny and subnormal
    EDGES, -EDGES, np.nextafter(EDGES, 0), np.nextafter(-EDGES, 0),
])


def ulps(values, reference):
    """|values - reference| in units of the reference's last place."""
    return np.abs(values - reference) / np.spacing(np.abs(reference))


def test_erf_within_two_ulp_of_math_erf():
    reference = np.array([math.erf(v) for v in GRID])
    assert ulps(erf_numpy(GRID), reference).max() <= 2


def test_erfc_close_to_math_erfc_including_the_far_tail():
    reference = np.array([math.erfc(v) for v in GRID])
    normal = reference > np.finfo(np.float64).tiny  # below it erfc is subnormal or 0
    assert ulps(erfc_numpy(GRID)[normal], reference[normal]).max() <= 8
    assert np.all(np.abs(erfc_numpy(GRID)[~normal] - reference[~normal]) <= 1e-300)


def test_erf_special_values():
    out = erf_numpy(np.array([0.0, -0.0, np.inf, -np.inf, np.nan]))
    assert out[:4].tolist() == [0.0, 0.0, 1.0, -1.0]
    assert math.copysign(1.0, out[1]) == -1.0  # erf(-0) = -0
    assert np.isnan(out[4])


def test_erf_op_keeps_the_float_dtype_and_shape():
    x = np.linspace(-4, 4, 24).reshape(2, 3, 4)
    y32 = gg.erf(gg.tensor(x.astype(np.float32)))
    assert y32.dtype == np.float32 and y32.shape == (2, 3, 4)
    np.testing.assert_allclose(y32.numpy(), [[[math.erf(v) for v in r] for r in m] for m in x], rtol=1e-6, atol=1e-7)
    assert gg.erf(gg.tensor(0.5, dtype="float64")).item() == math.erf(0.5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_matches_the_erf_form(dtype):
    x = np.linspace(-3, 6, 91).astype(dtype)
    reference = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(np.float64)])
    out = gg.gelu(gg.tensor(x)).numpy()
    assert out.dtype == dtype
    np.testing.assert_allclose(out, reference, rtol=1e-6 if dtype == np.float32 else 1e-13, atol=1e-300)


def test_gelu_far_negative_tail_keeps_relative_accuracy():
    # 1 + erf(x / sqrt 2) cancels to 0 here; x Phi(x) = 0.5 x erfc(-x / sqrt 2) does not.
    # (The tail's condition number is about x^2: rounding x / sqrt 2 alone costs 1e-13 at -30.)
    x = np.array([-6.0, -10.0, -20.0, -30.0])
    reference = np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in x])
    out = gg.gelu(gg.tensor(x)).numpy()
    assert np.all(out < 0)
    np.testing.assert_allclose(out, reference, rtol=1e-12)


def test_gelu_gradient_matches_closed_form():
    x = np.linspace(-5, 5, 41)
    xt = gg.tensor(x)
    with gg.GradientTape() as tape:
        tape.watch(xt)
        y = gg.gelu(xt)
    grad = tape.gradient(y, xt).numpy()
    cdf = np.array([0.5 * math.erfc(-v / math.sqrt(2)) for v in x])
    pdf = np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(grad, cdf + x * pdf, rtol=1e-12, atol=1e-15)


def test_erf_gradient_matches_closed_form():
    x = gg.tensor(np.linspace(-3, 3, 13))
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.erf(x)
    expected = 2 / math.sqrt(math.pi) * np.exp(-x.numpy() ** 2)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), expected, rtol=1e-14)
