"""NaN/Inf anomaly mode: ``with gg.detect_anomaly():``.

The error must name the op type, the phase (forward or backward) and the
user's source line that created the op; each test finds that line in this
file by a marker comment, so the assertions hold the exact line number. The
mode must be off by default and leave nothing behind when it ends, even
through an exception.
"""

import numpy as np
import pytest

import gpugrad as gg
from gpugrad import _recorder, anomaly
from gpugrad._recorder import active_tapes

from .conftest import device_params

pytestmark = pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")  # NumPy on NaN/Inf

with open(__file__) as _f:
    _SOURCE = _f.read().splitlines()


def line_of(marker):
    """The line number (1-based) of the only line of this file that ends with ``# <marker>``."""
    found = [i + 1 for i, text in enumerate(_SOURCE) if text.rstrip().endswith(f"# {marker}")]
    assert len(found) == 1, f"marker {marker!r} found {len(found)} times"
    return found[0]


@pytest.fixture(autouse=True)
def mode_left_off():
    """Every test starts and ends with the mode off and no tape recording."""
    assert not anomaly.enabled() and not active_tapes()
    yield
    assert not anomaly.enabled(), "anomaly mode left on"
    assert not active_tapes(), f"tapes left recording: {active_tapes()}"
    assert anomaly.current_slot() is None and anomaly._state.recording is None


# --------------------------------------------------------------------------- forward


@pytest.mark.parametrize("device", device_params())
def test_forward_nan_names_op_phase_and_line(device):
    x = gg.tensor([1.0, -1.0], device=device)
    with gg.detect_anomaly():
        with pytest.raises(gg.AnomalyError) as info:
            gg.log(x)  # op: forward-log
    e = info.value
    line = line_of("op: forward-log")
    assert (e.op_type, e.phase, e.value) == ("Log", "forward", "NaN")
    assert (e.filename, e.lineno) == (__file__, line)
    message = str(e)
    assert message.startswith("forward of op 'Log' made NaN in its output (shape (2,), float32)")
    assert f"{__file__}:{line}" in message
    assert "gg.log(x)  # op: forward-log" in message  # the source text under the place


def test_forward_inf_is_caught_too():
    x = gg.tensor([1.0, 1000.0])
    with gg.detect_anomaly(), pytest.raises(gg.AnomalyError) as info:
        gg.exp(x)  # op: forward-exp
    assert (info.value.op_type, info.value.phase, info.value.value) == ("Exp", "forward", "Inf")
    assert f"test_anomaly.py:{line_of('op: forward-exp')}" in str(info.value)


def test_anomaly_error_is_a_floating_point_error():
    with gg.detect_anomaly(), pytest.raises(FloatingPointError):
        gg.log(gg.tensor(-1.0))
    assert issubclass(gg.AnomalyError, gg.GpugradError)


def test_forward_line_is_the_user_line_not_a_library_line():
    """An op made inside a library layer (Dense, via Sequential) points at the user's call."""
    layer = gg.nn.Dense(2, 2)
    layer.kernel.assign(np.array([[np.inf, 0.0], [0.0, 1.0]], np.float32))
    model = gg.nn.Sequential([layer])
    with gg.detect_anomaly(), pytest.raises(gg.AnomalyError) as info:
        model(gg.tensor([[0.0, 1.0]]))  # op: forward-dense
    assert info.value.lineno == line_of("op: forward-dense")
    assert info.value.filename == __file__
    assert info.value.op_type == "Dense"  # the layer is one op


def test_input_that_already_held_nan_is_said_so():
    bad = gg.tensor([np.nan, 1.0])  # data passed in: no op made it
    with gg.detect_anomaly(), pytest.raises(gg.AnomalyError) as info:
        bad * 2.0  # op: forward-mul
    assert info.value.op_type == "Mul" and info.value.lineno == line_of("op: forward-mul")
    assert "its input 0 already held NaN or Inf" in str(info.value)


def test_integer_outputs_are_not_checked():
    with gg.detect_anomaly():
        assert gg.argmax(gg.tensor([1.0, 3.0, 2.0])).item() == 1


# --------------------------------------------------------------------------- backward


