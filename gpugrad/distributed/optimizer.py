"""Data-parallel training: gradients averaged across the ranks before every update.

:class:`DistributedOptimizer` wraps an optimizer (as Horovod's): ``minimize``,
``compute_gradients`` and ``apply_gradients`` average each gradient over the ranks first, so
every rank applies the same update to the same weights. :class:`DistributedGradientTape`
wraps a tape: its ``gradient`` returns the averaged gradients.

Gradients are reduced in *buckets*, as PyTorch's DDP does: filled in reverse order of the
variables (the order the backward sweep finishes them), each up to ``bucket_bytes`` (25 MiB by
default) of one dtype on one device, one non-blocking allreduce per bucket (MPI's ``Iallreduce``;
NCCL on a side stream on a GPU). Under ``minimize`` and the tape's ``gradient`` a bucket starts
reducing as soon as the sweep has finished its gradients and every earlier bucket has started,
while the sweep goes on; every rank posts the same buckets in the same order. Each bucket also
carries one count per gradient of the ranks that had one, so a variable that has a gradient on
some ranks and None on others raises DistributedError on all of them (None on all stays None).

Inside ``gg.function`` the reduction is one step after the sweep (the same buckets, the same bits).

Example:
    >>> import gpugrad as gg
    >>> w = gg.Variable([1.0, 2.0])
    >>> opt = gg.distributed.DistributedOptimizer(gg.optimizers.SGD(0.5))
    >>> loss = opt.minimize(lambda: gg.sum(w * w), [w])  # one process: plain SGD
    >>> w.numpy().tolist()
    [0.0, 0.0]
"""
import contextlib

import numpy as np

from .. import _nest as nest
from .._tracing import state as tracing_state
from ..ops import zeros_like
from ..optimizers.optimizer import flatten_pairs
from ..tensor import Tensor, ensure_tensor
from .collectives import agree, describe, divide_by_size
from .communicators import communicator_for, wait
from .world import DistributedError, world
from .. import _dtypes as _dt
from .._tracing import declare

BUCKET_BYTES = 25 * 1024 * 1024  # PyTorch DDP's default bucket_cap_mb
_NOT_YET = object()  # a gradient the sweep has not finished


def buckets(items, bucket_bytes=BUCKET_BYTES, key=lambda item: item.dtype):
    """Indices of ``items`` (each with ``nbytes``) grouped into buckets: reverse order, one ``key`` each
    (the dtype), at most ``bucket_bytes`` (an item larger than that is a bucket of its own); None is in none.

    Example:
        >>> import numpy as np
        >>> buckets([np.zeros(4, np.float32), np.zeros(4, np.float32), np.zeros(4)], bucket_bytes=32)
        [[2], [1, 0]]
    """
    out, current, size, current_key = [], [], 0, None
    for i in reversed(range(len(items))):
        item = items[i]
        if item is None:
            continue
        if current and (key(item) != current_key or size + item.nbytes > bucket_bytes):
            out.append(current)
            current, size = [], 0
        current.append(i)
        size += item.nbytes
        current_key = key(item)
    if current:
        out.append(current)
    return out


class _Slot:
    """What one gradient is on every rank: dtype, shape and device (the same everywhere, checked)."""

    __slots__ = ("dtype", "shape", "size", "nbytes", "device")

    def __init__(self, t):
        self.dtype, self.shape, self.device = t.dtype, t.shape, t._device
        self.size = int(np.prod(self.shape, dtype=np.int64))
        self.nbytes = self.size * self.dtype.itemsize


