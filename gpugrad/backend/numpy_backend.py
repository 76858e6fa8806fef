"""The CPU backend: NumPy arrays on the host."""
import numpy as np


class NumpyBackend:
    """Owns NumPy as the array module of the ``"cpu"`` device.

    Example:
        >>> NumpyBackend().device_names()
        ['cpu']
    """

    name = "numpy"
    xp = np
    array_type = np.ndarray

    def device_names(self):
        return ["cpu"]

    def asarray(self, data, dtype=None, index=None):
        """A NumPy array of ``data`` (a host copy of a GPU array if needed)."""
        if hasattr(data, "__cuda_array_interface__") and hasattr(data, "get"):
            data = data.get()
        return np.asarray(data, dtype=dtype)

    def to_numpy(self, array):
        return array

    def use_device(self, index):
        """Nothing to switch on the host."""

    def describe(self):
        return {"backend": self.name, "numpy": np.__version__}
