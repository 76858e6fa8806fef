"""How the ranks exchange arrays: MPI (mpi4py) for NumPy arrays, NCCL (CuPy's bindings) for CuPy arrays.

One interface, chosen by the arrays' device (:func:`communicator_for`); every call works in place
on a contiguous array and sends no pickle:

- ``allreduce_(array, op)``: the elementwise ``"sum"``, ``"min"`` or ``"max"`` over the ranks;
- ``start_sum_(flat)``: the same sum, non-blocking; ``.wait()`` on what it returns before reading
  ``flat`` (MPI's ``Iallreduce`` on the CPU; on a GPU, NCCL on a side stream that the current stream
  waits for);
- ``allgather(array, counts)``: every rank's rows in rank order (``counts[r]`` rows from rank ``r``);
- ``broadcast_(array, root)``.

MPI waits are bounded by the world's timeout (``GPUGRAD_DISTRIBUTED_TIMEOUT`` seconds, 600 by
default, as PyTorch's process groups): a rank that stopped, hangs or took another path makes the
others raise :class:`DistributedError` instead of waiting forever (an uncaught one ends the job).
NCCL's work is queued on the GPU's stream and not waited for on the host; every collective of
:mod:`gpugrad.distributed` first exchanges its tensors' dtypes and shapes over MPI, under the
timeout, so a missing rank is found there.

Example:
    >>> import numpy as np
    >>> from gpugrad.distributed.communicators import nccl_dtype_name
    >>> nccl_dtype_name(np.dtype(np.float32))
    'NCCL_FLOAT32'
"""
import importlib
import time

import numpy as np

from .world import DistributedError

_NCCL_DTYPES = {"float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64",
                "bfloat16": "NCCL_BFLOAT16", "int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32",
                "uint32": "NCCL_UINT32", "int64": "NCCL_INT64", "uint64": "NCCL_UINT64", "bool": "NCCL_UINT8"}
_NCCL_OPS = {"sum": "NCCL_SUM", "min": "NCCL_MIN", "max": "NCCL_MAX"}


def nccl_dtype_name(dtype):
    """The NCCL datatype constant's name for ``dtype`` (bool travels as bytes); DistributedError for others."""
    try:
        return _NCCL_DTYPES[dtype.name]
    except KeyError:
        raise DistributedError(f"NCCL has no datatype for {dtype}: cast the tensor to a float or integer "
                               f"dtype first") from None


def wait(request, what, world):
    """Wait for an MPI ``request``, at most ``world.timeout`` seconds (DistributedError after that).

    It polls without pause for the first 50 ms (as MPI's own blocking calls spin), then every
    millisecond, leaving the cores to the other ranks through a long wait.
    """
    if request.Test():
        return
    start = time.monotonic()
    while not request.Test():
        waited = time.monotonic() - start
        if waited > 0.05:
            if waited > world.timeout:
                raise DistributedError(
                    f"rank {world.rank} of {world.size} waited {world.timeout:g} s in {what} for the other "
                    f"ranks: one of them stopped, hangs, or took another path through the program (every rank "
                    f"must call the same collectives in the same order); GPUGRAD_DISTRIBUTED_TIMEOUT sets the limit")
            time.sleep(1e-3)


class _MPIPending:
    """A non-blocking MPI sum: ``wait()`` (under the world's timeout) before reading its buffer."""

    def __init__(self, request, world):
        self.request, self.world = request, world

    def wait(self):
        wait(self.request, "the gradients' allreduce", self.world)

    def test(self):
        return self.request.Test()


class _NCCLPending:
    """An NCCL sum on the side stream: ``wait()`` makes the ``current`` stream wait for it (no host wait)."""

    def __init__(self, current, reduced):
        self.current, self.reduced = current, reduced

    def wait(self):
        self.current.wait_event(self.reduced)  # what the current stream runs next sees the sum

    def test(self):
        return self.reduced.done


class MPICommunicator:
    """NumPy arrays over the world's MPI communicator (a duplicate of ``COMM_WORLD``)."""

    def __init__(self, world):
        self.world, self.comm, self.MPI = world, world.comm, world.MPI

    def allreduce_(self, array, op):
        MPI = self.MPI
        wait(self.comm.Iallreduce(MPI.IN_PLACE, array, op={"sum": MPI.SUM, "min": MPI.MIN, "max": MPI.MAX}[op]),
             "allreduce", self.world)

    def start_sum_(self, flat):
        return _MPIPending(self.comm.Iallreduce(self.MPI.IN_PLACE, flat, op=self.MPI.SUM), self.world)

    def allgather(self, array, counts):
        per_row = int(np.prod(array.shape[1:], dtype=np.int64))
        out = np.empty((sum(counts),) + array.shape[1:], dtype=array.dtype)
        sizes = [c * per_row for c in counts]
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64).tolist()
        wait(self.comm.Iallgatherv(array, [out, (sizes, offsets)]), "allgather", self.world)
        return out

    def broadcast_(self, array, root):
        wait(self.comm.Ibcast(array, root=root), "broadcast", self.world)


