"""Fuzzing every op, forward and backward, with hypothesis.

Each op is fed random shapes (0 to 3 dimensions, zero-size ones included),
dtypes (float16, float32, float64; integers and booleans where NumPy takes
them; mixed dtypes in binary ops) and values (NaN, ±Inf, ±0, the largest and
smallest normal and subnormal numbers of the dtype, and ordinary numbers),
with shapes that sometimes do not fit (broadcasting, matmul, reshape, concat,
axes, indices and labels out of range). Every call must either

- compute: the result matches NumPy's where NumPy has the op (same shape, dtype
  and values, NaN where NumPy gives NaN), or a float64 reference of the formula
  where it does not (values compared where the inputs are finite and moderate,
  as extreme inputs are exactly what stable formulas treat differently); then
  ``tape.gradient`` of the result with respect to every float input either
  computes (one gradient of each input's shape, in a float dtype) or raises a
  gpugrad error;
- or raise a gpugrad error (:class:`gpugrad.GpugradError`), and only where
  NumPy raises too, unless the op is marked as refusing more than NumPy does
  (concat of mixed dtypes, labels out of range, ...).

Anything else (a built-in exception, a crash, a warning other than NumPy's
floating-point RuntimeWarnings) fails the test, and hypothesis shrinks it to
a minimal example. The search is derandomized (the same examples on every
run) and bounded so the file runs in well under a minute on two cores.
"""
import math
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gpugrad as gg
from gpugrad.errors import GpugradError
from gpugrad.ops.hot import HOT_GRADIENTS

EXAMPLES = int(os.environ.get("GPUGRAD_FUZZ_EXAMPLES", "30"))  # more to search harder
DEVICE = os.environ.get("GPUGRAD_FUZZ_DEVICE", "cpu")  # "cuda" on a GPU machine, by hand
FUZZ = settings(derandomize=True, max_examples=EXAMPLES, deadline=None, database=None, print_blob=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])

FLOATS = (np.float16, np.float32, np.float64)
ANY = FLOATS + (np.int64, np.int32, np.bool_)
RTOL = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 2e-6, np.dtype(np.float64): 1e-13}
FORMULA_RTOL = {np.dtype(np.float16): 2e-2, np.dtype(np.float32): 2e-4, np.dtype(np.float64): 1e-9}


# ---------------------------------------------------------------- values, arrays, shapes


def special_values(dtype):
    info = np.finfo(dtype)
    return [0.0, -0.0, 1.0, -1.0, 0.5, -2.0, 3.0, math.nan, math.inf, -math.inf, float(info.max),
            -float(info.max), float(info.tiny), -float(info.tiny), float(info.smallest_subnormal), 1000.0]


def elements(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return st.booleans()
    if dtype.kind in "iu":
        return st.integers(-4, 4)
    width = dtype.itemsize * 8
    return st.one_of(st.sampled_from(special_values(dtype)),
                     st.floats(width=width, allow_nan=True, allow_infinity=True),
                     st.floats(-3.0, 3.0, width=width))


def shapes(min_dims=0, max_dims=3, min_side=0, max_side=4):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def array(data, shape=None, dtypes=FLOATS, **shape_kw):
    dtype = np.dtype(data.draw(st.sampled_from(dtypes)))
    if shape is None:
        shape = data.draw(shapes(**shape_kw))
    return data.draw(hnp.arrays(dtype, shape, elements=elements(dtype)))


def moderate(dtype, shape):
    """Finite inputs of modest size, where every formula's reference is fair."""
    return hnp.arrays(dtype, shape, elements=st.floats(-4.0, 4.0, width=np.dtype(dtype).itemsize * 8))


def broadcastable_shapes(data, n):
    """``n`` shapes that broadcast together, or (one time in five) shapes drawn independently."""
    if data.draw(st.integers(0, 4)) == 0:
        return [data.draw(shapes()) for _ in range(n)]
    return list(data.draw(hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=0, max_dims=3,
                                                             max_side=4)).input_shapes)


def axis_arg(data, ndim, allow_tuple=True):
    """None, an axis (sometimes out of range) or a tuple of distinct axes."""
    choice = data.draw(st.integers(0, 3 if allow_tuple else 2))
    if choice == 0:
        return None
    if choice == 3 and ndim:
        return tuple(data.draw(st.lists(st.integers(-ndim, ndim - 1), unique_by=lambda a: a % ndim,
                                        max_size=ndim)))
    return data.draw(st.integers(-ndim - 1, ndim))


