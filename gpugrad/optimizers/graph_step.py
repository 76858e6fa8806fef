"""An optimizer's step as launches a CUDA Graph may hold: how ``gg.function`` replays it on a GPU.

The eager step (:meth:`Optimizer._apply_pairs`) reads the learning rate on the host and passes each
step's scalars (Adam's step size, SGD's rate) by value to the fused update kernels; a CUDA Graph
would replay the values it captured. So a GPU plan runs the step in two parts (:func:`split`):

- a host step, run between the graphs: it reads the learning rate, counts the step and the
  variables' versions as ``_apply_pairs`` does, and writes the step's scalars into 0-d device arrays
  (a fill launch for each that changed; no transfer, no synchronisation);
- one launch per variable of the same fused kernel (``kernels/adam_update.cu``,
  ``kernels/sgd_momentum_update.cu``) with those arrays as its scalar params: the kernel reads the
  same double (or the variable's dtype) values from memory that it is passed by value eagerly, so
  the step is the eager step to the bit; a graph may hold each launch (it allocates nothing).

An optimizer takes part through two methods: ``_kernel_scalars(lr)`` (this step's scalars by name)
and ``_kernel_launch(var, grad, state, scalars)`` (a function of no arguments that launches the update,
``scalars.array(name, dtype)`` giving each scalar's device array), or None where it has no such form;
clipping, a CPU variable, mixed dtypes or a non-contiguous array keep the whole step a host step.

Example (on the CPU there is no split: the step stays one call)::

    >>> import gpugrad as gg
    >>> w = gg.Variable([1.0])
    >>> split(gg.optimizers.Adam(0.1), [(gg.tensor([1.0]), w, False)]) is None
    True
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from ..backend import CPU


class DeviceScalars:
    """This step's scalars as 0-d arrays on one GPU, each made once per (name, dtype) and refilled when its
    value changes (the value cast to the array's dtype, as a Python scalar is cast by CuPy's ufuncs and kernels).

    Example (the arrays live on a GPU; here, with the NumPy module in place of CuPy)::

        >>> import numpy as np
        >>> s = DeviceScalars(np)
        >>> a = s.array("lr", "float64")
        >>> s.update({"lr": 0.5}); float(a)
        0.5
    """

    def __init__(self, xp: Any) -> None:
        self.xp = xp
        self._arrays: dict = {}  # (name, dtype) -> [0-d array, the value it holds]

    def array(self, name: str, dtype: Any) -> Any:
        """The 0-d array of scalar ``name`` in ``dtype``."""
        key = (name, self.xp.dtype(dtype).str)
        entry = self._arrays.get(key)
        if entry is None:
            entry = self._arrays[key] = [self.xp.zeros((), dtype), None]
        return entry[0]

    def update(self, values: dict) -> None:
        """Refill each array whose scalar in ``values`` changed since the last update."""
        for (name, _), entry in self._arrays.items():
            value = values[name]
            if entry[1] is None or entry[1] != value or type(entry[1]) is not type(value):
                entry[0].fill(value)
                entry[1] = value


class SplitStep:
    """A step split for a GPU plan: ``prepare`` (the host part), ``launches`` (one per variable), and
    :meth:`still_bound`."""

    def __init__(self, optimizer: Any, prepare: Callable[[], None], launches: list, bound: list) -> None:
        self.prepare, self.launches = prepare, launches
        self._optimizer, self._bound, self._form = optimizer, bound, optimizer._kernel_form()

    def still_bound(self) -> bool:
        """Whether the launches still do the optimizer's step: each variable and slot lives in the array they
        hold, and no setting that shapes the step (clipping, ``_kernel_form``) changed since."""
        optimizer = self._optimizer
        if (optimizer.global_clipnorm is not None or optimizer.clipnorm is not None
                or optimizer._kernel_form() != self._form):
            return False
        state = optimizer._state
        for var, param, slots in self._bound:
            entry = state.get(id(var))
            if var._data is not param or entry is None or entry[0] is not var:
                return False
            held = entry[1]
            if len(held) != len(slots) or any(held.get(key) is not a for key, a in slots.items()):
                return False
        return True


def split(optimizer: Any, pairs: list) -> Optional[SplitStep]:
    """``optimizer._apply_pairs(pairs)`` as a :class:`SplitStep`, or None where it has no launch form (see the
    module docstring). Run once the step has run eagerly (the trace's call), so that every slot exists."""
    if optimizer.global_clipnorm is not None or optimizer.clipnorm is not None or not pairs:
        return None
    devices = {var._device for _, var, _ in pairs}
    if len(devices) != 1 or next(iter(devices)) is CPU:
        return None
    device = next(iter(devices))
    scalars = DeviceScalars(device.xp)
    launches, bound = [], []
    for grad, var, _ in pairs:
        entry = optimizer._state.get(id(var))
        if entry is None or entry[0] is not var:
            return None
        slots = dict(entry[1])
        arrays = [grad._data, var._data] + list(slots.values())
        if var._data.dtype.char not in "fd" or any(getattr(a, "dtype", None) != var._data.dtype
                                                   or not a.flags.c_contiguous for a in arrays):
            return None  # float32 and float64 only: CuPy's 16-bit loops are not all there (backend/cupy_gaps.py)
        launch = optimizer._kernel_launch(var, grad._data, entry[1], scalars)
        if launch is None:
            return None
        launches.append(launch)
        bound.append((var, var._data, slots))
    variables = [var for _, var, _ in pairs]

    def prepare() -> None:
        # _apply_pairs' bookkeeping, in its order: the rate at this step, the scalars, the versions, the count
        scalars.update(optimizer._kernel_scalars(optimizer.current_learning_rate()))
        for var in variables:
            var._version += 1
        optimizer.iterations += 1

    return SplitStep(optimizer, prepare, launches, bound)
