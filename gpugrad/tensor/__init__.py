"""Tensors (immutable arrays on a device) and Variables (mutable, trainable), and the functions that make them.

One module per concern: :mod:`._interop` (what becomes a tensor's array: dtype
rules, DLPack, the copy; and the array-exchange protocols), :mod:`._tensor`
(:class:`Tensor`), :mod:`._variable` (:class:`Variable`) and :mod:`._factories`
(:func:`tensor`, :func:`as_tensor`, :func:`from_numpy`, :func:`from_dlpack`,
:func:`ensure_tensor`). Import them from here: ``from gpugrad.tensor import Tensor``.

dtype rules: Python floats (and lists of them) become float32, Python ints
int64, NumPy/CuPy arrays (and PyTorch/JAX arrays) keep their dtype unless
``dtype=`` says otherwise.

Memory ownership, as in PyTorch and TensorFlow: :func:`tensor` (and
``Tensor(...)``, ``Variable(...)``) copy their data, so a later write into the
source array cannot change a tensor a tape recorded; :func:`from_numpy` and
:func:`from_dlpack` share the source's memory and say so. What a tensor hands
out cannot be written: ``np.asarray(t)`` and ``t.numpy()`` are read-only views
on the CPU (NumPy raises ``ValueError: assignment destination is read-only``),
``t.numpy()`` of a GPU tensor is a read-only host copy and a Variable's a
writable snapshot. ``t.data`` is the raw array, shared and writable.

Example:
    >>> import gpugrad as gg
    >>> from gpugrad.tensor import Tensor, Variable, ensure_tensor
    >>> w = Variable([1.0, 2.0])
    >>> isinstance(w, Tensor), ensure_tensor(w) is w, ensure_tensor(3.0, like=w).dtype
    (True, True, dtype('float32'))
"""

from ._factories import as_tensor, ensure_tensor, from_dlpack, from_numpy, tensor
from ._tensor import Tensor
from ._tensor import _unpickle_tensor  # noqa: F401 - pickles made when this package was one module name it here
from ._variable import Variable
from ._variable import _unpickle_variable  # noqa: F401 - as _unpickle_tensor

__all__ = ["Tensor", "Variable", "tensor", "as_tensor", "from_numpy", "from_dlpack", "ensure_tensor"]