# ---------------------------------------------------------------- the check every example runs


class Case:
    """One call: its NumPy inputs, the gpugrad call and the reference.

    ``reference(*arrays)`` is NumPy's own op (``exact``: compared always) or a
    float64 formula (compared where the inputs are moderate); ``None`` checks
    only that the call computes or raises a gpugrad error. ``refuses``: the op
    may raise a gpugrad error where NumPy computes.
    """

    def __init__(self, arrays, call, reference=None, exact=True, refuses=False, differentiable=True,
                 gpu_computes_more=False):
        self.arrays, self.call, self.reference = arrays, call, reference
        self.exact, self.refuses, self.differentiable = exact, refuses, differentiable
        self.gpu_computes_more = gpu_computes_more  # CuPy computes some things NumPy refuses (int ** -1)


def flush_subnormals(a):
    """``a`` with subnormal floats set to (signed) zero, as a GPU kernel compiled with -ftz reads them."""
    if a.dtype.kind != "f":
        return a
    return np.where(np.abs(a) < np.finfo(a.dtype).tiny, np.copysign(np.zeros((), a.dtype), a), a).astype(a.dtype)


def run(case):
    if DEVICE != "cpu":
        case.arrays = [flush_subnormals(a) for a in case.arrays]
    tensors = [gg.tensor(a, device=DEVICE) for a in case.arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's overflow, invalid value, mean of empty slice
        with np.errstate(all="ignore"):
            want, numpy_error = None, None
            if case.reference is not None:
                try:
                    want = case.reference(*[a.copy() for a in case.arrays])
                except (ValueError, IndexError, TypeError, DeprecationWarning) as e:
                    numpy_error = e  # (NumPy 2.2 warns for an out-of-bound index into an empty result; 2.3 raises)
            with gg.GradientTape(persistent=True) as tape:
                tape.watch([t for t in tensors if t.dtype.kind == "f"])
                try:
                    out = case.call(*tensors)
                except GpugradError as e:
                    if case.reference is not None and numpy_error is None and not case.refuses:
                        pytest.fail(f"gpugrad raised {type(e).__name__}: {e}\nbut NumPy computes it")
                    return "raised"
            if numpy_error is not None and DEVICE != "cpu" and case.gpu_computes_more:
                return "computed"
            if numpy_error is not None:
                pytest.fail(f"NumPy raised {type(numpy_error).__name__}: {numpy_error}\nbut gpugrad computed it")
            outs = out if isinstance(out, (list, tuple)) else [out]
            if case.reference is not None:
                wants = want if isinstance(want, (list, tuple)) else [want]
                assert len(outs) == len(wants)
                for o, w in zip(outs, wants):
                    compare(o, np.asarray(w), case)
            if case.differentiable:
                backward(tape, outs, tensors)
    return "computed"


def compare(out, want, case):
    got = out.numpy()
    assert got.shape == want.shape, f"shape {got.shape}, NumPy's {want.shape}"
    if case.exact:
        assert got.dtype == want.dtype, f"dtype {got.dtype}, NumPy's {want.dtype}"
        rtol, atol = RTOL.get(got.dtype, 0), 0
        if DEVICE != "cpu" and got.dtype.kind == "f":
            # a GPU flushes subnormal results to zero and may drop the sign of a zero (so of 1/0)
            atol = float(np.finfo(got.dtype).tiny)
            both_inf = np.isinf(got) & np.isinf(want)
            got, want = np.where(both_inf, np.abs(got), got), np.where(both_inf, np.abs(want), want)
        if got.dtype.kind in "fc":
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(got, want)
        return
    inputs = [a for a in case.arrays if a.dtype.kind == "f"]
    if not all(np.isfinite(a).all() and (a.size == 0 or np.abs(a).max() <= 4) for a in inputs):
        return
    assert got.dtype.kind == "f" or got.dtype == want.dtype, f"dtype {got.dtype}"
    # as precise as the least precise input: a float16 input promoted to float64 midway keeps float16's error
    rtol = max(FORMULA_RTOL.get(d, 1e-9) for d in [got.dtype] + [a.dtype for a in inputs])
    scale = float(np.abs(want[np.isfinite(want)]).max()) if np.isfinite(want).any() else 1.0
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                               atol=rtol * max(scale, 1e-3), equal_nan=True)


