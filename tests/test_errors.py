"""Clear errors: one test per fault a user can make, each a gpugrad exception class.

Every class subclasses the built-in a Python user would catch (``ShapeError``
is a ``ValueError``, ``DTypeError`` a ``TypeError``, ``GradientError`` a
``RuntimeError``, ``IndexOutOfRangeError`` an ``IndexError``), and each message
names the op and the shapes, dtypes or devices involved, and what to do.

Decisions recorded here (see also the docstring of :mod:`gpugrad.errors`):

- An integer *source* of ``tape.gradient`` gets ``None`` (zeros with
  ``unconnected_gradients="zero"``), as in TensorFlow; an integer *target* is a
  DTypeError.
- Mixed float16/float32 operands are not an error in elementwise ops or matmul:
  NumPy promotes, and so does gpugrad; the gradient of the narrower input comes
  back in the promoted dtype. Ops that need one dtype (concat, stack, conv2d)
  raise DTypeError, and an optimizer refuses a gradient whose dtype is not its
  variable's.
- ``.gradient`` inside the tape's own ``with`` block is allowed on both kinds of
  tape. A non-persistent tape stops recording there (as in TensorFlow) and then
  refuses a second call; a persistent tape keeps recording the ops that follow.
"""
import math

import numpy as np
import pytest

import gpugrad as gg
from gpugrad.errors import (DeviceError, DeviceUnavailableError, DTypeError, GpugradError, GradientError,
                            IndexOutOfRangeError, LookupGradientError, OutOfMemoryError, ShapeError)


def t(shape, dtype=np.float32, fill=1.0):
    return gg.tensor(np.full(shape, fill, dtype=dtype))  # the default device, as every tensor here


def gradient_of(fn, *shapes):
    """Gradients of ``sum(fn(*xs))`` for watched float32 tensors of ``shapes``."""
    xs = [t(s) for s in shapes]
    with gg.GradientTape() as tape:
        tape.watch(xs)
        y = fn(*xs)
    return tape.gradient(y, xs)


def test_every_error_class_is_a_gpugrad_error_and_the_matching_builtin():
    expected = {ShapeError: ValueError, DTypeError: TypeError, DeviceError: ValueError,
                DeviceUnavailableError: RuntimeError, GradientError: RuntimeError, LookupGradientError: LookupError,
                IndexOutOfRangeError: IndexError, OutOfMemoryError: MemoryError}
    for cls, builtin in expected.items():
        assert issubclass(cls, GpugradError) and issubclass(cls, builtin), cls
        assert getattr(gg, cls.__name__) is cls  # exported at the top level


# ---------------------------------------------------------------- shapes


BINARY = [("Add", gg.add), ("Sub", gg.subtract), ("Mul", gg.multiply), ("Div", gg.divide),
          ("Pow", gg.power), ("Maximum", gg.maximum), ("Minimum", gg.minimum)]


@pytest.mark.parametrize("op_type, fn", BINARY, ids=[b[0] for b in BINARY])
def test_binary_ops_name_the_op_and_both_shapes_when_shapes_do_not_broadcast(op_type, fn):
    with pytest.raises(ShapeError) as info:
        fn(t((2, 3)), t((4,)))
    message = str(info.value)
    assert f"'{op_type}'" in message and "(2, 3)" in message and "(4,)" in message


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "**"])
def test_python_operators_raise_the_same_shape_error(op):
    with pytest.raises(ShapeError, match=r"\(2, 3\).*\(4,\)"):
        eval(f"a {op} b", {"a": t((2, 3)), "b": t((4,))})


def test_where_names_the_shapes_of_cond_x_and_y():
    with pytest.raises(ShapeError) as info:
        gg.where(np.ones((5,), bool), t((2, 3)), t((2, 3)))
    assert "'Where'" in str(info.value) and "cond of shape (5,)" in str(info.value)


def test_clip_bounds_that_do_not_broadcast_against_x():
    with pytest.raises(ShapeError, match=r"'Clip'.*\(2, 3\).*\(4,\)"):
        gg.clip(t((2, 3)), np.zeros(4, np.float32), 1.0)


def test_matmul_names_both_shapes_and_the_contracted_lengths():
    with pytest.raises(ShapeError, match=r"'MatMul' cannot multiply shapes \(2, 3\) and \(2, 3\).*3 and 2"):
        gg.matmul(t((2, 3)), t((2, 3)))


