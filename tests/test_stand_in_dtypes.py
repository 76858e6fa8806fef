"""The stand-in CuPy's float16/bfloat16 rules (``tests/stand_in_cupy/cupy/_dtypes.py``) held to CuPy 14.2.

Each table the stand-in copies from CuPy's source is compared with the installed wheel, which
needs no GPU to show it: a ufunc's ``.types``, the dtypes ``cupy.cuda.common._get_dtype_id``
(Thrust's type switch) accepts, ``cupy._core._dtype.to_cuda_dtype``. The rules the wheel keeps in
compiled code (matmul's batched branch, partition's sort threshold) are pinned to CuPy's source
lines in the stand-in's docstring; the tests at the end check that the stand-in raises and
converts as those rules say. Without the real CuPy the wheel checks skip saying so (fail in CI).
"""
import importlib.util

import numpy as np
import pytest

from tests.test_stand_in_contract import STAND_IN, in_stand_in, real_cupy

pytest.importorskip("ml_dtypes", reason="bfloat16 needs ml_dtypes: pip install 'gpugrad[bfloat16]'")
import ml_dtypes  # noqa: E402

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)


def stand_in_tables():
    """The stand-in's ``_dtypes`` module, loaded by path (it needs only NumPy), not as ``cupy``."""
    spec = importlib.util.spec_from_file_location("stand_in_dtypes", STAND_IN / "cupy" / "_dtypes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_thrust_dtypes_are_the_ones_cupy_s_sorts_take():
    real_cupy()
    from cupy.cuda import common

    candidates = [np.dtype(c) for c in "?bBhHiIlLqQefdFD"] + [BFLOAT16]
    taken = set()
    for dtype in candidates:
        try:
            common._get_dtype_id(dtype)
        except ValueError:
            continue
        taken.add(dtype.name)
    assert taken == set(stand_in_tables().THRUST_DTYPES)
    assert "bfloat16" not in taken


def test_where_clip_and_special_loops_are_the_wheel_s():
    real_cupy()
    import cupy._core._routines_math as routines_math
    import cupy._sorting.search as search
    import cupyx.scipy.special as special

    tables = stand_in_tables()
    assert tuple(search._where_ufunc.types) == tables.WHERE_TYPES
    assert tuple(routines_math._clip.types) == tables.CLIP_TYPES
    for name, types in tables.SPECIAL_TYPES.items():
        assert tuple(getattr(special, name).types) == types, name


def test_a_2d_bfloat16_product_is_a_cublas_bfloat16_gemm():
    """The 2-D path (``tensordot_core``) maps bfloat16 to ``CUDA_R_16BF``: CuPy multiplies it (in float32)."""
    real_cupy()
    from cupy._core._dtype import to_cuda_dtype
    from cupy_backends.cuda.api import runtime

    assert to_cuda_dtype(BFLOAT16, True) == runtime.CUDA_R_16BF
    assert to_cuda_dtype(np.dtype(np.float16), True) == runtime.CUDA_R_16F


def test_the_batched_bfloat16_error_is_numpy_s_for_its_type_character():
    """CuPy's batched matmul sends a dtype outside 'efdFD' to its integer kernel, which spells the dtype
    by its character: bfloat16's 'E' is no NumPy type character."""
    assert BFLOAT16.char == "E" and BFLOAT16.char not in "efdFD"
    with pytest.raises(TypeError, match="data type 'E' not understood"):
        np.dtype(BFLOAT16.char)


def test_resolution_takes_the_first_loop_bfloat16_casts_to_safely():
    tables = stand_in_tables()
    assert tables.resolve(tables.WHERE_TYPES, [np.dtype(bool), BFLOAT16, BFLOAT16]) == np.float32
    assert tables.special_dtype("erf", np.float16) == np.float64
    assert tables.special_dtype("erf", BFLOAT16) == np.float32
    assert tables.special_dtype("erfc", np.float32) == np.float32


def test_partition_sorts_short_rows_as_cupy_s_thresholds():
    tables = stand_in_tables()
    assert tables.partition_sorts(31, 31, 3) and tables.partition_sorts(5000, 5000, 10)
    assert not tables.partition_sorts(100_000, 100_000, 10)
    assert tables.partition_sorts(100_000, 100_000, 2000)  # max_k >= 1024: sorts
    assert not tables.partition_sorts(5000, 5000, 10, arg=True)  # argpartition sorts only when sz < 1


def test_the_stand_in_follows_the_rules(tmp_path):
    out = in_stand_in("""
        import cupy, cupyx.scipy.special as special, numpy as np, ml_dtypes
        bf = np.dtype(ml_dtypes.bfloat16)
        def raises(kind, fn):
            try:
                fn()
            except kind as exc:
                return str(exc)
            return "no error"
        a3, b2 = cupy.ones((2, 3, 4), bf), cupy.ones((4, 5), bf)
        print(raises(TypeError, lambda: cupy.matmul(a3, b2)))
        print(raises(TypeError, lambda: a3 @ b2))
        print((a3[0] @ b2).dtype, cupy.matmul(a3[0], b2).dtype)
        h = cupy.ones((2, 3, 4), np.float16)
        print(cupy.matmul(h, h.transpose(0, 2, 1)).dtype, cupy._dtypes.UPCASTS)
        print(raises(NotImplementedError, lambda: cupy.sort(a3)))
        print(raises(NotImplementedError, lambda: a3.argsort()))
        print(raises(NotImplementedError, lambda: cupy.partition(cupy.ones(100, bf), 3)))
        print(cupy.partition(cupy.ones(100_000, bf), 3).dtype, cupy.sort(h).dtype)
        print(raises(NotImplementedError, lambda: cupy.median(a3)))
        print(cupy.where(a3 > 0, a3, 0).dtype, cupy.clip(a3, 0, 1).dtype, cupy.where(h > 0, h, 0).dtype)
        print(special.erf(h).dtype, special.erfc(a3).dtype, special.erf(h.astype("f")).dtype)
    """, tmp_path).splitlines()
    assert out[0] == out[1] == "data type 'E' not understood"
    assert out[2] == "bfloat16 bfloat16"
    assert out[3] == "float16 [((2, 3, 4), (2, 4, 3))]"
    assert out[4] == out[5] == out[6] == out[8] == "Sorting arrays with dtype 'bfloat16' is not supported"
    assert out[7] == "bfloat16 float16"
    assert out[9] == "float32 float32 float16"
    assert out[10] == "float64 float32 float32"