def backward(tape, outs, tensors):
    targets = [o for o in outs if o.dtype.kind == "f"]
    sources = [t for t in tensors if t.dtype.kind == "f"]
    if not targets or not sources:
        return
    try:
        grads = tape.gradient(targets, sources)
    except GpugradError:
        return
    for g, s in zip(grads, sources):
        if g is not None:
            assert g.shape == s.shape, f"gradient of shape {g.shape} for an input of shape {s.shape}"
            assert g.dtype.kind == "f", f"gradient of dtype {g.dtype}"


def f64(a):
    return np.asarray(a, dtype=np.float64)


def fuzz(make):
    """A test that draws cases from ``make(data)`` and runs each."""
    @FUZZ
    @given(data=st.data())
    def test(data):
        run(make(data))
    return test


# ---------------------------------------------------------------- elementwise


UNARY_NUMPY = {
    "negative": (gg.negative, np.negative, FLOATS + (np.int64,)),
    "abs": (gg.abs, np.abs, ANY[:-1]),
    "sign": (gg.sign, np.sign, FLOATS + (np.int64,)),
    "square": (gg.square, np.square, ANY[:-1]),
    "sqrt": (gg.sqrt, np.sqrt, ANY),
    "exp": (gg.exp, np.exp, ANY),
    "log": (gg.log, np.log, ANY),
    "expm1": (gg.expm1, np.expm1, FLOATS),
    "log1p": (gg.log1p, np.log1p, FLOATS),
    "sin": (gg.sin, np.sin, ANY),
    "cos": (gg.cos, np.cos, ANY),
    "tanh": (gg.tanh, np.tanh, ANY),
    "reciprocal": (gg.reciprocal, lambda x: 1 / x, FLOATS),
}


@pytest.mark.parametrize("name", list(UNARY_NUMPY))
def test_unary_ops_match_numpy(name):
    fn, ref, dtypes = UNARY_NUMPY[name]
    fuzz(lambda data: Case([array(data, dtypes=dtypes)], fn, ref))()


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(f64(x))


UNARY_FORMULA = {
    "sigmoid": (gg.sigmoid, lambda x: 1 / (1 + np.exp(-f64(x)))),
    "relu": (gg.relu, lambda x: np.maximum(f64(x), 0)),
    "leaky_relu": (lambda x: gg.leaky_relu(x, 0.1), lambda x: np.where(f64(x) > 0, f64(x), 0.1 * f64(x))),
    "elu": (gg.elu, lambda x: np.where(f64(x) > 0, f64(x), np.expm1(f64(x)))),
    "softplus": (gg.softplus, lambda x: np.logaddexp(0, f64(x))),
    "rsqrt": (gg.rsqrt, lambda x: 1 / np.sqrt(f64(x))),
    "erf": (gg.erf, _erf),
    "gelu": (gg.gelu, lambda x: 0.5 * f64(x) * (1 + _erf(f64(x) / math.sqrt(2)))),
    "identity": (gg.identity, lambda x: x),
    "stop_gradient": (gg.stop_gradient, lambda x: x),
}


@pytest.mark.parametrize("name", list(UNARY_FORMULA))
def test_unary_ops_match_their_formula(name):
    fn, ref = UNARY_FORMULA[name]
    fuzz(lambda data: Case([array(data)], fn, ref, exact=False))()


BINARY = {
    "add": (gg.add, np.add), "subtract": (gg.subtract, np.subtract), "multiply": (gg.multiply, np.multiply),
    "divide": (gg.divide, np.divide), "power": (gg.power, np.power), "maximum": (gg.maximum, np.maximum),
    "minimum": (gg.minimum, np.minimum), "operator_matmul_free_mix": (lambda x, y: x * 2.0 - y / 3.0, None),
}


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_ops_broadcast_and_promote_as_numpy_does(name):
    fn, ref = BINARY[name]

    def make(data):
        sx, sy = broadcastable_shapes(data, 2)
        return Case([array(data, sx, ANY), array(data, sy, ANY)], fn, ref, gpu_computes_more=name == "power")

    fuzz(make)()


