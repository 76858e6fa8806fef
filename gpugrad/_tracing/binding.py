"""A plan's call bound to the caller's arrays: large inputs read in place, large results written in place.

Without a binding a plan copies each call's arrays into its input buffers (:meth:`.plan.Plan.bind`) and
each result out of its buffer (:meth:`.plan.Plan.result`). :func:`plan_binding` saves those two copies where
the kernel steps then run the same array calls on arrays of the same layouts, so to the same bits, and where it
pays: for an array of at least :data:`IN_PLACE_BYTES` (on the CPU) or :data:`GPU_IN_PLACE_BYTES` (on a GPU) per
step that must be bound anew for it (a step rebound by its declaration counts 4, a fused loop or region 2):

- **an input read in place**: the kernel steps that read an input buffer read the call's own array
  instead, when it has the buffer's layout (on the CPU a plain ``np.ndarray``, C-contiguous, of its shape, dtype
  and strides, aligned and writeable: what a compiled loop is typed by; on a GPU a ``cupy.ndarray`` of its
  strides on the plan's device, its address a multiple of its item size) and is none of the plan's own arrays or
  its variables' (a tensor the function kept from its trace, passed back in; steps write those during the
  call). The buffer must be read by kernel steps only: not by a call step (it reads through the trace's
  tensors), not through a view made at trace time, not returned, not saved in an op's attributes.
  Otherwise the call's array is copied in, as without a binding (a NumPy array given to a GPU plan, an array
  on another GPU, a strided view); nothing ever writes a caller's input.
- **a result written in place**: a returned array that one kernel step writes (not a view, not one a view
  looks into, not filled or read by a call step, not an input, returned once) is written on each call into
  a fresh array of its eager layout (:func:`.capture.same_layout`) that the call returns: the caller's own,
  which no later call writes.

Only where every call step of the plan reads nothing but its arguments (an op of gpugrad's op modules
given no function, or an optimizer's update): a call step that runs a user's function (a custom gradient's
backward, a gradient rule registered by the user) may read any tensor of the trace through its closure,
and then the plan copies as without a binding.

The kernel steps that read or write a bound array are bound anew on each call: a prebound
``functools.partial`` re-made with the call's arrays in its templates' places, where building the kernel
on probe arrays at compile time shows that is what its declaration makes (about 1 us); else the declaration
builds it again (:meth:`.capture.KernelStep.rebinder`, 5 to 8 us); a fused loop or a fused GPU region by its
``rebind`` (no compilation, no scratch). The other steps stay as they were built, so a small plan's steps cost
what they did. On a GPU a CUDA graph holds its buffers' addresses, so the steps bound anew run between the
graph segments (:class:`.graphs.GpuReplay`) and the others stay graphed.

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
import contextlib
import functools

import numpy as np

from .. import _nest as nest
from ..backend import CPU
from ..tensor import Tensor
from . import declare, kernels
from .capture import CallStep, KernelStep, _arrays_in, _root_array, same_layout

__all__ = ["IN_PLACE_BYTES", "GPU_IN_PLACE_BYTES", "Binding", "plan_binding"]

_NOTHING = contextlib.nullcontext()
IN_PLACE_BYTES = 1 << 15  # bytes per step bound anew: a copy of 32 KiB costs what re-making a prebound call does
# On a GPU (an H200: 4.8 TB/s, 5 to 10 us a launch) a copy of 1 MiB is a launch of its own and 0.4 us of the
# device's memory; a step bound anew costs its rebinding (1 to 8 us of the host) and its launch outside a graph,
# which the device's time on a large array hides: from 1 MiB a step the copy costs more than the binding
GPU_IN_PLACE_BYTES = 1 << 20


class Binding:
    """How a plan binds a call: ``copied`` (buffer, k): call array ``k`` copied in; ``in_place``
    (buffer, k): read in place where it fits; ``fresh`` (output index, template): a result written into a
    fresh array like ``template``; ``rebinders`` (step index, rebind): the steps bound anew; ``roots``: ids of
    the arrays (and bases) the plan and its variables own, which a call's array must not be; ``xp``: the
    plan's array module; ``device``: its GPU's index (None on the CPU)."""

    __slots__ = ("copied", "in_place", "fresh", "rebinders", "roots", "_keep", "xp", "device", "_current")

    def __init__(self, copied, in_place, fresh, rebinders, roots, keep, xp=np, device=None, current=None):
        self.copied, self.in_place, self.fresh, self.rebinders = copied, in_place, fresh, rebinders
        self.roots, self._keep = roots, keep  # (keep: the arrays of roots, alive so that their ids name them)
        self.xp, self.device = xp, device
        self._current = current  # on a GPU: the index of the current device

    def run(self, plan, arrays):
        """Replay CPU ``plan`` with the call's ``arrays``; returns the result."""
        steps, fresh = self.bind(plan, arrays)
        for step in steps:
            step()
        return plan.result(fresh)

    def bind(self, plan, arrays):
        """``(steps, fresh)``: ``plan``'s steps bound to the call's ``arrays`` (those copied in, copied now), and
        output index -> the fresh array this call writes that result into."""
        sub, fresh = self.arrays(arrays)
        steps = plan.steps
        if sub:
            steps = list(steps)
            for i, rebind in self.rebinders:
                steps[i] = rebind(sub)
        return steps, fresh

    def arrays(self, arrays):
        """``(sub, fresh)``: id(buffer or template) -> the call's array a step reads or writes in its place (the
        arrays that do not fit, copied into their buffers now), and output index -> the fresh array this call
        writes that result into."""
        sub = {}
        for buffer, k in self.copied:
            buffer[...] = arrays[k]
        fits = self._fits
        for buffer, k in self.in_place:
            a = arrays[k]
            if fits(a, buffer):
                sub[id(buffer)] = a
            else:
                buffer[...] = a
        fresh = {}
        if self.fresh:
            if self.device is None:
                for j, template in self.fresh:
                    out = fresh[j] = same_layout(template, np)
                    sub[id(template)] = out
            else:
                xp = self.xp
                with xp.cuda.Device(self.device) if self._current() != self.device else _NOTHING:  # the plan's GPU
                    for j, template in self.fresh:
                        out = fresh[j] = same_layout(template, xp)
                        sub[id(template)] = out
        return sub, fresh

    def _fits(self, a, buffer):
        """Whether the call's array ``a`` may be read where it is in place of input ``buffer``."""
        if self.device is None:
            return (a.__class__ is np.ndarray and a.strides == buffer.strides and a.flags.aligned
                    and a.flags.writeable and id(_root_array(a)) not in self.roots)
        return (a.__class__ is buffer.__class__ and a.strides == buffer.strides and a.device.id == self.device
                and a.data.ptr % a.itemsize == 0 and id(_root_array(a)) not in self.roots)


