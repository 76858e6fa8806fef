"""Memory ownership: a write into memory the user holds never changes what a tape recorded.

``gg.tensor`` (and the ops' conversion of NumPy operands) copy; ``gg.from_numpy``
and ``gg.from_dlpack`` share and say so; what a tensor hands out
(``np.asarray(t)``, ``t.numpy()``, DLPack to NumPy) is read-only.
"""
import numpy as np
import pytest

import gpugrad as gg
from gpugrad.errors import GradientError

from .conftest import GPU_PRESENT

READ_ONLY = "assignment destination is read-only"


# ---------------------------------------------------------------- gg.tensor and the ops copy


def test_a_write_into_the_source_array_does_not_change_a_recorded_gradient():
    a = np.array([1.0, 2.0, 3.0])
    x = gg.Variable([0.5, 0.5, 0.5], dtype="float64")
    c = gg.tensor(a)
    with gg.GradientTape() as tape:
        y = gg.sum(x * c)
    a[:] = 100.0
    np.testing.assert_array_equal(c.numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [1.0, 2.0, 3.0])


def test_a_numpy_operand_of_an_op_is_copied_when_recorded():
    a = np.array([1.0, 2.0, 3.0])
    x = gg.Variable([0.5, 0.5, 0.5], dtype="float64")
    with gg.GradientTape() as tape:
        y = gg.sum(x * a)  # the op converts `a` itself
    a[:] = 100.0
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [1.0, 2.0, 3.0])


def test_numpy_class_labels_are_copied_when_recorded():
    logits = gg.Variable(np.zeros((2, 3), np.float32))
    labels = np.array([0, 1])
    with gg.GradientTape() as tape:
        loss = gg.softmax_cross_entropy(logits, labels)
    labels[:] = 2
    grad = tape.gradient(loss, logits).numpy()
    np.testing.assert_allclose(grad[[0, 1], [0, 1]], -1 / 3, rtol=1e-6)  # the labels the forward pass saw


def test_a_tensor_of_a_tensor_is_a_copy():
    t = gg.from_numpy(np.arange(3.0))
    assert not np.shares_memory(gg.tensor(t).data, t.data)
    assert not np.shares_memory(gg.Tensor(t).data, t.data)


def test_a_tensor_of_a_strided_or_read_only_array_is_an_owned_copy():
    base = np.arange(12.0).reshape(3, 4)
    strided = base[:, ::2]
    locked = base.copy()
    locked.flags.writeable = False
    for source in (strided, locked, np.broadcast_to(np.arange(3.0), (2, 3))):
        t = gg.tensor(source)
        assert not np.shares_memory(t.data, source)
        np.testing.assert_array_equal(t.numpy(), source)


def test_fresh_arrays_are_not_copied_twice():
    a = np.arange(3.0)
    assert gg.Tensor._adopt(a, "cpu").data is a  # internal code hands over arrays it just made
    cast = gg.tensor(a, dtype="float32")
    assert cast.data.base is None and cast.dtype == np.float32  # the cast's own array, not a copy of it


# ---------------------------------------------------------------- what a tensor hands out is read-only


def test_np_asarray_of_a_tensor_is_a_read_only_view():
    t = gg.tensor([1.0, 2.0])
    view = np.asarray(t)
    assert np.shares_memory(view, t.data)
    with pytest.raises(ValueError, match=READ_ONLY):
        view[0] = 5.0
    copied = np.array(t)  # np.array copies: writable, and not the tensor's memory
    copied[0] = 5.0
    assert t.numpy().tolist() == [1.0, 2.0]


def test_np_asarray_of_a_variable_cannot_skip_its_version_check():
    v = gg.Variable([1.0, 2.0], name="w")
    with gg.GradientTape() as tape:
        y = gg.sum(v * v)
    with pytest.raises(ValueError, match=READ_ONLY):
        np.asarray(v)[...] = 10.0
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [2.0, 4.0])


def test_numpy_of_a_tensor_is_read_only_and_of_a_variable_a_writable_snapshot():
    t = gg.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match=READ_ONLY):
        t.numpy()[0] = 5.0
    snapshot = gg.Variable([1.0, 2.0]).numpy()
    snapshot[0] = 5.0
    assert snapshot.tolist() == [5.0, 2.0]


def test_np_asarray_with_a_dtype_or_copy_is_a_writable_copy():
    t = gg.tensor([1.0, 2.0])
    assert np.asarray(t, dtype=np.float64).flags.writeable
    assert not np.shares_memory(t.__array__(copy=True), t.data)
    with pytest.raises(ValueError, match="needs a copy"):
        t.__array__(np.float64, copy=False)


def test_dlpack_to_numpy_is_read_only():
    t = gg.tensor([1.0, 2.0])
    back = np.from_dlpack(t)
    assert np.shares_memory(back, t.data) and not back.flags.writeable


# ---------------------------------------------------------------- from_numpy and from_dlpack share


def test_from_numpy_shares_memory():
    a = np.zeros(3, np.float32)
    t = gg.from_numpy(a)
    assert t.device == "cpu" and t.dtype == np.float32 and np.shares_memory(t.data, a)
    a[1] = 4.0
    assert t.numpy().tolist() == [0.0, 4.0, 0.0]