class BucketReducer:
    """Averages one step's gradients over the ranks: :meth:`final` hands in each gradient (or None) once
    it is final, in any order; a bucket is posted when all of its gradients are in and every earlier
    bucket is posted; :meth:`finish` posts the rest, waits, and returns the averaged gradients."""

    def __init__(self, w, slots, labels, bucket_bytes=BUCKET_BYTES):
        self.world, self.slots, self.labels = w, slots, labels
        self.groups = buckets(slots, bucket_bytes, key=lambda s: (s.dtype, s.device.name))
        self.grads = [_NOT_YET if s is not None else None for s in slots]
        self.next_group = 0
        self.pending = []

    def final(self, index, grad):
        self.grads[index] = grad
        groups = self.groups
        while self.next_group < len(groups) and all(self.grads[k] is not _NOT_YET for k in groups[self.next_group]):
            self._post(groups[self.next_group])
            self.next_group += 1
        for _, _, request in self.pending:
            request.test()  # MPI moves a non-blocking collective on only inside its calls

    def _post(self, group):
        slots = self.slots
        device = slots[group[0]].device
        xp = device.xp
        flat = xp.empty(sum(slots[k].size for k in group), dtype=slots[group[0]].dtype)
        start = 0
        for k in group:
            g, size = self.grads[k], slots[k].size
            if g is None:
                flat[start:start + size] = 0
            else:
                flat[start:start + size].reshape(slots[k].shape)[...] = g._data
            start += size
        self.pending.append((group, flat, communicator_for(self.world, device).start_sum_(flat)))

    def finish(self):
        for k, g in enumerate(self.grads):
            if g is _NOT_YET:
                self.grads[k] = None
        while self.next_group < len(self.groups):
            self._post(self.groups[self.next_group])
            self.next_group += 1
        # which gradients each rank has, exchanged on the host (MPI): nothing is read back from a GPU
        mine = np.array([g is not None for g in self.grads], np.int8)
        everyone = np.empty((self.world.size, mine.size), np.int8)
        wait(self.world.comm.Iallgather(mine, everyone), "the gradients' allreduce", self.world)
        counts = everyone.sum(axis=0, dtype=np.int64)
        out = [None] * len(self.slots)
        size = self.world.size
        for group, flat, request in self.pending:
            request.wait()
            device = self.slots[group[0]].device
            divide_by_size(flat, size, device.xp)
            start = 0
            for k in group:
                slot = self.slots[k]
                if counts[k] == size:
                    out[k] = Tensor._wrap(flat[start:start + slot.size].reshape(slot.shape), device)
                elif counts[k] != 0:
                    raise DistributedError(
                        f"the gradient of {self.labels[k]} is None on {size - int(counts[k])} of {size} ranks and "
                        f"a tensor on the others: every rank's loss must depend on the same variables")
                start += slot.size
        self.pending = []
        return out


def _described(pairs):
    """Each pair's slot (its gradient's, else its variable's; None when both are None), label and description."""
    slots, labels, descriptions = [], [], []
    for i, (g, v) in enumerate(pairs):
        ref = g if g is not None else v
        if ref is not None and not isinstance(ref, Tensor):
            ref = ensure_tensor(ref)
        slots.append(None if ref is None else _Slot(ref))
        labels.append(f"variable {getattr(v, 'name', None)!r}" if getattr(v, "name", None) else f"gradient #{i}")
        descriptions.append(None if ref is None else describe(ref))
    return slots, labels, descriptions


@declare.root(declare.HOST, effects="sums the gradients over the ranks")
def average_gradients(grads_and_vars, bucket_bytes=BUCKET_BYTES):
    """``[(averaged grad, var), ...]``: each gradient averaged over the ranks, bucket by bucket (None stays None).

    Every rank must hold gradients of the same dtypes and shapes (DistributedError naming the one that differs).
    """
    pairs = list(grads_and_vars)
    w = world()
    if w.size == 1:  # new tensors of the same arrays: a result never is the argument it was given
        return [(None if g is None else Tensor._wrap(g._data, g._device) if isinstance(g, Tensor) else g, v)
                for g, v in pairs]
    slots, labels, descriptions = _described(pairs)
    agree(w, labels, descriptions, "the gradients' allreduce")
    reducer = BucketReducer(w, slots, labels, bucket_bytes)
    for i, (g, _) in enumerate(pairs):
        if slots[i] is not None:
            reducer.final(i, None if g is None else g if isinstance(g, Tensor) else ensure_tensor(g))
    return list(zip(reducer.finish(), [v for _, v in pairs]))


