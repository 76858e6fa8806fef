"""A tensor where an op takes a value: differentiable where the value is data (full's fill, linspace's
ends), a clear GradientError where the op takes it as a constant and a tape follows it (never a
silent None gradient)."""
import numpy as np
import pytest

import gpugrad as gg

from .conftest import check

FILL_DTYPES = ["bool", "int8", "int32", "float16", "float32", "float64"]


@pytest.mark.parametrize("dt", FILL_DTYPES)
def test_full_keeps_a_tensor_fills_dtype_as_numpy(dt):
    fill = np.asarray(3, dtype=dt)
    got, want = gg.full((2, 3), gg.tensor(fill)), np.full((2, 3), fill)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.numpy(), want)
    got, want = gg.full((2, 3), gg.tensor([1, 0, 2], dtype=dt)), np.full((2, 3), np.array([1, 0, 2], dtype=dt))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("dt", FILL_DTYPES)
def test_full_like_casts_a_tensor_fill_to_its_dtype_as_numpy(dt):
    like = np.zeros((2, 3), dtype=dt)
    fill = np.asarray(1.0, dtype=np.float64)
    got, want = gg.full_like(gg.tensor(like), gg.tensor(fill)), np.full_like(like, fill)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.numpy(), want)


def test_full_is_differentiable_in_its_fill():
    v = gg.tensor(1.5, dtype="float64")
    with gg.GradientTape() as tape:
        tape.watch(v)
        y = gg.full((2, 3), v)
    assert tape.gradient(y, v).item() == 6.0  # the sum of dy over the six copies
    check(lambda v: gg.square(gg.full((2, 3), v)), [v], delta=1e-6, tol=1e-6)
    check(lambda x, v: gg.full_like(x, v, dtype="float64") * x, [gg.tensor(np.ones((2, 3))), gg.tensor(np.array([1.0, 2.0, 3.0]))],
          delta=1e-6, tol=1e-6)


def test_full_refuses_a_fill_on_another_device(stand_in_gpu):
    with pytest.raises(gg.DeviceError, match="full: the fill is on 'cpu'"):
        gg.full((2,), gg.tensor(1.0), device=stand_in_gpu)


LINSPACE_CASES = [
    dict(num=5), dict(num=4, endpoint=False), dict(num=1), dict(num=0), dict(num=3, axis=1),
    dict(num=3, axis=-1), dict(num=6, dtype="int64"), dict(num=5, endpoint=False, dtype="int32"),
]


@pytest.mark.parametrize("kw", LINSPACE_CASES, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
@pytest.mark.parametrize("dt", ["float16", "float32", "float64"])
def test_linspace_of_tensor_ends_is_numpys(kw, dt):
    start, stop = np.array([[0.0, 1.0, -2.0]], dtype=dt), np.array([[2.0], [5.0]], dtype=dt)
    got, want = gg.linspace(gg.tensor(start), gg.tensor(stop), **kw), np.linspace(start, stop, **kw)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got.numpy().astype(np.float64), want.astype(np.float64),
                               rtol=1e-3 if dt == "float16" else 1e-6, atol=1e-6)
    _, got_step = gg.linspace(gg.tensor(start), gg.tensor(stop), retstep=True, **kw)
    _, want_step = np.linspace(start, stop, retstep=True, **kw)
    np.testing.assert_allclose(got_step.numpy(), want_step, rtol=1e-3, equal_nan=True)


def test_linspace_of_mixed_ends_takes_the_tensors_float_dtype():
    assert gg.linspace(gg.tensor(np.float16(1)), 3.0, 3).dtype == np.linspace(np.float16(1), 3.0, 3).dtype
    assert gg.linspace(0.0, gg.tensor([1.0, 2.0], dtype="float64"), 3).shape == (3, 2)
    assert gg.linspace(gg.tensor(np.int32(0)), 3, 4).dtype == np.float32  # gpugrad's default float for ints
    np.testing.assert_array_equal(gg.linspace(np.array([0.0, 1.0]), 2.0, 3).numpy(), np.linspace([0.0, 1.0], 2.0, 3))


def test_linspace_is_differentiable_in_its_ends():
    a, b = gg.tensor([0.5, -1.0], dtype="float64"), gg.tensor(2.0, dtype="float64")
    with gg.GradientTape(persistent=True) as tape:
        tape.watch([a, b])
        y = gg.linspace(a, b, 5)
    t = np.arange(5) / 4  # d/dstart = 1 - t, d/dstop = t, summed over the samples
    np.testing.assert_allclose(tape.gradient(y, a).numpy(), [np.sum(1 - t)] * 2)
    np.testing.assert_allclose(tape.gradient(y, b).item(), 2 * np.sum(t))
    check(lambda a, b: gg.square(gg.linspace(a, b, 4, endpoint=False, axis=-1)), [a, b], delta=1e-6, tol=1e-6)
    check(lambda a, b: gg.linspace(a, b, 1) * a, [a, b], delta=1e-6, tol=1e-6)


def test_linspace_refuses_bool_ends():
    with pytest.raises(gg.DTypeError, match="linspace: start must hold real numbers, not bool"):
        gg.linspace(gg.tensor(True), 1.0, 3)


# ---------------------------------------------------------------- constants: refused when a tape follows them

x = gg.tensor([0.5, -1.0, 2.0], dtype="float64")
CONSTANT_ARGS = {
    "leaky_relu": lambda p: gg.leaky_relu(x, p), "elu": lambda p: gg.elu(x, p),
    "hard_tanh": lambda p: gg.hard_tanh(x, p - 2.0, 3.0), "nan_to_num": lambda p: gg.nan_to_num(x, nan=p),
    "quantile": lambda p: gg.quantile(x, p), "percentile": lambda p: gg.percentile(x, p * 100.0),
    "layer_norm": lambda p: gg.layer_norm(x, (3,), eps=p), "dropout": lambda p: gg.dropout(x, p * 0.0),
}


@pytest.mark.parametrize("name", list(CONSTANT_ARGS))
def test_a_followed_tensor_as_an_ops_constant_is_an_error(name):
    fn = CONSTANT_ARGS[name]
    p = gg.tensor(0.25, dtype="float64")
    fn(p)  # a tensor no tape follows is a number like any other
    with gg.GradientTape() as tape:
        tape.watch(p)
        with pytest.raises(gg.GradientError, match="takes .* as a constant"):
            fn(p)
    with gg.GradientTape():
        with pytest.raises(gg.GradientError, match="takes .* as a constant"):
            fn(gg.Variable(0.25, dtype="float64"))  # a trainable variable is followed once read
