"""The recently added op families at two boundaries of the engine, one table of cases for both; then the
same two checks over every op of the gradient-check table (gpugrad/_tools/op_specs), the class.

- Forward mode: ``gg.jvp`` (the double-VJP construction: the gradient rules' own gradients with
  respect to the upstream gradient) against central finite differences of the forward function, and
  against ``gg.vjp`` through the transpose identity ``<u, J v> = <J^T u, v>``. A rule that computes its
  gradient outside the recorded ops (on raw arrays) gives a zero tangent here, not an error: the check
  catches it (``test_the_jvp_check_catches_a_rule_computed_off_the_tape``).
- Second order inside ``gg.function``: a gradient of a gradient (two nested tapes) traced once and
  replayed gives eager's bits on each of three calls (``test_the_bit_check_catches_a_replay_one_ulp_off``).

Every case is float64 on the CPU, at points away from the ops' kinks and ties, so that finite
differences (step 1e-6) are accurate to about 1e-8.
"""
import warnings

import numpy as np
import pytest

import gpugrad as gg
from gpugrad._tools.op_specs import ALL_SPECS
from gpugrad._tracing import kernels

F = gg.nn.functional
RNG = np.random.default_rng(2026)
EPS = 1e-6


def normal(*shape):
    return RNG.standard_normal(shape)


def uniform(lo, hi, *shape):
    return RNG.uniform(lo, hi, shape)


def away_from(points, lo, hi, *shape, gap=0.2):
    """Uniform values in [lo, hi] at least ``gap`` from each of ``points`` (the op's kinks)."""
    x = RNG.uniform(lo, hi, shape)
    for p in points:
        near = np.abs(x - p) < gap
        x[near] = p + np.where(x[near] >= p, gap, -gap) * 2
    return x


LABELS = np.array([0, 3, 1, 2, 3])
WEIGHTS = np.array([0.5, 2.0, 1.0, 1.5])
SCATTER_INDEX = np.array([[0, 1, 0, 2], [2, 2, 1, 0]])  # repeats: several sources meet in one place
SEGMENTS = np.array([0, 0, 2, 1, 2, 2])


def _lstm():
    return gg.nn.LSTM(3, 4, batch_first=True, dtype="float64", seed=0)


def _gru():
    return gg.nn.GRU(3, 4, dtype="float64", seed=1)


LSTM, GRU = _lstm(), _gru()