class DistributedOptimizer:
    """``optimizer`` whose updates use gradients averaged across the ranks; everything else is the optimizer's.

    Example:
        >>> import gpugrad as gg
        >>> opt = gg.distributed.DistributedOptimizer(gg.optimizers.Adam(1e-3))
        >>> opt.iterations, opt.optimizer.name
        (0, 'Adam')
    """

    def __init__(self, optimizer, bucket_bytes=BUCKET_BYTES):
        if int(bucket_bytes) < 1:
            raise ValueError(f"bucket_bytes must be >= 1, got {bucket_bytes!r}")
        self.optimizer = optimizer
        self.bucket_bytes = int(bucket_bytes)

    def _tape(self, tape):
        return DistributedGradientTape(tape, self.bucket_bytes)

    @contextlib.contextmanager
    def _averaging(self):
        """While inside, the wrapped optimizer computes its gradients under the averaging tape."""
        inner = self.optimizer
        previous, inner._tape_wrapper = inner._tape_wrapper, self._tape
        try:
            yield inner
        finally:
            inner._tape_wrapper = previous

    def compute_gradients(self, loss_fn, var_list=None):
        """The optimizer's ``(grad, var)`` pairs of ``loss_fn()``, each gradient averaged across the ranks
        (reduced while the sweep goes on)."""
        with self._averaging() as inner:
            return inner.compute_gradients(loss_fn, var_list)

    def apply_gradients(self, grads_and_vars):
        """Average the gradients across the ranks, then apply them (nested pairs as the optimizer's own)."""
        self.optimizer.apply_gradients(average_gradients(flatten_pairs(grads_and_vars), self.bucket_bytes))

    def minimize(self, loss_fn, var_list=None):
        """The wrapped optimizer's ``minimize`` with the gradients averaged across the ranks while the sweep
        goes on (a LossScaleOptimizer scales the loss, then unscales and checks the averaged gradients, so
        every rank skips the same steps); returns this rank's loss."""
        with self._averaging() as inner:
            return inner.minimize(loss_fn, var_list)

    def __getattr__(self, name):
        return getattr(self.optimizer, name)

    def __repr__(self):
        return f"DistributedOptimizer({self.optimizer!r})"


class DistributedGradientTape:
    """A GradientTape whose ``gradient`` averages each gradient across the ranks (Horovod's wrapper); the
    buckets start reducing while the backward sweep still runs.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.Variable(3.0)
        >>> with gg.distributed.DistributedGradientTape(gg.GradientTape()) as tape:
        ...     y = x * x
        >>> tape.gradient(y, x).item()
        6.0
    """

    def __init__(self, tape, bucket_bytes=BUCKET_BYTES):
        self.tape = tape
        self.bucket_bytes = int(bucket_bytes)

    def __enter__(self):
        self.tape.__enter__()
        return self

    def __exit__(self, *exc):
        return self.tape.__exit__(*exc)

    def gradient(self, target, sources, output_gradients=None, unconnected_gradients="none"):
        w = world()
        flat_sources = nest.flatten(sources)
        if w.size == 1 or tracing_state.active or not all(isinstance(s, Tensor) for s in flat_sources):
            # alone, or inside gg.function (whose trace replays the reduction as one step), or to let the
            # tape raise for what is not a tensor: the sweep first, then the buckets
            grads = self.tape.gradient(target, sources, output_gradients, unconnected_gradients)
            flat = nest.flatten(grads)
            averaged = [g for g, _ in average_gradients(list(zip(flat, flat_sources)), self.bucket_bytes)]
            return nest.pack_like(sources, averaged)
        slots = [_Slot(s) if _dt.inexact(s.dtype) else None for s in flat_sources]  # a gradient has its source's
        labels = [f"variable {s.name!r}" if getattr(s, "name", None) else f"source #{i}"
                  for i, s in enumerate(flat_sources)]
        agree(w, labels, [describe(s) if slot else None for s, slot in zip(flat_sources, slots)],
              "the gradients' allreduce")
        reducer = BucketReducer(w, slots, labels, self.bucket_bytes)
        indices = {}
        for i, s in enumerate(flat_sources):
            if slots[i] is not None:
                indices.setdefault(id(s), []).append(i)

        def on_final(key, grad):
            for i in indices.get(key, ()):
                reducer.final(i, grad)
        self.tape._gradient(target, sources, output_gradients, unconnected_gradients, on_final=on_final)
        averaged = reducer.finish()
        if unconnected_gradients == "zero":
            averaged = [zeros_like(s) if g is None else g for g, s in zip(averaged, flat_sources)]
        return nest.pack_like(sources, averaged)

    def __getattr__(self, name):
        return getattr(self.tape, name)
