"""``cupy.ElementwiseKernel`` of the stand-in: gpugrad's fused kernels, built for the host with g++.

The kernel source is the ``preamble`` the backend passes (the ``kernels/*.cu``
file), parsed by :mod:`gpugrad.backend.kernel_source` and built by
:mod:`gpugrad.kernelcheck.host`. The builds are cached in ``$CUPY_CACHE_DIR``
(where CuPy caches its own), so each kernel is compiled once per test run.
"""
import os

import numpy as np

from . import cuda
from ._array import ndarray

_PREFIX = "gpugrad_"


class ElementwiseKernel:
    """A fused kernel: call it with the in_params in declared order, optionally followed by the outputs."""

    def __init__(self, in_params, out_params, operation, name="kernel", preamble="", **options):
        from gpugrad.backend import kernel_source

        if not name.startswith(_PREFIX):
            raise NotImplementedError(f"the CuPy stand-in runs gpugrad's fused kernels only, not {name!r}")
        self.source = kernel_source.parse(preamble, name[len(_PREFIX):])
        declared = (self.source.in_params, self.source.out_params, self.source.operation)
        if declared != (in_params, out_params, operation):
            raise NotImplementedError(f"kernel {name!r}: the signature passed is not the one its source declares")
        self._built = None

    def __call__(self, *args):
        k = self.source
        n_in, n_out = len(k.inputs), len(k.outputs)
        if len(args) not in (n_in, n_in + n_out):
            raise TypeError(f"Wrong number of arguments for {k.kernel_name!r}: {n_in} or {n_in + n_out} "
                            f"expected, {len(args)} given")
        arrays, params = self._split(args[:n_in])
        outputs = list(args[n_in:])
        for out in outputs:
            if not isinstance(out, ndarray):
                raise TypeError(f"Unsupported type {type(out)} for an output of {k.kernel_name!r}")
        try:
            results = self._host_kernel()(*arrays, *[out._host for out in outputs], **params)
        except MemoryError:
            raise cuda.OutOfMemoryError(self._bytes_asked(arrays), 0) from None
        if outputs:
            return outputs[0] if n_out == 1 else tuple(outputs)
        results = tuple(ndarray._of(r) for r in results)
        return results[0] if n_out == 1 else results

    def _split(self, inputs):
        """The host arrays and the keyword params (scalars) among the in_param arguments."""
        arrays, params = [], {}
        for p, value in zip(self.source.inputs, inputs):
            if p.name in self.source.keyword_params:
                params[p.name] = _scalar(value, p.name, self.source.kernel_name)
            elif isinstance(value, ndarray):
                arrays.append(value._host)
            else:
                raise TypeError(f"Unsupported type {type(value)} for array input {p.name!r} of "
                                f"{self.source.kernel_name!r}")
        return arrays, params

    def _host_kernel(self):
        if self._built is None:
            from gpugrad.kernelcheck import host

            workdir = os.environ.get("CUPY_CACHE_DIR")
            self._built = host.build(self.source, workdir and os.path.join(workdir, "stand-in-host-builds"))
        return self._built

    def _bytes_asked(self, arrays):
        """The bytes of one output the size of the broadcast inputs (what could not be allocated)."""
        shape = np.broadcast_shapes(*[a.shape for a in arrays])
        return int(np.prod(shape, dtype=np.int64)) * arrays[0].dtype.itemsize


def _scalar(value, name, kernel_name):
    """A keyword param as the host build takes it: a Python or NumPy scalar, or a 0-d stand-in array."""
    if isinstance(value, np.ndarray):
        raise TypeError(f"Unsupported type {type(value)} for param {name!r} of {kernel_name!r}")
    if isinstance(value, ndarray):
        if value.shape != ():
            raise NotImplementedError(f"{kernel_name!r}: param {name!r} as an array of shape {value.shape}; "
                                      "the stand-in's host build takes params by value")
        return value._host[()]
    return value
