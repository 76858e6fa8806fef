"""The process world: one process alone, or the ranks that MPI started (``mpiexec -n N``).

:func:`init` reads the launcher's environment. Under MPI (MPICH's ``PMI_RANK``, Open MPI's
``OMPI_COMM_WORLD_RANK``, PMIx's ``PMIX_RANK``) it imports mpi4py, which starts MPI, and every
collective of :mod:`gpugrad.distributed` runs on a duplicate of ``MPI.COMM_WORLD``; a rank that
raises an uncaught exception prints it and aborts the whole job (``MPI_Abort``), so the others
stop instead of waiting in a collective. Without a launcher the world is this one process, and
mpi4py is not imported.

Example:
    >>> from gpugrad import distributed
    >>> world = distributed.init()
    >>> world.size, world.rank, distributed.size()
    (1, 0, 1)
"""
import os
import sys
import time

from ..errors import GpugradError

_LAUNCHER_RANKS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")
DEFAULT_TIMEOUT = 600.0  # seconds, as PyTorch's process groups
_world = None


class DistributedError(GpugradError, RuntimeError):
    """A collective that cannot run: MPI missing, tensors that differ across ranks, a world shut down."""


def launched_under_mpi(environ=None):
    """Whether an MPI launcher started this process (its rank is in the environment).

    Example:
        >>> launched_under_mpi({"PMI_RANK": "1"}), launched_under_mpi({})
        (True, False)
    """
    environ = os.environ if environ is None else environ
    return any(name in environ for name in _LAUNCHER_RANKS)


class SingleProcess:
    """The world of one process: rank 0 of 1; every collective returns its input's values."""

    rank, size, local_rank, local_size = 0, 1, 0, 1
    comm = None
    backend = "none"
    timeout = DEFAULT_TIMEOUT

    def __repr__(self):
        return "<gg.distributed world: 1 process>"


class MPIWorld:
    """The ranks MPI started: ``comm`` (a duplicate of COMM_WORLD), ``rank``, ``size``, and the rank and
    count of the processes on this node (``local_rank``, ``local_size``)."""

    backend = "mpi"

    def __init__(self, MPI, timeout):
        self.MPI = MPI
        self.timeout = timeout
        self.communicators = {}  # device name -> its communicator (communicators.communicator_for)
        self.comm = MPI.COMM_WORLD.Dup()
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        node = self.comm.Split_type(MPI.COMM_TYPE_SHARED)
        self.local_rank, self.local_size = node.Get_rank(), node.Get_size()
        node.Free()

    def __repr__(self):
        return f"<gg.distributed world: rank {self.rank} of {self.size} (MPI, local rank {self.local_rank})>"


def timeout_from(value, source="GPUGRAD_DISTRIBUTED_TIMEOUT"):
    """``value`` (seconds: a number or its text) as a positive float; DistributedError naming ``source``.

    Example:
        >>> timeout_from("2.5"), timeout_from(None)
        (2.5, 600.0)
    """
    if value is None or value == "":
        return DEFAULT_TIMEOUT
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = float("nan")
    if not seconds > 0 or seconds == float("inf"):
        raise DistributedError(f"{source} is how many seconds a collective waits for the other ranks: a "
                               f"positive number, not {value!r}")
    return seconds


def init(timeout=None):
    """Join the world (once; later calls return it): the MPI ranks when launched by ``mpiexec``, else one
    process. Under MPI on a node with several GPUs, rank ``local_rank`` takes ``cuda:local_rank`` as its
    default device (``GPUGRAD_DEVICE`` still wins).

    ``timeout``: how many seconds a collective waits for the other ranks before it raises
    DistributedError (default ``GPUGRAD_DISTRIBUTED_TIMEOUT``, else 600).

    Raises DistributedError naming what to install when launched under MPI without mpi4py.
    """
    global _world
    if _world is not None:
        if timeout is not None:
            _world.timeout = timeout_from(timeout, "init(timeout=)")
        return _world
    seconds = timeout_from(timeout, "init(timeout=)") if timeout is not None else \
        timeout_from(os.environ.get("GPUGRAD_DISTRIBUTED_TIMEOUT"))
    if not launched_under_mpi():
        _world = SingleProcess()
        _world.timeout = seconds
        return _world
    try:
        from mpi4py import MPI
    except ImportError:
        raise DistributedError(
            "this process was started by an MPI launcher, but mpi4py is not installed: "
            "pip install 'gpugrad[distributed]' (mpi4py and MPICH's wheel)") from None
    _world = MPIWorld(MPI, seconds)
    _abort_on_uncaught_exception(_world)
    _choose_device(_world)
    _share_the_cores(_world)
    return _world


def _share_the_cores(world):
    """Ranks on one node split its cores: gpugrad's threads and the BLAS's (threadpoolctl), so that N ranks
    do not each start a thread per core and spin against one another (2 ranks on 2 cores ran 40x slower)."""
    if world.local_size < 2:
        return
    from ..backend import cpu_threads
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    per_rank = max(1, cores // world.local_size)
    if "GPUGRAD_NUM_THREADS" not in os.environ:
        cpu_threads.set_num_threads(per_rank)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    world.blas_limits = threadpool_limits(limits=per_rank)  # kept: the limit holds while the world does


def _abort_on_uncaught_exception(world):
    """A rank that dies of an exception takes the job down (after printing it), as ``python -m mpi4py`` does."""
    previous = sys.excepthook

    def hook(kind, value, traceback):
        previous(kind, value, traceback)
        sys.stderr.flush()
        time.sleep(0.5)  # the launcher forwards this rank's output asynchronously: let it reach the terminal
        world.MPI.COMM_WORLD.Abort(1)
    sys.excepthook = hook


def _choose_device(world):
    if "GPUGRAD_DEVICE" in os.environ:
        return
    from .. import backend
    gpus = [d for d in backend.devices() if d.startswith("cuda")]
    if len(gpus) > 1:
        os.environ["GPUGRAD_DEVICE"] = gpus[world.local_rank % len(gpus)]
        backend._start_default = None  # the start-up default is read again, from GPUGRAD_DEVICE


def world():
    """The world, joined on first use (see :func:`init`)."""
    return _world if _world is not None else init()


def rank():
    """This process's rank (0 alone)."""
    return world().rank


def size():
    """How many processes the world has (1 alone)."""
    return world().size


def local_rank():
    """This process's rank among those on its node (0 alone)."""
    return world().local_rank


def shutdown():
    """Leave the world: its communicators are freed (NCCL's destroyed); a later :func:`init` joins a new one."""
    global _world
    if _world is not None and _world.comm is not None:
        for communicator in _world.communicators.values():
            if hasattr(communicator, "destroy"):
                communicator.destroy()
        _world.comm.Free()
    _world = None
