"""None-gradient diagnostics: ``gg.explain_gradient(tape, target, source)``.

One test per reason: each builds the situation a user meets, checks that
``tape.gradient`` really gives what the explanation says (None, zeros, an
error), and checks the explanation's reason, op chain and text.
"""
import numpy as np
import pytest

import gpugrad as gg
from gpugrad import diagnostics
from gpugrad._recorder import active_tapes


@pytest.fixture(autouse=True)
def no_tape_leaks():
    yield
    assert not active_tapes(), f"tapes left recording: {active_tapes()}"


def explain_then_gradient(tape, target, source):
    """The explanation, and then the gradient itself (proving the tape was not consumed)."""
    e = gg.explain_gradient(tape, target, source)
    assert e.reason in diagnostics.REASONS
    return e, tape.gradient(target, source)


# --------------------------------------------------------------------------- never watched


def test_constant_tensor_never_watched():
    x = gg.tensor([1.0, 2.0])
    with gg.GradientTape() as tape:
        y = (x * x).sum()
    e, g = explain_then_gradient(tape, y, x)
    assert g is None
    assert (e.reason, e.gradient, e.chain, e.op) == ("tensor_not_watched", "none", (), None)
    assert str(e).startswith("tape.gradient(target, source) is None: the source is a constant Tensor "
                             "of shape (2,) float32 that the tape never watched.")
    assert "tape.watch(x)" in str(e) and "gg.Variable" in str(e)


def test_watch_accessed_variables_false():
    w = gg.Variable([1.0, 2.0], name="w")
    with gg.GradientTape(watch_accessed_variables=False) as tape:
        y = (w * w).sum()
    e, g = explain_then_gradient(tape, y, w)
    assert g is None and e.reason == "watch_accessed_variables_false"
    assert "Variable 'w' of shape (2,) float32" in str(e)
    assert "watch_accessed_variables=False" in str(e) and "tape.watch(v)" in str(e)


def test_non_trainable_variable():
    w = gg.Variable([1.0, 2.0], trainable=False, name="frozen")
    with gg.GradientTape() as tape:
        y = (w * 3.0).sum()
    e, g = explain_then_gradient(tape, y, w)
    assert g is None and e.reason == "variable_not_trainable"
    assert "Variable 'frozen'" in str(e) and "trainable=False" in str(e)


def test_variable_read_only_before_the_tape():
    w = gg.Variable([1.0, 2.0], name="w")
    h = w * 2.0  # read before the tape records
    with gg.GradientTape() as tape:
        y = (h * 3.0).sum()
    e, g = explain_then_gradient(tape, y, w)
    assert g is None and e.reason == "variable_not_read"
    assert "no op read while the tape recorded" in str(e)
    assert "tape.stop_recording()" in str(e) and "cannot tell which" in str(e)


# --------------------------------------------------------------------------- dtypes


def test_integer_source():
    i = gg.tensor([1, 2])
    with gg.GradientTape() as tape:
        tape.watch(i)  # ignored: integers have no gradient
        y = (i * 2.0).sum()
    e, g = explain_then_gradient(tape, y, i)
    assert g is None and e.reason == "integer_dtype"
    assert "the source is Tensor of shape (2,) int64" in str(e)
    assert "Only floating-point tensors have gradients" in str(e)


def test_integer_target():
    w = gg.Variable([1.0, 3.0, 2.0])
    with gg.GradientTape() as tape:
        k = gg.argmax(w * 2.0)
    e = gg.explain_gradient(tape, k, w)
    with pytest.raises(gg.DTypeError):
        tape.gradient(k, w)
    assert (e.reason, e.gradient) == ("integer_target", "error")
    assert str(e).startswith("tape.gradient(target, source) raises DTypeError: the target is Tensor "
                             "of shape () int64")


# --------------------------------------------------------------------------- cut paths