@pytest.mark.parametrize("name", list(HOT_GRADIENTS))
def test_fused_gradient_ops_compute_or_raise_and_have_gradients(name):
    h = HOT_GRADIENTS[name]

    def fn(*tensors):
        return h.function(*tensors, **h.check.params)

    def make(data):
        return Case([array(data, s) for s in broadcastable_shapes(data, len(h.inputs))], fn)

    fuzz(make)()


def test_where():
    def make(data):
        sc, sx, sy = broadcastable_shapes(data, 3)
        cond = data.draw(hnp.arrays(np.bool_, sc))
        return Case([array(data, sx), array(data, sy)], lambda x, y: gg.where(cond, x, y),
                    lambda x, y: np.where(cond, x, y))

    fuzz(make)()


def test_clip():
    def make(data):
        sx, slo, shi = broadcastable_shapes(data, 3)
        x = array(data, sx)
        lo = data.draw(st.one_of(st.floats(-2, 0, width=16), moderate(x.dtype, slo)))
        hi = data.draw(st.one_of(st.floats(0, 2, width=16), moderate(x.dtype, shi)))
        return Case([x], lambda t: gg.clip(t, lo, hi), lambda a: np.clip(a, lo, hi).astype(a.dtype))

    fuzz(make)()


# ---------------------------------------------------------------- reductions


REDUCTIONS = {
    "sum": (gg.sum, np.sum, True), "mean": (gg.mean, np.mean, True), "max": (gg.max, np.max, True),
    "min": (gg.min, np.min, True), "prod": (gg.prod, np.prod, True), "var": (gg.var, np.var, True),
    "std": (gg.std, np.std, True), "argmax": (gg.argmax, np.argmax, False), "argmin": (gg.argmin, np.argmin, False),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reductions_match_numpy(name):
    fn, ref, tuples = REDUCTIONS[name]

    def make(data):
        x = array(data, dtypes=FLOATS + (np.int64,))
        axis = axis_arg(data, x.ndim, allow_tuple=tuples)
        keepdims = data.draw(st.booleans())
        want = (lambda a: ref(a, axis=axis, keepdims=keepdims)) if x.ndim or axis in (None, 0, -1) else None
        if name in ("argmax", "argmin"):
            want = (lambda a: np.asarray(ref(a, axis=axis, keepdims=keepdims)).astype(np.int64)) if want else None
        return Case([x], lambda t: fn(t, axis=axis, keepdims=keepdims), want, refuses=x.ndim == 0)

    fuzz(make)()


def _logsumexp(a, axis, keepdims):
    a = f64(a)
    m = np.max(a, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def test_logsumexp():
    def make(data):
        x = array(data, min_dims=1)
        axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
        keepdims = data.draw(st.booleans())
        return Case([x], lambda t: gg.logsumexp(t, axis=axis, keepdims=keepdims),
                    None if x.size == 0 else (lambda a: _logsumexp(a, axis, keepdims)), exact=False)

    fuzz(make)()


# ---------------------------------------------------------------- linear algebra


def test_matmul():
    def make(data):
        n, k, m = (data.draw(st.integers(0, 3)) for _ in range(3))
        batch = data.draw(shapes(max_dims=2, max_side=3))
        a_shape, b_shape = batch + (n, k), (m if data.draw(st.booleans()) else k,) + (m,)
        if data.draw(st.integers(0, 3)) == 0:
            a_shape, b_shape = data.draw(shapes()), data.draw(shapes())
        ta, tb = data.draw(st.booleans()), data.draw(st.booleans())
        a, b = array(data, a_shape), array(data, b_shape)
        if ta and a.ndim >= 2:
            a = np.ascontiguousarray(np.swapaxes(a, -1, -2))
        if tb and b.ndim >= 2:
            b = np.ascontiguousarray(np.swapaxes(b, -1, -2))

        def ref(x, y):
            if (ta and x.ndim < 2) or (tb and y.ndim < 2) or x.ndim == 0 or y.ndim == 0:
                raise ValueError("gpugrad transposes only operands of 2 or more dimensions")
            return np.matmul(np.swapaxes(x, -1, -2) if ta else x, np.swapaxes(y, -1, -2) if tb else y)

        return Case([a, b], lambda x, y: gg.matmul(x, y, transpose_a=ta, transpose_b=tb), ref)

    fuzz(make)()


def _sigmoid(z):
    e = np.exp(-np.abs(z))
    return (np.where(z >= 0, 1, e) / (1 + e)).astype(z.dtype, copy=False)


DENSE_ACTIVATIONS = {None: lambda z: z, "relu": lambda z: np.maximum(z, 0), "tanh": np.tanh, "sigmoid": _sigmoid}


def test_dense():
    def make(data):
        k, m = data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3))
        x_shape = data.draw(shapes(max_dims=2, max_side=3)) + (k,)
        kernel_shape, bias_shape = (k, m), (m,)
        if data.draw(st.integers(0, 3)) == 0:  # shapes that may not fit
            x_shape, kernel_shape, bias_shape = (data.draw(shapes()) for _ in range(3))
        activation = data.draw(st.sampled_from(sorted(DENSE_ACTIVATIONS, key=str)))
        with_bias = data.draw(st.booleans())
        arrays = [array(data, x_shape, dtypes=ANY), array(data, kernel_shape)]
        if with_bias:
            arrays.append(array(data, bias_shape))

        def ref(x, kernel, bias=None):
            if kernel.ndim != 2 or x.ndim == 0 or (bias is not None and bias.shape != (kernel.shape[1],)):
                raise ValueError("gpugrad's dense takes x (..., in), kernel (in, out), bias (out,)")
            z = np.matmul(x, kernel)
            return DENSE_ACTIVATIONS[activation](z if bias is None else z + bias)

        # dense takes floats only, where NumPy multiplies integers too
        return Case(arrays, lambda *ts: gg.dense(*ts, activation=activation), ref,
                    refuses=arrays[0].dtype.kind != "f")

    fuzz(make)()