@pytest.mark.parametrize("device", device_params())
def test_backward_nan_names_forward_op_and_its_line(device):
    x = gg.tensor([0.0, 4.0], dtype="float64", device=device)
    with gg.detect_anomaly():
        with gg.GradientTape() as tape:
            tape.watch(x)
            r = gg.sqrt(x)  # op: backward-sqrt
            y = (r * 0.0).sum()  # the forward pass is finite: sqrt(0) = 0
        with pytest.raises(gg.AnomalyError) as info:
            tape.gradient(y, x)  # op: gradient-call
    e = info.value
    line = line_of("op: backward-sqrt")
    assert (e.op_type, e.phase, e.value) == ("Sqrt", "backward", "NaN")  # 0 / (2 sqrt(0))
    assert (e.filename, e.lineno) == (__file__, line)
    assert e.gradient_op == "SqrtGrad"
    message = str(e)
    assert message.startswith("backward of op 'Sqrt' made NaN: gradient op 'SqrtGrad' returned it")
    assert f"{__file__}:{line}" in message
    assert f"the gradient op was called from {__file__}:{line_of('op: gradient-call')}" in message


def test_backward_inf_in_a_chain_names_the_right_op():
    """Only the op whose gradient goes wrong is named, not the ops around it."""
    x = gg.tensor([0.0, 1.0])
    with gg.detect_anomaly():
        with gg.GradientTape() as tape:
            tape.watch(x)
            a = x * 2.0
            b = gg.sqrt(a)  # op: chain-sqrt
            y = gg.tanh(b).sum()
        with pytest.raises(gg.AnomalyError) as info:
            tape.gradient(y, x)
    assert (info.value.op_type, info.value.phase, info.value.value) == ("Sqrt", "backward", "Inf")
    assert info.value.lineno == line_of("op: chain-sqrt")


def test_nan_in_a_custom_gradient_function_is_a_backward_anomaly():
    @gg.custom_gradient
    def clipped_log(x):
        def grad(dy):
            return dy / (x - 1.0)  # op: custom-grad-div
        return gg.log(x), grad

    x = gg.tensor([1.0, 2.0])
    with gg.detect_anomaly():
        with gg.GradientTape() as tape:
            tape.watch(x)
            y = clipped_log(x).sum()  # op: custom-forward
        with pytest.raises(gg.AnomalyError) as info:
            tape.gradient(y, x)
    e = info.value
    assert (e.op_type, e.phase, e.gradient_op, e.value) == ("CustomGradient:clipped_log", "backward", "Div", "Inf")
    assert e.lineno == line_of("op: custom-forward")
    assert f"called from {__file__}:{line_of('op: custom-grad-div')}" in str(e)


def test_an_op_inside_a_custom_gradient_function_is_checked_and_named_at_its_line():
    @gg.custom_gradient
    def hidden_nan(x):
        bad = gg.sqrt(x - 2.0)  # op: inside-custom-forward
        return x * 1.0, lambda dy: dy * gg.sum(bad)

    x = gg.tensor([1.0, 3.0])
    with gg.detect_anomaly():
        with gg.GradientTape() as tape:
            tape.watch(x)
            with pytest.raises(gg.AnomalyError) as info:
                hidden_nan(x)
    e = info.value
    assert (e.op_type, e.phase, e.value) == ("Sqrt", "forward", "NaN")  # recorded, as TensorFlow records them
    assert e.lineno == line_of("op: inside-custom-forward")


def test_backward_of_an_op_made_before_the_mode_has_no_line():
    x = gg.tensor([0.0, 1.0])
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.sqrt(x).sum()
    with gg.detect_anomaly(), pytest.raises(gg.AnomalyError) as info:
        tape.gradient(y, x)
    assert (info.value.op_type, info.value.phase, info.value.lineno) == ("Sqrt", "backward", None)
    assert "made before anomaly mode began" in str(info.value)


def test_second_order_gradients_are_checked():
    x = gg.tensor([0.0, 1.0], dtype="float64")
    with gg.detect_anomaly():
        with gg.GradientTape() as outer:
            outer.watch(x)
            with gg.GradientTape() as inner:
                inner.watch(x)
                y = (x * gg.sqrt(x + 1.0)).sum()  # finite, first and second order
            dy = inner.gradient(y, x)
        d2 = outer.gradient(dy, x)
    np.testing.assert_allclose(d2.numpy(), (3 * x.numpy() + 4) / (4 * (x.numpy() + 1) ** 1.5))


# --------------------------------------------------------------------------- off by default, restored


def test_off_by_default_nan_flows_silently():
    assert not anomaly.enabled()
    with np.errstate(invalid="ignore"):
        y = gg.log(gg.tensor(-1.0))
    assert np.isnan(y.item())
    with gg.GradientTape() as tape:
        x = gg.tensor(-1.0)
        tape.watch(x)
        with np.errstate(invalid="ignore"):
            z = gg.sqrt(x)
    assert np.isnan(tape.gradient(z, x).item())