def test_reshape_to_a_different_size():
    with pytest.raises(ShapeError, match=r"'Reshape' cannot reshape shape \(2, 3\) \(size 6\) to \(4, 2\)"):
        t((2, 3)).reshape(4, 2)


def test_concat_of_shapes_that_differ_off_the_axis():
    with pytest.raises(ShapeError, match=r"'Concat'.*\[\(2, 3\), \(2, 4\)\] along axis 0"):
        gg.concat([t((2, 3)), t((2, 4))], axis=0)


def test_stack_of_different_shapes():
    with pytest.raises(ShapeError, match=r"'Stack'.*\(2, 3\), \(3, 2\)"):
        gg.stack([t((2, 3)), t((3, 2))])


def test_a_reduction_axis_out_of_range():
    with pytest.raises(ShapeError, match="axis 2 is out of range"):
        gg.sum(t((2, 3)), axis=2)


def test_output_gradients_of_the_wrong_shape():
    x = t((3,))
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
    with pytest.raises(ShapeError, match=r"output_gradients has shape \(4,\) but its target has shape \(3,\)"):
        tape.gradient(y, x, output_gradients=t((4,)))


# ---------------------------------------------------------------- dtypes


def test_an_integer_source_gets_no_gradient():
    ints, floats = gg.tensor([1, 2]), gg.tensor([1.0, 2.0])
    with gg.GradientTape(persistent=True) as tape:
        tape.watch([ints, floats])
        y = gg.sum(ints * floats)
    g_int, g_float = tape.gradient(y, [ints, floats])
    assert g_int is None and g_float.numpy().tolist() == [1.0, 2.0]
    zeros = tape.gradient(y, ints, unconnected_gradients="zero")
    assert zeros.shape == (2,) and not zeros.numpy().any()


def test_an_integer_target_is_a_dtype_error():
    v = gg.Variable([1.0, 3.0])
    with gg.GradientTape() as tape:
        index = gg.argmax(v)
    with pytest.raises(DTypeError, match="integer dtype int64"):
        tape.gradient(index, v)


def test_mixed_float16_and_float32_promote_as_numpy_does():
    x16, y32 = t((3,), np.float16, 2.0), t((3,), np.float32, 3.0)
    assert (x16 * y32).dtype == np.float32 == (x16.numpy() * y32.numpy()).dtype
    assert gg.matmul(t((2, 3), np.float16), t((3, 2))).dtype == np.float32
    with gg.GradientTape() as tape:
        tape.watch([x16, y32])
        z = gg.sum(x16 * y32)
    g16, g32 = tape.gradient(z, [x16, y32])
    assert g16.dtype == np.float16 and g16.numpy().tolist() == [3.0, 3.0, 3.0]  # its source's dtype
    assert g32.numpy().tolist() == [2.0, 2.0, 2.0]


def test_ops_that_need_one_dtype_refuse_float16_with_float32():
    with pytest.raises(DTypeError, match=r"'Concat'.*float32.*float16"):
        gg.concat([t((2,)), t((2,), np.float16)])
    with pytest.raises(DTypeError, match="'Conv2D'"):
        gg.conv2d(t((1, 1, 4, 4)), t((1, 1, 3, 3), np.float16))


def test_an_optimizer_refuses_a_gradient_of_another_dtype():
    w = gg.Variable(np.ones(3, np.float16), name="w16")
    with pytest.raises(DTypeError, match="'w16' has dtype float32 but the variable has dtype float16"):
        gg.optimizers.SGD(0.1).apply_gradients([(t((3,)), w)])


def test_float_class_labels_are_a_dtype_error():
    with pytest.raises(DTypeError, match="integer class labels, got dtype float32"):
        gg.softmax_cross_entropy(t((2, 3)), np.array([0.0, 1.0], np.float32))


# ---------------------------------------------------------------- labels and indices out of range


@pytest.mark.parametrize("labels", [[0, 3], [-1, 0]], ids=["past_the_end", "negative"])
def test_labels_out_of_range(labels):
    with pytest.raises(IndexOutOfRangeError, match=r"label -?\d, outside \[0, 3\) for logits of shape \(2, 3\)"):
        gg.softmax_cross_entropy(t((2, 3)), labels)


