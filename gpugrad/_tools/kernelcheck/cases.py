"""One case per fused kernel: inputs, the CPU truth, the unfused expression, the tolerance.

A :class:`KernelCase` says how to draw inputs for a kernel (with NumPy or
CuPy), what the gpugrad CPU path of the same op returns for them (the
reference), the same math as a plain chain of array ops (the *unfused*
expression that benchmark G1 compares the fused kernel with), and how close a
kernel's result must be to the reference. The case of every hot gradient comes
from its declaration (:data:`gpugrad.ops.hot.HOT_GRADIENTS`: its ``check``
and its ``math``); the softmax cross-entropy gradient and the optimizer
updates have cases written here.

Tolerance: a result passes where it is within ``ulps`` units in the last place
of the reference, or within ``ulps`` machine epsilons times ``scale`` (the size
of the terms, for gradients that are a difference of terms and so can cancel).
float16 and bfloat16 kernels compute in float32 and round once, so their
reference is the float32 CPU path rounded once (:func:`reference_at`) and they
are held to ulps alone: 0 where the math is exact, at most 1 where it calls libm.
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

from ...ops.hot import HOT_GRADIENTS, unfused_ops
from ...optimizers import kernels_ref



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
    # params that replace some of the draw's, one dict per variant of the kernel's math the check must cover
    variants: tuple = ({},)

    def tolerance(self, dtype):
        """Max ulps for ``dtype``. bfloat16, like float16, is computed in float32 and rounded once:
        without its own entry it takes float16's (0 where the float32 math is exact, else 1)."""
        name = _name(dtype)
        if name == "bfloat16" and name not in self.ulps:
            name = "float16"
        return self.ulps.get(name, 0)


# ---------------------------------------------------------------- drawing inputs


def _uniform(xp, rs, low, high, n, dtype):
    return (rs.random_sample(n) * (high - low) + low).astype(dtype)


def _signed(xp, rs, low, high, n, dtype):
    """Magnitudes in [low, high] with random signs."""
    sign = xp.where(rs.random_sample(n) < 0.5, -1.0, 1.0)
    return (sign * (rs.random_sample(n) * (high - low) + low)).astype(dtype)


def _dy(xp, rs, n, dtype):
    return _uniform(xp, rs, -2.0, 2.0, n, dtype)


def _from_range(xp, rs, r, n, dtype, earlier):
    """``n`` values of :class:`gpugrad.ops.hot.Range` ``r`` (``earlier``: the inputs drawn before)."""
    a = _signed(xp, rs, r.low, r.high, n, dtype) if r.signed else _uniform(xp, rs, r.low, r.high, n, dtype)
    for fraction, change in ((r.integers, xp.floor), (r.negate, lambda v: -v), (r.zeros, lambda v: v * 0)):
        if fraction:
            a = xp.where(rs.random_sample(n) < fraction, change(a), a).astype(dtype)
    if r.equal_to is not None:
        a = xp.where(rs.random_sample(n) < 0.1, earlier[r.equal_to], a)
    if r.value is not None:
        a = xp.where(rs.random_sample(n) < 0.05, a.dtype.type(r.value), a)
    return a


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


class LeadingArraysReference(OpReference):
    """The reference of a kernel that also takes raw copies of the op's inputs (to read whole rows): the op
    gets the first ``n_op`` arrays (masked_softmax_grad's kernel takes y, dy, then y and dy again as rows)."""

    def __init__(self, name, n_op, **options):
        super().__init__(name, **options)
        self.n_op = n_op

    def on(self, device, arrays, params):
        return super().on(device, arrays[:self.n_op], params)


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


