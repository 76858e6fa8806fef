"""A CPU plan's call bound to the caller's arrays: large inputs read in place, large results written in place.

Without a binding a plan copies each call's arrays into its input buffers (:meth:`.plan.Plan.bind`) and
each result out of its buffer (:meth:`.plan.Plan.result`). On the CPU, for an array of
:data:`IN_PLACE_BYTES` or more, :func:`plan_binding` saves those two copies where the kernel steps then run
the same array calls on arrays of the same layouts, so to the same bits:

- **an input read in place**: the kernel steps that read an input buffer read the call's own array
  instead, when it has the buffer's layout (a plain ``np.ndarray``, C-contiguous, of its shape, dtype and
  strides, aligned and writeable: what a compiled loop is typed by) and is none of the plan's own arrays or
  its variables' (a tensor the function kept from its trace, passed back in; steps write those during the
  call). The buffer must be read by kernel steps only: not by a call step (it reads through the trace's
  tensors), not through a view made at trace time, not returned, not saved in an op's attributes.
  Otherwise the call's array is copied in, as without a binding; nothing ever writes a caller's input.
- **a result written in place**: a returned array that one kernel step writes (not a view, not one a view
  looks into, not filled or read by a call step, not an input, returned once) is written on each call into
  a fresh array of its eager layout (:func:`.capture.same_layout`) that the call returns: the caller's own,
  which no later call writes.

Only where every call step of the plan reads nothing but its arguments (an op of gpugrad's op modules
given no function, or an optimizer's update): a call step that runs a user's function (a custom gradient's
backward, a gradient rule registered by the user) may read any tensor of the trace through its closure,
and then the plan copies as without a binding.

The kernel steps that read or write a bound array are bound anew on each call (their declared kernel's
prebound call made again, :meth:`.capture.KernelStep.rebinder`; a fused loop's ``rebind``, with no
compilation and no scratch); the other steps stay as they were built, so a small plan's steps cost what
they did. A GPU plan has no binding: its CUDA graph holds the buffers' addresses, so it copies.

Example:
    >>> import numpy as np, gpugrad as gg
    >>> f = gg.function(lambda x: gg.exp(x) * 2.0)
    >>> x = gg.tensor(np.zeros(1 << 16, np.float32))
    >>> first = f(x)
    >>> second = f(x)
    >>> st = next(iter(f._traces.values())).plan.stats
    >>> st["inputs_in_place"], st["results_in_place"], np.shares_memory(first.numpy(), second.numpy())
    (1, 1, False)
"""
import numpy as np

from .. import _nest as nest
from ..tensor import Tensor
from . import declare, kernels
from .capture import CallStep, KernelStep, _arrays_in, _root_array, same_layout

__all__ = ["IN_PLACE_BYTES", "Binding", "plan_binding"]

IN_PLACE_BYTES = 1 << 16  # from 64 KiB a copy costs more than binding the steps that read the array anew


class Binding:
    """How a CPU plan binds a call: ``copied`` (buffer, k): call array ``k`` copied in; ``in_place``
    (buffer, k): read in place where it fits; ``fresh`` (output index, template): a result written into a
    fresh array like ``template``; ``rebinders`` (step index, rebind): the steps bound anew; ``roots``: ids of
    the arrays (and bases) the plan and its variables own, which a call's array must not be."""

    __slots__ = ("copied", "in_place", "fresh", "rebinders", "roots", "_keep")

    def __init__(self, copied, in_place, fresh, rebinders, roots, keep):
        self.copied, self.in_place, self.fresh, self.rebinders = copied, in_place, fresh, rebinders
        self.roots, self._keep = roots, keep  # (keep: the arrays of roots, alive so that their ids name them)

    def run(self, plan, arrays):
        """Replay ``plan`` with the call's ``arrays``; returns the result."""
        sub = {}  # id(buffer or template) -> this call's array
        for buffer, k in self.copied:
            buffer[...] = arrays[k]
        roots = self.roots
        for buffer, k in self.in_place:
            a = arrays[k]
            if (a.__class__ is np.ndarray and a.strides == buffer.strides and a.flags.aligned and a.flags.writeable
                    and id(_root_array(a)) not in roots):
                sub[id(buffer)] = a
            else:
                buffer[...] = a
        fresh = {}
        for j, template in self.fresh:
            out = fresh[j] = same_layout(template, np)
            sub[id(template)] = out
        steps = plan.steps
        if sub:
            steps = list(steps)
            for i, rebind in self.rebinders:
                steps[i] = rebind(sub)
        for step in steps:
            step()
        return plan.result(fresh)


