"""Interop: NumPy's functions, Python's number protocols and PyTorch tensors work on gpugrad tensors.

``np.sum(t)`` calls ``t.sum(axis=None, dtype=None, out=None)``: the reduction
methods take NumPy's keywords (``dtype`` casts first, as NumPy accumulates in
it; ``out`` other than None is a TypeError). A 0-d tensor formats and rounds
as its number; ``gg.tensor`` reads PyTorch tensors (their values) through DLPack.
"""
import math

import numpy as np
import pytest

import gpugrad as gg

A = np.array([[1.0, -2.0, 3.0], [4.0, 0.5, -6.0]], np.float32)

REDUCTIONS = [np.sum, np.mean, np.max, np.min, np.prod, np.std, np.var, np.argmax, np.argmin]


# ---------------------------------------------------------------- NumPy's functions


@pytest.mark.parametrize("fn", REDUCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("kwargs", [{}, {"axis": 0}, {"axis": 1, "keepdims": True}], ids=["all", "axis0", "keepdims"])
def test_numpy_reductions_of_a_tensor_give_tensors(fn, kwargs):
    got = fn(gg.tensor(A), **kwargs)
    assert isinstance(got, gg.Tensor)
    want = fn(A, **kwargs)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


def test_numpy_reductions_are_differentiable():
    x = gg.Variable(A)
    with gg.GradientTape() as tape:
        y = np.sum(x * x) + np.mean(x) + np.max(x)
    want = 2 * A + 1 / A.size + (A == A.max())
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), want, rtol=1e-6)


@pytest.mark.parametrize("fn", [np.sum, np.mean, np.prod, np.std, np.var], ids=lambda f: f.__name__)
def test_numpy_dtype_casts_as_numpy_does(fn):
    got = fn(gg.tensor(A), dtype=np.float64)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got.numpy(), fn(A, dtype=np.float64), rtol=1e-12)


def test_the_gradient_through_a_dtype_comes_back_in_the_input_dtype():
    x = gg.Variable(A)
    with gg.GradientTape() as tape:
        y = np.sum(x * x, dtype=np.float64)
    grad = tape.gradient(y, x)
    assert y.dtype == np.float64 and grad.dtype == np.float32
    np.testing.assert_allclose(grad.numpy(), 2 * A)


def test_method_forms_take_numpys_keywords_and_keep_their_positional_arguments():
    np.testing.assert_allclose(np.std(gg.tensor(A), ddof=1).numpy(), np.std(A, ddof=1), rtol=1e-6)
    np.testing.assert_allclose(gg.tensor(A).var(axis=0, ddof=1).numpy(), A.var(axis=0, ddof=1), rtol=1e-6)
    assert gg.tensor(A).sum(0, True, dtype="float64").shape == (1, 3)  # gg.sum(x, axis, keepdims) order
    assert gg.tensor(A).max(1, True).shape == (2, 1)


@pytest.mark.parametrize("fn", REDUCTIONS[:7], ids=lambda f: f.__name__)
def test_an_out_array_is_a_clear_type_error(fn):
    with pytest.raises(TypeError, match=r"out=.*immutable"):
        fn(gg.tensor(A), out=np.zeros(()))


def test_argmax_into_an_out_array_is_a_clear_type_error_too():
    with pytest.raises(TypeError, match=r"out=.*immutable"):
        gg.tensor(A).argmax(out=np.zeros((), np.int64))
    out = np.zeros((), np.int64)  # np.argmax dispatches to gg.argmax (NEP 18): no ndarray to write into
    with pytest.raises(TypeError, match=r"numpy.argmax\(out=.*immutable"):
        np.argmax(gg.tensor(A), out=out)
    assert out == 0


# ---------------------------------------------------------------- Python's number protocols


def test_a_0d_tensor_formats_as_its_number():
    loss = gg.tensor(0.123456)
    assert f"{loss:.3f}" == "0.123" and f"{gg.tensor(7):>4d}" == "   7" and format(loss, "") == str(loss)


def test_format_of_a_tensor_of_many_values_needs_an_empty_spec():
    t = gg.tensor([1.0, 2.0])
    assert f"{t}" == str(t)
    with pytest.raises(TypeError, match=r"0-d tensor.*\(2,\)"):
        f"{t:.3f}"


def test_round_of_a_0d_tensor_is_pythons_round_of_its_value():
    assert round(gg.tensor(2.6)) == 3 and isinstance(round(gg.tensor(2.6)), int)
    assert round(gg.tensor(2.345678, dtype="float64"), 2) == 2.35
    assert round(gg.tensor(17), -1) == 20
    with pytest.raises(TypeError, match=r"0-d tensor.*\(2,\)"):
        round(gg.tensor([1.5, 2.5]))


def test_math_floor_ceil_trunc_of_one_value():
    t = gg.tensor(-2.5)
    assert (math.floor(t), math.ceil(t), math.trunc(t)) == (-3, -2, -2)
    big = gg.tensor(2 ** 60 + 1)  # exact: no detour through a float
    assert math.floor(big) == math.ceil(big) == math.trunc(big) == 2 ** 60 + 1


# ---------------------------------------------------------------- PyTorch tensors


@pytest.fixture
def torch():
    """PyTorch, for the tests that need it (a module-level importorskip skipped every test of this file)."""
    return pytest.importorskip("torch")


def test_a_torch_tensor_becomes_a_copy_with_its_dtype(torch):
    source = torch.tensor([1.0, 2.0], dtype=torch.float64)
    t = gg.tensor(source)
    assert t.dtype == np.float64 and t.numpy().tolist() == [1.0, 2.0]
    source.add_(10.0)  # in place, in PyTorch
    assert t.numpy().tolist() == [1.0, 2.0]
    assert gg.tensor(torch.arange(3)).dtype == np.int64
    assert gg.Variable(torch.ones(2)).dtype == np.float32


def test_a_torch_tensor_that_requires_grad_gives_its_values(torch):
    source = torch.tensor([1.5, 2.5], requires_grad=True)
    assert gg.tensor(source).numpy().tolist() == [1.5, 2.5]


def test_a_torch_dtype_numpy_lacks_is_a_clear_dtype_error(torch):
    with pytest.raises(gg.DTypeError, match=r"x\.float\(\)"):
        gg.tensor(torch.ones(2, dtype=torch.bfloat16))


class _GpuArray:
    """Another library's array on cuda:0, as a DLPack producer shows itself."""

    def __dlpack_device__(self):
        return 2, 0

    def __dlpack__(self, *args, **kwargs):
        raise AssertionError("gpugrad must not read a GPU array for a CPU tensor")


def test_another_librarys_gpu_array_to_a_cpu_tensor_says_what_to_do():
    with pytest.raises(gg.DeviceError, match=r"cuda:0.*device='cuda:0'.*x\.cpu\(\)"):
        gg.tensor(_GpuArray(), device="cpu")
