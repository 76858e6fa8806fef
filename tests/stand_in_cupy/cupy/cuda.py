"""``cupy.cuda`` of the stand-in: one device, ``cuda:0``, its memory pool, and the error classes gpugrad catches."""
import sys as _sys
import types as _types

from . import _record

_DLPACK_DEVICE = (2, 0)  # kDLCUDA, device 0


class Device:
    """The stand-in's one device; any other index raises as CUDA does for a device that does not exist."""

    @_record.calls_recorded("cupy.cuda.Device")
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


class _OutOfMemoryError(MemoryError):
    """``cupy.cuda.memory.OutOfMemoryError``: ``_size`` is the request in bytes, as gpugrad reads it."""

    def __init__(self, size, total, limit=0):
        super().__init__(f"Out of memory allocating {size:,} bytes (allocated so far: {total:,} bytes).")
        self._size, self._total, self._limit = size, total, limit


class MemoryPool:
    """CuPy's memory pool, holding nothing: 0 bytes used, 0 held."""

    def free_all_blocks(self, stream=None):
        pass

    def used_bytes(self):
        return 0

    def total_bytes(self):
        return 0


class MemoryPointer:
    """CuPy's ``MemoryPointer``, reduced to the address it holds."""

    def __init__(self, ptr):
        self.ptr = ptr


def _module(name, **attrs):
    module = _types.ModuleType(name)
    module.__dict__.update(attrs)
    _sys.modules[name] = module
    _record.watch_module(module)
    return module


runtime = _module("cupy.cuda.runtime", getDeviceCount=lambda: 1, getDevice=lambda: 0,
                  runtimeGetVersion=lambda: 13000)
_OutOfMemoryError.__name__ = _OutOfMemoryError.__qualname__ = "OutOfMemoryError"
memory = _module("cupy.cuda.memory", OutOfMemoryError=_OutOfMemoryError, MemoryPool=MemoryPool,
                 MemoryPointer=MemoryPointer)

_record.watch_module(_sys.modules[__name__])
_record.watch_class(Device, lambda _: "cupy.cuda.Device")
_record.watch_class(MemoryPool, lambda _: "cupy.cuda.MemoryPool")
_record.watch_class(MemoryPointer, lambda _: "cupy.cuda.MemoryPointer")
