"""``x ** 2`` records ``Square`` with NumPy's bits and dtypes; the pow rule makes no BLAS call; ``roll`` is one op.

The table-driven checks (tests/test_gradients.py) cover the gradients of ``Square``, ``Pow``
and ``Roll``; this file covers what a table cannot: which op a call records, its bits against
NumPy on the same input, and what the pow rule calls.
"""
import numpy as np
import pytest

import gpugrad as gg

from .conftest import device_params, recorded_types

FLOATS = ["float16", "float32", "float64"]
INTS = ["int8", "int32", "int64", "uint8"]


def _values(dtype):
    rng = np.random.default_rng(0)
    if np.dtype(dtype).kind == "f":
        a = rng.uniform(-300.0, 300.0, 1000)
        a[:4] = [0.0, -0.0, np.inf, np.nan]
        return a.astype(dtype)
    return rng.integers(0, 100, 1000).astype(dtype)


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("exponent", [2, 2.0], ids=["int", "float"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_float_to_the_power_2_records_square_with_numpys_bits(dtype, exponent, device):
    a = _values(dtype)
    x = gg.tensor(a, device=device)
    assert recorded_types(lambda t: t ** exponent, [x]) == {"Square"}
    assert recorded_types(lambda t: gg.power(t, exponent), [x]) == {"Square"}
    with np.errstate(over="ignore"):
        want = a ** exponent
    got = (x ** exponent).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("dtype", INTS)
def test_int_powers_keep_numpys_dtype_rules(dtype, device):
    a = _values(dtype)
    x = gg.tensor(a, device=device)
    assert recorded_types(lambda t: t ** 2, [x]) <= {"Square"}  # an int is not recorded, or records Square
    got = (x ** 2).numpy()
    assert got.dtype == (a ** 2).dtype == np.dtype(dtype)  # NEP 50: an int ** 2 stays that int, wrapping
    np.testing.assert_array_equal(got, a ** 2)
    assert recorded_types(lambda t: t ** 2.0, [x]) <= {"Pow"}  # int ** a Python float is a float: not Square
    floats = (x ** 2.0).numpy()  # int ** a Python float: gpugrad's default float (NumPy gives float64)
    assert floats.dtype == np.float32
    np.testing.assert_array_equal(floats, (a ** 2.0).astype(np.float32))
    with pytest.raises((ValueError, OverflowError)):  # NumPy: negative integer powers (or -1 out of uint8's range)
        a ** -1
    with pytest.raises((gg.DTypeError, OverflowError), match="Pow"):  # on every device (CuPy's power computes them)
        x ** -1


def test_power_2_has_squares_gradient_to_second_order():
    a = np.random.default_rng(1).uniform(-2, 2, 7)
    for f in (lambda t: t ** 2, gg.square):
        x = gg.tensor(a)
        with gg.GradientTape() as outer:
            outer.watch(x)
            with gg.GradientTape() as inner:
                inner.watch(x)
                y = gg.sum(f(x) * gg.tensor(a))
            g = inner.gradient(y, x)
            total = gg.sum(g)
        np.testing.assert_array_equal(g.numpy(), 2 * a * a)
        np.testing.assert_array_equal(outer.gradient(total, x).numpy(), 2 * a)


def _refuse_blas(monkeypatch):
    def blas(*args, **kwargs):
        raise AssertionError("a NaN check called BLAS")

    for name in ("vdot", "dot", "inner", "matmul"):
        monkeypatch.setattr(np, name, blas)


def test_anomaly_mode_checks_each_op_without_blas(monkeypatch):
    """A BLAS call per op as the finite check would wake OpenBLAS's threads on every op."""
    _refuse_blas(monkeypatch)
    x = gg.tensor(np.linspace(0.5, 2.0, 64))
    with gg.detect_anomaly(), gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.sum(gg.exp(x) * x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), np.exp(x.numpy()) * (1 + x.numpy()), rtol=1e-14)


def test_the_pow_rule_makes_no_blas_call(monkeypatch):
    """Its NaN check is a reduction, not np.vdot: a BLAS call starts OpenBLAS's threads on every gradient."""
    _refuse_blas(monkeypatch)
    x = gg.tensor(np.array([0.0, -1.0, 2.0, 3.0]))
    y = gg.tensor(np.array([0.5, 2.0, 3.0, 0.0]))
    with gg.GradientTape() as tape:
        tape.watch([x, y])
        z = gg.power(x, y)
    gx, gy = tape.gradient(z, [x, y], output_gradients=gg.tensor(np.array([0.0, 1.0, 1.0, 1.0])))
    with np.errstate(all="ignore"):
        want_gx = np.array([1.0, 1.0, 1.0, 1.0]) * np.array([0.5, 2.0, 3.0, 0.0]) * np.array([0.0, -1.0, 2.0, 3.0]) \
            ** np.array([-0.5, 1.0, 2.0, -1.0])
    want_gx[0] = 0.0  # 0 * inf where dy is 0: the value mend (TensorFlow's mul_no_nan)
    np.testing.assert_array_equal(gx.numpy(), want_gx)
    np.testing.assert_allclose(gy.numpy(), [0.0, 0.0, 8.0 * np.log(2.0), np.log(3.0)], rtol=1e-15)


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("shift, axis", [(7, None), (-3, 0), ((1, -2), (0, 1)), ((2, 3), (1, 1))])
def test_roll_is_one_op_and_its_gradient_rolls_back(shift, axis, device):
    a = np.arange(30.0).reshape(5, 6)
    x = gg.tensor(a, device=device)
    assert recorded_types(lambda t: gg.roll(t, shift, axis), [x]) == {"Roll"}
    np.testing.assert_array_equal(gg.roll(x, shift, axis).numpy(), np.roll(a, shift, axis))
    w = np.random.default_rng(2).uniform(-1, 1, a.shape)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.roll(x, shift, axis)
    g = tape.gradient(y, x, output_gradients=gg.tensor(w, device=device)).numpy()
    # <roll(x), w> = <x, roll^-1(w)>: the adjoint of a permutation is its inverse
    np.testing.assert_array_equal(g, np.roll(w, np.negative(shift), axis))


def test_a_constant_exponent_spends_nothing_on_its_gradient():
    """x ** 3.0: the rule asks PowGrad for gx only (want_gy=0), with the bits of the full pass."""
    a = np.random.default_rng(3).uniform(-2.0, 2.0, 50)
    a[:3] = [0.0, -1.0, 1.0]
    x = gg.tensor(a)
    with gg.GradientTape() as outer:
        outer.watch(x)
        with gg.GradientTape() as inner:
            inner.watch(x)
            y = x ** 3.0
        g = inner.gradient(y, x)
    attrs = [record[3] for record in outer._ops if record[0] == "PowGrad"]
    assert attrs == [{"want_gy": 0.0}]
    full_gx, full_gy = gg.raw_ops.pow_grad(x, gg.tensor(3.0, dtype="float64"), gg.ones_like(x))
    np.testing.assert_array_equal(g.numpy(), full_gx.numpy())
    assert not np.all(full_gy.numpy() == 0)  # the default computes both
    np.testing.assert_array_equal(outer.gradient(g, x).numpy(), 6.0 * a)