def test_leaving_the_block_restores_everything_after_an_exception():
    with gg.GradientTape() as tape:
        with pytest.raises(gg.AnomalyError):
            with gg.detect_anomaly():
                assert anomaly.enabled() and len(active_tapes()) == 2
                gg.log(gg.tensor(-1.0))
        assert active_tapes() == [tape]  # the user's tape stays, the checking recording is gone
        assert not anomaly.enabled() and anomaly.current_slot() is None
    with pytest.raises(KeyError):
        with gg.detect_anomaly():
            raise KeyError("not ours")  # other exceptions pass through untouched
    assert not anomaly.enabled()


def test_nesting_and_decorator():
    @gg.detect_anomaly()
    def f(x):
        assert anomaly.enabled()
        with gg.detect_anomaly():  # nested: still one checking recording
            assert sum(r is anomaly._state.recording for r in _recorder._thread_stack()) == 1
        assert anomaly.enabled()  # the inner block did not switch it off
        return gg.log(x)

    with pytest.raises(gg.AnomalyError) as info:
        f(gg.tensor(0.0))
    assert info.value.value == "Inf"
    assert not anomaly.enabled()


def test_a_constant_tensor_argument_is_no_tape_s_tensor_under_the_mode():
    """The mode's recording follows every op but no tensor: an op that refuses a tensor a tape follows
    as a constant (LeakyRelu's alpha) takes an unwatched one as it does with the mode off."""
    x, alpha = gg.tensor([1.0, -2.0]), gg.tensor(0.1)
    off = gg.leaky_relu(x, alpha=alpha).numpy()
    with gg.detect_anomaly():
        on = gg.leaky_relu(x, alpha=alpha).numpy()
        with gg.GradientTape() as tape:
            tape.watch(alpha)
            with pytest.raises(gg.GradientError, match="takes alpha as a constant"):
                gg.leaky_relu(x, alpha=alpha)  # a tape does follow it: still refused
    np.testing.assert_array_equal(on, off)


def test_the_mode_changes_no_result_and_no_tape():
    """Finite work gives the same values and records the same ops with the mode on."""
    rng = np.random.default_rng(0)
    w = gg.Variable(rng.standard_normal((4, 3)).astype(np.float32))
    x = gg.tensor(rng.standard_normal((5, 4)).astype(np.float32))
    labels = np.array([0, 1, 2, 1, 0])

    def run():
        with gg.GradientTape() as tape:
            loss = gg.softmax_cross_entropy(gg.relu(x @ w), labels)
        recorded = [rec[0] for rec in tape._ops]
        return loss.numpy(), tape.gradient(loss, w).numpy(), recorded

    off = run()
    with gg.detect_anomaly():
        on = run()
    np.testing.assert_array_equal(on[0], off[0])
    np.testing.assert_array_equal(on[1], off[1])
    assert on[2] == off[2]


def test_the_checker_keeps_no_records():
    """Memory stays flat: the checker stores only (op type, file, line) per output, dropped at exit."""
    x = gg.tensor(np.ones(4, np.float32))
    with gg.detect_anomaly():
        checker, recording = anomaly._state.checker, anomaly._state.recording
        for _ in range(50):
            x = gg.tanh(x) * 1.0
        assert recording.ops == [] and not recording.watched  # records go to the checker, which keeps none
        assert all(isinstance(v, tuple) and len(v) == 3 for v in checker.origins.values())
        assert len(checker.origins) <= 101
    assert anomaly._state.recording is None and anomaly._state.checker is None


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("values, finite", [
    (np.ones(5, np.float32), True),
    (np.array([3e38, 3e38], np.float32), True),  # x . x overflows: the fast check must look closer
    (np.array([np.nan, 1.0], np.float32), False),
    (np.array([1.0, -np.inf]), False),
    (np.array([-np.inf, np.inf], np.float32), False),
    (np.arange(12.0).reshape(3, 4).T, True),  # not contiguous
    (np.full((3, 4), -np.inf).T, False),
    (np.array([1.0, np.inf], np.float16), False),
    (np.array(np.nan), False),
    (np.zeros(0, np.float32), True),
    (np.array([1 + 1j, complex(np.nan, 0)]), False),
    (np.array([1, 2]), True),
])
def test_finiteness_check_agrees_with_isfinite_and_warns_nothing(values, finite):
    with np.errstate(invalid="ignore"):  # building the inputs may warn; checking them must not
        t = gg.tensor(values)
    assert anomaly._finite(t) is finite
