"""``cupy.cuda`` of the stand-in: one device, ``cuda:0``, and the error classes gpugrad catches."""
import types

DLPACK_DEVICE = (2, 0)  # kDLCUDA, device 0


class Device:
    """The stand-in's one device; any other index raises as CUDA does for a device that does not exist."""

    def __init__(self, device=None):
        if device not in (None, 0):
            raise RuntimeError(f"cudaErrorInvalidDevice: the CuPy stand-in has one device, not {device!r}")
        self.id = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False

    def use(self):
        pass

    def synchronize(self):
        pass


class OutOfMemoryError(MemoryError):
    """CuPy's out-of-memory error: ``_size`` is the request in bytes, as gpugrad reads it."""

    def __init__(self, size, total):
        super().__init__(f"Out of memory allocating {size:,} bytes (allocated so far: {total:,} bytes).")
        self._size = size


runtime = types.SimpleNamespace(getDeviceCount=lambda: 1, getDevice=lambda: 0, runtimeGetVersion=lambda: 13000)
memory = types.SimpleNamespace(OutOfMemoryError=OutOfMemoryError)
