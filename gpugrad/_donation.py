"""Buffer donation: the one upstream-gradient array the backward sweep lends to a hot gradient op.

The sweep (:mod:`gpugrad._sweep`) lends ``dy``'s array while it runs a rule
registered ``donates_dy`` whose ``dy`` nothing else holds (exact reference
counts say so; :data:`donating` says whether this interpreter has them) and
whose array :func:`gpugrad._ownership.may_write_in_place` allows. The
first hot gradient op declared ``reuses_dy`` that computes a result of that
array's shape and dtype takes it (:func:`take`) and writes its result into it;
the sweep clears the slot when the rule returns. The slot is per process: the
sweep lends only while no tape of its thread records, and another thread cannot
hold the array (it is the sweep's own).

Example:
    >>> import numpy as np
    >>> dy = np.ones(3)
    >>> lent[0] = dy
    >>> take(np.zeros(3), dy), lent[0]
    (True, None)
"""
import sys

from ._ownership import MIN_SIZE

__all__ = ["donating", "DONATE_MIN_SIZE", "lent", "take"]

# Reusing a dying gradient's buffer needs exact reference counts: CPython before 3.14, with the GIL.
donating = (sys.implementation.name == "cpython" and sys.version_info < (3, 14)
            and getattr(sys, "_is_gil_enabled", lambda: True)())
DONATE_MIN_SIZE = MIN_SIZE  # elements: below this a fresh allocation costs nothing

lent = [None]  # the array lent now, or None


def take(result_like, dy):
    """Whether array ``dy`` is the one lent and fits a result like array ``result_like``; taking it if so."""
    if dy is lent[0] and dy.dtype == result_like.dtype and dy.shape == result_like.shape:
        lent[0] = None
        return True
    return False
