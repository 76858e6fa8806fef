"""One case per fused kernel: inputs, the CPU truth, the unfused expression, the tolerance.

A :class:`KernelCase` says how to draw inputs for a kernel (with NumPy or
CuPy), what the gpugrad CPU path of the same op returns for them (the
reference), the same math as a plain chain of array ops (the *unfused*
expression that benchmark G1 compares the fused kernel with), and how close a
kernel's result must be to the reference.

Tolerance: a result passes where it is within ``ulps`` units in the last place
of the reference, or within ``ulps`` machine epsilons times ``scale`` (the size
of the terms, for gradients that are a difference of terms and so can cancel).
Kernels of plain IEEE arithmetic (+ - * / sqrt, selections) must match the CPU
path bit for bit on the host: 0 ulps. Kernels with exp, log, pow or erfc get
:data:`TRANSCENDENTAL`: the host's libm and NumPy's own SIMD loops each round
those within a few ulps, differently. On the GPU, NVRTC's fused multiply-adds,
``-ftz`` and CUDA's libdevice widen that again (see ``tests/test_gpu.py``).

Example:
    >>> import numpy as np
    >>> case = CASES["tanh_grad"]
    >>> arrays, params = case.draw(np, np.random.RandomState(0), 8, np.float32)
    >>> [a.shape for a in arrays], params
    ([(8,), (8,)], {})
    >>> case.reference(arrays, params)[0].dtype
    dtype('float32')
"""
import dataclasses
from typing import Callable, Optional

import numpy as np

from ...optimizers import kernels_ref

_SQRT_HALF = 0.70710678118654752440
_INV_SQRT_2PI = 0.39894228040143267794


@dataclasses.dataclass(frozen=True)
class KernelCase:
    """How to check and time one kernel (see the module docstring)."""

    name: str
    draw: Callable  # (xp, RandomState, n, dtype) -> (arrays, params); arrays: inputs, then in-place outputs
    reference: Callable  # (numpy arrays, params) -> tuple of outputs, the gpugrad CPU path
    unfused: Callable  # (xp, arrays, params) -> tuple of outputs, a chain of plain array ops
    unfused_ops: int  # how many array ops (GPU kernels) the unfused chain launches
    ulps: dict = dataclasses.field(default_factory=dict)  # dtype name -> max ulps on the host; default 0
    scale: Optional[Callable] = None  # (numpy arrays, params) -> per-element size of the terms
    in_place: bool = False  # the kernel updates its outputs (given after the inputs) in place

    def tolerance(self, dtype):
        return self.ulps.get(np.dtype(dtype).name, 0)


# exp, log, pow, erfc: libm and NumPy each within a few ulps; float16 rounds float32 results once
TRANSCENDENTAL = {"float16": 1, "float32": 4, "float64": 4}


# ---------------------------------------------------------------- drawing inputs


def _uniform(xp, rs, low, high, n, dtype):
    return (rs.random_sample(n) * (high - low) + low).astype(dtype)


def _signed(xp, rs, low, high, n, dtype):
    """Magnitudes in [low, high] with random signs."""
    sign = xp.where(rs.random_sample(n) < 0.5, -1.0, 1.0)
    return (sign * (rs.random_sample(n) * (high - low) + low)).astype(dtype)


def _with_zeros(xp, rs, a, fraction=0.05):
    return xp.where(rs.random_sample(a.shape) < fraction, a.dtype.type(0), a)


def _dy(xp, rs, n, dtype):
    return _uniform(xp, rs, -2.0, 2.0, n, dtype)


def _pair(low, high, zeros=False):
    def draw(xp, rs, n, dtype):
        a = _uniform(xp, rs, low, high, n, dtype)
        return [_with_zeros(xp, rs, a) if zeros else a, _dy(xp, rs, n, dtype)], {}
    return draw


# ---------------------------------------------------------------- the CPU reference


class OpReference:
    """The reference of a fused-gradient kernel: gpugrad op ``gg.ops.<name>`` on CPU tensors.

    ``kernel_only`` names params the kernel takes but the op derives itself (the
    class count C of softmax_cross_entropy_grad). :meth:`on` runs the same op on
    another device, which is how the GPU tests reach the fused kernel.
    """

    def __init__(self, name, n_out=1, kernel_only=()):
        self.name, self.n_out, self.kernel_only = name, n_out, kernel_only

    def on(self, device, arrays, params):
        import gpugrad as gg

        tensors = [gg.tensor(a, device=device) for a in arrays]
        kwargs = {k: v for k, v in params.items() if k not in self.kernel_only}
        with np.errstate(all="ignore"):  # inf and NaN inputs are part of some cases
            out = getattr(gg.ops, self.name)(*tensors, **kwargs)
        return tuple(o.numpy() for o in (out if self.n_out > 1 else [out]))

    def __call__(self, arrays, params):
        return self.on("cpu", arrays, params)


