"""Range checks of integer arrays on a GPU with no host read on the step's path (labels, indices, embedding ids).

NumPy raises for an index out of range; CuPy wraps it around, so gpugrad checks every integer array it
indexes with on a GPU. Reading the verdict on the host would stall the GPU's pipeline on every step, so
on a GPU :func:`check` leaves it on the device: one reduction (the maximum of ``values - low`` seen as
unsigned integers, where every value below ``low`` is huge), folded into one running maximum per check
site and thread. The thread's next host read of a GPU tensor (``Tensor.numpy``, ``item``, ``bool``,
``float``, ``format``, ``repr``, ``tolist``, ``.to("cpu")``, ``Variable.numpy``) reads every running
maximum first, in one transfer, and raises the check's :class:`~gpugrad.errors.IndexOutOfRangeError`
(naming the op and a bad value) when one is out of range. So on a GPU the error surfaces at the next
host read, as a CUDA device-side assert of PyTorch surfaces at the next synchronising call, but the
process carries on, and :func:`raise_pending` asks for the verdict at once. On the CPU (NumPy arrays)
:func:`check` reads its verdict at once: there a read is not a synchronisation.

Example:
    >>> import numpy as np
    >>> try:
    ...     check(np.array([0, 3]), 0, 3, "op 'Demo' got label {value}, outside [0, 3)")
    ... except IndexError as e:
    ...     print(e)
    op 'Demo' got label 3, outside [0, 3)
"""
from __future__ import annotations

from threading import get_ident

import numpy as np

from .errors import IndexOutOfRangeError

pending: dict = {}  # thread ident -> {(message, low, span, device key): (running maximum, xp)}


def check(values, low, high, message):
    """IndexOutOfRangeError (``message.format(value=a bad value)``) unless every entry of integer array
    ``values`` lies in ``[low, high)`` (``low <= 0``): at once for a NumPy array, at the thread's next host
    read on a GPU.
    """
    if not values.size:
        return
    span = high - low
    if isinstance(values, np.ndarray):
        bad = (values < low) | (values >= high)
        if bad.any():
            raise IndexOutOfRangeError(message.format(value=int(values[bad].reshape(-1)[0])))
        return
    # values - low as unsigned: in range exactly when below span; any value below low (or an int64 sum that
    # wrapped) lands in the upper half, far above span
    if values.dtype.kind == "u":
        unsigned = values.astype(np.uint64, copy=False)
        if low:
            unsigned = unsigned + np.uint64(-low)
    else:
        shifted = values.astype(np.int64, copy=False)
        if low:
            shifted = shifted - np.int64(low)
        unsigned = shifted.view(np.uint64)
    largest = unsigned.max()
    key = (message, int(low), int(span), _device_key(values))
    sites = pending.setdefault(get_ident(), {})
    found = sites.get(key)
    sites[key] = (largest if found is None else found[1].maximum(found[0], largest), _xp(values))


def raise_pending():
    """Read the calling thread's pending GPU checks (one transfer per device) and raise the first one out of
    range; nothing to do (no transfer) when none are pending.

    Example:
        >>> raise_pending()  # nothing pending on the CPU: checks there raise at once
    """
    sites = pending.pop(get_ident(), None)
    if not sites:
        return
    by_device: dict = {}
    for key, (largest, xp) in sites.items():
        by_device.setdefault(key[3], []).append((key, largest, xp))
    for entries in by_device.values():
        xp = entries[0][2]
        maxima = xp.stack([largest for _, largest, _ in entries], axis=0).get()  # the one transfer
        for (message, low, span, _), m in zip((e[0] for e in entries), maxima):
            if int(m) >= span:
                value = int(np.uint64(m).view(np.int64)) + low
                raise IndexOutOfRangeError(message.format(value=value) + " (checked on the GPU; raised at the "
                                           "next host read)")


def _device_key(values):
    device = getattr(values, "device", None)
    return getattr(device, "id", 0)


def _xp(values):
    import sys

    return sys.modules[type(values).__module__.partition(".")[0]]