def test_tensordot():
    def make(data):
        axes = data.draw(st.integers(0, 2))
        a = array(data)
        b_lead = a.shape[a.ndim - axes:] if axes <= a.ndim and data.draw(st.integers(0, 3)) else \
            data.draw(shapes(max_dims=axes, min_dims=axes))
        b = array(data, tuple(b_lead) + data.draw(shapes(max_dims=2)))
        return Case([a, b], lambda x, y: gg.tensordot(x, y, axes), lambda x, y: np.tensordot(x, y, axes))

    fuzz(make)()


EINSUMS = ["ij,jk->ik", "i,i->", "bij,bjk->bik", "ij->ji", "ij->", "ij,ij->i", "i,j->ij", "...i,...i->..."]


def test_einsum():
    def make(data):
        spec = data.draw(st.sampled_from(EINSUMS))
        sizes = {c: data.draw(st.integers(0, 3)) for c in "ijkb"}
        ins = spec.split("->")[0].split(",")
        arrays = []
        for sub in ins:
            shape = tuple(sizes[c] for c in sub.replace("...", ""))
            if "..." in sub:
                shape = data.draw(shapes(max_dims=2, max_side=3)) + shape
            if data.draw(st.integers(0, 5)) == 0:
                shape = data.draw(shapes())
            arrays.append(array(data, shape))
        return Case(arrays, lambda *ts: gg.einsum(spec, *ts), lambda *xs: np.einsum(spec, *xs))

    fuzz(make)()


# ---------------------------------------------------------------- shapes


def test_reshape():
    def make(data):
        x = array(data)
        size = x.size
        choice = data.draw(st.integers(0, 3))
        if choice == 0:
            shape = data.draw(shapes())  # usually the wrong size
        else:
            dims = [d for d in range(1, max(size, 1) + 1) if size % d == 0] if size else [0, 1, 2]
            first = data.draw(st.sampled_from(dims))
            rest = size // first if first else data.draw(st.integers(0, 3))
            shape = (first, rest) if choice == 1 else (first, -1) if first else (-1,)
        return Case([x], lambda t: gg.reshape(t, shape), lambda a: np.reshape(a, shape))

    fuzz(make)()


