"""``cupy.ElementwiseKernel`` of the stand-in: gpugrad's fused kernels, built for the host with g++.

The kernel source is the ``preamble`` the backend passes (the ``kernels/*.cu``
file), parsed by :mod:`gpugrad.backend.kernel_source` and built by
:mod:`gpugrad._tools.kernelcheck.host`. The builds are cached in ``$CUPY_CACHE_DIR``
(where CuPy caches its own), so each kernel is compiled once per test run.
A float16 or bfloat16 kernel (CuPy 14.2 types ``T`` as its ``float16`` class over
cuda_fp16's ``__half``, or its ``bfloat16`` class over cuda_bf16's ``__nv_bfloat16``,
when ml_dtypes is installed) runs over the host definitions of those classes in
``gpugrad/_tools/kernelcheck/half_host.h``: the 16 bits, converted to and from
float as CUDA rounds.

A call follows CuPy 14.2's ``ElementwiseKernel.__call__`` (``_kernel.pyx``):
the in_params, optionally followed by every output; keywords ``size``,
``stream`` and ``block_size`` only; outputs must be CuPy arrays; and CuPy's
type rule (``_decide_params_type_core``): every array bound to one type
placeholder (``T``) has the same dtype and an array bound to a named type
(``int64``) has that dtype, else ``TypeError: Type is mismatched`` (nothing is
cast for you). Scalars take the param's type.
"""
import os

import numpy as np

from . import _record, cuda
from ._array import ndarray

_PREFIX = "gpugrad_"


class ElementwiseKernel:
    """A fused kernel: call it with the in_params in declared order, optionally followed by the outputs."""

    @_record.calls_recorded("cupy.ElementwiseKernel")
    def __init__(self, in_params, out_params, operation, name="kernel", reduce_dims=True, preamble="",
                 no_return=False, return_tuple=False, **kwargs):
        from gpugrad.backend import kernel_source

        if not name.startswith(_PREFIX):
            raise NotImplementedError(f"the CuPy stand-in runs gpugrad's fused kernels only, not {name!r}")
        self._source = kernel_source.parse(preamble, name[len(_PREFIX):])
        declared = (self._source.in_params, self._source.out_params, self._source.operation)
        if declared != (in_params, out_params, operation):
            raise NotImplementedError(f"kernel {name!r}: the signature passed is not the one its source declares")
        self._built = None

    @_record.calls_recorded("cupy.ElementwiseKernel.__call__")
    def __call__(self, *args, **kwargs):
        k = self._source
        unknown = set(kwargs) - {"size", "stream", "block_size"}
        if unknown:
            raise TypeError(f"Wrong arguments { {name: kwargs[name] for name in sorted(unknown)} }")
        if kwargs.get("size") is not None:
            raise NotImplementedError(f"{k.kernel_name!r}: the stand-in sizes a launch by its arrays only")
        n_in, n_out = len(k.inputs), len(k.outputs)
        if len(args) not in (n_in, n_in + n_out):
            raise TypeError(f"Wrong number of arguments for {k.kernel_name!r}. It must be either {n_in} or "
                            f"{n_in + n_out} (with outputs), but given {len(args)}.")
        outputs = list(args[n_in:])
        for out in outputs:
            if not isinstance(out, ndarray):
                raise TypeError(f"Output arguments must be cupy.ndarray, not {type(out)} ({k.kernel_name!r})")
        self._check_types(args[:n_in], outputs)
        arrays, params = self._split(args[:n_in])
        if cuda._capturing():
            if not outputs:
                cuda._refuse(f"kernel {k.kernel_name!r} without its outputs (an allocation)")
            kernel = self._host_kernel()  # a 0-d array param is read at each launch, as the device reads it
            cuda._defer(lambda: kernel(*arrays, *[out._host for out in outputs], **_values(params)), k.kernel_name)
            return outputs[0] if n_out == 1 else tuple(outputs)
        try:
            results = self._host_kernel()(*arrays, *[out._host for out in outputs], **_values(params))
        except MemoryError:
            raise cuda.memory.OutOfMemoryError(self._bytes_asked(arrays), 0) from None
        if outputs:
            return outputs[0] if n_out == 1 else tuple(outputs)
        results = tuple(ndarray._of(r) for r in results)
        return results[0] if n_out == 1 else results

    def _check_types(self, inputs, outputs):
        """CuPy's type rule: one dtype per placeholder, a named type's own dtype; outputs are bound first."""
        k, bound = self._source, {}
        for p, value in list(zip(k.outputs, outputs)) + list(zip(k.inputs, inputs)):
            if not isinstance(value, ndarray):
                continue  # a scalar takes the param's type
            dtype = value._host.dtype
            want = bound.setdefault(p.type, dtype) if p.placeholder else np.dtype(p.type)
            if dtype != want:
                raise TypeError(f"Type is mismatched. {p.name} {dtype} {want} ({k.kernel_name!r})")

    def _split(self, inputs):
        """The host arrays and the keyword params (scalars) among the in_param arguments."""
        arrays, params = [], {}
        for p, value in zip(self._source.inputs, inputs):
            if p.name in self._source.keyword_params:
                params[p.name] = _scalar(value, p.name, self._source.kernel_name)
            elif isinstance(value, ndarray):
                arrays.append(value._host)
            else:
                raise TypeError(f"Unsupported type {type(value)} for array input {p.name!r} of "
                                f"{self._source.kernel_name!r}")
        return arrays, params

    def _host_kernel(self):
        if self._built is None:
            from gpugrad._tools.kernelcheck import host

            workdir = os.environ.get("CUPY_CACHE_DIR")
            self._built = host.build(self._source, workdir and os.path.join(workdir, "stand-in-host-builds"))
        return self._built

    def _bytes_asked(self, arrays):
        """The bytes of one output the size of the broadcast inputs (what could not be allocated)."""
        shape = np.broadcast_shapes(*[a.shape for a in arrays])
        return int(np.prod(shape, dtype=np.int64)) * arrays[0].dtype.itemsize


def _scalar(value, name, kernel_name):
    """A keyword param as given: a Python or NumPy scalar, or a 0-d stand-in array (read by :func:`_values`
    when the kernel runs: in a captured graph, at each launch)."""
    if isinstance(value, np.ndarray):
        raise TypeError(f"Unsupported type {type(value)} for param {name!r} of {kernel_name!r}")
    if isinstance(value, ndarray) and value.shape != ():
        raise NotImplementedError(f"{kernel_name!r}: param {name!r} as an array of shape {value.shape}; "
                                  "the stand-in's host build takes params by value")
    return value


def _values(params):
    """The keyword params by value, as the host build takes them: a 0-d array's element read now."""
    return {name: value._host[()] if isinstance(value, ndarray) else value for name, value in params.items()}


_record.watch_class(ElementwiseKernel, lambda _: "cupy.ElementwiseKernel")
