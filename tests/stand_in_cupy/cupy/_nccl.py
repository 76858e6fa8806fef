"""``cupy.cuda.nccl`` of the stand-in: NCCL's communicator over the ranks that MPI started.

The stand-in's device memory is host memory, so a communicator reads and writes the buffers at the
addresses it is given (``array.data.ptr``), as NCCL does, and moves their bytes between the
processes with mpi4py (``MPI.COMM_WORLD``: a communicator of ``ndev`` ranks must be the MPI world,
rank for rank). Every rank gathers every rank's bytes and reduces them in rank order, so the sums
are the same bits on every rank. A communicator of one rank needs no MPI. The constants are CuPy
14.2's (``cupy_backends/cuda/libs/nccl.pxd``). Work is done at once (the stand-in's streams are
synchronous); under a stream capture it is recorded into the graph, as NCCL's kernels are.
"""
import ctypes
import os

import numpy as np

from . import _record
from . import cuda as _cuda

NCCL_SUM, NCCL_PROD, NCCL_MAX, NCCL_MIN, NCCL_AVG = 0, 1, 2, 3, 4
NCCL_INT8 = NCCL_CHAR = 0
NCCL_UINT8 = 1
NCCL_INT32 = NCCL_INT = 2
NCCL_UINT32 = 3
NCCL_INT64 = 4
NCCL_UINT64 = 5
NCCL_FLOAT16 = NCCL_HALF = 6
NCCL_FLOAT32 = NCCL_FLOAT = 7
NCCL_FLOAT64 = NCCL_DOUBLE = 8
NCCL_BFLOAT16 = 9
available = True

_DTYPES = {NCCL_INT8: np.int8, NCCL_UINT8: np.uint8, NCCL_INT32: np.int32, NCCL_UINT32: np.uint32,
           NCCL_INT64: np.int64, NCCL_UINT64: np.uint64, NCCL_FLOAT16: np.float16, NCCL_FLOAT32: np.float32,
           NCCL_FLOAT64: np.float64}
_REDUCE = {NCCL_SUM: np.add, NCCL_PROD: np.multiply, NCCL_MAX: np.maximum, NCCL_MIN: np.minimum,
           NCCL_AVG: np.add}


class NcclError(RuntimeError):
    """NCCL's error: ``status`` and its message."""

    def __init__(self, status, detail=""):
        self.status = status
        super().__init__(f"NCCL_ERROR_INVALID_ARGUMENT: {detail}" if detail else f"NCCL error {status}")


def _dtype(datatype):
    if datatype == NCCL_BFLOAT16:
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    if datatype not in _DTYPES:
        raise NcclError(4, f"unknown datatype {datatype}")
    return np.dtype(_DTYPES[datatype])


def _at(ptr, count, datatype):
    """The ``count`` elements of ``datatype`` at address ``ptr`` (the stand-in's device memory is the host's)."""
    dtype = _dtype(datatype)
    if count == 0:
        return np.empty(0, dtype)
    raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(ptr)
    return np.frombuffer(raw, dtype=dtype)


def get_version():
    return 23203


def get_build_version():
    return 23203


def get_unique_id():
    return os.urandom(128)  # 128 bytes, as CuPy 14's (a tuple of ints before 14.0)


def groupStart():
    pass


def groupEnd():
    pass


def _run(work, what):
    if _cuda._capturing():
        _cuda._defer(work, what)
    else:
        work()


class NcclCommunicator:
    """One rank of an NCCL communicator of ``ndev`` ranks (the MPI world's size, when more than one)."""

    @_record.calls_recorded("cupy.cuda.nccl.NcclCommunicator")
    def __init__(self, ndev, commId, rank, config=None):
        if not isinstance(commId, bytes) or len(commId) != 128:
            raise TypeError("commId is the 128 bytes of get_unique_id()")
        if not 0 <= rank < ndev:
            raise NcclError(4, f"rank {rank} of a communicator of {ndev}")
        self._ndev, self._rank, self._mpi = ndev, rank, None
        if ndev > 1:
            from mpi4py import MPI
            world = MPI.COMM_WORLD
            if world.Get_size() != ndev or world.Get_rank() != rank:
                raise NcclError(4, f"the stand-in's NCCL runs over MPI's world of {world.Get_size()}: rank "
                                   f"{rank} of {ndev} must be its rank {world.Get_rank()} of {world.Get_size()}")
            self._mpi = world.Dup()
            if len(set(self._mpi.allgather(commId))) != 1:
                raise NcclError(4, "the ranks passed different unique ids (NCCL would hang)")

    def _gathered(self, data):
        """Every rank's copy of ``data``, in rank order: an array of shape ``(ndev,) + data.shape``."""
        if self._mpi is None:
            return data[None].copy()
        out = np.empty((self._ndev,) + data.shape, dtype=data.dtype)
        self._mpi.Allgather(data.view(np.uint8), out.view(np.uint8).reshape(self._ndev, -1))
        return out

    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):
        if op not in _REDUCE:
            raise NcclError(4, f"unknown reduction {op}")

        def work():
            every = self._gathered(_at(sendbuf, count, datatype).copy())
            total = every[0].copy()
            for r in range(1, self._ndev):
                _REDUCE[op](total, every[r], out=total)
            if op == NCCL_AVG:
                np.true_divide(total, self._ndev, out=total, casting="unsafe")
            _at(recvbuf, count, datatype)[...] = total
        _run(work, "ncclAllReduce")

    def bcast(self, buff, count, datatype, root, stream):
        def work():
            data = _at(buff, count, datatype)
            data[...] = self._gathered(data.copy())[root]
        _run(work, "ncclBcast")

    def broadcast(self, sendbuff, recvbuff, count, datatype, root, stream):
        def work():
            _at(recvbuff, count, datatype)[...] = self._gathered(_at(sendbuff, count, datatype).copy())[root]
        _run(work, "ncclBroadcast")

    def allGather(self, sendbuf, recvbuf, count, datatype, stream):
        def work():
            _at(recvbuf, count * self._ndev, datatype)[...] = \
                self._gathered(_at(sendbuf, count, datatype).copy()).reshape(-1)
        _run(work, "ncclAllGather")

    def rank_id(self):
        return self._rank

    def size(self):
        return self._ndev

    def device_id(self):
        return 0

    def check_async_error(self):
        pass

    def destroy(self):
        if self._mpi is not None:
            self._mpi.Free()
            self._mpi = None

    def abort(self):
        self.destroy()
