"""``Dense`` on the CPU: the matrix product, then its bias and ReLU in one compiled pass.

The eager ``Dense`` (:func:`gpugrad.ops.matrix.dense_layer.dense_array`) writes the product into its output,
then adds the bias in place and applies ReLU in place: three passes over the output. Under
``gg.function(jit_compile=True)`` a CPU plan makes the same product call, then one numba pass
(:func:`epilogue`) that adds the bias and applies ``max(v, 0)`` element by element, each rounded as NumPy's
``add`` and ``maximum`` round (NaN propagates and ``-0.0`` becomes ``0.0``, as ``np.maximum(v, 0)``): eager's
bits. Float32 and float64 arrays of one dtype, C-contiguous, with a bias and no activation or ReLU, are
compiled; other ``Dense`` steps keep their replay kernel.

Example:
    >>> import numpy as np
    >>> out = np.array([[-1.0, 2.0]])
    >>> epilogue(out, np.array([0.5, 0.5]), True, True); out.tolist()
    [[0.0, 2.5]]
"""
from __future__ import annotations

import numpy as np

from ...backend import CPU
from ..capture import KernelStep

__all__ = ["epilogue", "compiled", "DenseStep", "replace"]


def epilogue(out, bias, has_bias, relu):
    """``out += bias`` (by column, where ``has_bias``), then ``out = max(out, 0)`` where ``relu``, in place on the
    2-D array ``out``, as NumPy's in-place ``add`` and ``maximum(out, 0)`` compute them."""
    rows, columns = out.shape
    for r in range(rows):
        for j in range(columns):
            v = out[r, j] + bias[j] if has_bias else out[r, j]
            if relu and not (v > 0 or v != v):  # np.maximum(v, 0): NaN stays, ties (+-0) give the 0
                out[r, j] = 0
            else:
                out[r, j] = v


_compiled: list = []


def compiled():
    """:func:`epilogue` through numba (compiled on first call, cached on disk), or None without numba.

    Example:
        >>> compiled() is None or callable(compiled())
        True
    """
    if not _compiled:
        try:
            import numba
        except ImportError:
            return None
        _compiled.append(numba.njit(cache=True, error_model="numpy", nogil=True)(epilogue))
    return _compiled[0]


class DenseStep(KernelStep):
    """A ``Dense`` kernel step built as ``np.matmul(x, kernel, out=out)`` and the compiled :func:`epilogue`;
    ``compile_seconds`` once built."""

    __slots__ = ("compile_seconds",)

    def build(self, moved=None):
        moved = moved or {}
        x, kernel, bias = [moved.get(id(a), a) for a in self.inputs]
        out = moved.get(id(self.outputs[0]), self.outputs[0])
        relu = self.attrs is not None and self.attrs["activation"] == "relu"
        out2 = out.reshape(-1, out.shape[-1])
        fn, matmul = compiled(), np.matmul
        from . import precompile
        self.compile_seconds = precompile(fn, (out2, bias, True, relu))

        def run():
            matmul(x, kernel, out=out)
            fn(out2, bias, True, relu)
        return run


def _fits(step):
    if step.op_type != "Dense" or step.device is not CPU or len(step.inputs) != 3 or len(step.outputs) != 1:
        return False
    if step.attrs is not None and step.attrs.get("activation") != "relu":
        return False
    x, kernel, bias = step.inputs
    out = step.outputs[0]
    dtype = out.dtype
    return (dtype.char in "fd" and out.ndim >= 1 and out.size > 0 and kernel.ndim == 2 and bias.ndim == 1
            and bias.shape[0] == out.shape[-1] and all(type(a) is np.ndarray and a.dtype == dtype
                                                       for a in (x, kernel, bias, out))
            and out.flags.c_contiguous and bias.flags.c_contiguous)


def replace(steps):
    """``steps`` with each CPU ``Dense`` kernel step that fits (see the module docstring) as a :class:`DenseStep`;
    how many (nothing without numba).

    Example:
        >>> replace([])
        ([], 0)
    """
    if compiled() is None:
        return steps, 0
    out, n = [], 0
    for s in steps:
        if type(s) is KernelStep and _fits(s):
            s = DenseStep(s.op_type, s.inputs, s.attrs, s.outputs, s.device, s.fills)
            n += 1
        out.append(s)
    return out, n
