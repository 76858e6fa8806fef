"""The remaining ufuncs and the newer activations: forward against NumPy (dtypes, broadcasting,
NaN and inf), the zero gradients of rounding, the booleans that are not recorded, the NaN rules
of fmax/fmin's gradients, ``%``, and third-order checks of their specs."""
import math

import numpy as np
import pytest

import gpugrad as gg
from gpugrad._tools.op_specs import ufuncs as ufunc_specs
from gpugrad.errors import DTypeError, ShapeError

from .conftest import check, gradient_function, recorded_types

UNARY = ["tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh", "log2", "log10",
         "exp2", "floor", "ceil", "trunc", "rint", "sinc", "deg2rad", "rad2deg", "degrees", "radians"]
BINARY = ["logaddexp", "logaddexp2", "arctan2", "hypot", "fmax", "fmin", "mod", "remainder", "fmod"]
BOOLEAN = ["isfinite", "isnan", "isinf", "logical_not"]
LOGICAL = ["logical_and", "logical_or", "logical_xor"]
SPECIALS = np.array([-2.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 3.0, np.inf, -np.inf, np.nan])


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "float16"])
@pytest.mark.parametrize("name", UNARY)
def test_unary_matches_numpy(name, dtype):
    a = (SPECIALS if np.dtype(dtype).kind == "f" else np.array([-3, -1, 0, 1, 2, 5])).astype(dtype)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(a)
        got = getattr(gg.ops, name)(gg.tensor(a))
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6 if want.dtype != np.float16 else 1e-3, equal_nan=True)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("name", BINARY)
def test_binary_matches_numpy_with_broadcasting(name, dtype):
    rng = np.random.default_rng(0)
    a = rng.uniform(-5, 5, (3, 4)).astype(dtype)
    b = (rng.uniform(0.5, 3, (4,)) * np.array([1, -1, 1, -1])).astype(dtype)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(a, b)
        got = getattr(gg.ops, name)(gg.tensor(a), gg.tensor(b))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2", "arctan2", "hypot", "fmax", "fmin", "fmod"])
def test_binary_nan_and_inf_as_numpy(name):
    a, b = np.meshgrid(SPECIALS, SPECIALS)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(a, b)
        got = getattr(gg.ops, name)(gg.tensor(a), gg.tensor(b)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)


def test_round_takes_decimals_as_numpy():
    a = np.array([1.25, 2.5, -3.456, 1234.5])
    for decimals in (0, 1, 2, -1):
        np.testing.assert_array_equal(gg.ops.round(gg.tensor(a), decimals).numpy(), np.round(a, decimals))
    assert gg.tensor(a).round(1).numpy().tolist() == np.round(a, 1).tolist()


def test_modulo_operator():
    x = gg.tensor([5.0, -5.0, 7.5])
    assert (x % 3.0).numpy().tolist() == (np.array([5.0, -5.0, 7.5]) % 3.0).tolist()
    assert (7.0 % gg.tensor([3.0, -2.0])).numpy().tolist() == [1.0, -1.0]
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = x % 3.0
    assert "FloorMod" in {r[0] for r in tape._ops}
    assert tape.gradient(y, x).numpy().tolist() == [1.0, 1.0, 1.0]


def test_mod_and_fmod_gradients_for_the_divisor():
    x, y = gg.tensor([5.0, -5.0]), gg.tensor([3.0, 3.0])
    with gg.GradientTape(persistent=True) as tape:
        tape.watch([x, y])
        m, f = gg.ops.mod(x, y), gg.ops.fmod(x, y)
    assert tape.gradient(m, y).numpy().tolist() == [-1.0, 2.0]  # -floor(x / y)
    assert tape.gradient(f, y).numpy().tolist() == [-1.0, 1.0]  # -trunc(x / y)


@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "rint", "round"])
def test_rounding_is_recorded_with_a_zero_gradient(name):
    x = gg.tensor([-1.3, 0.2, 2.7])
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = getattr(gg.ops, name)(x) * 3.0
    grad = tape.gradient(y, x)
    assert grad is not None and grad.numpy().tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("name", BOOLEAN + LOGICAL)
def test_tests_and_logic_are_boolean_and_not_recorded(name):
    a = np.array([0.0, 1.0, np.nan, np.inf, -2.0])
    b = np.array([1.0, 0.0, 0.0, np.nan, -np.inf])
    args = (a,) if name in BOOLEAN else (a, b)
    xs = [gg.tensor(v) for v in args]
    assert recorded_types(getattr(gg.ops, name), xs) == set()
    got = getattr(gg.ops, name)(*xs)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got.numpy(), getattr(np, name)(*args))