def test_transpose():
    def make(data):
        x = array(data)
        axes = data.draw(st.one_of(st.none(), st.permutations(range(x.ndim)).map(tuple),
                                   st.lists(st.integers(-x.ndim - 1, x.ndim), max_size=x.ndim + 1).map(tuple)))
        return Case([x], lambda t: gg.transpose(t, axes), lambda a: np.transpose(a, axes))

    fuzz(make)()


def test_expand_dims_and_squeeze():
    def make(data):
        x = array(data, max_side=2)
        if data.draw(st.booleans()):
            axis = data.draw(st.integers(-x.ndim - 2, x.ndim + 1))
            return Case([x], lambda t: gg.expand_dims(t, axis), lambda a: np.expand_dims(a, axis))
        axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim - 1, x.ndim)))
        # NumPy lets a 0-d array squeeze axis 0 or -1; gpugrad, like TensorFlow, says it has no axes
        return Case([x], lambda t: gg.squeeze(t, axis), lambda a: np.squeeze(a, axis), refuses=x.ndim == 0)

    fuzz(make)()


def test_concat_and_stack():
    def make(data):
        base = data.draw(shapes(min_dims=1))
        n = data.draw(st.integers(1, 3))
        axis = data.draw(st.integers(-len(base) - 1, len(base)))
        stack = data.draw(st.booleans())
        arrays = []
        for _ in range(n):
            shape = list(base)
            if not stack and -len(base) <= axis < len(base):
                shape[axis] = data.draw(st.integers(0, 3))
            if data.draw(st.integers(0, 5)) == 0:
                shape = list(data.draw(shapes()))
            arrays.append(array(data, tuple(shape)))
        if stack:
            return Case(arrays, lambda *ts: gg.stack(list(ts), axis), lambda *xs: np.stack(xs, axis), refuses=True)
        return Case(arrays, lambda *ts: gg.concat(list(ts), axis), lambda *xs: np.concatenate(xs, axis),
                    refuses=True)  # one dtype required; NumPy promotes

    fuzz(make)()


def test_split():
    def make(data):
        x = array(data, min_dims=1)
        axis = data.draw(st.integers(-x.ndim - 1, x.ndim))
        if data.draw(st.booleans()):
            parts = data.draw(st.integers(1, 4))
            ref = (lambda a: np.split(a, parts, axis)) if data.draw(st.booleans()) else None
            return Case([x], lambda t: gg.split(t, parts, axis), ref)
        sizes = data.draw(st.lists(st.integers(-1, 3), min_size=1, max_size=3))
        return Case([x], lambda t: gg.split(t, sizes, axis))

    fuzz(make)()


def test_pad():
    def make(data):
        x = array(data)
        widths = data.draw(st.one_of(st.integers(0, 2), st.tuples(st.integers(0, 2), st.integers(0, 2)),
                                     st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=x.ndim,
                                              max_size=x.ndim).map(tuple)))
        return Case([x], lambda t: gg.pad(t, widths), lambda a: np.pad(a, widths) if a.ndim else a,
                    refuses=x.ndim == 0)

    fuzz(make)()


def test_broadcast_to():
    def make(data):
        x = array(data)
        shape = data.draw(st.one_of(shapes(), hnp.broadcastable_shapes(x.shape, max_dims=4, min_side=0)))
        return Case([x], lambda t: gg.broadcast_to(t, shape), lambda a: np.broadcast_to(a, shape).copy())

    fuzz(make)()


# ---------------------------------------------------------------- indexing


def basic_key(data, ndim):
    part = st.one_of(st.integers(-5, 4), st.builds(slice, st.none() | st.integers(-5, 5),
                                                    st.none() | st.integers(-5, 5),
                                                    st.none() | st.sampled_from([1, 2, -1, -2])),
                     st.just(None), st.just(Ellipsis))
    key = data.draw(st.lists(part, max_size=ndim + 1))
    if key.count(Ellipsis) > 1:
        key = [k for k in key if k is not Ellipsis]
    return tuple(key)


def test_getitem():
    def make(data):
        x = array(data)
        kind = data.draw(st.integers(0, 2))
        if kind == 0:
            key = basic_key(data, x.ndim)
        elif kind == 1:
            key = data.draw(hnp.arrays(np.int64, data.draw(shapes(max_dims=2)), elements=st.integers(-6, 5)))
        else:
            key = data.draw(hnp.arrays(np.bool_, x.shape if data.draw(st.integers(0, 4)) else data.draw(shapes())))
        return Case([x], lambda t: t[key], lambda a: a[key])

    fuzz(make)()


