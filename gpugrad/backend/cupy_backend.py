"""The GPU backend: CuPy arrays on NVIDIA devices, and the fused kernels of ``kernels/``.

Imported only when a CUDA device is asked for or the default device is chosen,
so ``import gpugrad`` never pays for importing CuPy. A fused kernel is built
once per (kernel, dtype, device) by :meth:`CupyBackend.kernel`, the one cached
constructor: a ``cupy.ElementwiseKernel`` whose preamble is the kernel file
and whose signature is the one declared in it (see ``kernel_source``).
"""
import operator

from . import cupy_gaps, kernel_source

# Params a kernel needs that its callers need not pass: derived from the arrays.
_DERIVED_PARAMS = {
    "softmax_cross_entropy_grad": lambda arrays: {"C": arrays[0].shape[-1]},
    "masked_softmax_grad": lambda arrays: {"C": arrays[0].shape[-1]},
    "masked_softmax": lambda arrays: {"C": arrays[0].shape[-1]},
}


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


class _Fused:
    """One built kernel: the ElementwiseKernel and how to lay out a call's arguments."""

    __slots__ = ("kernel", "source", "n_arrays", "n_outputs", "slots", "raw", "keyword_dtypes", "other_floats")

    def __init__(self, kernel, source, dtype):
        self.kernel = kernel
        self.source = source
        self.n_arrays = len(source.array_inputs)
        self.n_outputs = len(source.outputs)
        # slots[i]: the array position for in_param i, or its keyword name
        arrays = iter(range(self.n_arrays))
        self.slots = tuple(p.name if p.name in source.keyword_params else next(arrays) for p in source.inputs)
        self.raw = tuple(i for i, p in enumerate(source.array_inputs) if p.raw)
        # array inputs after the first that share its dtype T: mixed dtypes are promoted, as NumPy does
        self.other_floats = tuple(i for i, p in enumerate(source.array_inputs) if i and p.type == "T")
        # keyword params typed by a placeholder may be arrays: they take the kernel's dtype
        self.keyword_dtypes = {p.name: dtype for p in source.inputs
                               if p.name in source.keyword_params and p.placeholder}