def test_logic_broadcasts_and_reports_bad_shapes():
    got = gg.ops.logical_and(gg.tensor([[True], [False]]), gg.tensor([True, False, True]))
    np.testing.assert_array_equal(got.numpy(), np.logical_and([[True], [False]], [True, False, True]))
    with pytest.raises(ShapeError, match="logical_or"):
        gg.ops.logical_or(gg.tensor([True, False]), gg.tensor([True, False, True]))
    with pytest.raises(ShapeError, match="Hypot"):
        gg.ops.hypot(gg.tensor([1.0, 2.0]), gg.tensor([1.0, 2.0, 3.0]))


def test_unsupported_dtype_is_a_dtype_error():
    with pytest.raises(DTypeError, match="Floor"):
        gg.ops.floor(gg.tensor(np.array([1 + 2j])))


def test_fmax_fmin_gradient_goes_to_the_non_nan_side():
    nan = float("nan")
    x, y = gg.tensor([1.0, nan, 3.0, nan]), gg.tensor([nan, 2.0, 3.0, nan])
    for name in ("fmax", "fmin"):
        with gg.GradientTape() as tape:
            tape.watch([x, y])
            out = getattr(gg.ops, name)(x, y)
        gx, gy = tape.gradient(out, [x, y])
        assert gx.numpy().tolist() == [1.0, 0.0, 1.0, 1.0]  # a tie and two NaNs: x
        assert gy.numpy().tolist() == [0.0, 1.0, 0.0, 0.0]


def test_nan_to_num_forward_and_gradient():
    a = np.array([np.nan, np.inf, -np.inf, 2.0], dtype=np.float32)
    np.testing.assert_array_equal(gg.ops.nan_to_num(gg.tensor(a)).numpy(), np.nan_to_num(a))
    x = gg.tensor(a)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.ops.nan_to_num(x, nan=1.0, posinf=5.0, neginf=-5.0)
    assert y.numpy().tolist() == [1.0, 5.0, -5.0, 2.0]
    assert tape.gradient(y, x).numpy().tolist() == [0.0, 0.0, 0.0, 1.0]


def test_sinc_gradient_is_finite_at_zero():
    x = gg.tensor([0.0, 1e-9, 0.5], dtype="float64")
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.ops.sinc(x)
    g = tape.gradient(y, x).numpy()
    want = [0.0, -math.pi ** 2 / 3 * 1e-9, (math.cos(math.pi / 2) - np.sinc(0.5)) / 0.5]
    np.testing.assert_allclose(g, want, rtol=1e-9, atol=1e-15)


def test_degrees_and_radians_are_numpys_aliases():
    assert gg.ops.radians is gg.ops.deg2rad and gg.ops.degrees is gg.ops.rad2deg
    assert gg.ops.mod is gg.ops.remainder and gg.ops.swish is gg.ops.silu


# ---------------------------------------------------------------- activations


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


ACTIVATIONS = {
    "silu": lambda x: x * _sigmoid(x),
    "mish": lambda x: x * np.tanh(np.log1p(np.exp(x))),
    "hard_tanh": lambda x: np.clip(x, -1, 1),
    "hard_sigmoid": lambda x: np.clip(x + 3, 0, 6) / 6,
    "log_sigmoid": lambda x: np.log(_sigmoid(x)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_forward(name, dtype):
    a = np.linspace(-6, 6, 25).astype(dtype)
    got = getattr(gg.ops, name)(gg.tensor(a))
    assert got.dtype == a.dtype
    np.testing.assert_allclose(got.numpy(), ACTIVATIONS[name](a.astype(np.float64)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_of_integers_is_float32_and_large_inputs_are_finite(name):
    assert getattr(gg.ops, name)(gg.tensor([1, 2])).dtype == np.float32
    out = getattr(gg.ops, name)(gg.tensor([-1000.0, 1000.0], dtype="float64")).numpy()
    assert np.all(np.isfinite(out))


def test_log_sigmoid_gradient_is_stable():
    x = gg.tensor([-1000.0, 0.0, 1000.0], dtype="float64")
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.ops.log_sigmoid(x)
    assert tape.gradient(y, x).numpy().tolist() == [1.0, 0.5, 0.0]


def test_hard_tanh_bounds_and_gradient_as_pytorch():
    x = gg.tensor([-2.0, -0.5, 0.0, 0.5, 2.0])
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.ops.hard_tanh(x, min_val=-0.5, max_val=0.5)
    assert y.numpy().tolist() == [-0.5, -0.5, 0.0, 0.5, 0.5]
    assert tape.gradient(y, x).numpy().tolist() == [0.0, 0.0, 1.0, 0.0, 0.0]  # 0 at the bounds
    with pytest.raises(ValueError, match="min_val"):
        gg.ops.hard_tanh(x, 1.0, -1.0)


# ---------------------------------------------------------------- third order of this family's specs


@pytest.mark.parametrize("spec", [pytest.param(s, id=s.id) for s in ufunc_specs.SPECS])
def test_third_order_float64(spec):
    xs = [gg.tensor(a) for a in spec.inputs()]
    second = gradient_function(spec.fn, len(xs))
    check(gradient_function(second, len(xs), seed=2), xs, delta=1e-6, tol=1e-5)