class _Subclass(np.ndarray):
    """An ndarray subclass, as np.memmap is."""


def test_from_numpy_shares_strided_read_only_and_subclassed_arrays():
    base = np.arange(12.0).reshape(3, 4)
    strided = base[:, ::2]
    locked = np.arange(3.0)
    locked.flags.writeable = False
    for source in (strided, locked, base.view(_Subclass)):
        t = gg.from_numpy(source)
        assert type(t.data) is np.ndarray and np.shares_memory(t.data, source)
    assert (gg.from_numpy(strided) * 2.0).numpy().tolist() == (strided * 2).tolist()


@pytest.mark.parametrize("value", [[1.0, 2.0], 3.0, np.float64(1.0), np.ma.array([1.0, 2.0], mask=[0, 1])],
                         ids=["list", "float", "numpy-scalar", "masked"])
def test_from_numpy_takes_only_numpy_arrays(value):
    with pytest.raises(TypeError, match="from_numpy takes a NumPy array"):
        gg.from_numpy(value)


def test_from_numpy_refuses_non_numeric_arrays():
    with pytest.raises(gg.DTypeError, match="strings"):
        gg.from_numpy(np.array(["a"]))


def test_from_dlpack_of_a_variable_is_the_variable_and_keeps_its_version_check():
    v = gg.Variable([1.0, 2.0], name="w")
    shared = gg.from_dlpack(v)
    assert shared is v
    with gg.GradientTape() as tape:
        y = gg.sum(shared * shared)
    v.assign([3.0, 3.0])
    with pytest.raises(GradientError, match="was assigned after op"):
        tape.gradient(y, v)


def test_an_in_place_operator_on_a_shared_tensor_does_not_write_into_the_array():
    a = np.zeros(2)
    t = gg.from_numpy(a)
    t += 1.0  # a Tensor is immutable: a new tensor
    assert a.tolist() == [0.0, 0.0] and t.numpy().tolist() == [1.0, 1.0]


# ---------------------------------------------------------------- siblings in ops outside this change


# case: (the array the caller holds, what the caller writes into it later, the function of (x, w, array))
SIBLINGS = {
    "getitem": (lambda: np.array([0, 1]), 3, lambda x, w, a: gg.sum(x[a] * x[a])),
    "take": (lambda: np.array([1, 1]), 0, lambda x, w, a: gg.sum(gg.take(x, a) * x[0])),
    "embedding": (lambda: np.array([0, 0]), 3, lambda x, w, a: gg.sum(gg.embedding(a, w) * x[0])),
    "where": (lambda: np.array([True, False, True, False]), False, lambda x, w, a: gg.sum(gg.where(a, x, 0.0))),
    "clip": (lambda: np.full(4, 0.5), 100.0, lambda x, w, a: gg.sum(gg.clip(x, a, 10.0))),
}


@pytest.mark.parametrize("case", list(SIBLINGS))
def test_index_mask_and_bound_arrays_are_copied_when_recorded(case):
    make, later, fn = SIBLINGS[case]
    x, w = gg.Variable(np.arange(1.0, 5.0)), gg.Variable(np.ones((4, 2)))
    held = make()
    with gg.GradientTape(persistent=True) as before:
        y_before = fn(x, w, held)
    want = [g.numpy() for g in before.gradient(y_before, [x, w], unconnected_gradients="zero")]
    with gg.GradientTape() as tape:
        y = fn(x, w, held)
    held[...] = later
    got = [g.numpy() for g in tape.gradient(y, [x, w], unconnected_gradients="zero")]
    for g, expected in zip(got, want):
        np.testing.assert_array_equal(g, expected)


# ---------------------------------------------------------------- the GPU paths (CuPy or its stand-in)


@pytest.mark.gpu
@pytest.mark.skipif(not GPU_PRESENT, reason="no usable CUDA GPU on this machine (gg.devices() lists only the CPU)")
def test_gpu_tensor_of_a_cupy_array_is_a_copy_and_numpy_is_read_only():
    import cupy

    a = cupy.asarray(np.arange(3.0))
    t = gg.tensor(a, device="cuda")
    a[0] = 99.0
    host = t.numpy()
    assert host.tolist() == [0.0, 1.0, 2.0] and not host.flags.writeable
    assert gg.tensor(t, device="cuda").data is not t.data
    assert gg.Variable([1.0], device="cuda").numpy().flags.writeable  # a snapshot


def test_as_tensor_shares_when_it_can_as_torch_as_tensor_does():
    a = np.arange(3.0)
    shared = gg.as_tensor(a)
    a[0] = 9.0
    assert shared.numpy().tolist() == [9.0, 1.0, 2.0] and shared.dtype == np.float64
    converted = gg.as_tensor(a, dtype="float32")
    a[1] = 9.0
    assert converted.numpy().tolist() == [9.0, 1.0, 2.0] and converted.dtype == np.float32
    assert gg.as_tensor([1.0, 2.0]).dtype == np.float32  # Python data: gg.tensor's rules
    t = gg.tensor([1.0])
    assert gg.as_tensor(t) is t and gg.as_tensor(t, "float64").dtype == np.float64
    v = gg.Variable([1.0])
    assert gg.as_tensor(v) is v  # still the version-checked variable