class NCCLCommunicator:
    """CuPy arrays of one GPU through NCCL (``cupy.cuda.nccl``): the unique id is broadcast over MPI, and
    each call runs on the current stream (``start_sum_`` on a side stream), with no copy to the host."""

    def __init__(self, world, device):
        xp = device.xp
        try:
            nccl = importlib.import_module(xp.__name__ + ".cuda.nccl")
        except ImportError:
            nccl = None
        if nccl is None or not getattr(nccl, "available", False):
            raise DistributedError(
                f"collectives of tensors on {device.name} need NCCL, which CuPy could not load: pip install "
                f"'gpugrad[distributed-cuda13]' (or distributed-cuda12: the nvidia-nccl wheel for your CUDA)")
        self.world, self.xp, self.nccl, self.device = world, xp, nccl, device
        unique_id = nccl.get_unique_id() if world.rank == 0 else None
        unique_id = world.comm.bcast(unique_id, root=0)  # 128 bytes of id, the one pickle of the setup
        with xp.cuda.Device(device.index):
            self.comm = nccl.NcclCommunicator(world.size, unique_id, world.rank)
            self.side_stream = xp.cuda.Stream(non_blocking=True)

    def _constants(self, array, op=None):
        nccl = self.nccl
        dtype = getattr(nccl, nccl_dtype_name(array.dtype))
        return (dtype,) if op is None else (dtype, getattr(nccl, _NCCL_OPS[op]))

    def allreduce_(self, array, op):
        if array.dtype == np.bool_ and op == "sum":
            raise DistributedError("a sum of bool tensors over NCCL would overflow its bytes: cast to an integer")
        dtype, nccl_op = self._constants(array, op)
        with self.xp.cuda.Device(self.device.index):
            stream = self.xp.cuda.get_current_stream()
            self.comm.allReduce(array.data.ptr, array.data.ptr, array.size, dtype, nccl_op, stream.ptr)

    def start_sum_(self, flat):
        (dtype, nccl_op), cuda = self._constants(flat, "sum"), self.xp.cuda
        with cuda.Device(self.device.index):
            current = cuda.get_current_stream()
            packed = cuda.Event(disable_timing=True)
            packed.record(current)
            self.side_stream.wait_event(packed)  # the side stream starts once ``flat`` is packed
            self.comm.allReduce(flat.data.ptr, flat.data.ptr, flat.size, dtype, nccl_op, self.side_stream.ptr)
            reduced = cuda.Event(disable_timing=True)
            reduced.record(self.side_stream)
        return _NCCLPending(current, reduced)

    def allgather(self, array, counts):
        xp, rows = self.xp, max(counts)
        send = array
        if array.shape[0] != rows:  # NCCL gathers equal counts: pad to the longest, then take each rank's rows
            send = xp.zeros((rows,) + array.shape[1:], dtype=array.dtype)
            send[:array.shape[0]] = array
        gathered = xp.empty((self.world.size * rows,) + array.shape[1:], dtype=array.dtype)
        (dtype,) = self._constants(array)
        with xp.cuda.Device(self.device.index):
            stream = xp.cuda.get_current_stream()
            self.comm.allGather(send.data.ptr, gathered.data.ptr, send.size, dtype, stream.ptr)
        if all(c == rows for c in counts):
            return gathered
        return xp.concatenate([gathered[r * rows:r * rows + c] for r, c in enumerate(counts)])

    def broadcast_(self, array, root):
        (dtype,) = self._constants(array)
        with self.xp.cuda.Device(self.device.index):
            stream = self.xp.cuda.get_current_stream()
            self.comm.bcast(array.data.ptr, array.size, dtype, root, stream.ptr)

    def destroy(self):
        self.comm.destroy()


def communicator_for(world, device):
    """The world's communicator for arrays on ``device`` (made on first use: NCCL's needs every rank)."""
    found = world.communicators.get(device.name)
    if found is None:
        found = MPICommunicator(world) if device.name == "cpu" else NCCLCommunicator(world, device)
        world.communicators[device.name] = found
    return found