def _masked_softmax_draw(xp, rs, n, dtype, columns=64):
    """Scores with a quarter of the entries masked out, a few -inf, one row masked whole; the mask is given
    at the scores' shape (the op broadcasts it there), the scores again as rows."""
    rows = max(1, n // columns)
    x = (rs.standard_normal((rows, columns)) * 3.0).astype(dtype)
    x[1, :3] = -np.inf
    keep = rs.random_sample((rows, columns)) < 0.75
    keep[0] = False
    return [x, keep, x], {"C": columns}


def _masked_softmax_unfused(xp, arrays, params):
    x, keep = arrays[0], arrays[1]
    masked = xp.where(keep, x, -np.inf)
    shift = masked.max(axis=-1, keepdims=True)
    e = xp.exp(masked - xp.where(xp.isfinite(shift), shift, 0))
    total = e.sum(axis=-1, keepdims=True)
    return (e / xp.where(total == 0, 1, total),)


def _masked_softmax_grad_draw(xp, rs, n, dtype, columns=64):
    """Rows of a masked softmax's output (about a quarter of the entries masked to 0, one row all masked)
    and an upstream gradient; the kernel reads both as elements and again as rows."""
    rows = max(1, n // columns)
    logits = rs.standard_normal((rows, columns)) * 3.0
    keep = rs.random_sample((rows, columns)) < 0.75
    keep[0] = False
    e = xp.where(keep, xp.exp(logits - logits.max(axis=-1, keepdims=True)), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    y = (e / xp.where(total == 0, 1.0, total)).astype(dtype)
    dy = _dy(xp, rs, rows * columns, dtype).reshape(rows, columns)
    return [y, dy, y, dy], {"C": columns}


def _masked_softmax_grad_unfused(xp, arrays, params):
    y, dy = arrays[0], arrays[1]
    yd = y * dy
    return (yd - y * yd.sum(axis=-1, keepdims=True),)


def _masked_softmax_grad_scale(arrays, params):
    """The size of the terms: |y dy| + |y| sum |y dy| (the kernel sums its row in another order than NumPy)."""
    y, dy = (np.abs(a.astype(np.float64)) for a in arrays[:2])
    return y * dy + y * (y * dy).sum(axis=-1, keepdims=True)


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
    step_size, bias_correction2_sqrt = kernels_ref.adam_step_params(1e-3, 0.9, 0.999, 10, "keras")
    params = {"step_size": step_size, "beta1": 0.9, "beta2": 0.999, "eps": 1e-7, "weight_decay": 1e-4,
              "bias_correction2_sqrt": bias_correction2_sqrt}
    return [grad, param, m, v], params


def _adam_pytorch_epsilon():
    """The params of Adam's other variant: epsilon beside sqrt(v_hat), PyTorch's placement."""
    step_size, bias_correction2_sqrt = kernels_ref.adam_step_params(1e-3, 0.9, 0.999, 10, "pytorch")
    return {"step_size": step_size, "bias_correction2_sqrt": bias_correction2_sqrt}


def _adam_reference(arrays, params):
    grad, param, m, v = (a.copy() for a in arrays)
    kernels_ref.adam_update(param, m, v, grad, **params)
    return param, m, v


def _adam_unfused(xp, arrays, params):
    grad, param, m, v = arrays
    g = grad + params["weight_decay"] * param
    m += (1.0 - params["beta1"]) * (g - m)
    v += (1.0 - params["beta2"]) * (g * g - v)
    param -= params["step_size"] * m / (xp.sqrt(v) / params["bias_correction2_sqrt"] + params["eps"])
    return param, m, v


def _case(name, draw, reference, unfused, unfused_ops, **options):
    return KernelCase(name, draw, reference, unfused, unfused_ops, **options)


def _hot_case(h):
    """The case of hot gradient declaration ``h``: draws from its check's ranges, its math unfused."""
    def draw(xp, rs, n, dtype):
        arrays = {}
        for name in h.inputs:
            arrays[name] = _from_range(xp, rs, h.input_range(name), n, dtype, arrays)
        return [arrays[name] for name in h.inputs], dict(h.check.params)

    def scale(arrays, params):
        names = dict(zip(h.inputs, (a.astype(np.float64) for a in arrays)), **params, abs=np.abs, exp=np.exp)
        return eval(h.check.scale, {"__builtins__": {}}, names)  # noqa: S307 - a declared expression

    return KernelCase(h.name, draw, OpReference(h.name, len(h.outputs)), h.unfused,
                      h.check.unfused_ops or unfused_ops(h.math), ulps=h.check.ulps,
                      scale=scale if h.check.scale else None)


_CASES = [_hot_case(h) for h in HOT_GRADIENTS.values()] + [
    _case("softmax_cross_entropy_grad", _softmax_ce_draw, _cpu_op("softmax_cross_entropy_grad", kernel_only=("C",)),
          _softmax_ce_unfused, 4),
    _case("masked_softmax", _masked_softmax_draw, LeadingArraysReference("masked_softmax", 2, kernel_only=("C",)),
          _masked_softmax_unfused, 7, ulps={"float32": 8, "float64": 8, "float16": 1}),
    _case("masked_softmax_grad", _masked_softmax_grad_draw, LeadingArraysReference("masked_softmax_grad", 2,
                                                                                 kernel_only=("C",)),
          _masked_softmax_grad_unfused, 4, ulps={"float32": 8, "float64": 8, "float16": 1},
          scale=_masked_softmax_grad_scale),
    _case("sgd_momentum_update", _sgd_draw(False), _sgd_reference, _sgd_unfused, 6, in_place=True,
          variants=({}, {"nesterov": True})),
    _case("adam_update", _adam_draw, _adam_reference, _adam_unfused, 13, in_place=True,
          variants=({}, _adam_pytorch_epsilon())),
]
CASES = {case.name: case for case in _CASES}


LOW = ("float16", "bfloat16")  # the storage dtypes a kernel computes in float32 and rounds once


def is_low(dtype):
    """Whether ``dtype`` is a 16-bit float (float16, or ml_dtypes' bfloat16).

    Example:
        >>> is_low(np.float16), is_low(np.float32)
        (True, False)
    """
    return _name(dtype) in LOW


def _name(dtype):
    """The name of a dtype, or of a dtype name ("bfloat16" reads without ml_dtypes imported)."""
    return dtype if isinstance(dtype, str) else np.dtype(dtype).name


def reference_at(case, arrays, params, dtype):
    """The reference for inputs of ``dtype``: float16 and bfloat16 kernels compute in float32
    and round once, so their reference is the float32 CPU path rounded once to ``dtype``
    (as PyTorch's CUDA kernels, whose opmath_t is float for both). The update kernels'
    references already keep the 16-bit storage and compute in float32."""
    if not is_low(dtype) or case.in_place:
        return case.reference(arrays, params)
    low = np.dtype(dtype)
    wide = [a.astype(np.float32) if a.dtype == low else a for a in arrays]
    return tuple(o.astype(low) for o in case.reference(wide, params))


def epsilon(dtype):
    """The machine epsilon of float ``dtype``, bfloat16's (2^-7) from ml_dtypes.

    Example:
        >>> epsilon(np.float16)
        0.0009765625
    """
    if np.dtype(dtype).name == "bfloat16":
        import ml_dtypes

        return float(ml_dtypes.finfo(ml_dtypes.bfloat16).eps)
    return float(np.finfo(dtype).eps)


def ulp_distance(a, b):
    """Units in the last place between float arrays ``a`` and ``b`` of one dtype, elementwise.

    Two NaNs are 0 apart; a NaN and a number, or infinities of other signs, are infinitely apart.

    Example:
        >>> one = np.float32(1)
        >>> ulp_distance(np.array([one]), np.array([np.nextafter(one, np.float32(2))])).tolist()
        [1.0]
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or not (a.dtype.kind == "f" or a.dtype.name == "bfloat16"):
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
    nan_a, nan_b = _isnan(a), _isnan(b)
    distance = np.where(nan_a | nan_b, np.inf, distance)
    return np.where(nan_a & nan_b, 0.0, distance)


def _isnan(x):
    return np.isnan(x.astype(np.float32) if x.dtype.name == "bfloat16" else x)


def compare(case, got, want, arrays, params, dtype):
    """Check outputs ``got`` against ``want``; returns a dict: ok, max_ulps, worst (a message)."""
    tol = case.tolerance(dtype)
    eps = epsilon(dtype)
    # float16 and bfloat16 results are float32 math rounded once: its cancellation errors are far below
    # a 16-bit ulp, so they are held to ulps alone (0 for exact math, 1 where libm rounds)
    scale = case.scale(arrays, params) if case.scale is not None and not is_low(dtype) else None
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
