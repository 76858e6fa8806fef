"""relu's CPU formula gives ``np.maximum(x, 0)``'s bits exactly, on every path.

``gpugrad.backend.cpu_fast.relu`` compares large C-contiguous arrays with a row of
zeros (NumPy's vector loop) instead of the scalar 0 (its element-by-element
loop). Checked here bit for bit against ``np.maximum(x, 0)``: every special
value (NaN payloads and signs, +-0.0, +-inf, subnormals), float16/32/64, sizes
below, at and past the row length with and without a tail, non-contiguous
input, ``out=`` (the same array, a fresh one, one it cannot use), and through
the ops that use it (``gg.relu``, ``gg.dense``, split across threads or not).
"""
import numpy as np
import pytest

import gpugrad as gg
from gpugrad.backend import cpu_fast
from gpugrad.backend.cpu_fast import _ZERO_ROW
from gpugrad.backend.cpu_fast import relu as relu_cpu

from .conftest import DTYPES, assert_same, data

SIZES = [0, 1, 100, _ZERO_ROW - 1, _ZERO_ROW, _ZERO_ROW + 1, 3 * _ZERO_ROW + 77, 1 << 16]


def cases(dtype):
    for n in SIZES:
        x = data(dtype, n, seed=n)
        yield x
        if n % 4 == 0 and n:
            yield x.reshape(4, -1)  # 2-D: viewed flat
    yield data(dtype, 2 * _ZERO_ROW + 6, 9)[::2]  # not contiguous: the scalar path
    yield data(dtype, 4 * _ZERO_ROW, 10).reshape(2 * _ZERO_ROW, 2).T  # transposed
    yield np.array(dtype(-0.0)), np.array(dtype(np.nan))  # 0-d


@pytest.mark.parametrize("dtype", DTYPES)
def test_relu_cpu_is_maximum_with_zero(dtype):
    for x in cases(dtype):
        for x in (x if isinstance(x, tuple) else (x,)):
            want = np.maximum(x, 0)
            assert_same(relu_cpu(x), want)
            out = np.empty_like(want)
            assert relu_cpu(x, out=out) is out
            assert_same(out, want)
            inplace = np.array(x, copy=True)
            assert relu_cpu(inplace, out=inplace) is inplace
            assert_same(inplace, want)


def test_the_cases_reach_the_row_path():
    x = data(np.float32, 3 * _ZERO_ROW + 77, 1)
    assert x.flags.c_contiguous and x.size > _ZERO_ROW and x.size % _ZERO_ROW  # a body and a tail


def test_an_out_it_cannot_use_goes_to_maximum_with_its_error_or_casting():
    x = np.random.default_rng(2).standard_normal(2 * _ZERO_ROW).astype(np.float32)
    wide = np.empty(x.shape, np.float64)
    relu_cpu(x, out=wide)  # another dtype: NumPy casts float32 -> float64 safely
    np.testing.assert_array_equal(wide, np.maximum(x, 0).astype(np.float64))
    with pytest.raises(ValueError):
        relu_cpu(x, out=np.empty(x.size + 1, np.float32))


def test_ints_take_numpys_own_path():
    x = np.arange(-5, 3 * _ZERO_ROW)
    out = relu_cpu(x)
    assert out.dtype == x.dtype
    np.testing.assert_array_equal(out, np.maximum(x, 0))


def test_the_zero_rows_are_read_only():
    row = cpu_fast._zero_row(np.dtype(np.float32))
    assert not row.flags.writeable and not row.any()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", DTYPES)
def test_gg_relu_and_dense_give_maximums_bits(dtype, threads):
    previous = gg.set_num_threads(threads)
    try:
        x = data(dtype, (1 << 20) + 5, 3)  # past SPLIT_MIN_CHEAP: split across threads when two
        assert_same(gg.relu(gg.tensor(x)).numpy(), np.maximum(x, 0))
        rows = data(dtype, 64 * 512, 4).reshape(64, 512)
        kernel = np.eye(512, dtype=dtype)
        bias = np.zeros(512, dtype)
        with np.errstate(all="ignore"):
            want = np.maximum(rows @ kernel + bias, 0)
            got = gg.dense(gg.tensor(rows), gg.tensor(kernel), gg.tensor(bias), activation="relu").numpy()
        assert_same(got, want)
    finally:
        gg.set_num_threads(previous)