def test_take_and_gather():
    def make(data):
        x = array(data, min_dims=1)
        idx = data.draw(hnp.arrays(np.int64, data.draw(shapes(max_dims=2)), elements=st.integers(-6, 5)))
        if data.draw(st.booleans()):
            axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim - 1, x.ndim)))
            return Case([x], lambda t: gg.take(t, idx, axis), lambda a: np.take(a, idx, axis))
        axis = data.draw(st.integers(-x.ndim - 1, x.ndim))
        return Case([x], lambda t: gg.gather(t, idx, axis), lambda a: np.take(a, idx, axis))

    fuzz(make)()


def test_embedding():
    def make(data):
        w = array(data, data.draw(shapes(min_dims=2, max_dims=2)))
        ids = data.draw(hnp.arrays(np.int64, data.draw(shapes(max_dims=2)), elements=st.integers(-1, 4)))
        ref = lambda a: a[ids] if ((ids >= 0) & (ids < a.shape[0])).all() else a[ids + 10 ** 6]  # noqa: E731
        return Case([w], lambda t: gg.embedding(ids, t), ref)

    fuzz(make)()


# ---------------------------------------------------------------- softmax and losses


def _softmax(a, axis):
    a = f64(a)
    e = np.exp(a - a.max(axis=axis, keepdims=True, initial=-np.inf))  # initial: an empty axis is fine
    return e / e.sum(axis=axis, keepdims=True)


def test_softmax_and_log_softmax():
    def make(data):
        x = array(data, min_dims=1)
        axis = data.draw(st.integers(-x.ndim - 1, x.ndim))
        ok = -x.ndim <= axis < x.ndim
        if data.draw(st.booleans()):
            return Case([x], lambda t: gg.softmax(t, axis), (lambda a: _softmax(a, axis)) if ok else None,
                        exact=False)
        return Case([x], lambda t: gg.log_softmax(t, axis), (lambda a: np.log(_softmax(a, axis))) if ok else None,
                    exact=False)

    fuzz(make)()


def test_softmax_cross_entropy():
    def make(data):
        logits = array(data, min_dims=1)
        labels = data.draw(hnp.arrays(np.int64, logits.shape[:-1] if data.draw(st.integers(0, 4))
                                      else data.draw(shapes()), elements=st.integers(-1, logits.shape[-1])))
        reduction = data.draw(st.sampled_from(["mean", "sum", "none"]))

        def ref(a):
            if labels.shape != a.shape[:-1] or (labels.size and (labels.min() < 0 or labels.max() >= a.shape[-1])):
                raise IndexError("labels do not fit")
            losses = -np.take_along_axis(np.log(_softmax(a, -1)), labels[..., None], -1)[..., 0]
            return {"mean": np.mean, "sum": np.sum, "none": lambda v: v}[reduction](losses)

        return Case([logits], lambda t: gg.softmax_cross_entropy(t, labels, reduction), ref, exact=False)

    fuzz(make)()


def test_sigmoid_cross_entropy_and_mse():
    def make(data):
        sx, _ = broadcastable_shapes(data, 2)
        x, y = array(data, sx), array(data, sx)  # a loss takes equal shapes (tests/test_trust_losses.py)
        if data.draw(st.booleans()):
            def ref(a, b):
                a, b = f64(a), f64(b)
                return np.mean(np.maximum(a, 0) - a * b + np.log1p(np.exp(-np.abs(a))))
            return Case([x, y], lambda a, b: gg.sigmoid_cross_entropy(a, b), ref, exact=False)
        return Case([x, y], lambda a, b: gg.mse(a, b), lambda a, b: np.mean(np.square(f64(a) - f64(b))),
                    exact=False)

    fuzz(make)()


# ---------------------------------------------------------------- network ops


def _windows(a, kh, kw, sh, sw):
    v = np.lib.stride_tricks.sliding_window_view(a, (kh, kw), axis=(2, 3))
    return v[:, :, ::sh, ::sw]


