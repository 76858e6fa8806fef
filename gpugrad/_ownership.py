"""Whether a buffer may be written in place: the one ownership rule of the speed mechanisms.

Three mechanisms write into an array that was made for something else, to save an allocation:

- the backward sweep lends a dying upstream gradient ``dy`` to a hot gradient op, which writes
  its result into it (:mod:`gpugrad._donation`, :mod:`gpugrad._sweep`, ``reuses_dy`` in
  :mod:`gpugrad.ops.hot`);
- ``Optimizer.minimize`` lets an update overwrite a gradient only it holds (the scratch path of
  :mod:`gpugrad.optimizers.updates`), and a ``gg.function`` plan does the same with a gradient
  buffer the optimizer step reads last;
- a ``gg.function`` plan lets a kernel step write its output into a buffer whose last reader has
  run (liveness sharing, and on the CPU one arena; :mod:`gpugrad._tracing.plan`).

Each asks :func:`may_write_in_place` first. The array must

- be an array, with at least one dimension (a 0-d result of a NumPy ufunc is a scalar, which
  no ``out=`` can name, and there is nothing worth saving);
- hold at least ``min_size`` elements (:data:`MIN_SIZE` for the sweep and the optimizers: below
  it a fresh allocation costs nothing; a plan allocates once and shares any non-empty buffer);
- own its memory (``base is None``): a view's base, and every other view of that base, would
  still read what is written (a slice, a transpose, a broadcast, an arena's view);
- be writeable (NumPy's flag; a CuPy array has no such flag and is always writeable);
- not be held by a ``gg.function`` plan (:func:`hold`): a plan's buffers are read again on every
  replay, whatever the reference counts say.

What is particular to a mechanism stays in it: the exact reference counts (nobody else holds the
array), the dtype and shape it needs, the step at which a plan's buffer dies.

Example:
    >>> import numpy as np
    >>> a = np.zeros(MIN_SIZE, np.float32)
    >>> may_write_in_place(a), may_write_in_place(a[1:]), may_write_in_place(np.zeros(()), 1)
    (True, False, False)
    >>> ids = hold([a])
    >>> may_write_in_place(a)
    False
    >>> release(ids)
    >>> may_write_in_place(a)
    True
"""
import threading

__all__ = ["MIN_SIZE", "may_write_in_place", "hold", "release", "held"]

MIN_SIZE = 1 << 15  # elements: below this a fresh allocation costs nothing (the sweep and the optimizers)

_held: dict[int, int] = {}  # id(array) -> how many live plans hold it
_lock = threading.Lock()  # hold and release count; the check reads one dict entry


def may_write_in_place(a, min_size=MIN_SIZE):
    """Whether array ``a`` (NumPy or CuPy) may be overwritten by a speed mechanism that owns it otherwise.

    See the module docstring for the rule; the caller checks that nothing else holds ``a`` (reference
    counts, liveness) and that it fits (dtype, shape).

    Example:
        >>> import numpy as np
        >>> may_write_in_place(np.ones(4), min_size=1), may_write_in_place(np.ones(4).T[::2], min_size=1)
        (True, False)
    """
    try:  # the size first: on the hot paths most arrays are small
        if a.size < min_size or a.base is not None or not a.ndim:
            return False
        flags = a.flags
    except AttributeError:  # not an array (a Python number)
        return False
    return getattr(flags, "writeable", True) and id(a) not in _held


def hold(arrays):
    """Mark ``arrays`` as held by a ``gg.function`` plan; returns the ids to pass to :func:`release`.

    The plan keeps the arrays alive while it holds them, so their ids name them until released.

    Example:
        >>> import numpy as np
        >>> a = np.ones(3)
        >>> ids = hold([a]); held(a), release(ids), held(a)
        (True, None, False)
    """
    ids = [id(a) for a in arrays]
    with _lock:
        for key in ids:
            _held[key] = _held.get(key, 0) + 1
    return ids


def release(ids):
    """Undo :func:`hold` for ``ids`` (called when the plan that held them is dropped).

    Example:
        >>> import numpy as np
        >>> a = np.ones(3)
        >>> first, second = hold([a]), hold([a])
        >>> release(first); held(a)
        True
        >>> release(second); held(a)
        False
    """
    with _lock:
        for key in ids:
            n = _held.get(key, 0) - 1
            if n > 0:
                _held[key] = n
            else:
                _held.pop(key, None)


def held(a):
    """Whether a live ``gg.function`` plan holds array ``a``.

    Example:
        >>> import numpy as np
        >>> held(np.ones(2))
        False
    """
    return id(a) in _held
