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


# ---------------------------------------------------------------------------------------------------- ReductionKernel
# CuPy 14.2's cupy/_core/_reduction.pyx: ReductionKernel(in_params, out_params, map_expr, reduce_expr,
# post_map_expr, identity, name='reduce_kernel', reduce_type=None, reduce_dims=True, preamble='', options=());
# __call__(*args, out=None, axis=None, keepdims=False, stream=None). _call tries CUB first (try_use_cub=True, the
# default "cub" accelerator): one in-arg and one out-arg, a C-contiguous operand reduced over trailing axes of 128
# elements or more (_cub_reduction.pyx _can_use_cub_block_reduction); over all axes that path allocates a work
# area from the memory pool (_cub_two_pass_launch: memory.alloc). The kernel's code is
# "typedefs, preamble, #define REDUCE(a, b) (reduce_expr), #define POST_MAP(a) (post_map_expr),
# typedef reduce_type _type_reduce", each thread folding static_cast<_type_reduce>(map_expr) into
# _type_reduce(identity).
_CUB_REDUCE_SIZE_THRESHOLD = 128
_REDUCE = {"a + b": np.add, "gpugrad_max(a, b)": np.maximum}  # the reduce_exprs of gpugrad's regions
_CTYPES = {"float": np.float32, "double": np.float64}


class ReductionKernel:
    """A reduction of a fused region: its map (the preamble's kernel file, built for the host), then its
    reduce_expr in reduce_type over ``axis``, then its post_map_expr."""

    @_record.calls_recorded("cupy.ReductionKernel")
    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr, identity, name="reduce_kernel",
                 reduce_type=None, reduce_dims=True, preamble="", options=()):
        import re

        from gpugrad.backend import kernel_source

        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f'Invalid kernel name: "{name}"')
        if not name.startswith(_PREFIX):
            raise NotImplementedError(f"the CuPy stand-in runs gpugrad's reduction kernels only, not {name!r}")
        self.name = name
        self.identity = "" if identity is None else str(identity)
        self.in_params = kernel_source.parse_params(in_params)
        self.out_params = kernel_source.parse_params(out_params)
        self.nin, self.nout = len(self.in_params), len(self.out_params)
        self.reduce_type = self.out_params[0].type if reduce_type is None else reduce_type
        self._source = kernel_source.parse(preamble, name[len(_PREFIX):])
        arrays = [p.name for p in self._source.inputs]
        post = re.fullmatch(r"(\w+) = T\(a( / _type_reduce\((\w+)\))?\)", post_map_expr)
        if map_expr != f"{name[len(_PREFIX):]}_value({', '.join(arrays)})" or reduce_expr not in _REDUCE or \
                post is None or post.group(1) != self.out_params[0].name or self.nout != 1 or \
                [p.name for p in self.in_params[:len(arrays)]] != arrays:
            raise NotImplementedError(f"{name!r}: the stand-in runs the map of its preamble's kernel, "
                                      "a sum or max, and a post-map dividing by an in-param at most")
        self._reduce, self._divisor = _REDUCE[reduce_expr], post.group(3)
        self._built = None

    @_record.calls_recorded("cupy.ReductionKernel.__call__")
    def __call__(self, *args, **kwargs):
        out = kwargs.pop("out", None)
        axis = kwargs.pop("axis", None)
        keepdims = kwargs.pop("keepdims", False)
        kwargs.pop("stream", None)
        if kwargs:
            raise TypeError(f"Wrong arguments {kwargs}")
        if len(args) not in (self.nin, self.nin + self.nout):
            raise TypeError(f"Wrong number of arguments for {self.name}")
        outputs = list(args[self.nin:])
        if out is not None:
            if self.nout != 1:
                raise NotImplementedError("")
            if outputs:
                raise ValueError("cannot specify 'out' as both a positional and keyword argument")
            outputs = [out]
        inputs = args[:self.nin]
        bound = {}
        for p, value in list(zip(self.in_params, inputs)) + list(zip(self.out_params, outputs)):
            if isinstance(value, ndarray):
                want = bound.setdefault(p.type, value._host.dtype) if p.placeholder else np.dtype(p.type)
                if value._host.dtype != want:
                    raise TypeError(f"Type is mismatched. {p.name} {value._host.dtype} {want}")
        arrays = [a._host for a in inputs[:len(self._source.inputs)]]
        shape = np.broadcast_shapes(*[a.shape for a in arrays])
        ndim = len(shape)
        axes = tuple(range(ndim)) if axis is None else tuple(sorted(a % max(ndim, 1) for a in np.atleast_1d(axis)))
        if len(set(axes)) != len(axes):
            raise ValueError("duplicate value in 'axis'")
        out_shape = tuple(1 if k in axes else n for k, n in enumerate(shape) if keepdims or k not in axes)
        for o in outputs:
            if not isinstance(o, ndarray):
                raise TypeError("Output arguments type must be cupy.ndarray")
            if o.shape != out_shape:
                raise ValueError("Out shape is mismatched")
        if outputs and outputs[0].size == 0:
            return outputs[0]
        if self.identity == "" and 0 in shape:
            raise ValueError(f"zero-size array to reduction operation {self.name} which has no identity")
        if cuda._capturing():
            if not outputs:
                cuda._refuse(f"reduction kernel {self.name!r} without its output (an allocation)")
            if self._takes_cub_temporaries(inputs, outputs, shape, axes):
                cuda._refuse_temporaries(f"ReductionKernel {self.name!r} over all axes through CUB")
            cuda._defer(lambda: self._run(arrays, inputs, shape, axes, keepdims, outputs[0]._host), self.name)
            return outputs[0]
        if outputs:
            self._run(arrays, inputs, shape, axes, keepdims, outputs[0]._host)
            return outputs[0]
        return ndarray._of(self._run(arrays, inputs, shape, axes, keepdims, None))

    def _takes_cub_temporaries(self, inputs, outputs, shape, axes):
        """Whether CuPy 14.2 runs this call through CUB's two-pass reduction, which allocates its work area."""
        if len(inputs) != 1 or len(outputs) != 1 or not isinstance(inputs[0], ndarray):
            return False
        x = inputs[0]._host
        trailing = axes and axes == tuple(range(axes[0], len(shape))) and x.flags.c_contiguous
        size = int(np.prod([shape[a] for a in axes], dtype=np.int64))
        return bool(trailing) and len(axes) == len(shape) and size >= _CUB_REDUCE_SIZE_THRESHOLD

    def _run(self, arrays, inputs, shape, axes, keepdims, out):
        if self._built is None:
            from gpugrad._tools.kernelcheck import host

            workdir = os.environ.get("CUPY_CACHE_DIR")
            self._built = host.build(self._source, workdir and os.path.join(workdir, "stand-in-host-builds"))
        mapped = np.empty(shape, np.result_type(*arrays))
        self._built(*arrays, mapped)
        reduce_type = _CTYPES.get(self.reduce_type, mapped.dtype.type)
        with np.errstate(all="ignore"):
            a = self._reduce.reduce(mapped.astype(reduce_type), axis=axes, keepdims=keepdims)
            if self._divisor is not None:
                divisor = dict(zip([p.name for p in self.in_params], inputs))[self._divisor]
                a = np.true_divide(a, reduce_type(_values({"n": divisor})["n"]))
        result = np.asarray(a).astype(mapped.dtype)
        if out is None:
            return result
        out[...] = result
        return out


_record.watch_class(ReductionKernel, lambda _: "cupy.ReductionKernel")