def test_cut_by_stop_gradient_names_the_op_and_the_chain():
    w = gg.Variable([1.0, 2.0])
    with gg.GradientTape() as tape:
        h = w * 2.0
        y = (gg.stop_gradient(h) * 3.0).sum()
    e, g = explain_then_gradient(tape, y, w)
    assert g is None
    # as in TensorFlow, ops that read only stop_gradient's output are not recorded: the chain ends at the cut
    assert (e.reason, e.op, e.chain) == ("stop_gradient", "StopGradient", ("Mul", "StopGradient"))
    assert "is cut by op 'StopGradient' (gg.stop_gradient)" in str(e)
    assert str(e).endswith("path: source -> Mul -> StopGradient (cut) -> (end)")


def test_cut_by_a_non_differentiable_op_names_it():
    w = gg.Variable([[-1.0, 2.0], [3.0, 1.0]])
    with gg.GradientTape() as tape:
        y = (gg.cast(gg.argmax(w * 2.0, axis=1), "float32") * 5.0).sum()
    e, g = explain_then_gradient(tape, y, w)
    assert g is None
    assert "ArgMax" in gg.registry.not_differentiable_ops()
    assert (e.reason, e.op, e.chain) == ("not_differentiable", "ArgMax", ("Mul", "ArgMax", "Cast", "Mul", "Sum"))
    assert "cut by op 'ArgMax', which is declared not differentiable" in str(e)
    assert "path: source -> Mul -> ArgMax (cut) -> Cast -> Mul -> Sum -> target" in str(e)


def test_cut_by_stop_recording():
    w = gg.Variable([1.0, 2.0])
    with gg.GradientTape() as tape:
        h = w * 2.0
        with tape.stop_recording():
            h2 = h * 3.0
        y = (h2 + 1.0).sum()
    e, g = explain_then_gradient(tape, y, w)
    assert g is None
    assert (e.reason, e.op, e.chain) == ("not_recorded", "Mul", ("Mul",))
    text = str(e)
    assert "the tape has no record of the op that made the target" in text
    assert "inside tape.stop_recording()" in text and "cannot tell which" in text  # honest: no trace is left
    assert "The source's recorded path ends at Tensor of shape (2,) float32, which no recorded op reads" in text
    assert text.endswith("path: source -> Mul -> (end)")


def test_cut_by_stop_recording_before_a_recorded_op_is_flagged_as_a_possibility():
    w, u = gg.Variable([1.0, 2.0]), gg.Variable([3.0, 4.0], name="u")
    with gg.GradientTape() as tape:
        h = w * 2.0
        with tape.stop_recording():
            h2 = h * 3.0
        y = (h2 * u).sum()  # recorded: it reads u
    e, g = explain_then_gradient(tape, y, w)
    assert g is None and e.reason == "unconnected"
    text = str(e)
    assert "read Variable 'u' of shape (2,) float32 and 1 tensor(s) the tape did not record" in text
    assert "If one of the target's unrecorded inputs was computed from the source inside " \
           "tape.stop_recording() or through .numpy(), that is where the path breaks" in text


def test_target_does_not_depend_on_source():
    w, u = gg.Variable([1.0, 2.0], name="w"), gg.Variable([3.0, 4.0], name="u")
    with gg.GradientTape() as tape:
        _ = w * 2.0
        y = (u * 3.0).sum()
    e, g = explain_then_gradient(tape, y, w)
    assert g is None and (e.reason, e.chain, e.op) == ("unconnected", ("Mul",), None)
    text = str(e)
    assert "the target does not depend on the source in anything the tape recorded" in text
    assert "The recorded ops that make the target read Variable 'u' of shape (2,) float32." in text
    assert "stop_recording" not in text  # no unrecorded input: nothing to suspect


def test_used_non_persistent_tape():
    w = gg.Variable([1.0, 2.0])
    with gg.GradientTape() as tape:
        y = (w * w).sum()
    tape.gradient(y, w)
    e = gg.explain_gradient(tape, y, w)
    with pytest.raises(gg.GradientError):
        tape.gradient(y, w)
    assert (e.reason, e.gradient) == ("tape_used", "error")
    assert "raises GradientError: this non-persistent tape already computed a gradient" in str(e)
    assert "persistent=True" in str(e)


# --------------------------------------------------------------------------- reached, but None or zero


