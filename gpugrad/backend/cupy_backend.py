"""The GPU backend: CuPy arrays on NVIDIA devices.

Imported only when a CUDA device is asked for or the default device is chosen,
so ``import gpugrad`` never pays for importing CuPy.
"""


def unavailable_reason():
    """Why no CUDA device can be used here, or ``None`` when one can.

    Example:
        >>> unavailable_reason() in (None,) or isinstance(unavailable_reason(), str)
        True
    """
    import importlib.util

    if importlib.util.find_spec("cupy") is None:
        return "CuPy is not installed (pip install 'gpugrad[cuda13]' or 'gpugrad[cuda12]')"
    try:
        import cupy
    except Exception as exc:  # a broken CuPy install must not break gpugrad
        return f"CuPy failed to import: {exc}"
    try:
        if cupy.is_available():  # cached by CuPy, about 0.1 ms without a driver
            return None
    except Exception as exc:
        return f"CuPy cannot reach the CUDA driver: {exc}"
    try:
        cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return f"no usable CUDA driver or device ({exc})"
    return "no CUDA device is visible"


class CupyBackend:
    """Owns CuPy as the array module of the ``"cuda:N"`` devices."""

    name = "cupy"

    def __init__(self):
        import cupy

        self.xp = cupy
        self.array_type = cupy.ndarray
        self._count = cupy.cuda.runtime.getDeviceCount()

    def device_names(self):
        return [f"cuda:{i}" for i in range(self._count)]

    def asarray(self, data, dtype=None, index=0):
        with self.xp.cuda.Device(index):
            return self.xp.asarray(data, dtype=dtype)

    def to_numpy(self, array):
        return self.xp.asnumpy(array)

    def use_device(self, index):
        """Make device ``index`` CuPy's current device."""
        self.xp.cuda.Device(index).use()

    def describe(self):
        cupy = self.xp
        return {"backend": self.name, "cupy": cupy.__version__,
                "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion()}