class CupyBackend:
    """Owns CuPy as the array module of the ``"cuda:N"`` devices."""

    _out_of_memory = MemoryError  # CuPy's OutOfMemoryError once constructed (it subclasses MemoryError)

    name = "cupy"

    def __init__(self):
        import cupy

        self.xp = cupy_gaps.namespace(cupy)  # CuPy with its float16/bfloat16 gaps worked around
        self.array_type = cupy.ndarray
        self._count = cupy.cuda.runtime.getDeviceCount()
        self._get_device = cupy.cuda.runtime.getDevice
        self._device_index = operator.attrgetter("device.id")  # the GPU an array lives on
        self._kernels = {}
        self._out_of_memory = cupy.cuda.memory.OutOfMemoryError

    def device_names(self):
        return [f"cuda:{i}" for i in range(self._count)]

    # --- arrays ---------------------------------------------------------------
    def asarray(self, data, dtype=None, index=0):
        """A CuPy array of ``data`` on device ``index``: a host array is copied there,
        a CuPy array on another GPU is copied device to device, one already there is kept."""
        cupy = self.xp
        try:
            if isinstance(data, cupy.ndarray) and self._device_index(data) != index:
                with cupy.cuda.Device(self._device_index(data)):
                    src = cupy.ascontiguousarray(data)  # made contiguous where it lives
                with cupy.cuda.Device(index):
                    out = cupy.empty(src.shape, src.dtype)
                    if src.nbytes:
                        out.data.copy_from_device(src.data, src.nbytes)
                data = out
            with cupy.cuda.Device(index):
                return cupy.asarray(data, dtype=dtype)
        except self._out_of_memory as exc:
            raise self.out_of_memory(exc, f"copying an array of shape {getattr(data, 'shape', '?')} to the GPU",
                                     index) from exc

    def to_numpy(self, array):
        return self.xp.asnumpy(array)

    def from_dlpack(self, obj, index):
        """A CuPy array sharing memory with DLPack producer ``obj`` (on device ``index``)."""
        with self.xp.cuda.Device(index):
            return self.xp.from_dlpack(obj)

    def use_device(self, index):
        """Make device ``index`` CuPy's current device; returns the one current before."""
        previous = self._get_device()
        if previous != index:
            self.xp.cuda.Device(index).use()
        return previous

    # --- fused kernels --------------------------------------------------------
    def kernel(self, kernel_name, dtype, device_index):
        """The fused kernel ``kernels/<kernel_name>.cu`` for ``dtype`` on a device: built once, cached.

        Raises DTypeError for a dtype the kernel file does not declare.
        """
        key = (kernel_name, dtype, device_index)
        fused = self._kernels.get(key)
        if fused is None:
            from ..errors import DTypeError

            source = kernel_source.load(kernel_name)
            floats = dict(source.dtypes).get("T", ())
            if dtype.name not in floats:
                raise DTypeError(f"fused kernel {kernel_name!r} takes {', '.join(floats)}, not {dtype}")
            fused = self._kernels[key] = _Fused(source.elementwise_kernel(self.xp), source, dtype)
        return fused

    def fused(self, kernel_name, *arrays, **params):
        """Run fused kernel ``kernel_name`` on CuPy arrays; returns its output array(s).

        ``arrays`` are the kernel's array inputs in declared order, optionally
        followed by its outputs (updated in place, as the optimizer updates
        are); ``params`` are its keyword params (scalars such as ``alpha``).
        The kernel runs on the first array's device.
        """
        first = arrays[0]
        index = self._device_index(first)
        fused = self._kernels.get((kernel_name, first.dtype, index))
        if fused is None:
            fused = self.kernel(kernel_name, first.dtype, index)
        n = fused.n_arrays
        if len(arrays) != n and len(arrays) != n + fused.n_outputs:
            raise TypeError(f"fused kernel {kernel_name!r} takes {n} arrays, or {n + fused.n_outputs} "
                            f"with its outputs; got {len(arrays)}")
        try:  # free when nothing is raised; an out-of-memory error comes back naming the kernel
            for i in fused.other_floats:
                if arrays[i].dtype != first.dtype:
                    return self.fused(kernel_name, *self._promoted(fused, arrays), **params)
            if fused.raw:  # raw arrays are read by flat index: contiguous and 1-D
                arrays = list(arrays)
                for i in fused.raw:
                    arrays[i] = self.xp.ascontiguousarray(arrays[i]).reshape(-1)
            if params or fused.source.keyword_params:
                args = self._arguments(fused, kernel_name, arrays, params)
            else:
                args = arrays
            if index != self._get_device():
                with self.xp.cuda.Device(index):
                    return fused.kernel(*args)
            return fused.kernel(*args)
        except self._out_of_memory as exc:
            raise self.out_of_memory(exc, f"fused kernel {kernel_name!r}", index) from exc

    def out_of_memory(self, exc, what, index):
        """A ``gg.OutOfMemoryError`` for CuPy's out-of-memory ``exc`` in ``what`` (an op) on GPU ``index``.

        The memory pool's cached free blocks are handed back to the driver first,
        so the pool stays usable: the next, smaller request can succeed.
        """
        from ..errors import OutOfMemoryError

        pool = self.xp.get_default_memory_pool()
        try:
            with self.xp.cuda.Device(index):
                pool.free_all_blocks()
        except Exception:  # noqa: BLE001 - the report below matters more than the clean-up
            pass
        size = getattr(exc, "_size", None)
        asked = f"{size:,} bytes" if isinstance(size, int) else "memory"
        return OutOfMemoryError(
            f"{what} ran out of GPU memory on cuda:{index} asking for {asked} "
            f"({pool.used_bytes():,} bytes are held by live arrays); free arrays you no longer need "
            f"(and the tapes that hold them), or use smaller batches")

    def _promoted(self, fused, arrays):
        """``arrays`` with the T-typed inputs cast to their common NumPy result dtype."""
        floats = (0,) + fused.other_floats
        dtype = self.xp.result_type(*[arrays[i].dtype for i in floats])
        return [a.astype(dtype, copy=False) if i in floats else a for i, a in enumerate(arrays)]

    def _arguments(self, fused, kernel_name, arrays, params):
        """The positional arguments of a call: arrays and keyword params in declared order."""
        derive = _DERIVED_PARAMS.get(kernel_name)
        if derive is not None:
            params = {**derive(arrays), **params}
        missing = [s for s in fused.slots if s.__class__ is str and s not in params]
        unknown = set(params) - set(fused.source.keyword_params)
        if missing or unknown:
            raise TypeError(f"fused kernel {kernel_name!r} takes params {list(fused.source.keyword_params)}; "
                            f"missing {missing}, unknown {sorted(unknown)}")
        args = []
        for slot in fused.slots:
            if slot.__class__ is int:
                args.append(arrays[slot])
                continue
            value = params[slot]
            if hasattr(value, "_data"):  # a gpugrad Tensor
                value = value._data
            dtype = fused.keyword_dtypes.get(slot)
            if hasattr(value, "shape") and value.shape != () and dtype is not None:
                value = self.xp.asarray(value, dtype=dtype)  # an array bound broadcasts
            elif hasattr(value, "item") and not isinstance(value, self.xp.ndarray):
                value = value.item()  # a NumPy scalar or 0-d array
            elif isinstance(value, self.xp.ndarray) and value.shape == () and dtype is not None:
                value = value.astype(dtype, copy=False)
            args.append(value)
        args.extend(arrays[fused.n_arrays:])
        return args

    def describe(self):
        cupy = self.xp
        return {"backend": self.name, "cupy": cupy.__version__,
                "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion()}