def test_zero_gradient_names_the_op_that_zeroes_it():
    w = gg.Variable([1.0, 2.0])
    with gg.GradientTape() as tape:
        y = gg.relu(w * -1.0).sum()
    e, g = explain_then_gradient(tape, y, w)
    assert g.numpy().tolist() == [0.0, 0.0]
    assert (e.reason, e.gradient, e.op, e.chain) == ("zero", "zero", "Relu", ("Mul", "Relu"))
    assert "op 'Relu' sends back zeros for its input Tensor of shape (2,) float32 (every input entry is " \
           "<= 0), although the gradient of its output is not zero" in str(e)
    assert str(e).endswith("path: source -> Mul -> Relu (zero gradient) -> ... -> target")


def test_zero_gradient_by_cancelling_paths():
    w = gg.Variable([1.0, 2.0])
    with gg.GradientTape() as tape:
        y = (w - w).sum()
    e, g = explain_then_gradient(tape, y, w)
    assert g.numpy().tolist() == [0.0, 0.0]
    assert (e.reason, e.op) == ("zero", None)
    assert "the contributions of several paths cancel out" in str(e)


def test_rule_that_returns_none():
    @gg.custom_gradient
    def no_gradient(x):
        return x * 2.0, lambda dy: None

    x = gg.tensor([1.0, 2.0])
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = no_gradient(x).sum()
    e, g = explain_then_gradient(tape, y, x)
    assert g is None
    assert (e.reason, e.op) == ("rule_returns_none", "CustomGradient:no_gradient")
    assert "the gradient rule of op 'CustomGradient:no_gradient' returns None" in str(e)


def test_gradient_error_is_reported_not_raised():
    w = gg.Variable([1.0, 2.0])
    with gg.GradientTape() as tape:
        y = (w * w).sum()
    w.assign([5.0, 6.0])  # the Mul gradient needs the old value
    e = gg.explain_gradient(tape, y, w)
    with pytest.raises(gg.GradientError):
        tape.gradient(y, w)
    assert (e.reason, e.gradient) == ("gradient_error", "error")
    assert "raises GradientError: variable" in str(e) and "was assigned after op 'Mul'" in str(e)


def test_connected_nonzero():
    w = gg.Variable([1.0, 0.0, 2.0])
    with gg.GradientTape() as tape:
        y = (w * w).sum()
    e, g = explain_then_gradient(tape, y, w)
    assert g.numpy().tolist() == [2.0, 0.0, 4.0]
    assert (e.reason, e.gradient, e.chain, e.op) == ("connected", "nonzero", ("Mul", "Sum"), None)
    assert str(e) == ("tape.gradient(target, source) is neither None nor zero: 2 of 3 entries are "
                      "non-zero.\npath: source -> Mul -> Sum -> target")


# --------------------------------------------------------------------------- the tool itself


def test_nested_sources_give_nested_explanations():
    w, u = gg.Variable([1.0]), gg.Variable([2.0])
    c = gg.tensor([3.0])
    with gg.GradientTape() as tape:
        y = (w * u).sum()
    e = gg.explain_gradient(tape, y, {"w": w, "more": [u, c]})
    assert e["w"].reason == "connected"
    assert [x.reason for x in e["more"]] == ["connected", "tensor_not_watched"]


def test_explaining_records_nothing_on_outer_tapes():
    x = gg.tensor([1.0, 2.0])
    with gg.GradientTape() as outer:
        outer.watch(x)
        with gg.GradientTape() as inner:
            inner.watch(x)
            y = (x * x).sum()
        before = len(outer._ops)
        e = gg.explain_gradient(inner, y, x)  # sweeps on the side
        assert len(outer._ops) == before and active_tapes() == [outer]
    assert e.reason == "connected"


def test_arguments_are_checked():
    x = gg.tensor(1.0)
    with gg.GradientTape() as tape:
        tape.watch(x)
    with pytest.raises(TypeError, match="target must be a tensor"):
        gg.explain_gradient(tape, 1.0, x)
    with pytest.raises(TypeError, match="sources must be tensors"):
        gg.explain_gradient(tape, x, [np.ones(2)])


def test_gradient_docstring_points_at_explain_gradient():
    assert "gg.explain_gradient(tape, target, source)" in gg.GradientTape.gradient.__doc__