# id: (function of float64 tensors -> a float tensor, the primal arrays)
CASES = {
    "attention": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
                  [normal(2, 2, 4, 3), normal(2, 2, 5, 3), normal(2, 2, 5, 2)]),
    "attention-causal-scale": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3),
                               [normal(1, 2, 4, 3), normal(1, 2, 4, 3), normal(1, 2, 4, 3)]),
    "attention-mask": (lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, mask=np.array([[True, False, True], [True, True, False]])),
        [normal(2, 2, 3), normal(2, 3, 3), normal(2, 3, 4)]),
    "conv1d": (lambda x, w, b: gg.conv1d(x, w, b, stride=2, padding=1, dilation=2),
               [normal(2, 3, 9), normal(4, 3, 3), normal(4)]),
    "conv1d-groups": (lambda x, w: gg.conv1d(x, w, groups=2, padding="same"), [normal(1, 4, 6), normal(2, 2, 3)]),
    "conv_transpose2d": (lambda x, w, b: gg.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
                         [normal(1, 2, 3, 4), normal(2, 3, 3, 3), normal(3)]),
    "conv_transpose2d-groups-dilation": (lambda x, w: gg.conv_transpose2d(x, w, groups=2, dilation=2),
                                         [normal(1, 4, 3, 3), normal(4, 1, 2, 2)]),
    **{f"pad-{mode}": (lambda x, mode=mode: gg.pad(x, ((1, 2), (2, 1)), mode=mode), [normal(3, 4)])
       for mode in ("constant", "reflect", "edge", "wrap")},
    "F.pad-reflect": (lambda x: F.pad(x, (1, 2), mode="reflect"), [normal(2, 3, 5)]),
    "interpolate-nearest": (lambda x: gg.interpolate(x, size=7), [normal(1, 2, 5)]),
    "interpolate-linear": (lambda x: gg.interpolate(x, size=7, mode="linear"), [normal(1, 2, 5)]),
    "interpolate-linear-corners": (lambda x: gg.interpolate(x, scale_factor=2, mode="linear", align_corners=True),
                                   [normal(2, 1, 4)]),
    "interpolate-bilinear": (lambda x: gg.interpolate(x, size=(5, 3), mode="bilinear"), [normal(1, 2, 3, 4)]),
    "group_norm": (lambda x, w, b: gg.group_norm(x, 2, w, b), [normal(2, 4, 3, 3), normal(4), normal(4)]),
    **{f"nll_loss-{r}": (lambda lp, r=r: gg.nll_loss(lp, LABELS, weight=WEIGHTS, ignore_index=2, reduction=r),
                         [normal(5, 4)]) for r in ("mean", "sum", "none")},
    **{f"softmax_cross_entropy-{r}": (lambda z, r=r: gg.softmax_cross_entropy(
        z, LABELS, r, weight=WEIGHTS, ignore_index=1, label_smoothing=0.1), [normal(5, 4)])
       for r in ("mean", "sum", "none")},
    "huber": (lambda p, t: gg.huber(p, t, delta=0.7, reduction="none"),
              [np.array([0.0, 1.0, -2.0, 0.3, 5.0]), np.array([0.2, -0.5, -2.1, 1.4, 1.0])]),
    "kl_div": (lambda i, t: gg.kl_div(i, t, reduction="sum"), [normal(3, 4), uniform(0.1, 1.0, 3, 4)]),
    "kl_div-log_target": (lambda i, t: gg.kl_div(i, t, reduction="none", log_target=True),
                          [normal(3, 4), normal(3, 4)]),
    "scatter_add": (lambda x, s: gg.scatter_add(x, 0, SCATTER_INDEX, s), [normal(3, 4), normal(2, 4)]),
    **{f"scatter_reduce-{r}-{inc}": (lambda x, s, r=r, inc=inc: gg.scatter_reduce(x, 0, SCATTER_INDEX, s, r,
                                                                                 include_self=inc),
                                     [normal(3, 4), normal(2, 4)])
       for r in ("sum", "mean", "amax", "amin") for inc in (True, False)},
    "topk": (lambda x: gg.topk(x, 3)[0], [normal(4, 6)]),
    "topk-smallest-axis0": (lambda x: gg.topk(x, 2, axis=0, largest=False)[0], [normal(4, 3)]),
    "cummax": (lambda x: gg.cummax(x, axis=1)[0], [normal(3, 6)]),
    "logcumsumexp": (lambda x: gg.logcumsumexp(x, axis=1), [normal(3, 6)]),
    "segment_sum": (lambda d: gg.segment_sum(d, SEGMENTS, num_segments=4), [normal(6, 2)]),
    "relu6": (lambda x: gg.relu6(x), [away_from((0.0, 6.0), -2.0, 8.0, 12)]),
    "selu": (lambda x: gg.selu(x), [away_from((0.0,), -3.0, 3.0, 12)]),
    "celu": (lambda x: gg.celu(x, alpha=0.7), [away_from((0.0,), -3.0, 3.0, 12)]),
    "hardswish": (lambda x: gg.hardswish(x), [away_from((-3.0, 3.0), -5.0, 5.0, 12)]),
    "logit": (lambda x: gg.logit(x), [uniform(0.05, 0.95, 12)]),
    "logit-eps": (lambda x: gg.logit(x, eps=0.01), [uniform(0.05, 0.95, 12)]),
    "gelu-tanh": (lambda x: gg.gelu(x, approximate="tanh"), [normal(12)]),
    "gelu": (lambda x: gg.gelu(x), [normal(12)]),
    "lgamma": (lambda x: gg.lgamma(x), [uniform(0.3, 4.0, 12)]),
    "digamma": (lambda x: gg.digamma(x), [uniform(0.3, 4.0, 12)]),
    "erfc": (lambda x: gg.erfc(x), [normal(12)]),
    "erfinv": (lambda x: gg.erfinv(x), [uniform(-0.9, 0.9, 12)]),
    "xlogy": (lambda x, y: gg.xlogy(x, y), [normal(12), uniform(0.2, 3.0, 12)]),
    "LSTM": (lambda x: LSTM(x)[0], [normal(2, 4, 3)]),
    "LSTM-state": (lambda x: LSTM(x)[1][1], [normal(2, 4, 3)]),
    "GRU": (lambda x: GRU(x)[0], [normal(4, 2, 3)]),
}