def test_conv2d():
    def make(data):
        n, c, h, w = (data.draw(st.integers(1, 3)) for _ in range(4))
        groups = data.draw(st.sampled_from([1, 1, c]))
        o = groups * data.draw(st.integers(1, 2))
        kh, kw = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
        stride, padding = data.draw(st.integers(1, 2)), data.draw(st.integers(0, 1))
        x_shape, w_shape = (n, c, h + 2, w + 2), (o, c // groups, kh, kw)
        if data.draw(st.integers(0, 4)) == 0:
            x_shape, w_shape = data.draw(shapes(max_dims=4)), data.draw(shapes(max_dims=4))
        dtype = data.draw(st.sampled_from(FLOATS))
        x, wt = array(data, x_shape, (dtype,)), array(data, w_shape, (dtype,))

        def ref(a, k):
            a, k = f64(a), f64(k)
            if a.ndim != 4 or k.ndim != 4 or a.shape[1] != k.shape[1] * groups or k.shape[0] % groups \
                    or 0 in k.shape[2:]:
                raise ValueError("shapes do not fit")
            a = np.pad(a, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
            if a.shape[2] < k.shape[2] or a.shape[3] < k.shape[3]:
                raise ValueError("kernel larger than the input")
            win = _windows(a, k.shape[2], k.shape[3], stride, stride)  # N C OH OW KH KW
            cg, og = a.shape[1] // groups, k.shape[0] // groups
            outs = [np.einsum("ncyxhw,ochw->noyx", win[:, g * cg:(g + 1) * cg], k[g * og:(g + 1) * og])
                    for g in range(groups)]
            return np.concatenate(outs, axis=1)

        return Case([x, wt], lambda a, k: gg.conv2d(a, k, stride=stride, padding=padding, groups=groups), ref,
                    exact=False)

    fuzz(make)()


def test_pooling():
    def make(data):
        x = array(data, data.draw(shapes(min_dims=4, max_dims=4, min_side=1)) if data.draw(st.integers(0, 5))
                  else data.draw(shapes()))
        k = data.draw(st.integers(1, 3))
        stride = data.draw(st.one_of(st.none(), st.integers(1, 2)))
        padding = data.draw(st.integers(0, k // 2))
        use_max = data.draw(st.booleans())

        def ref(a):
            if a.ndim != 4:
                raise ValueError("not NCHW")
            fill = -np.inf if use_max else 0.0
            a = np.pad(f64(a), ((0, 0), (0, 0), (padding, padding), (padding, padding)), constant_values=fill)
            if a.shape[2] < k or a.shape[3] < k:
                raise ValueError("window larger than the input")
            win = _windows(a, k, k, stride or k, stride or k)
            return win.max(axis=(-2, -1)) if use_max else win.mean(axis=(-2, -1))

        fn = gg.max_pool2d if use_max else gg.avg_pool2d
        return Case([x], lambda t: fn(t, k, stride, padding), ref, exact=False)

    fuzz(make)()


def test_layer_norm():
    def make(data):
        x = array(data, min_dims=1)
        k = data.draw(st.integers(1, x.ndim))
        shape = x.shape[x.ndim - k:] if data.draw(st.integers(0, 4)) else data.draw(shapes(min_dims=1, max_dims=2))
        affine = data.draw(st.booleans())
        wb = [array(data, tuple(shape), (x.dtype,)), array(data, tuple(shape), (x.dtype,))] if affine else []

        def ref(a, *params):
            if tuple(shape) != a.shape[a.ndim - len(shape):]:
                raise ValueError("normalized_shape is not the trailing shape")
            axes = tuple(range(a.ndim - len(shape), a.ndim))
            a = f64(a)
            y = (a - a.mean(axis=axes, keepdims=True)) / np.sqrt(a.var(axis=axes, keepdims=True) + 1e-5)
            return y * f64(params[0]) + f64(params[1]) if params else y

        return Case([x] + wb, lambda t, *p: gg.layer_norm(t, shape, *p), ref, exact=False)

    fuzz(make)()


def test_dropout():
    def make(data):
        x = array(data)
        rate = data.draw(st.sampled_from([0.0, 0.25, 0.5, 0.9]))
        training = data.draw(st.booleans())
        if not training:
            return Case([x], lambda t: gg.dropout(t, rate, training=False), lambda a: a)
        return Case([x], lambda t: gg.dropout(t, rate, seed=0))

    fuzz(make)()
