"""ndarray's methods on Tensor where the op's own signature is not NumPy's method's: they run through
the same table as NumPy's functions (``x.clip(max=1)`` is ``np.clip(x, max=1)``), so they take
NumPy's argument names and defaults and stay differentiable.

Methods that write into the array in place (``fill``, ``sort``, ``partition``, ``put``, ``resize``,
``itemset``, ``setflags``) raise a TypeError naming the functional form: a tensor is immutable, and a
method that returned a new tensor instead would leave a NumPy-written caller's array unchanged
without a word (NumPy's and CuPy's ``sort`` return None; JAX's immutable arrays return a copy).

Example:
    >>> import numpy as np, gpugrad as gg
    >>> x = gg.tensor([[0.5, 2.0], [-1.0, 3.0]])
    >>> x.clip(max=1.0).tolist(), x.flatten().shape, x.dot(np.eye(2)).tolist()
    ([[0.5, 1.0], [-1.0, 1.0]], (4,), [[0.5, 2.0], [-1.0, 3.0]])
    >>> x.sort()
    Traceback (most recent call last):
    ...
    TypeError: Tensor.sort() would change the tensor in place, as ndarray.sort does, and gpugrad tensors are immutable; use gg.sort(x, axis) or np.sort(x, axis), which returns a new tensor
"""
from __future__ import annotations

import numpy as np

from ..ops.elementwise.control import cast
from ..tensor import Tensor
from .functions import FUNCTIONS
from .ufuncs import UFUNCS


def _via(np_func, doc, example, result):
    """ndarray's method as ``np_func(x, ...)`` through the function table; ``example`` (a call on
    ``x = gg.tensor([[3.0, -1.0], [0.5, 2.0]])``) and its ``result`` make the docstring's example."""
    entry = FUNCTIONS[np_func]

    def method(self, *args, **kwargs):
        return entry(np_func, (self, *args), kwargs)

    method.__doc__ = (f"{doc}\n\nExample:\n    >>> import gpugrad as gg\n"
                      f"    >>> x = gg.tensor([[3.0, -1.0], [0.5, 2.0]])\n    >>> {example}\n    {result}\n")
    return method


def _astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
    """``x.astype(dtype)``: :func:`gpugrad.cast` of ``x``, differentiable between floats (``order``,
    ``casting`` = ``"unsafe"``, ``subok`` and ``copy`` as NumPy's; a tensor needs no copy).

    Example:
        >>> import gpugrad as gg
        >>> gg.tensor([1.5, 2.0]).astype("float64", copy=False).dtype
        dtype('float64')
    """
    if casting != "unsafe" and not np.can_cast(self.dtype, dtype, casting):
        raise TypeError(f"Tensor.astype: cannot cast {self.dtype} to {np.dtype(dtype)} with casting={casting!r}")
    return cast(self, dtype)


def _conj(self):
    """``x.conj()``: ``x`` itself for real tensors (``np.conjugate``), recorded as an identity.

    Example:
        >>> import gpugrad as gg
        >>> gg.tensor([1.0, -2.0]).conj().tolist()
        [1.0, -2.0]
    """
    return UFUNCS[np.conjugate](self)


def _to_device(self, device, /, *, stream=None):
    """``x.to_device(device)``: the array API's name for :meth:`Tensor.to`.

    Example:
        >>> import gpugrad as gg
        >>> gg.tensor([1.0]).to_device("cpu").device
        'cpu'
    """
    if stream is not None:
        raise TypeError("Tensor.to_device(stream=...): gpugrad orders work on the device's current stream")
    return self.to(device)


def _immutable(name, instead):
    def method(self, *args, **kwargs):
        raise TypeError(f"Tensor.{name}() would change the tensor in place, as ndarray.{name} does, and gpugrad "
                        f"tensors are immutable; use {instead}, which returns a new tensor")
    method.__name__ = name
    method.__doc__ = (f"Refused: ``ndarray.{name}`` works in place; use {instead}.\n\nExample:\n"
                      f"    >>> import gpugrad as gg\n    >>> gg.tensor([1.0]).{name}()\n"
                      f"    Traceback (most recent call last):\n    ...\n"
                      f"    TypeError: Tensor.{name}() would change the tensor in place, ...\n")
    return method


METHODS = {
    "clip": _via(np.clip, "``x.clip(min=None, max=None)``: ``np.clip`` of ``x``, differentiable.",
                  "x.clip(max=1.0).tolist()", "[[1.0, -1.0], [0.5, 1.0]]"),
    "round": _via(np.round, "``x.round(decimals=0)``: ``np.round`` of ``x``.", "x.round().tolist()",
                   "[[3.0, -1.0], [0.0, 2.0]]"),
    "trace": _via(np.trace, "``x.trace(offset=0, axis1=0, axis2=1, dtype=None)``: ``np.trace`` of ``x``.",
                   "x.trace().item()", "5.0"),
    "dot": _via(np.dot, "``x.dot(b)``: ``np.dot(x, b)``, differentiable.", "x.dot(gg.tensor([1.0, 1.0])).tolist()",
                 "[2.0, 2.5]"),
    "cumsum": _via(np.cumsum, "``x.cumsum(axis=None, dtype=None)``: ``np.cumsum`` of ``x``.", "x.cumsum().tolist()",
                    "[3.0, 2.0, 2.5, 4.5]"),
    "cumprod": _via(np.cumprod, "``x.cumprod(axis=None, dtype=None)``: ``np.cumprod`` of ``x``.",
                     "x.cumprod(axis=1).tolist()", "[[3.0, -3.0], [0.5, 1.0]]"),
    "take": _via(np.take, "``x.take(indices, axis=None)``: ``np.take`` of ``x``, differentiable.",
                  "x.take([3, 0]).tolist()", "[2.0, 3.0]"),
    "argsort": _via(np.argsort, "``x.argsort(axis=-1)``: ``np.argsort`` of ``x`` (int64, no gradient).",
                     "x.argsort().tolist()", "[[1, 0], [0, 1]]"),
    "flatten": _via(np.ravel, "``x.flatten(order='C')``: ``x``'s elements in one dimension (``np.ravel``).",
                     "x.flatten().tolist()", "[3.0, -1.0, 0.5, 2.0]"),
    "copy": _via(np.copy, "``x.copy()``: a new tensor with ``x``'s values (``np.copy``), recorded.",
                  "x.copy().tolist()", "[[3.0, -1.0], [0.5, 2.0]]"),
    "astype": _astype, "conj": _conj, "conjugate": _conj, "to_device": _to_device,
    "real": property(lambda self: self, doc="The real part, which is the tensor itself (gpugrad tensors are real)."),
    "imag": property(lambda self: FUNCTIONS[np.imag](np.imag, (self,), {}),
                     doc="The imaginary part, zeros of the tensor's shape and dtype."),
    "sort": _immutable("sort", "gg.sort(x, axis) or np.sort(x, axis)"),
    "partition": _immutable("partition", "gg.partition(x, kth) or np.partition(x, kth)"),
    "fill": _immutable("fill", "gg.full_like(x, value)"),
    "put": _immutable("put", "gg.where with a mask, or a Variable's assign"),
    "resize": _immutable("resize", "gg.reshape, or gg.tile for a larger size"),
    "itemset": _immutable("itemset", "gg.where with a mask"),
    "setflags": _immutable("setflags", "a copy (np.array(t)) for a writable NumPy array"),
}


def install():
    for name, method in METHODS.items():
        if callable(method) and not isinstance(method, property):
            method.__name__, method.__qualname__ = name, f"Tensor.{name}"
        setattr(Tensor, name, method)