INDEXING = {
    "getitem": lambda x: x[5],
    "getitem_array": lambda x: x[[0, 7]],
    "take": lambda x: gg.take(x, [10]),
    "gather": lambda x: gg.gather(x, [3]),
    "embedding": lambda x: gg.embedding(np.array([2]), x),
}


@pytest.mark.parametrize("name", list(INDEXING))
def test_indices_out_of_range(name):
    with pytest.raises(IndexOutOfRangeError) as info:
        INDEXING[name](t((2, 3)))
    assert "(2, 3)" in str(info.value) or "(6,)" in str(info.value)


# ---------------------------------------------------------------- learning rates


@pytest.mark.parametrize("optimizer", ["SGD", "Adam", "RMSProp", "AdaGrad"])
@pytest.mark.parametrize("lr", [math.nan, math.inf, -math.inf, -0.1])
def test_learning_rates_that_are_not_finite_and_non_negative(optimizer, lr):
    cls = getattr(gg.optimizers, optimizer)
    with pytest.raises(ValueError, match="learning_rate must be a finite number >= 0"):
        cls(lr)
    opt = cls(0.1)
    with pytest.raises(ValueError, match="learning_rate must be a finite number >= 0"):
        opt.learning_rate = lr


def test_a_schedule_that_returns_nan_fails_at_the_step_with_its_value():
    w = gg.Variable([1.0])
    opt = gg.optimizers.SGD(lambda step: math.nan if step == 1 else 0.1)
    opt.apply_gradients([(t((1,)), w)])
    with pytest.raises(ValueError, match="schedule returned nan at step 1"):
        opt.apply_gradients([(t((1,)), w)])
    assert w.numpy().tolist() == [pytest.approx(0.9)]  # the failed step changed nothing


# ---------------------------------------------------------------- tapes


def test_a_second_gradient_on_a_non_persistent_tape():
    v = gg.Variable([1.0, 2.0])
    with gg.GradientTape() as tape:
        y = gg.sum(v * v)
    tape.gradient(y, v)
    with pytest.raises(GradientError, match="only once.*persistent=True"):
        tape.gradient(y, v)


def test_gradient_inside_the_recording_scope_of_a_non_persistent_tape_ends_its_recording():
    v = gg.Variable([1.0, 2.0])
    with gg.GradientTape() as tape:
        y = gg.sum(v * v)
        g = tape.gradient(y, v)  # allowed, as in TensorFlow: the tape stops recording here
        later = gg.sum(v * 3.0)
    assert g.numpy().tolist() == [2.0, 4.0]
    with pytest.raises(GradientError, match="only once"):
        tape.gradient(later, v)
    with pytest.raises(GradientError, match="has been used"):
        tape.watch(v)


def test_gradient_inside_the_recording_scope_of_a_persistent_tape_keeps_recording():
    v = gg.Variable([1.0, 2.0])
    with gg.GradientTape(persistent=True) as tape:
        y = gg.sum(v * v)
        g = tape.gradient(y, v)
        later = gg.sum(v * 3.0)  # still recorded
    assert g.numpy().tolist() == [2.0, 4.0]
    assert tape.gradient(later, v).numpy().tolist() == [3.0, 3.0]
    assert tape.gradient(y, v).numpy().tolist() == [2.0, 4.0]


def test_entering_a_tape_twice():
    tape = gg.GradientTape()
    with tape:
        with pytest.raises(GradientError, match="already recording"):
            tape.__enter__()


# ---------------------------------------------------------------- custom and registered gradients


@gg.custom_gradient
def one_gradient_for_two_inputs(x, y):
    def grad_fn(dy):
        return dy
    return x * y, grad_fn


def test_a_custom_gradient_returning_too_few_gradients():
    with pytest.raises(GradientError) as info:
        gradient_of(one_gradient_for_two_inputs, (2,), (2,))
    message = str(info.value)
    assert "'one_gradient_for_two_inputs'" in message and "returned 1 input gradients; expected 2" in message


@gg.custom_gradient
def wrong_shape(x):
    def grad_fn(dy):
        return gg.ones((5,))
    return x * 2.0, grad_fn


def test_a_custom_gradient_of_the_wrong_shape_names_the_function_and_both_shapes():
    with pytest.raises(GradientError) as info:
        gradient_of(wrong_shape, (2,))
    message = str(info.value)
    assert "custom_gradient function 'wrong_shape'" in message
    assert "gradient of shape (5,) for an input of shape (2,)" in message and "expected (2,)" in message