def _primals(arrays):
    return tuple(gg.tensor(a) for a in arrays)


def _finite_difference(fn, arrays, tangents):
    """(f(x + eps v) - f(x - eps v)) / (2 eps), the directional derivative along ``tangents``."""
    plus = fn(*_primals([a + EPS * t for a, t in zip(arrays, tangents)])).numpy()
    minus = fn(*_primals([a - EPS * t for a, t in zip(arrays, tangents)])).numpy()
    return (plus - minus) / (2 * EPS)


def assert_jvp_is_the_directional_derivative(fn, arrays, seed=0):
    """``gg.jvp(fn)`` at ``arrays`` along random tangents: ``fn``'s value, and its finite difference."""
    rng = np.random.default_rng(seed)
    tangents = [rng.standard_normal(a.shape) for a in arrays]
    out, tangent_out = gg.jvp(fn, _primals(arrays), _primals(tangents))
    np.testing.assert_array_equal(out.numpy(), fn(*_primals(arrays)).numpy())
    assert tangent_out.shape == out.shape and tangent_out.dtype == out.dtype
    expected = _finite_difference(fn, arrays, tangents)
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    np.testing.assert_allclose(tangent_out.numpy(), expected, rtol=1e-5, atol=1e-6 * scale)
    return expected


@pytest.mark.parametrize("case", sorted(CASES))
def test_jvp_agrees_with_finite_differences(case):
    fn, arrays = CASES[case]
    expected = assert_jvp_is_the_directional_derivative(fn, arrays)
    assert np.abs(expected).max() > 1e-3  # the direction moves the output: a zero tangent would fail


@pytest.mark.parametrize("spec", [pytest.param(s, id=s.id) for s in ALL_SPECS ])
def test_jvp_of_every_op_spec_agrees_with_finite_differences(spec):
    """The class: every registered op, through the gradient-check table's inputs (drawn away from kinks)."""
    assert_jvp_is_the_directional_derivative(spec.fn, spec.inputs())


def test_the_jvp_check_catches_a_rule_computed_off_the_tape(monkeypatch):
    """Relu6's rule with the right values computed on raw arrays: reverse mode still agrees, forward mode
    (which differentiates the rule) gets a zero tangent, and the check fails."""
    def off_the_tape(op, dy):
        d = op.inputs[0].numpy()
        return (gg.tensor(np.where((d > 0) & (d < 6), dy.numpy(), 0.0)),)

    monkeypatch.setitem(gg.registry.rules, "Relu6", off_the_tape)
    fn, arrays = CASES["relu6"]
    _, vjp_fn = gg.vjp(fn, *_primals(arrays))
    np.testing.assert_array_equal(vjp_fn(gg.ones(12, dtype="float64"))[0].numpy(),
                                  ((arrays[0] > 0) & (arrays[0] < 6)).astype(float))
    with pytest.raises(AssertionError):
        assert_jvp_is_the_directional_derivative(fn, arrays)


