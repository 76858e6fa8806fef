"""gpugrad/backend/cupy_gaps.py: CuPy's float16/bfloat16 gaps worked around, results as the CPU computes them.

A product of 16-bit operands is the float32 product of their exact float32 values rounded once
(CuPy's cuBLAS GemmEx accumulates in float32; NumPy with ml_dtypes does the same for bfloat16), so
the oracle here is NumPy in float32, rounded. On the stand-in CuPy (tests/test_gpu_paths_on_host.py)
these run through the strict type rules of CuPy 14.2.
"""
import numpy as np
import pytest

import gpugrad as gg

from .conftest import GPU_PRESENT

pytestmark = pytest.mark.gpu

LOW = ["float16", pytest.param("bfloat16", marks=pytest.mark.skipif(
    not gg._dtypes.HAVE_ML_DTYPES, reason="bfloat16 needs ml_dtypes: pip install 'gpugrad[bfloat16]'"))]

SHAPES = [((2, 3, 4), (4, 6)), ((1, 3, 4), (1, 4, 6)), ((1, 1, 3, 4), (5, 4, 6)), ((3, 4), (2, 5, 4, 6)),
          ((1, 3, 4), (2, 5, 4, 6)), ((2, 3, 4), (2, 4, 6)), ((2, 1, 3, 4), (5, 4, 6)), ((2, 3, 4), (4,)),
          ((4,), (2, 4, 6))]


@pytest.mark.skipif(not GPU_PRESENT, reason="no usable CUDA GPU on this machine (gg.devices() lists only the CPU)")
@pytest.mark.parametrize("dtype_name", LOW)
@pytest.mark.parametrize("shape_a, shape_b", SHAPES)
def test_a_16_bit_product_keeps_its_dtype_and_rounds_the_float32_product_once(shape_a, shape_b, dtype_name):
    dtype = gg._dtypes.resolve(dtype_name)
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(s).astype(dtype) for s in (shape_a, shape_b))
    with gg.device("cuda"):
        got = (gg.tensor(a) @ gg.tensor(b)).numpy()
    want = np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(dtype)
    assert got.dtype == dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


@pytest.mark.skipif(not GPU_PRESENT, reason="no usable CUDA GPU on this machine (gg.devices() lists only the CPU)")
@pytest.mark.parametrize("dtype_name", LOW)
def test_sorts_where_and_erf_keep_the_16_bit_dtype_as_on_the_cpu(dtype_name):
    dtype = gg._dtypes.resolve(dtype_name)
    x = np.random.default_rng(1).standard_normal((3, 40)).astype(dtype)
    x[0, 3] = np.nan
    ops = {"sort": gg.sort, "argsort": gg.argsort, "partition": lambda t: gg.partition(t, 5),
           "where": lambda t: gg.where(t > 0, t, 0.1), "erf": gg.erf, "gelu": gg.gelu, "tril": gg.tril,
           "nansum": lambda t: gg.nansum(t, axis=1), "elu": gg.elu, "clip": lambda t: gg.clip(t, -0.3, 0.7)}
    for name, op in ops.items():
        with gg.device("cpu"):
            cpu = op(gg.tensor(x)).numpy()
        with gg.device("cuda"):
            gpu = op(gg.tensor(x)).numpy()
        assert gpu.dtype == cpu.dtype, (name, gpu.dtype, cpu.dtype)
        if name == "argsort":  # ties (bfloat16 rounds many values together) may come in either order
            gpu, cpu = np.take_along_axis(x, gpu, 1), np.take_along_axis(x, cpu, 1)
        if name != "partition":  # a partition's order within each side is unspecified (NumPy and CuPy differ)
            np.testing.assert_array_equal(gpu.astype(np.float64), cpu.astype(np.float64), err_msg=name)
