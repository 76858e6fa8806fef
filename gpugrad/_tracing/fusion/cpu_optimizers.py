"""An optimizer's step on the CPU as compiled updates: how ``gg.function(jit_compile=True)`` replays it.

The eager step (:meth:`Optimizer._apply_pairs`) runs a few NumPy calls per variable
(:mod:`gpugrad.optimizers.updates`), each a pass over memory and a temporary. Under ``jit_compile`` a CPU
plan runs it as :func:`split` makes it, the CPU sibling of the GPU plans' launch form
(:func:`gpugrad.optimizers.graph_step.split`):

- a host part, run each call: it reads the learning rate (a schedule at this step), the optimizer's
  settings and the step count, computes the step's scalars as the eager update does (Python floats, then
  cast to the variable's dtype), and after the updates counts each variable's version and the step;
- one numba loop per variable (:data:`SOURCES`) over its flat arrays, which computes the eager update's
  operations in their order, each rounded to the variable's dtype (numba keeps float32 as float32; no
  fast-math, so nothing is contracted into an FMA or reordered): the eager step's bits. The variables of one
  dtype go in one call; large ones (``SPLIT_MIN_CHEAP`` elements or more) of momentum and Adam are split across
  gpugrad's CPU threads as their eager updates are (plain SGD's is not).

The optimizers with a compiled form are :class:`~gpugrad.optimizers.SGD` (plain, momentum, Nesterov, weight
decay), :class:`~gpugrad.optimizers.Adam` (both epsilon placements) and :class:`~gpugrad.optimizers.AdamW`,
of float32 or float64 variables whose arrays and slots are C-contiguous and of one dtype; anything else
(clipping, a subclass, a GPU variable, float16) keeps the call step. :meth:`SplitStep.still_bound
<gpugrad.optimizers.graph_step.SplitStep.still_bound>` is one of the plan's checks: a variable or slot
replaced, clipping set or the form changed (momentum set to 0) makes ``gg.function`` trace again.

Example:
    >>> import numpy as np, gpugrad as gg
    >>> w = gg.Variable(np.ones(3, np.float32))
    >>> opt = gg.optimizers.SGD(0.5)
    >>> grad = gg.tensor(np.ones(3, np.float32))
    >>> opt.apply_gradients([(grad, w)])  # the step runs eagerly once (as at a trace)
    >>> step = split(opt, [(grad, w, False)])
    >>> if step is not None:  # numba is installed
    ...     step.run()
    ...     assert w.numpy().tolist() == [0.0, 0.0, 0.0] and opt.iterations == 2
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional

import numpy as np

from ...backend import CPU
from ...backend.cpu_threads import SPLIT_MIN_CHEAP, split_apply
from ...optimizers.graph_step import SplitStep
from ...optimizers.kernels_ref import adam_step_params

__all__ = ["split", "kernels", "SOURCES"]


# The updates, one element at a time, as the eager CPU updates compute them (updates._sgd_momentum_cpu,
# updates._adam_cpu): scalars arrive cast to the arrays' dtype, so every operation rounds as NumPy's does.
# Each takes a tuple of variables (their flat arrays) and their slots and gradients: one call a step.

def _sgd(ps, gs, lr, wd, use_wd):
    # p -= lr (g + wd p)   (updates.sgd: p + (-lr) t is p - lr t, negation being exact)
    for k in range(len(ps)):
        p, g = ps[k], gs[k]
        for i in range(p.size):
            t = g[i] + wd * p[i] if use_wd else g[i]
            p[i] = p[i] - lr * t


def _momentum(ps, velocities, gs, lr, momentum, wd, use_wd, nesterov):
    # t = g + wd p; v = momentum v - lr t; p += v   (nesterov: p += momentum v - lr t)
    for k in range(len(ps)):
        p, velocity, g = ps[k], velocities[k], gs[k]
        for i in range(p.size):
            t = g[i] + wd * p[i] if use_wd else g[i]
            lr_t = lr * t
            v = velocity[i] * momentum
            v = v - lr_t
            velocity[i] = v
            if nesterov:
                p[i] = p[i] + (momentum * v - lr_t)
            else:
                p[i] = p[i] + v


def _adam(ps, ms, vs, gs, step_size, one_minus_beta1, one_minus_beta2, eps, wd, use_wd, bc2_sqrt, use_bc2,
          decay, use_decay):
    # (AdamW: p *= decay first) t = g + wd p; m += (1 - b1)(t - m); v += (1 - b2)(t^2 - v);
    # p -= step m / (sqrt(v) / bc2_sqrt + eps), the division left out where it is by 1
    for k in range(len(ps)):
        p, m, v, g = ps[k], ms[k], vs[k], gs[k]
        for i in range(p.size):
            pi = p[i] * decay if use_decay else p[i]
            t = g[i] + wd * pi if use_wd else g[i]
            mi = m[i] + one_minus_beta1 * (t - m[i])
            m[i] = mi
            vi = v[i] + one_minus_beta2 * (t * t - v[i])
            v[i] = vi
            d = math.sqrt(vi)
            if use_bc2:
                d = d / bc2_sqrt
            d = d + eps
            u = step_size * mi
            u = u / d
            p[i] = pi - u


SOURCES = {"sgd": _sgd, "momentum": _momentum, "adam": _adam}  # what each compiled update runs, as Python
_compiled: dict = {}


def kernels() -> Optional[dict]:
    """``{name: numba function}`` of :data:`SOURCES` (compiled on first call, cached on disk), or None without
    numba.

    Example:
        >>> sorted(kernels() or SOURCES)
        ['adam', 'momentum', 'sgd']
    """
    if not _compiled:
        try:
            import numba
        except ImportError:
            return None
        for name, fn in SOURCES.items():
            _compiled[name] = numba.njit(cache=True, error_model="numpy", nogil=True)(fn)
    return _compiled


def _flat(a):
    return a.reshape(-1)  # a view: the arrays are C-contiguous


def _launches(kernel, arrays, scalars_of, split=True):
    """Functions of the step's scalars (a dict) that run ``kernel`` over the flat ``arrays`` (per variable: its
    array, slots and gradient): one call for the variables under ``SPLIT_MIN_CHEAP`` elements together, and
    one for each larger one, split across the CPU threads as the eager update is (where ``split``: plain SGD's
    eager update is never split)."""
    limit = SPLIT_MIN_CHEAP if split else float("inf")
    small = [[_flat(a) for a in group] for group in arrays if group[0].size < limit]
    large = [[_flat(a) for a in group] for group in arrays if group[0].size >= limit]
    out = []
    if small:
        columns = tuple(tuple(column) for column in zip(*small))
        launch = lambda scalars: kernel(*columns, *scalars)  # noqa: E731
        launch.arguments = columns  # what precompile types it by (with the scalars)
        out.append(launch)
    for flat in large:
        def chunk(*parts, scalars):
            kernel(*[(part,) for part in parts], *scalars)

        def run_split(scalars, flat=flat):
            if not split_apply(chunk, flat, {"scalars": scalars}):
                kernel(*[(a,) for a in flat], *scalars)
        run_split.arguments = tuple((a,) for a in flat)
        out.append(run_split)
    return out


def _sgd_scalars(t):
    # updates.sgd: Python floats, cast (as NumPy casts a Python float) to the dtype; updates.sgd_momentum:
    # cast first, its `if weight_decay` then testing the cast value
    def plain(s):
        return t(s["lr"]), t(s["weight_decay"]), bool(s["weight_decay"])

    def momentum(s):
        wd = t(s["weight_decay"])
        return t(s["lr"]), t(s["momentum"]), wd, bool(wd), bool(s["nesterov"])
    return plain, momentum


def _adam_scalars(t):
    # updates.adam: each scalar cast to the dtype; AdamW's decay `param *= 1 - lr wd` a Python float cast too
    def adam(s):
        wd, bc2 = t(s["weight_decay"]), t(s["bias_correction2_sqrt"])
        decay = s.get("decay")
        return (t(s["step_size"]), t(1.0 - s["beta1"]), t(1.0 - s["beta2"]), t(s["eps"]), wd, bool(wd), bc2,
                bool(bc2 != 1), t(1.0 if decay is None else decay), decay is not None)
    return adam


def _scalars(optimizer, kind):
    """This step's Python scalars, as the eager update derives them (before ``iterations`` counts the step); None
    where a weight decay set on the optimizer is not a Python number (a NumPy float64 would make eager's plain
    SGD and AdamW decay compute in float64: the eager step runs then)."""
    if optimizer.weight_decay.__class__ not in (float, int):
        return None
    lr = optimizer.current_learning_rate()
    if kind != "adam":
        return {"lr": float(lr), "momentum": float(optimizer.momentum),
                "weight_decay": float(optimizer.weight_decay), "nesterov": bool(optimizer.nesterov)}
    step_size, bc2_sqrt = adam_step_params(lr, optimizer.beta_1, optimizer.beta_2, optimizer.iterations + 1,
                                           optimizer.epsilon_placement)
    values = {"step_size": step_size, "beta1": optimizer.beta_1, "beta2": optimizer.beta_2,
              "eps": optimizer.epsilon, "bias_correction2_sqrt": bc2_sqrt}
    if _is_adamw(optimizer):
        values["weight_decay"] = 0.0
        if optimizer.weight_decay:
            values["decay"] = 1.0 - lr * optimizer.weight_decay
    else:
        values["weight_decay"] = optimizer.weight_decay
    return values


def _is_adamw(optimizer):
    from ...optimizers.adam import AdamW
    return type(optimizer) is AdamW


def _kind(optimizer):
    """``"sgd"`` or ``"adam"`` for the optimizers with a compiled form (their exact classes), else None."""
    from ...optimizers.adam import Adam, AdamW
    from ...optimizers.sgd import SGD
    if type(optimizer) is SGD:
        return "sgd"
    if type(optimizer) in (Adam, AdamW):
        return "adam"
    return None


class CompiledStep(SplitStep):
    """The compiled step: :meth:`run` replays ``_apply_pairs`` (its host part, then the updates);
    :meth:`~gpugrad.optimizers.graph_step.SplitStep.still_bound` as for a GPU plan's split step;
    ``compile_seconds``: what compiling its updates took."""

    compile_seconds = 0.0

    def run(self) -> None:
        self.prepare()


def split(optimizer: Any, pairs: list, eager: Optional[Callable[[], None]] = None) -> Optional[CompiledStep]:
    """``optimizer._apply_pairs(pairs)`` on the CPU as a :class:`CompiledStep`, or None where it has no compiled
    form (see the module docstring) or numba is not installed. Run once the step has run eagerly (the
    trace's call), so that every slot exists. ``eager``: the step as it runs without compiling (the plan's
    call step), run instead on a call whose settings the compiled updates do not follow."""
    kind = _kind(optimizer)
    if (kind is None or optimizer.global_clipnorm is not None or optimizer.clipnorm is not None or not pairs
            or any(var._device is not CPU for _, var, _ in pairs)):
        return None
    compiled = kernels()
    if compiled is None:
        return None
    groups: dict = {}  # dtype -> [[param, slots..., grad] per variable]
    bound: list = []
    for grad, var, _ in pairs:
        entry = optimizer._state.get(id(var))
        if entry is None or entry[0] is not var:
            return None
        slots = dict(entry[1])
        param, g = var._data, grad._data
        if kind == "adam":
            if set(slots) != {"m", "v"}:
                return None
            arrays, kernel = [param, slots["m"], slots["v"], g], compiled["adam"]
        elif optimizer.momentum:
            if set(slots) != {"velocity"}:
                return None
            arrays, kernel = [param, slots["velocity"], g], compiled["momentum"]
        else:
            if slots:
                return None
            arrays, kernel = [param, g], compiled["sgd"]
        if (param.dtype.char not in "fd" or any(type(a) is not np.ndarray or a.dtype != param.dtype
                                                or not a.flags.c_contiguous for a in arrays)
                or not param.flags.writeable):
            return None  # float16, mixed dtypes or another layout: the eager step, which handles them
        groups.setdefault(param.dtype.type, []).append(arrays)
        bound.append((var, param, slots))
    variables = [var for _, var, _ in pairs]
    launches = []  # (the dtype's scalars from the step's Python scalars, a launch of them)
    kernel_of = {}
    for t, arrays in groups.items():
        scalars_of = _adam_scalars(t) if kind == "adam" else _sgd_scalars(t)[1 if optimizer.momentum else 0]
        split_large = kind == "adam" or bool(optimizer.momentum)
        for launch in _launches(kernel, arrays, scalars_of, split_large):
            launches.append((scalars_of, launch))
            kernel_of[id(launch)] = kernel
    last: list = [None, {}]  # the last step's Python scalars and their casts (most steps repeat them)

    def prepare() -> None:
        # _apply_pairs in its order: the rate at this step, the updates, the versions, the count
        values = _scalars(optimizer, kind)
        if values is None:
            (eager or (lambda: optimizer._apply_pairs(pairs)))()
            return
        if values != last[0]:
            last[0], last[1] = values, {}
        cast = last[1]
        for scalars_of, launch in launches:
            scalars = cast.get(scalars_of)
            if scalars is None:
                scalars = cast[scalars_of] = scalars_of(values)
            launch(scalars)
        for var in variables:
            var._version += 1
        optimizer.iterations += 1

    step = CompiledStep(optimizer, prepare, launches, bound)
    from . import precompile  # each update compiled now, for its arrays and this step's scalar types
    values = _scalars(optimizer, kind)
    if values is None:
        return None
    step.compile_seconds = sum(precompile(kernel_of[id(launch)], launch.arguments + tuple(scalars_of(values)))
                               for scalars_of, launch in launches)
    return step


def replace_steps(steps: list, compiled: list, checks: list,
                  is_optimizer_step: Callable[[Any], bool]) -> tuple[int, float]:
    """Replace in ``compiled`` each optimizer call step of ``steps`` (``is_optimizer_step``) that has a compiled
    form by its :meth:`CompiledStep.run`, adding its ``still_bound`` to ``checks``; ``(how many were replaced,
    the seconds their updates took to compile)``.

    Example:
        >>> replace_steps([], [], [], lambda s: False)
        (0, 0.0)
    """
    replaced, seconds = 0, 0.0
    for i, s in enumerate(steps):
        if not is_optimizer_step(s):
            continue
        form = split(s.args[0], s.args[1], compiled[i])
        if form is None:
            continue
        compiled[i] = form.run
        checks.append(form.still_bound)
        replaced += 1
        seconds += form.compile_seconds
    return replaced, seconds