_cpu_op = OpReference


def _erfc(xp):
    if xp is np:
        from ...ops.special import erfc_numpy

        return erfc_numpy
    from cupyx.scipy.special import erfc

    return erfc


def _abs_dy(arrays, params):
    return np.abs(arrays[-1])


# ---------------------------------------------------------------- the cases


def _softmax_ce_draw(xp, rs, n, dtype, classes=64):
    rows = max(1, n // classes)
    logits = rs.standard_normal((rows, classes)) * 3.0
    e = xp.exp(logits - logits.max(axis=-1, keepdims=True))
    probs = (e / e.sum(axis=-1, keepdims=True)).astype(dtype)
    labels = rs.randint(0, classes, size=rows).astype(np.int64)
    return [probs, labels, _dy(xp, rs, rows, dtype)], {"C": classes}


def _softmax_ce_unfused(xp, arrays, params):
    probs, labels, dy = arrays
    dx = probs * dy[:, None]
    dx[xp.arange(dx.shape[0]), labels] -= dy
    return (dx,)


def _sgd_draw(nesterov):
    def draw(xp, rs, n, dtype):
        grad, param, velocity = (_uniform(xp, rs, -1.0, 1.0, n, dtype) for _ in range(3))
        params = {"lr": 0.05, "momentum": 0.9, "weight_decay": 1e-4, "nesterov": nesterov}
        return [grad, param, velocity], params
    return draw


def _sgd_reference(arrays, params):
    grad, param, velocity = (a.copy() for a in arrays)
    kernels_ref.sgd_momentum_update(param, velocity, grad, **params)
    return param, velocity


def _sgd_unfused(xp, arrays, params):
    grad, param, velocity = arrays
    g = grad + params["weight_decay"] * param
    velocity *= params["momentum"]
    velocity -= params["lr"] * g
    if params["nesterov"]:
        param += params["momentum"] * velocity - params["lr"] * g
    else:
        param += velocity
    return param, velocity


def _adam_draw(xp, rs, n, dtype):
    grad, param, m = (_uniform(xp, rs, -1.0, 1.0, n, dtype) for _ in range(3))
    v = _uniform(xp, rs, 0.0, 1.0, n, dtype)
    params = {"step_size": kernels_ref.adam_step_size(1e-3, 0.9, 0.999, 10), "beta1": 0.9, "beta2": 0.999,
              "eps": 1e-7, "weight_decay": 1e-4}
    return [grad, param, m, v], params


def _adam_reference(arrays, params):
    grad, param, m, v = (a.copy() for a in arrays)
    kernels_ref.adam_update(param, m, v, grad, **params)
    return param, m, v


def _adam_unfused(xp, arrays, params):
    grad, param, m, v = arrays
    g = grad + params["weight_decay"] * param
    m += (1.0 - params["beta1"]) * (g - m)
    v += (1.0 - params["beta2"]) * (g * g - v)
    param -= params["step_size"] * m / (xp.sqrt(v) + params["eps"])
    return param, m, v


def _pow_unfused(xp, arrays, params):
    x, y, dy = arrays
    positive = x > 0
    safe_x = xp.where(positive, x, 1)
    gx = xp.where((x <= 0) & ((y == 0) | (dy == 0)), 0, dy * (y * x ** (y - 1)))  # 0, not 0 * inf
    gy = xp.where(positive, dy * (safe_x ** y * xp.log(safe_x)), 0)
    return gx, gy


def _select_unfused(compare):
    def unfused(xp, arrays, params):
        x, y, dy = arrays
        x_wins = compare(x, y)
        return xp.where(x_wins, dy, 0), xp.where(x_wins, 0, dy)
    return unfused


def _ties(xp, rs, n, dtype):
    x = _uniform(xp, rs, -2.0, 2.0, n, dtype)
    y = xp.where(rs.random_sample(n) < 0.1, x, _uniform(xp, rs, -2.0, 2.0, n, dtype))
    return [x, y, _dy(xp, rs, n, dtype)], {}


def _clip_draw(xp, rs, n, dtype):
    x = _uniform(xp, rs, -2.0, 2.0, n, dtype)
    x = xp.where(rs.random_sample(n) < 0.05, x.dtype.type(1), x)  # exactly at a bound
    return [x, _dy(xp, rs, n, dtype)], {"lo": -1.0, "hi": 1.0}


def _pow_draw(xp, rs, n, dtype):
    x = _with_zeros(xp, rs, _uniform(xp, rs, 0.0, 3.0, n, dtype))
    y = _uniform(xp, rs, 0.5, 3.0, n, dtype)
    negative = rs.random_sample(n) < 0.1  # negative bases with integer exponents
    x = xp.where(negative, -x, x)
    y = _with_zeros(xp, rs, xp.where(negative, xp.floor(y), y))  # x ** 0 (at x = 0 too)
    return [x, y, _with_zeros(xp, rs, _dy(xp, rs, n, dtype))], {}  # zero dy at zero x: 0, not 0 * inf


def _softplus_unfused(xp, arrays, params):
    x, dy = arrays
    e = xp.exp(-xp.abs(x))
    return (dy * (xp.where(x >= 0, 1, e) / (1 + e)),)


def _gelu_unfused(xp, arrays, params):
    x, dy = arrays
    cdf = 0.5 * _erfc(xp)(x * -_SQRT_HALF)
    pdf = xp.exp(-0.5 * x * x) * _INV_SQRT_2PI
    return (dy * (cdf + x * pdf),)


def _gelu_scale(arrays, params):
    x, dy = arrays
    x = x.astype(np.float64)
    return np.abs(dy) * (1.0 + np.abs(x) * np.exp(-0.5 * x * x))


def _case(name, draw, reference, unfused, unfused_ops, **options):
    return KernelCase(name, draw, reference, unfused, unfused_ops, **options)


def _scaled_dy(alpha):
    """A (x, dy) draw with the keyword param alpha."""
    def draw(xp, rs, n, dtype):
        return _pair(-5.0, 3.0, zeros=True)(xp, rs, n, dtype)[0], {"alpha": alpha}
    return draw


_CASES = [
    _case("log_grad", lambda xp, rs, n, dt: ([_signed(xp, rs, 0.1, 10.0, n, dt), _dy(xp, rs, n, dt)], {}),
          _cpu_op("log_grad"), lambda xp, a, p: (a[1] / a[0],), 1),
    _case("square_grad", _pair(-3.0, 3.0), _cpu_op("square_grad"), lambda xp, a, p: (2 * a[0] * a[1],), 2),
    _case("exp_grad", _pair(0.0, 10.0), _cpu_op("exp_grad"), lambda xp, a, p: (a[1] * a[0],), 1),
    _case("sqrt_grad", _pair(0.1, 5.0), _cpu_op("sqrt_grad"), lambda xp, a, p: (a[1] / (2 * a[0]),), 2),
    _case("rsqrt_grad", _pair(0.1, 5.0), _cpu_op("rsqrt_grad"),
          lambda xp, a, p: ((a[1] * -0.5) * (a[0] * a[0] * a[0]),), 4),
    _case("reciprocal_grad", _pair(-5.0, 5.0), _cpu_op("reciprocal_grad"), lambda xp, a, p: (-a[1] * (a[0] * a[0]),), 3),
    _case("div_grad", lambda xp, rs, n, dt: ([_uniform(xp, rs, -3.0, 3.0, n, dt), _signed(xp, rs, 0.2, 3.0, n, dt),
                                              _dy(xp, rs, n, dt)], {}),
          _cpu_op("div_grad", 2), lambda xp, a, p: (a[2] / a[1], -(a[2] / a[1]) * (a[0] / a[1])), 5),
    _case("sigmoid_grad", _pair(0.0, 1.0), _cpu_op("sigmoid_grad"), lambda xp, a, p: (a[1] * (a[0] * (1 - a[0])),), 3),
    _case("tanh_grad", _pair(-1.0, 1.0), _cpu_op("tanh_grad"), lambda xp, a, p: (a[1] * (1 - a[0] * a[0]),), 3),
    _case("relu_grad", _pair(0.0, 3.0, zeros=True), _cpu_op("relu_grad"), lambda xp, a, p: (a[1] * (a[0] > 0),), 2),
    _case("leaky_relu_grad", _scaled_dy(0.2), _cpu_op("leaky_relu_grad"),
          lambda xp, a, p: (xp.where(a[0] > 0, a[1], a[1] * p["alpha"]),), 3),
    _case("elu_grad", _scaled_dy(1.3), _cpu_op("elu_grad"),
          lambda xp, a, p: (a[1] * xp.where(a[0] > 0, 1, xp.exp(xp.minimum(a[0], 0)) * p["alpha"]),), 5,
          ulps=TRANSCENDENTAL),
    _case("softplus_grad", _pair(-30.0, 30.0, zeros=True), _cpu_op("softplus_grad"), _softplus_unfused, 7,
          ulps=TRANSCENDENTAL),
    _case("gelu_grad", _pair(-6.0, 6.0), _cpu_op("gelu_grad"), _gelu_unfused, 10,
          ulps={"float16": 1, "float32": 16, "float64": 16}, scale=_gelu_scale),
    _case("abs_grad", _pair(-3.0, 3.0, zeros=True), _cpu_op("abs_grad"), lambda xp, a, p: (a[1] * xp.sign(a[0]),), 2),
    _case("pow_grad", _pow_draw, _cpu_op("pow_grad", 2), _pow_unfused, 16, ulps=TRANSCENDENTAL),
    _case("maximum_grad", _ties, _cpu_op("maximum_grad", 2), _select_unfused(lambda x, y: x >= y), 3),
    _case("minimum_grad", _ties, _cpu_op("minimum_grad", 2), _select_unfused(lambda x, y: x <= y), 3),
    _case("clip_grad", _clip_draw, _cpu_op("clip_grad"),
          lambda xp, a, p: (xp.where((a[0] >= p["lo"]) & (a[0] <= p["hi"]), a[1], 0),), 4),
    _case("softmax_cross_entropy_grad", _softmax_ce_draw, _cpu_op("softmax_cross_entropy_grad", kernel_only=("C",)),
          _softmax_ce_unfused, 4),
    _case("sgd_momentum_update", _sgd_draw(False), _sgd_reference, _sgd_unfused, 6, in_place=True),
    _case("adam_update", _adam_draw, _adam_reference, _adam_unfused, 12, in_place=True),
]
CASES = {case.name: case for case in _CASES}


def reference_at(case, arrays, params, dtype):
    """The reference for inputs of ``dtype``: float16 kernels compute in float32 and round once,
    so their reference is the float32 CPU path rounded to float16. (The update kernels'
    references already keep float16 storage and compute in float32.)"""
    if np.dtype(dtype) != np.float16 or case.in_place:
        return case.reference(arrays, params)
    wide = [a.astype(np.float32) if a.dtype == np.float16 else a for a in arrays]
    return tuple(o.astype(np.float16) for o in case.reference(wide, params))


def ulp_distance(a, b):
    """Units in the last place between float arrays ``a`` and ``b`` of one dtype, elementwise.

    Two NaNs are 0 apart; a NaN and a number, or infinities of other signs, are infinitely apart.

    Example:
        >>> one = np.float32(1)
        >>> ulp_distance(np.array([one]), np.array([np.nextafter(one, np.float32(2))])).tolist()
        [1.0]
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.dtype.kind != "f":
        raise TypeError(f"ulp_distance needs two float arrays of one dtype, got {a.dtype} and {b.dtype}")
    ints = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    magnitude = np.iinfo(ints).max

    def ordered(x):  # sign-magnitude bits to a monotonic integer line, in int64 (or exact float for 64-bit)
        i = x.view(ints).astype(np.int64)
        return np.where(i < 0, -(i & magnitude), i)

    ia, ib = ordered(a), ordered(b)
    same_sign = (ia >= 0) == (ib >= 0)
    with np.errstate(over="ignore"):
        close = np.abs(ia - ib).astype(np.float64)
    far = np.abs(ia.astype(np.float64)) + np.abs(ib.astype(np.float64))
    distance = np.where(same_sign, close, far)
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    distance = np.where(nan_a | nan_b, np.inf, distance)
    return np.where(nan_a & nan_b, 0.0, distance)


def compare(case, got, want, arrays, params, dtype):
    """Check outputs ``got`` against ``want``; returns a dict: ok, max_ulps, worst (a message)."""
    tol = case.tolerance(dtype)
    eps = float(np.finfo(dtype).eps)
    scale = case.scale(arrays, params) if case.scale is not None else None
    report = {"ok": True, "max_ulps": 0.0, "worst": ""}
    for index, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape or g.dtype != w.dtype:
            return {"ok": False, "max_ulps": float("inf"),
                    "worst": f"output {index}: {g.dtype}{g.shape} where the reference is {w.dtype}{w.shape}"}
        ulps = ulp_distance(g, w)
        passed = ulps <= tol
        if scale is not None:
            with np.errstate(invalid="ignore"):
                passed |= np.abs(g.astype(np.float64) - w.astype(np.float64)) <= tol * eps * scale
        report["max_ulps"] = max(report["max_ulps"], float(ulps.max()) if ulps.size else 0.0)
        if not passed.all():
            bad = int(np.argmin(passed.reshape(-1)))
            inputs = ", ".join(f"{a.reshape(-1)[bad]!r}" for a in arrays if a.size == g.size)
            report["ok"] = False
            report["worst"] = (f"output {index} at {bad}: kernel {g.reshape(-1)[bad]!r}, reference "
                               f"{w.reshape(-1)[bad]!r} ({ulps.reshape(-1)[bad]:.0f} ulps > {tol}); inputs {inputs}")
    return report