def plan_binding(capture, steps, outputs, moved):
    """The :class:`Binding` of a CPU plan over ``steps`` (kernel steps already built, with arrays ``moved`` by
    liveness) returning ``outputs`` (:meth:`.capture.Capture.output`); None where nothing is bound in place.
    Also ``(inputs read in place, results written in place)``."""
    inputs = capture.inputs
    if not all(type(b) is np.ndarray for b, _ in inputs) or not all(_closed(s) for s in steps
                                                                    if isinstance(s, CallStep)):
        return None, (0, 0)
    blocked, readers, writers = _uses(steps, moved)
    once = returned_once(outputs)
    returned = set()
    for how in outputs:
        if how[0] == "buffer":
            a = how[1]
            returned.update((id(a), id(_root_array(a))))
            if id(a) not in once or _root_array(a) is not a:  # returned twice, or a view: copied out
                blocked.update((id(a), id(_root_array(a))))
    blocked |= capture.viewed | set(capture.var_arrays)

    def rebindable(a):
        return (id(a) not in blocked and a.nbytes >= IN_PLACE_BYTES and type(a) is np.ndarray
                and all(rebinders.get(i, True) is not None for i in readers.get(id(a), []) + writers.get(id(a), [])))

    rebinders = {}  # step index -> its rebind (None: it cannot be bound anew)
    for i, s in enumerate(steps):
        if isinstance(s, KernelStep):
            rebinders[i] = s.rebinder(moved)
    copied, in_place, bound = [], [], set()
    input_ids = {id(b) for b, _ in inputs}
    for k, (buffer, _) in enumerate(inputs):
        key = id(buffer)
        if (rebindable(buffer) and buffer.flags.c_contiguous and buffer.flags.aligned and key not in writers
                and key not in returned and key in readers):
            in_place.append((buffer, k))
            bound.add(key)
        else:
            copied.append((buffer, k))
    fresh = []
    for j, how in enumerate(outputs):
        if how[0] != "buffer":
            continue
        a = how[1]
        key = id(a)
        if (key in once and key not in input_ids and key in capture.buffers and rebindable(a)
                and len(writers.get(key, ())) == 1):
            fresh.append((j, a))
            bound.add(key)
    if not bound:
        return None, (0, 0)
    touched = sorted({i for key in bound for i in readers.get(key, []) + writers.get(key, [])})
    kept = [a for key, a in capture.buffers.items() if key not in moved]  # (a moved one is the plan's no more)
    roots = [_root_array(a) for a in kept + list(moved.values()) + [v._data for v in capture.variables.values()]]
    binding = Binding(copied, in_place, fresh, [(i, rebinders[i]) for i in touched], {id(a) for a in roots}, roots)
    return binding, (len(in_place), len(fresh))


def returned_once(outputs):
    """ids of the arrays returned as exactly one leaf of the result."""
    seen = {}
    for how in outputs:
        if how[0] == "buffer":
            seen[id(how[1])] = seen.get(id(how[1]), 0) + 1
    return {key for key, n in seen.items() if n == 1}


def _uses(steps, moved):
    """``(blocked, readers, writers)``: ids of arrays a binding must leave alone (a call step reads or fills
    them, an op's attributes hold them, a view of them is an operand); id -> indices of the kernel steps that
    read it, that write it."""
    blocked, readers, writers = set(), {}, {}
    for i, s in enumerate(steps):
        if isinstance(s, CallStep):
            for x in s.reads:
                a = x._data if isinstance(x, Tensor) else x
                blocked.update((id(a), id(_root_array(a))))
            for entry in list(s.outputs) + list(s.saved):
                b = entry[-2]  # (i, buffer, through_base) / (record, path, buffer, through_base)
                blocked.update((id(b), id(_root_array(b))))
            continue
        filled = kernels.FILLS_INPUTS.get(s.op_type, ())
        for n, a in enumerate(s.inputs):
            a = moved.get(id(a), a)
            (writers if n in filled else readers).setdefault(id(a), []).append(i)
            if _root_array(a) is not a:
                blocked.add(id(_root_array(a)))
        for a in s.outputs:
            a = moved.get(id(a), a)
            writers.setdefault(id(a), []).append(i)
            if _root_array(a) is not a:
                blocked.add(id(_root_array(a)))
        for value in (s.attrs or {}).values():
            for _, a in _arrays_in(value, ()):
                blocked.update((id(a), id(_root_array(a))))
    return blocked, readers, writers


def _closed(step):
    """Whether call step ``step`` reads nothing but its arguments: an op of gpugrad's op modules (pure, declared
    ``OP``) given no function, or an optimizer's update of its variables and slots."""
    from ..optimizers.optimizer import Optimizer
    fn = step.fn
    if fn is declare.undeclared(Optimizer._apply_pairs):
        return True
    if step.kind != declare.OP or not getattr(fn, "__module__", "").startswith("gpugrad.ops."):
        return False
    return not any(callable(x) and not isinstance(x, (Tensor, np.ndarray))
                   for x in nest.flatten([list(step.args), step.kwargs]))
