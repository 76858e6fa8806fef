"""``cupy.cuda`` of the stand-in: one device, ``cuda:0``, its memory pool, and the error classes gpugrad catches."""
import sys as _sys
import time as _time
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


_capture_stream = []  # the Stream that captures now (at most one), as CUDA's stream capture
_refused_in_capture = []  # each refusal raised while a stream captured: tests/conftest.py fails a GPU test that met one


class _CaptureError(RuntimeError):
    """What CUDA says of work a capture cannot hold (an allocation, a host read)."""


def _capturing():
    """Whether a stream captures now: work is recorded into its graph instead of run."""
    return bool(_capture_stream)


def _defer(work, what):
    """Record ``work`` (a function of no arguments) into the capturing stream's graph."""
    _capture_stream[0]._recorded.append((work, what))


# What CuPy 14.2 itself raises while the current stream captures (the wheel's messages are checked by
# tests/test_stand_in_capture.py against the strings compiled into the real modules):
# - cupy_backends/cuda/libs/{cublas,cusolver,curand}.pyx ``setStream``: every call of the library sets its
#   handle's stream first, and that raises NotImplementedError while the stream captures;
# - cupy/cuda/memory.pyx ``MemoryPointer.copy_to_host_async`` (``ndarray.get``, and so ``item``, ``tolist``,
#   ``bool``, ``float``, ``int``, ``cupy.asnumpy``) and ``copy_from_host_async`` (``cupy.asarray`` of host data):
#   RuntimeError (``copy_to_host``, ``copy_from_host`` and ``memset``, which gpugrad does not call, refuse too);
# - cupy/cuda/stream.pyx ``_BaseStream.begin_capture``: not on the default (legacy) stream.
# CUB (cupy/cuda/cub.pyx) and Thrust (cupy/cuda/thrust.pyx) check nothing: their workspace comes from the
# memory pool (relaxed capture mode lets it grow), so the capture succeeds and the graph keeps writing into
# temporaries the pool hands out again after it. The stand-in refuses those (``_refuse_temporaries``).
_LIBRARY_MESSAGE = "calling {} API during stream capture is currently unsupported"
_HOST_TRANSFER_MESSAGE = "the current stream is capturing, so {} transfers are disallowed"
_LEGACY_STREAM_MESSAGE = "cannot capture on the default (legacy) stream"


def _refuse_library(library):
    """A call into cuBLAS, cuSOLVER or cuRAND while a stream captures: CuPy's ``setStream`` raises."""
    if _capture_stream:
        _refused_in_capture.append(_LIBRARY_MESSAGE.format(library))
        raise NotImplementedError(_LIBRARY_MESSAGE.format(library))


def _refuse_host_transfer(direction):
    """A device-to-host (``"D2H"``) or host-to-device (``"H2D"``) copy while a stream captures."""
    if _capture_stream:
        _refused_in_capture.append(_HOST_TRANSFER_MESSAGE.format(direction))
        raise RuntimeError(_HOST_TRANSFER_MESSAGE.format(direction))


def _refuse_temporaries(what):
    """A CuPy routine that takes temporaries from the memory pool (CUB or Thrust workspace, copies of its
    operands) while a stream captures. CuPy lets it: the graph would hold memory freed after the capture."""
    if _capture_stream:
        _refused_in_capture.append(f"{what}: pool temporaries")
        raise _CaptureError(f"{what} takes temporaries from CuPy's memory pool while a stream captures; CuPy does "
                            f"not refuse it, but the graph would keep using memory the pool hands out again "
                            f"after the capture (the CuPy stand-in refuses it)")


def _refuse(what):
    """The error CUDA raises for ``what`` during a capture (cudaErrorStreamCaptureUnsupported)."""
    _refused_in_capture.append(what)
    raise _CaptureError(f"cudaErrorStreamCaptureUnsupported: {what} while a stream is capturing (the CuPy "
                        f"stand-in captures only work into arrays that exist: ufuncs with out=, kernels given "
                        f"their outputs, copyto, assignment)")


