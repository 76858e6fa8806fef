"""Devices and the backends that own their arrays.

A device is named by a string: ``"cpu"``, ``"cuda"`` (the first GPU) or
``"cuda:N"``. Each name resolves to one interned :class:`Device`, so the hot
path compares devices by identity. The CuPy backend is imported on first need.

Example:
    >>> import gpugrad as gg
    >>> "cpu" in gg.devices()
    True
    >>> with gg.device("cpu"):
    ...     gg.tensor([1.0]).device
    'cpu'
"""
import contextlib
import os
import threading

from ..errors import DeviceError, DeviceUnavailableError
from .numpy_backend import NumpyBackend


class Device:
    """One device: its name, its backend and that backend's array module."""

    __slots__ = ("name", "backend", "xp", "array_type", "index")

    def __init__(self, name, backend, index):
        self.name = name
        self.backend = backend
        self.xp = backend.xp
        self.array_type = backend.array_type
        self.index = index

    def __repr__(self):
        return f"Device({self.name!r})"


CPU = Device("cpu", NumpyBackend(), 0)
_devices = {"cpu": CPU}
_cuda_state = {"checked": False, "reason": None, "backend": None}
_local = threading.local()
_start_default = None


def _cuda_backend():
    """The CuPy backend, or raise DeviceUnavailableError saying why not."""
    if not _cuda_state["checked"]:
        from . import cupy_backend

        reason = cupy_backend.unavailable_reason()
        if reason is None:
            try:
                backend = cupy_backend.CupyBackend()
                for index, name in enumerate(backend.device_names()):
                    _devices[name] = Device(name, backend, index)
                _cuda_state["backend"] = backend
            except Exception as exc:
                reason = f"CuPy could not open the CUDA devices: {exc}"
        _cuda_state["reason"] = reason
        _cuda_state["checked"] = True
    if _cuda_state["backend"] is None:
        raise DeviceUnavailableError(f"no CUDA device can be used: {_cuda_state['reason']}")
    return _cuda_state["backend"]


def cuda_available():
    """True when CuPy is installed and sees at least one GPU.

    Example:
        >>> isinstance(cuda_available(), bool)
        True
    """
    try:
        _cuda_backend()
        return True
    except DeviceUnavailableError:
        return False


def get_device(spec):
    """The :class:`Device` for a name, a Device, or ``None`` (the default).

    Raises ``DeviceError`` (a ``ValueError``) for a malformed name and
    ``DeviceUnavailableError`` for a CUDA device this machine cannot use.

    Example:
        >>> get_device("cpu").name
        'cpu'
    """
    if spec is None:
        return _current_default()
    if spec.__class__ is Device:
        return spec
    found = _devices.get(spec)
    if found is not None:
        return found
    if not isinstance(spec, str):
        raise DeviceError(f"a device is a string such as 'cpu' or 'cuda:0', not {spec!r}")
    name = spec.strip().lower()
    if name == "gpu":
        name = "cuda"
    if name == "cuda":
        name = "cuda:0"
    kind, _, index = name.partition(":")
    if kind == "cpu" and index in ("", "0"):
        return CPU
    if kind != "cuda" or not index.isdigit():
        raise DeviceError(f"invalid device {spec!r}: use 'cpu', 'cuda' or 'cuda:N'")
    _cuda_backend()
    if name not in _devices:
        count = len(_cuda_state["backend"].device_names())
        raise DeviceUnavailableError(f"device {spec!r} does not exist: this machine has {count} CUDA device(s)")
    return _devices[name]


def devices():
    """Names of the devices usable here, GPUs first, e.g. ``['cuda:0', 'cpu']``.

    Example:
        >>> devices()[-1]
        'cpu'
    """
    gpus = _cuda_backend().device_names() if cuda_available() else []
    return gpus + ["cpu"]


def environment_problems(environ=None):
    """What is wrong with gpugrad's environment variables, one sentence each (an empty list: nothing).

    ``GPUGRAD_DEVICE`` must name a device this machine can use (blank: unset);
    ``GPUGRAD_NUM_THREADS`` must be a whole number >= 1 (blank: unset). The
    ``gpugrad`` command checks them before any subcommand runs.

    Example:
        >>> environment_problems({"GPUGRAD_DEVICE": "cpu", "GPUGRAD_NUM_THREADS": "2"})
        []
        >>> for problem in environment_problems({"GPUGRAD_DEVICE": "tpu:3", "GPUGRAD_NUM_THREADS": "0"}):
        ...     print(problem)
        GPUGRAD_DEVICE='tpu:3' cannot be used: invalid device 'tpu:3': use 'cpu', 'cuda' or 'cuda:N'
        GPUGRAD_NUM_THREADS must be a whole number >= 1, not '0'
    """
    from .cpu_threads import threads_from_environment

    environ = os.environ if environ is None else environ
    problems = []
    name = environ.get("GPUGRAD_DEVICE", "")
    if name:
        try:
            get_device(name)
        except (DeviceError, DeviceUnavailableError) as exc:  # a malformed name, or a GPU this machine lacks
            problems.append(f"GPUGRAD_DEVICE={name!r} cannot be used: {exc}")
    try:
        threads_from_environment(environ)
    except ValueError as exc:
        problems.append(str(exc))
    return problems


def _startup_default():
    global _start_default
    if _start_default is None:
        env = os.environ.get("GPUGRAD_DEVICE")
        if env:
            _start_default = get_device(env)
        else:
            _start_default = _devices["cuda:0"] if cuda_available() else CPU
    return _start_default


def _current_default():
    """The default :class:`Device` itself (what ``get_device(None)`` returns)."""
    stack = getattr(_local, "stack", None)
    if stack:
        return stack[-1]
    return _startup_default()


def default_device():
    """Name of the device new tensors go to: the innermost ``with gg.device(...)``,
    else ``GPUGRAD_DEVICE``, else the first GPU, else the CPU.

    A name, like ``devices()`` and ``Tensor.device``; ``get_device(None)`` gives
    the :class:`Device` object.

    Example:
        >>> with device("cpu"):
        ...     default_device()
        'cpu'
        >>> default_device() in devices()
        True
    """
    return _current_default().name


@contextlib.contextmanager
def device(spec):
    """Make ``spec`` the default device inside the ``with`` block.

    Example:
        >>> import gpugrad as gg
        >>> with gg.device("cpu"):
        ...     gg.ones((2,)).device
        'cpu'
    """
    dev = get_device(spec)
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    stack.append(dev)
    previous = dev.backend.use_device(dev.index) if dev is not CPU else None  # CuPy's current GPU follows
    try:
        yield dev
    finally:
        stack.pop()
        if previous is not None and previous != dev.index:
            dev.backend.use_device(previous)
