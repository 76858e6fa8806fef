"""Variable traps: an update never silently turns a Variable into a constant or changes its dtype,
and a layer never silently truncates a size it was given.

``w -= lr * g`` (and ``+= *= /= **= @=``) update the Variable in place and bump
its version; a value the variable's dtype cannot hold under NumPy's same_kind
rule raises DTypeError (a TypeError) naming the variable and the dtypes; a
value of another shape raises ShapeError; ``None`` is a TypeError. Layer
constructors check their sizes, counts and rates at the call.
"""
import operator

import numpy as np
import pytest

import gpugrad as gg
from gpugrad.errors import GradientError

from .conftest import GPU_PRESENT

START = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
OTHER = np.array([[0.5, 2.0], [-1.0, 0.25]], np.float32)

IN_PLACE = {
    "+=": (operator.iadd, operator.add), "-=": (operator.isub, operator.sub), "*=": (operator.imul, operator.mul),
    "/=": (operator.itruediv, operator.truediv), "**=": (operator.ipow, operator.pow),
    "@=": (operator.imatmul, operator.matmul),
}


# ---------------------------------------------------------------- in-place operators


def test_manual_sgd_step_keeps_the_variable():
    w = gg.Variable(START, name="w")
    buffer = w.data
    with gg.GradientTape() as tape:
        loss = gg.sum(w * w)
    g = tape.gradient(loss, w)
    w -= 0.1 * g
    assert type(w) is gg.Variable and w.data is buffer and w.name == "w" and w._version == 1
    np.testing.assert_allclose(w.numpy(), START - 0.1 * 2 * START, rtol=1e-6)
    with gg.GradientTape() as tape:  # the next step still sees a trainable variable
        loss = gg.sum(w * w)
    assert tape.gradient(loss, w) is not None


@pytest.mark.parametrize("op, operand", [(op, operand) for op in IN_PLACE for operand in ("tensor", "array", "number")
                                         if (op, operand) != ("@=", "number")])  # a matrix product needs a matrix
def test_every_in_place_operator_updates_the_variable_as_numpy_does(op, operand):
    in_place, plain = IN_PLACE[op]
    value = {"tensor": gg.tensor(OTHER), "array": OTHER, "number": 2.0}[operand]
    v = gg.Variable(START)
    buffer = v.data
    result = in_place(v, value)
    assert result is v and v.data is buffer and v._version == 1 and v.dtype == np.float32
    np.testing.assert_allclose(v.numpy(), plain(START, OTHER if operand != "number" else np.float32(2.0)),
                               rtol=1e-6)


def test_an_in_place_update_after_a_read_is_caught_at_gradient():
    w = gg.Variable(START, name="w")
    with gg.GradientTape() as tape:
        loss = gg.sum(w * w)
    w -= 1.0
    with pytest.raises(GradientError, match="was assigned after op"):
        tape.gradient(loss, w)


@pytest.mark.parametrize("op", ["+=", "-=", "*=", "/="])
def test_an_in_place_operand_of_another_shape_is_a_shape_error(op):
    v = gg.Variable([1.0, 2.0], name="v")
    with pytest.raises(gg.ShapeError, match=r"\(2, 2\).*\(2,\)"):
        IN_PLACE[op][0](v, np.ones((2, 2)))
    assert v.numpy().tolist() == [1.0, 2.0] and v._version == 0


def test_matmul_in_place_needs_a_product_of_the_variables_shape():
    v = gg.Variable(np.ones((2, 3)), name="v")
    with pytest.raises(gg.ShapeError, match=r"\(2, 4\)"):
        v @= np.ones((3, 4))
    with pytest.raises(TypeError, match="matrix"):
        v @= 2.0


# ---------------------------------------------------------------- dtype and None


@pytest.mark.parametrize("change", [
    lambda v: v.assign_add(0.5), lambda v: v.assign_sub(1.5), lambda v: v.assign(2.7), lambda v: v.assign(np.nan),
    lambda v: v.assign(np.array([1.5, 2.0])), lambda v: v.assign(gg.tensor([1.5, 2.0])),
    lambda v: v.assign([1.5, 2.0]), lambda v: operator.itruediv(v, 2), lambda v: operator.imul(v, 1.5),
    lambda v: v.assign(1j),
], ids=["assign_add-float", "assign_sub-float", "assign-float", "assign-nan", "assign-array", "assign-tensor",
        "assign-list", "itruediv", "imul-float", "assign-complex"])
def test_a_value_an_integer_variable_cannot_hold_is_a_dtype_error(change):
    v = gg.Variable(np.array([3, 4]), name="steps")
    with pytest.raises(gg.DTypeError, match=r"Variable 'steps' \(int64\).*same_kind") as info:
        change(v)
    assert isinstance(info.value, TypeError)
    assert v.numpy().tolist() == [3, 4] and v._version == 0 and v.dtype == np.int64


def test_a_bool_variable_takes_no_integers():
    v = gg.Variable([True, False], name="mask")
    with pytest.raises(gg.DTypeError, match="bool"):
        v.assign_add(1)


def test_integer_and_float_values_a_variable_can_hold_still_work():
    counter = gg.Variable(np.int64(3))
    counter.assign_add(2)
    counter += np.int32(1)
    assert type(counter) is gg.Variable and counter.item() == 6 and counter.dtype == np.int64
    w = gg.Variable([1.0, 2.0])
    w.assign(np.array([1, 2], np.int64))  # integers into floats: safe
    w.assign_add(np.array([0.5, 0.5]))  # float64 into float32: the same kind
    assert w.dtype == np.float32 and w.numpy().tolist() == [1.5, 2.5]