def test_a_custom_gradient_reading_a_variable_returns_the_wrong_number_of_variable_gradients():
    w = gg.Variable([2.0], name="w")

    @gg.custom_gradient
    def scaled(x):
        def grad_fn(dy, variables=None):
            return dy * w, []  # forgot w's gradient
        return x * w, grad_fn

    with pytest.raises(GradientError, match="'scaled' returned 0 variable gradients; expected 1"):
        gradient_of(scaled, (1,))


def test_variables_passed_as_arguments_are_inputs_of_a_custom_gradient():
    @gg.custom_gradient
    def double(x):
        return x * 2.0, lambda dy: dy * 2.0

    v = gg.Variable([1.0, 2.0])
    with gg.GradientTape() as tape:
        y = double(v)  # no `variables` keyword needed: v is an argument
    assert tape.gradient(y, v).numpy().tolist() == [2.0, 2.0]


def test_a_custom_gradient_may_return_a_bare_array_for_one_input():
    @gg.custom_gradient
    def double(x):
        return x * 2.0, lambda dy: np.full(dy.shape, 2.0, np.float32)

    (g,) = gradient_of(double, (3,))
    assert g.numpy().tolist() == [2.0, 2.0, 2.0]


@pytest.fixture
def bad_rules():
    """Two deliberately wrong rules, registered only while a test uses them."""
    gg.RegisterGradient("ErrorsTestBadShape")(lambda op, dy: [gg.ones((7,))])
    gg.RegisterGradient("ErrorsTestBadCount")(lambda op, dy: [dy, dy])
    yield
    for name in ("ErrorsTestBadShape", "ErrorsTestBadCount"):
        gg.registry.rules.pop(name)
        gg.registry.rules_reading_outputs.discard(name)


def recorded(op_type, x):
    y = gg.tensor(x.numpy() * 2.0)
    gg.record_operation(op_type, [y], [x])
    return y


def test_a_registered_gradient_of_the_wrong_shape_is_caught_at_its_op(bad_rules):
    with pytest.raises(GradientError, match=r"op 'ErrorsTestBadShape' returned a gradient of shape \(7,\) for an "
                                            r"input of shape \(2,\): expected \(2,\)"):
        gradient_of(lambda x: recorded("ErrorsTestBadShape", x), (2,))


def test_a_registered_gradient_returning_too_many_gradients(bad_rules):
    with pytest.raises(GradientError, match="op 'ErrorsTestBadCount' returned 2 gradients for 1 inputs"):
        gradient_of(lambda x: recorded("ErrorsTestBadCount", x), (2,))


def test_an_op_with_no_registered_gradient_is_named():
    with pytest.raises(LookupGradientError, match="no gradient is registered for op type 'ErrorsTestNoRule'"):
        gradient_of(lambda x: recorded("ErrorsTestNoRule", x), (2,))


# ---------------------------------------------------------------- variables and devices


def test_assigning_a_value_of_the_wrong_shape_to_a_variable():
    with pytest.raises(ShapeError, match=r"shape \(4,\) to variable w of shape \(3,\)"):
        gg.Variable(np.ones(3), name="w").assign(np.ones(4))


def test_asking_for_a_gpu_on_a_machine_without_one_names_the_reason():
    if gg.cuda_available():
        pytest.skip("this machine has a usable GPU")
    with pytest.raises(DeviceUnavailableError, match="no CUDA device can be used: "):
        gg.tensor([1.0], device="cuda")
    with pytest.raises(DeviceError, match="invalid device 'tpu'"):
        gg.tensor([1.0], device="tpu")


@pytest.mark.parametrize("data, holds", [(["a", "b"], "strings"), (np.array([b"x"]), "bytes"),
                                         ([object()], "Python objects"),
                                         (np.array(["2020-01-01"], dtype="datetime64[D]"), "datetimes")])
def test_a_tensor_of_what_is_not_a_number_is_refused_where_it_is_made(data, holds):
    with pytest.raises(gg.DTypeError, match=f"holds booleans or numbers, not {holds}"):
        gg.tensor(data)
    with pytest.raises(gg.DTypeError, match=holds):
        gg.Variable(data)


def test_a_ragged_nested_list_is_a_shape_error():
    with pytest.raises(gg.ShapeError, match="nested lists of equal lengths"):
        gg.tensor([[1.0, 2.0], [3.0]])