class Stream:
    """A CUDA stream: ``with stream:`` makes it current; ``begin_capture``/``end_capture`` make a Graph.

    While it captures, the stand-in records each launch instead of running it (as CUDA does), and
    refuses what a graph cannot hold; :meth:`Graph.launch` runs the recorded launches in order.
    """

    @_record.calls_recorded("cupy.cuda.Stream")
    def __init__(self, null=False, non_blocking=False, ptr=0):
        self._recorded = None
        self.ptr = 0 if null else id(self)  # the stand-in's work runs at once: one address is as good as another

    def wait_event(self, event):
        pass  # work runs when it is issued, so every event has happened

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False

    def begin_capture(self, mode=None):
        if self.ptr in (0, 1):
            raise RuntimeError(_LEGACY_STREAM_MESSAGE)
        if _capture_stream:
            raise _CaptureError("cudaErrorIllegalState: a stream captures already")
        self._recorded = []
        _capture_stream.append(self)

    def end_capture(self):
        if not _capture_stream or _capture_stream[0] is not self:
            raise _CaptureError("cudaErrorIllegalState: this stream is not capturing")
        _capture_stream.clear()
        recorded, self._recorded = self._recorded, None
        return Graph(recorded)

    def is_capturing(self):
        return bool(_capture_stream) and _capture_stream[0] is self

    def synchronize(self):
        pass


class Event:
    """A CUDA event; the stand-in's work runs when it is issued, so an event is done once recorded, and
    the time it records is the host's clock then (what :func:`get_elapsed_time` reads)."""

    @_record.calls_recorded("cupy.cuda.Event")
    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self._timing = not disable_timing
        self._recorded_ns = None

    def record(self, stream=None):
        self._recorded_ns = _time.perf_counter_ns()

    @property
    def done(self):
        return True

    def synchronize(self):
        pass


def get_elapsed_time(start_event, end_event):
    """Milliseconds between two recorded events (CuPy's ``cupy.cuda.get_elapsed_time``); as CUDA's
    ``cudaEventElapsedTime``, an event made with ``disable_timing=True`` or never recorded is refused."""
    for event in (start_event, end_event):
        if not event._timing or event._recorded_ns is None:
            raise RuntimeError("cudaErrorInvalidResourceHandle: invalid resource handle")
    return (end_event._recorded_ns - start_event._recorded_ns) / 1e6


_null_stream = []


def get_current_stream(device_id=-1):
    """The current stream: the stand-in's null stream (``with stream:`` changes nothing: work runs at once)."""
    if not _null_stream:
        _null_stream.append(Stream(null=True))
    return _null_stream[0]


class Graph:
    """``cupy.cuda.graph.Graph``: the launches a capture recorded, run in order by :meth:`launch`."""

    def __init__(self, recorded):
        self._recorded = recorded

    def launch(self, stream=None):
        for work, _ in self._recorded:
            work()


def _module(name, **attrs):
    module = _types.ModuleType(name)
    module.__dict__.update(attrs)
    _sys.modules[name] = module
    _record.watch_module(module)
    return module


runtime = _module("cupy.cuda.runtime", getDeviceCount=lambda: 1, getDevice=lambda: 0,
                  runtimeGetVersion=lambda: 13000)
_OutOfMemoryError.__name__ = _OutOfMemoryError.__qualname__ = "OutOfMemoryError"
graph = _module("cupy.cuda.graph", Graph=Graph)
from . import _nccl  # noqa: E402 - it reads _capturing and _defer above
nccl = _module("cupy.cuda.nccl", **{k: v for k, v in vars(_nccl).items() if not k.startswith("_")
                                     and k not in ("ctypes", "os", "np")})
memory = _module("cupy.cuda.memory", OutOfMemoryError=_OutOfMemoryError, MemoryPool=MemoryPool,
                 MemoryPointer=MemoryPointer)

_record.watch_module(_sys.modules[__name__])
_record.watch_class(Device, lambda _: "cupy.cuda.Device")
_record.watch_class(Stream, lambda _: "cupy.cuda.Stream")
_record.watch_class(Graph, lambda _: "cupy.cuda.graph.Graph")
_record.watch_class(Event, lambda _: "cupy.cuda.Event")
_record.watch_class(_nccl.NcclCommunicator, lambda _: "cupy.cuda.nccl.NcclCommunicator")
_record.watch_class(MemoryPool, lambda _: "cupy.cuda.MemoryPool")
_record.watch_class(MemoryPointer, lambda _: "cupy.cuda.MemoryPointer")