@pytest.mark.parametrize("method", ["assign", "assign_add", "assign_sub"])
def test_assigning_none_is_a_clear_type_error(method):
    v = gg.Variable([1.0, 2.0], name="w")
    with pytest.raises(TypeError, match=r"Variable 'w'.*None"):
        getattr(v, method)(None)
    assert v.numpy().tolist() == [1.0, 2.0]


def test_a_checkpoint_of_floats_does_not_load_into_an_integer_variable(tmp_path):
    path = tmp_path / "ckpt.npz"
    gg.save(path, {"steps": gg.Variable([1.5])})
    with pytest.raises(gg.DTypeError, match=r"'steps' holds float32 values but the variable is int64"):
        gg.load(path, {"steps": gg.Variable([0])})


@pytest.mark.gpu
@pytest.mark.skipif(not GPU_PRESENT, reason="no usable CUDA GPU on this machine (gg.devices() lists only the CPU)")
def test_gpu_variable_in_place_operators_and_dtype_checks():
    w = gg.Variable(START, device="cuda", name="w")
    w -= gg.tensor(OTHER, device="cuda")
    w *= 2.0
    w += OTHER  # host data goes to the GPU
    assert type(w) is gg.Variable and w._version == 3
    np.testing.assert_allclose(w.numpy(), (START - OTHER) * 2 + OTHER, rtol=1e-6)
    steps = gg.Variable([1, 2], device="cuda", name="steps")
    with pytest.raises(gg.DTypeError, match="steps"):
        steps.assign_add(0.5)


# ---------------------------------------------------------------- layer arguments


@pytest.mark.parametrize("build, error, name", [
    (lambda: gg.nn.Dense(2.5, 3), TypeError, "in_features"),
    (lambda: gg.nn.Dense(4, 3.0), TypeError, "out_features"),
    (lambda: gg.nn.Dense(True, 3), TypeError, "in_features"),
    (lambda: gg.nn.Dense(0, 3), ValueError, "in_features"),
    (lambda: gg.nn.Dense(4, 3, dtype="int64"), TypeError, "dtype|floats"),
    (lambda: gg.nn.Flatten(1.5), TypeError, "start_axis"),
    (lambda: gg.nn.Conv2D(3.0, 4, 3), TypeError, "in_channels"),
    (lambda: gg.nn.Conv2D(3, -4, 3), ValueError, "out_channels"),
    (lambda: gg.nn.Conv2D(3, 4, 2.5), TypeError, "kernel_size"),
    (lambda: gg.nn.Conv2D(3, 4, 3, stride=0), ValueError, "stride"),
    (lambda: gg.nn.Conv2D(3, 4, 3, padding="full"), ValueError, "padding"),
    (lambda: gg.nn.Conv2D(3, 4, 3, padding=-1), ValueError, "padding"),
    (lambda: gg.nn.Conv2D(3, 4, 3, stride=2, padding="same"), ValueError, "same"),
    (lambda: gg.nn.Conv2D(3, 4, 3, dilation=1.5), TypeError, "dilation"),
    (lambda: gg.nn.Conv2D(4, 4, 3, groups=2.0), TypeError, "groups"),
    (lambda: gg.nn.Embedding(10.5, 3), TypeError, "num_embeddings"),
    (lambda: gg.nn.Embedding(10, 0), ValueError, "embedding_dim"),
    (lambda: gg.nn.Dropout("0.5"), TypeError, "rate"),
    (lambda: gg.nn.Dropout(True), TypeError, "rate"),
    (lambda: gg.nn.LayerNorm(4.0), TypeError, "normalized_shape"),
    (lambda: gg.nn.LayerNorm((4, 2.5)), TypeError, "normalized_shape"),
    (lambda: gg.nn.LayerNorm(()), ValueError, "normalized_shape"),
    (lambda: gg.nn.LayerNorm(4, eps="small"), TypeError, "eps"),
    (lambda: gg.nn.BatchNorm(3.5), TypeError, "num_features"),
    (lambda: gg.nn.BatchNorm(3, eps=-1.0), ValueError, "eps"),
    (lambda: gg.nn.MaxPool2D(2.5), TypeError, "kernel_size"),
    (lambda: gg.nn.AvgPool2D(2, stride=0), ValueError, "stride"),
    (lambda: gg.nn.MaxPool2D(2, padding=2), ValueError, "padding"),
    (lambda: gg.nn.init.zeros((2.5, 3)), TypeError, "shape"),
])
def test_layer_arguments_are_checked_when_the_layer_is_built(build, error, name):
    with pytest.raises(error, match=name):
        build()


def test_valid_layer_arguments_in_every_form_build_and_a_float_in_a_pair_does_not():
    assert gg.nn.Dense(np.int64(4), 3).kernel.shape == (4, 3)
    assert gg.nn.Conv2D(4, 6, (3, 1), stride=(2, 1), padding=((1, 0), (0, 0)), groups=2).kernel.shape == (6, 2, 3, 1)
    assert gg.nn.Dropout(np.float32(0.25)).rate == 0.25
    assert gg.nn.LayerNorm([4, 5]).normalized_shape == (4, 5)
    assert gg.nn.MaxPool2D((2, 3), padding=(1, 1)).kernel_size == (2, 3)
    with pytest.raises(TypeError, match="kernel_size"):
        gg.nn.Conv2D(4, 6, (3, 1.0))
