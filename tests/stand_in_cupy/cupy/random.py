"""``cupy.random`` of the stand-in: ``RandomState`` on NumPy's generator (other numbers than CuPy's)."""
import numpy as np

from ._array import wrap


class RandomState:
    """Draws on the stand-in's device; the same seed gives the same numbers, not CuPy's numbers."""

    def __init__(self, seed=None):
        self._state = np.random.RandomState(None if seed is None else int(seed) % 2**32)

    def random_sample(self, size=None, dtype=float):
        return wrap(np.asarray(self._state.random_sample(size)).astype(dtype))

    def standard_normal(self, size=None, dtype=float):
        return wrap(np.asarray(self._state.standard_normal(size)).astype(dtype))


    def randint(self, low, high=None, size=None, dtype=int):
        return wrap(np.asarray(self._state.randint(low, high, size, dtype)))