def plan_binding(capture, steps, compiled, outputs, moved, device=CPU):
    """The :class:`Binding` of a plan on ``device`` over ``steps`` (built as ``compiled``, with arrays ``moved``
    by liveness) returning ``outputs`` (:meth:`.capture.Capture.output`); None where nothing is bound in place.
    Also ``(inputs read in place, results written in place)``."""
    inputs = capture.inputs
    xp = device.xp
    unit = IN_PLACE_BYTES if device is CPU else GPU_IN_PLACE_BYTES
    if not all(type(b) is xp.ndarray for b, _ in inputs) or not all(_closed(s) for s in steps
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

    input_ids = {id(b) for b, _ in inputs}
    candidates = []  # (array, input position k or None, output index j or None): bound where it pays
    for k, (buffer, _) in enumerate(inputs):
        key = id(buffer)
        if (key not in blocked and type(buffer) is xp.ndarray and buffer.nbytes >= unit
                and buffer.flags.c_contiguous and (xp is not np or buffer.flags.aligned) and key not in writers
                and key not in returned and key in readers):
            candidates.append((buffer, k, None))
    for j, how in enumerate(outputs):
        a = how[1]
        key = id(a)
        if (how[0] == "buffer" and key in once and key not in blocked and key not in input_ids
                and key in capture.buffers and type(a) is xp.ndarray and a.nbytes >= unit
                and len(writers.get(key, ())) == 1):
            candidates.append((a, None, j))
    templates = {id(a) for a, _, _ in candidates}
    rebinders, cost = {}, {}  # step index -> its rebind (None: it cannot be bound anew), and what that costs
    for a, _, _ in candidates:
        for i in readers.get(id(a), []) + writers.get(id(a), []):
            if i not in rebinders:
                mine = [b for b in steps[i].inputs + steps[i].outputs if id(b) in templates]
                rebind = steps[i].rebinder(moved)
                rebinders[i] = rebind if rebind is None else _repartial(compiled[i], rebind, mine, xp)
                cost[i] = (1 if getattr(rebinders[i], "__name__", "") == "repartial"
                           else 2 if steps[i].op_type == "FusedRegion" else 4)
    in_place, fresh, touched = [], [], set()
    for a, k, j in candidates:
        mine = readers.get(id(a), []) + writers.get(id(a), [])
        if all(rebinders[i] is not None for i in mine) and a.nbytes >= unit * sum(cost[i] for i in mine):
            (in_place.append((a, k)) if k is not None else fresh.append((j, a)))
            touched.update(mine)
    bound_inputs = {id(b) for b, _ in in_place}
    copied = [(b, k) for k, (b, _) in enumerate(inputs) if id(b) not in bound_inputs]
    if not (in_place or fresh):
        return None, (0, 0)
    touched = sorted(touched)
    kept = [a for key, a in capture.buffers.items() if key not in moved]  # (a moved one is the plan's no more)
    roots = [_root_array(a) for a in kept + list(moved.values()) + [v._data for v in capture.variables.values()]]
    binding = Binding(copied, in_place, fresh, [(i, rebinders[i]) for i in touched], {id(a) for a in roots}, roots,
                      xp, None if device is CPU else device.index,
                      None if device is CPU else device.backend._get_device)
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


def _repartial(built, rebind, templates, xp=np):
    """``rebind``, or a cheaper one that makes prebound call ``built`` again with its arguments substituted,
    where that is what ``rebind`` does: proven on the spot, by rebinding ``templates`` (the bound arrays the
    step reads or writes) to fresh arrays of their layouts and finding each in the very place of its template,
    every other argument the same object."""
    if type(built) is not functools.partial:
        return rebind
    probes = {id(a): same_layout(a, xp) for a in templates}
    try:
        probe = rebind(probes)
    except Exception:  # noqa: BLE001 - a kernel that cannot be built so is rebound by its declaration
        return rebind
    if (type(probe) is not functools.partial or probe.func is not built.func or len(probe.args) != len(built.args)
            or probe.keywords.keys() != built.keywords.keys()):
        return rebind
    args, keywords = list(built.args), dict(built.keywords)
    at, named = [], []  # (position or keyword, recipe): where the bound arrays are
    for slot, a, b in [(n, a, b) for n, (a, b) in enumerate(zip(built.args, probe.args))] + \
            [(k, built.keywords[k], probe.keywords[k]) for k in built.keywords]:
        recipe = _recipe(a, b, probes)
        if recipe is False:
            return rebind
        if recipe is not None:
            (at if isinstance(slot, int) else named).append((slot, recipe))
    func, partial = built.func, functools.partial

    def repartial(sub):
        a, kw = args.copy(), keywords.copy()
        for n, recipe in at:
            a[n] = _made(a[n], recipe, sub)
        for k, recipe in named:
            kw[k] = _made(kw[k], recipe, sub)
        return partial(func, *a, **kw)
    return repartial


def _recipe(a, b, probes):
    """How argument ``a`` of a prebound call is rebound, where the call built on ``probes`` holds ``b`` there:
    None (the same object, or an equal number or string), the template's id (a bound array), a tuple of those
    (a tuple of arrays); False where ``b`` is neither."""
    if b is a or (type(a) in (int, float, bool, str) and type(b) is type(a) and a == b):
        return None
    if id(a) in probes and b is probes[id(a)]:
        return id(a)
    if type(a) is tuple and type(b) is tuple and len(a) == len(b):
        inner = [_recipe(x, y, probes) for x, y in zip(a, b)]
        if all(r is None or type(r) is int for r in inner):
            return tuple(inner)
    return False


def _made(a, recipe, sub):
    """Argument ``a`` rebound by ``recipe`` (:func:`_recipe`) to this call's arrays ``sub``."""
    if type(recipe) is int:
        return sub.get(recipe, a)
    return tuple(x if r is None else sub.get(r, x) for x, r in zip(a, recipe))


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