@pytest.mark.parametrize("case", sorted(CASES))
def test_jvp_is_the_transpose_of_vjp(case):
    """<u, J v> = <J^T u, v>: forward and reverse mode describe one linear map."""
    fn, arrays = CASES[case]
    tangents = [normal(*a.shape) for a in arrays]
    out, tangent_out = gg.jvp(fn, _primals(arrays), _primals(tangents))
    cotangent = normal(*out.shape)
    _, vjp_fn = gg.vjp(fn, *_primals(arrays))
    transposed = vjp_fn(gg.tensor(cotangent))
    left = float(np.sum(cotangent * tangent_out.numpy()))
    right = sum(float(np.sum(g.numpy() * t)) for g, t in zip(transposed, tangents))
    assert left == pytest.approx(right, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("fn", [lambda x: gg.topk(x, 3), lambda x: gg.cummax(x, axis=1)], ids=["topk", "cummax"])
def test_jvp_of_an_op_with_an_index_output_gives_zero_index_tangents(fn):
    """(values, indices): the values' tangent moves, the integer indices' is zeros of their shape (as jax.jvp's
    float0 tangent, spelled as zeros)."""
    x, v = normal(3, 5), normal(3, 5)
    (values, indices), (dvalues, dindices) = gg.jvp(fn, (gg.tensor(x),), (gg.tensor(v),))
    np.testing.assert_array_equal(dindices.numpy(), np.zeros(indices.shape))
    expected = _finite_difference(lambda t: fn(t)[0], [x], [v])
    np.testing.assert_allclose(dvalues.numpy(), expected, rtol=1e-6, atol=1e-7)


def test_jvp_through_an_op_with_no_gradient_names_it():
    """Forward mode needs the op's gradient rule: without one, the error names the op type and the fix."""
    def no_rule(x):
        y = gg.tensor(np.sin(x.numpy()))
        gg.record_operation("NoRuleForJvpTest", [y], [x])
        return y

    with pytest.raises(gg.LookupGradientError, match="'NoRuleForJvpTest'.*RegisterGradient"):
        gg.jvp(no_rule, (gg.tensor(normal(3)),), (gg.tensor(normal(3)),))


# --------------------------------------------------------------------------- second order inside gg.function


def _gradient_of_gradient(fn, weight, directions):
    """``xs -> d/dxs <d/dxs <fn(xs), weight>, directions>``: a Hessian-vector product by two nested tapes."""
    def second(*xs):
        with gg.GradientTape() as outer:
            outer.watch(xs)
            with gg.GradientTape() as inner:
                inner.watch(xs)
                y = gg.sum(fn(*xs) * weight)
            grads = inner.gradient(y, list(xs), unconnected_gradients="zero")
            s = gg.sum(gg.stack([gg.sum(g * d) for g, d in zip(grads, directions)]))
        return outer.gradient(s, list(xs), unconnected_gradients="zero")
    return second


def assert_second_order_replays_to_eagers_bits(fn, arrays, retraces=0):
    """gg.function of a gradient of a gradient of ``fn``, called at ``arrays`` and at two points near them:
    eager's bits, from one trace (from at most ``1 + retraces``: a rule that picks its formula by the data
    traces again when a call takes the other branch)."""
    weight = gg.tensor(normal(*fn(*_primals(arrays)).shape))
    directions = _primals([normal(*a.shape) for a in arrays])
    second = _gradient_of_gradient(fn, weight, directions)
    traced = gg.function(second)
    for call in range(3):
        xs = _primals(arrays) if call == 0 else _primals([a + 0.01 * call * normal(*a.shape) for a in arrays])
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # "runs eagerly" is a failure here, with its reason
            got = traced(*xs)
        want = second(*xs)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    assert traced.trace_count <= 1 + retraces, traced.diagnostics()


@pytest.mark.parametrize("case", sorted(CASES))
def test_second_order_inside_gg_function_is_eagers_to_the_bit(case):
    assert_second_order_replays_to_eagers_bits(*CASES[case])


# Gradient rules that choose their formula by the data (a zero in x, a singular matrix, a zero base): a replay
# whose inputs take the other branch stops before any effect and traces again (plan.py: ReplayDiverged).
BRANCHING_RULES = {"CumProd", "Prod", "MatrixDeterminant", "Pow"}
DYNAMIC_SHAPES = {"Svd-lstsq_solution", "Svd-lstsq_residuals"}  # lstsq's rank: runs eagerly by declaration


@pytest.mark.parametrize("spec", [pytest.param(s, id=s.id) for s in ALL_SPECS
                                  if s.order >= 2 and s.id not in DYNAMIC_SHAPES])
def test_second_order_of_every_op_spec_inside_gg_function_is_eagers_to_the_bit(spec):
    assert_second_order_replays_to_eagers_bits(spec.fn, spec.inputs(), 2 if spec.op_type in BRANCHING_RULES else 0)


class _OneUlpOff:
    """A replay declaration whose kernel writes its result one ulp up: a replay that is not eager's bits."""

    def __init__(self, declared):
        self._declared = declared

    def __getattr__(self, name):
        return getattr(self._declared, name)

    def build(self, inputs, attrs, outputs, device):
        run = self._declared.build(inputs, attrs, outputs, device)
        if run is None:
            return None

        def off():
            run()
            for out in outputs:
                np.nextafter(out, np.inf, out=out)
        return off


def test_the_bit_check_catches_a_replay_one_ulp_off(monkeypatch):
    real = kernels.lookup
    monkeypatch.setattr(kernels, "lookup", lambda op_type: _OneUlpOff(real(op_type)) if op_type == "Mul" else
                        real(op_type))
    with pytest.raises(AssertionError, match="not equal"):
        assert_second_order_replays_to_eagers_bits(*CASES["gelu-tanh"])
