"""The Optimizer base class: gradients from a loss function, clipping, the learning rate, slots.

A subclass implements ``_update(var, param, grad, lr, state)``: one in-place
step of the variable's array ``param`` from gradient array ``grad`` (same
shape, dtype and device) at learning rate ``lr`` (a float), with ``state``
the variable's slot dict (created empty on its first update; slot arrays are
made with :meth:`Optimizer._zeros` on the variable's device). The base class
checks the pairs, clips, evaluates the learning rate once per step, bumps
each variable's version (as ``Variable.assign`` does, so a tape that saved the
old value refuses to use it) and counts steps in ``iterations``. Updates run
on raw arrays: they are never recorded on a tape. A subclass may also
implement ``_update_scratch(var, param, grad, lr, state)``, called instead of
``_update`` when ``grad`` is scratch: an array only ``minimize`` holds, which
the update may overwrite (it saves a temporary the size of the variable), and
which :func:`gpugrad._ownership.may_write_in_place` allows.

Example:
    >>> import gpugrad as gg
    >>> w = gg.Variable([1.0, -2.0])
    >>> opt = gg.optimizers.SGD(learning_rate=0.5)
    >>> loss = opt.minimize(lambda: gg.sum(gg.square(w)))  # grad 2w: w -= 0.5 * 2w
    >>> loss.item(), w.numpy().tolist(), opt.iterations
    (5.0, [0.0, 0.0], 1)
"""
from __future__ import annotations

import math
from sys import getrefcount
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ..backend import CPU
from ..errors import DeviceError, DTypeError, ShapeError
from .. import _donation
from .._ownership import may_write_in_place
from .. import _nest as nest
from .. import _dtypes as _dt
from ..tape import GradientTape
from ..tensor import Tensor, Variable, ensure_tensor
from .clipping import _check_max_norm, clip_by_global_norm
from .._tracing import declare

if TYPE_CHECKING:
    from typing import TypeAlias

    from .._typing import TensorLike

    # A learning rate: a number, or a schedule, a callable of the step (0 for the first update).
    LearningRate: TypeAlias = float | Callable[[int], float]
    # The variables to differentiate: Variables (nested lists, tuples and dicts of them too), a function
    # that returns them, or None (every trainable Variable the loss reads).
    VarList: TypeAlias = Iterable[Any] | Callable[[], Any] | None

__all__ = ["Optimizer"]

_CONTAINERS = (list, tuple, dict)


def _label(var):
    return f"variable {var.name!r}" if getattr(var, "name", None) else "a variable"


def _duplicate_error(name, variables, where):
    """ValueError naming the first variable of ``variables`` listed twice (None when none is)."""
    seen = set()
    for v in variables:
        if id(v) in seen:
            return ValueError(f"{name}: {_label(v)} (shape {v.shape}) is listed twice in {where}; a variable "
                              f"takes one update a step (list it once)")
        seen.add(id(v))
    return None


def zip_nested(grads, variables, name="apply_gradients"):
    """``[(grad, var), ...]`` of two structures of one shape: ``tape.gradient(loss, variables)`` and
    ``variables``, nested lists, tuples and dicts (dicts by sorted key, as :mod:`gpugrad._nest`).

    ValueError where the structures differ (another length, other keys, a leaf against a container).

    Example:
        >>> import gpugrad as gg
        >>> a, b = gg.Variable(1.0), gg.Variable(2.0)
        >>> [(g, v is a) for g, v in zip_nested({"x": [10]}, {"x": [a]})]
        [(10, True)]
    """
    if isinstance(variables, dict) and isinstance(grads, dict):
        if set(grads) != set(variables):
            raise ValueError(f"{name}: the gradients' keys {sorted(grads)} are not the variables' "
                             f"{sorted(variables)}")
        return [pair for key in sorted(variables) for pair in zip_nested(grads[key], variables[key], name)]
    if isinstance(variables, (list, tuple)) and isinstance(grads, (list, tuple)):
        if len(grads) != len(variables):
            raise ValueError(f"{name}: {len(grads)} gradients for {len(variables)} variables in one nested list")
        return [pair for g, v in zip(grads, variables) for pair in zip_nested(g, v, name)]
    if isinstance(variables, _CONTAINERS) or isinstance(grads, _CONTAINERS):
        raise ValueError(f"{name}: the gradients are a {type(grads).__name__} where the variables are a "
                         f"{type(variables).__name__}; pass tape.gradient(loss, variables) with those variables")
    return [(grads, variables)]


def flatten_pairs(grads_and_vars, name="apply_gradients"):
    """``grads_and_vars`` as a flat list of ``(grad, var)``: a pair of nested structures (a gradient
    structure as ``tape.gradient`` returns it, beside its variables) becomes its leaves' pairs.

    Example:
        >>> import gpugrad as gg
        >>> a, b = gg.Variable(1.0), gg.Variable(2.0)
        >>> [(g, v is b) for g, v in flatten_pairs([([1, 2], [a, b])])]
        [(1, False), (2, True)]
    """
    flat = []
    for grad, var in grads_and_vars:
        if isinstance(var, _CONTAINERS):
            flat.extend(zip_nested(grad, var, name))
        else:
            flat.append((grad, var))
    return flat


def check_learning_rate(value):
    """``value`` as a float (or the schedule itself when it is callable); ValueError unless finite, >= 0."""
    if callable(value) and not isinstance(value, Tensor):
        return value
    try:
        lr = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"learning_rate must be a number or a schedule callable(step), not {value!r}") from None
    if not math.isfinite(lr) or lr < 0:
        raise ValueError(f"learning_rate must be a finite number >= 0, got {value!r}")
    return lr


def check_hyper(name, value, low=0.0, high=None, high_open=True):
    """``value`` as a float in ``[low, high)`` (``[low, high]`` without ``high_open``); else ValueError."""
    x = float(value)
    in_range = math.isfinite(x) and x >= low and (high is None or (x < high if high_open else x <= high))
    if not in_range:
        upper = "" if high is None else f" and {'<' if high_open else '<='} {high}"
        raise ValueError(f"{name} must be a finite number >= {low}{upper}, got {value!r}")
    return x


class Optimizer:
    """Base of every optimizer: ``minimize``, ``compute_gradients``, ``apply_gradients``.

    Args:
        learning_rate: a float, or a schedule: a callable of the step (0 for the
            first update) returning the rate, such as those of
            :mod:`gpugrad.optimizers.schedules`.
        weight_decay: as each subclass documents (L2 folded into the gradient,
            or decoupled for AdamW).
        clipnorm: clip each gradient to this L2 norm (Keras' ``clipnorm``).
        global_clipnorm: clip all gradients together to this global norm
            (Keras' ``global_clipnorm``, PyTorch's ``clip_grad_norm_``).
    """

    # while gg.distributed's optimizer runs this one: the tape that averages the gradients over the ranks
    _tape_wrapper: Callable[[GradientTape], Any] | None = None

    def __init__(self, learning_rate: LearningRate, weight_decay: float = 0.0, clipnorm: float | None = None,
                 global_clipnorm: float | None = None, name: str | None = None) -> None:
        self._learning_rate = check_learning_rate(learning_rate)
        self.weight_decay = check_hyper("weight_decay", weight_decay)
        if clipnorm is not None and global_clipnorm is not None:
            raise ValueError("pass clipnorm (each gradient) or global_clipnorm (all together), not both")
        self.clipnorm = None if clipnorm is None else _check_max_norm(clipnorm)
        self.global_clipnorm = None if global_clipnorm is None else _check_max_norm(global_clipnorm)
        self.name = name or type(self).__name__
        self.iterations = 0  # updates applied so far
        self._state: dict[int, tuple[Variable, dict[str, Any]]] = {}  # id(variable) -> (variable, slot dict)

    # --- the learning rate ------------------------------------------------------
    @property
    def learning_rate(self) -> LearningRate:
        """The learning rate as given, a float or a schedule (settable)."""
        return self._learning_rate

    @learning_rate.setter
    def learning_rate(self, value: LearningRate) -> None:
        self._learning_rate = check_learning_rate(value)

    def current_learning_rate(self) -> float:
        """The rate the next update uses: the schedule evaluated at ``iterations``.

        Example:
            >>> import gpugrad as gg
            >>> opt = gg.optimizers.SGD(gg.optimizers.schedules.StepDecay(1.0, decay_steps=2, decay_rate=0.5))
            >>> opt.current_learning_rate()
            1.0
        """
        lr = self._learning_rate
        if lr.__class__ is float:
            return lr
        value = lr(self.iterations)
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise TypeError(f"the learning-rate schedule returned {value!r}, not a number") from None
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"the learning-rate schedule returned {value!r} at step {self.iterations}; "
                             f"a learning rate must be finite and >= 0")
        return value

    # --- gradients -------------------------------------------------------------------
    def _loss_and_gradients(self, loss_fn, var_list, wrap_tape=None):
        """``(loss, [(grad, var), ...])`` of ``loss_fn()`` under a fresh tape (``wrap_tape(tape)`` when given:
        gg.distributed's averaging tape)."""
        if not callable(loss_fn):
            raise TypeError(f"{self.name}: pass a function that computes the loss (called under a "
                            f"GradientTape), not {type(loss_fn).__name__}")
        var_list = self._flat_var_list(var_list)
        wrap_tape = wrap_tape or self._tape_wrapper
        tape = GradientTape() if wrap_tape is None else wrap_tape(GradientTape())
        with tape:
            if var_list is not None:
                tape.watch(var_list)
            loss = loss_fn()
        if var_list is None:
            var_list = [v for v in tape.watched_variables() if v.trainable]
            if not var_list:
                raise ValueError(f"{self.name}: the loss function read no trainable Variable; "
                                 f"nothing to differentiate (pass var_list, or read the variables in loss_fn)")
        grads = tape.gradient(loss, var_list)
        return loss, list(zip(grads, var_list))

    def _flat_var_list(self, var_list):
        """``var_list`` as a flat list of Variables (None stays None): called when callable, nested lists,
        tuples and dicts flattened (the order of ``tape.gradient``'s); ValueError for one listed twice."""
        if callable(var_list):
            var_list = var_list()
        if var_list is None:
            return None
        var_list = nest.flatten(var_list) if isinstance(var_list, (Tensor,) + _CONTAINERS) else \
            [leaf for item in var_list for leaf in nest.flatten(item)]
        for v in var_list:
            if not isinstance(v, Variable):
                raise TypeError(f"var_list holds Variables (nested lists, tuples, dicts of them), "
                                f"not {type(v).__name__}")
        error = _duplicate_error(self.name, var_list, "var_list") if len(var_list) > 1 else None
        if error is not None:
            raise error  # PyTorch refuses a parameter in two groups (and warns that a duplicate will be an error)
        return var_list

    def compute_gradients(self, loss_fn: Callable[[], Tensor], var_list: VarList = None
                          ) -> list[tuple[Tensor | None, Variable]]:
        """``[(grad, var), ...]`` of ``loss_fn()`` (computed under a fresh GradientTape).

        ``var_list=None`` takes every trainable Variable the loss read, in the
        order the tape first saw them. A variable the loss does not depend on
        gets ``None``. ``var_list`` may nest lists, tuples and dicts (flattened
        in ``tape.gradient``'s order); a variable listed twice is a ValueError.

        Example:
            >>> import gpugrad as gg
            >>> a, b = gg.Variable(3.0), gg.Variable(1.0)
            >>> pairs = gg.optimizers.SGD(0.1).compute_gradients(lambda: a * a)
            >>> [(g.item(), v is a) for g, v in pairs]
            [(6.0, True)]
        """
        return self._loss_and_gradients(loss_fn, var_list)[1]

    def minimize(self, loss_fn: Callable[[], Tensor], var_list: VarList = None) -> Tensor:
        """Compute the gradients of ``loss_fn()``, apply them; returns the loss tensor.

        Example:
            >>> import gpugrad as gg
            >>> w = gg.Variable(4.0)
            >>> opt = gg.optimizers.SGD(learning_rate=0.25)
            >>> for _ in range(20):
            ...     loss = opt.minimize(lambda: (w - 1.0) ** 2)
            >>> round(w.item(), 4)
            1.0
        """
        loss, grads_and_vars = self._loss_and_gradients(loss_fn, var_list)
        self._apply(grads_and_vars, scratch=_donation.donating)
        return loss

    # --- the update ---------------------------------------------------------------------
    def apply_gradients(self, grads_and_vars: Iterable[tuple[TensorLike | None, Variable]]) -> None:
        """Update each variable in place from its gradient; pairs with a ``None`` gradient are skipped.

        A pair may hold two nested structures of one shape, the gradients as
        ``tape.gradient(loss, variables)`` returns them beside ``variables``
        (lists, tuples, dicts): ``zip([grads], [variables])``.

        Raises ShapeError, DTypeError or DeviceError naming the variable when a
        gradient does not match its variable, ValueError when every gradient
        is ``None`` or when a variable has two gradients (PyTorch refuses a
        parameter twice over too). Gradients are clipped first when the
        optimizer has ``clipnorm`` or ``global_clipnorm``.

        Example:
            >>> import gpugrad as gg
            >>> w = gg.Variable([1.0, 1.0])
            >>> gg.optimizers.SGD(0.1).apply_gradients([(gg.tensor([1.0, -1.0]), w)])
            >>> w.numpy().tolist()
            [0.8999999761581421, 1.100000023841858]
            >>> params = {"w": w, "more": [gg.Variable(0.0)]}
            >>> with gg.GradientTape() as tape:
            ...     loss = gg.sum(params["w"]) + 2.0 * params["more"][0]
            >>> gg.optimizers.SGD(0.5).apply_gradients([(tape.gradient(loss, params), params)])
            >>> params["more"][0].item()
            -1.0
        """
        self._apply(grads_and_vars, scratch=False)

    def _apply(self, grads_and_vars, scratch):
        """apply_gradients; with ``scratch``, a gradient nothing else holds goes to ``_update_scratch``."""
        pairs = []
        seen = False
        for pair in grads_and_vars:
            seen = True
            grad, var = pair
            if grad is None:
                continue
            if var.__class__ is not Variable and isinstance(var, _CONTAINERS):  # nested: never scratch
                pairs.extend((self._checked(g, v), v, False) for g, v in zip_nested(grad, var, self.name)
                             if g is not None)
                continue
            # the common case in one test; anything else gets the full check (and its error)
            if not (grad.__class__ is Tensor and var.__class__ is Variable and grad._device is var._device
                    and grad._data.shape == var._data.shape and grad._data.dtype == var._data.dtype
                    and var._data.dtype.kind == "f"):
                grad = self._checked(grad, var)
            # scratch: held by its pair, `grad` and getrefcount alone (not twice in the list, not by the
            # caller), its array by it alone, and the ownership rule allows it (not a view, not 0-d, large)
            free = (scratch and may_write_in_place(grad._data) and getrefcount(grad) == 3
                    and getrefcount(grad._data) == 2)
            pairs.append((grad, var, free))
        if not pairs:
            if seen:
                raise ValueError(f"{self.name}: no gradient for any variable (every gradient is None); "
                                 f"does the loss depend on the variables?")
            return
        if len(pairs) > 1 and len({id(v) for _, v, _ in pairs}) != len(pairs):
            raise _duplicate_error(self.name, [v for _, v, _ in pairs], "grads_and_vars")
        self._apply_pairs(pairs)

    @declare.root(declare.HOST, effects="updates the variables and the slots")
    def _apply_pairs(self, pairs):
        """Clip, then update each variable of ``pairs`` ``(grad, var, free)`` (checked, none None); one step.

        The step ``gg.function`` replays: it evaluates the learning rate and counts the step each time.
        """
        if self.global_clipnorm is not None:  # clipped gradients are not scratch: a clip may return its input
            clipped, _ = clip_by_global_norm([g for g, _, _ in pairs], self.global_clipnorm)
            pairs = [(g, v, False) for g, (_, v, _) in zip(clipped, pairs)]
        elif self.clipnorm is not None:
            pairs = [(clip_by_global_norm([g], self.clipnorm)[0][0], v, False) for g, v, _ in pairs]
        lr = self.current_learning_rate()
        state = self._state
        for grad, var, free in pairs:
            entry = state.get(id(var))
            if entry is None:
                entry = state[id(var)] = (var, {})
            dev = var._device
            update = self._update_scratch if free else self._update
            if dev is CPU:
                update(var, var._data, grad._data, lr, entry[1])
            else:
                previous = dev.backend.use_device(dev.index)  # CuPy launches on the current GPU
                try:
                    update(var, var._data, grad._data, lr, entry[1])
                finally:
                    if previous != dev.index:
                        dev.backend.use_device(previous)
            var._version += 1
        self.iterations += 1

    def _checked(self, grad, var):
        """``grad`` as a Tensor, after checking it fits ``var``."""
        if not isinstance(var, Variable):
            raise TypeError(f"{self.name}: apply_gradients takes (gradient, Variable) pairs, "
                            f"not a {type(var).__name__}")
        if not isinstance(grad, Tensor):
            grad = ensure_tensor(grad, like=var)
        label = f"variable {var.name!r}" if var.name else "a variable"
        if grad._device is not var._device:
            raise DeviceError(f"{self.name}: the gradient of {label} is on {grad.device!r} "
                              f"but the variable is on {var.device!r}")
        if grad._data.shape != var._data.shape:
            raise ShapeError(f"{self.name}: the gradient of {label} has shape {grad.shape} "
                             f"but the variable has shape {var.shape}")
        if grad._data.dtype != var._data.dtype:
            raise DTypeError(f"{self.name}: the gradient of {label} has dtype {grad.dtype} "
                             f"but the variable has dtype {var.dtype}")
        if not _dt.floating(var._data.dtype):
            raise DTypeError(f"{self.name}: cannot update {label} of dtype {var.dtype}; "
                             f"optimizers update floating-point variables")
        return grad

    def _update(self, var, param, grad, lr, state):
        raise NotImplementedError

    def _update_scratch(self, var, param, grad, lr, state):
        """``_update`` for a ``grad`` array the update may overwrite; by default, ``_update``."""
        self._update(var, param, grad, lr, state)

    # --- the step as launches a CUDA Graph may hold (gpugrad.optimizers.graph_step) ----------------------
    def _kernel_scalars(self, lr):
        """This step's scalars by name at learning rate ``lr`` (before ``iterations`` counts it), as
        :meth:`_kernel_launch`'s launches read them."""
        return {}

    def _kernel_form(self):
        """The settings that choose what :meth:`_kernel_launch` launches (a replay holding its launches checks
        them): none by default."""
        return ()

    def _kernel_launch(self, var, grad, state, scalars):
        """A function of no arguments launching this optimizer's update of GPU variable ``var`` from gradient
        array ``grad``, its scalars read from ``scalars.array(name, dtype)``: the eager update's kernel, so to
        the same bits; None where this optimizer has none (then ``gg.function`` calls the step as it is)."""
        return None

    # --- slots ------------------------------------------------------------------------------
    @staticmethod
    def _zeros(var, fill=0.0):
        """A new array like ``var``'s, filled with ``fill``, on ``var``'s device."""
        dev = var._device
        if dev is CPU:
            return dev.xp.full(var._data.shape, fill, dtype=var._data.dtype)
        return dev.backend.asarray(dev.xp.full(var._data.shape, fill, dtype=var._data.dtype), None, dev.index)

    def get_slot(self, var: Variable, name: str) -> Tensor:
        """The optimizer's state array ``name`` for ``var`` (e.g. ``"velocity"``, ``"m"``), as a Tensor.

        Example:
            >>> import gpugrad as gg
            >>> w = gg.Variable([1.0])
            >>> opt = gg.optimizers.SGD(0.1, momentum=0.9)
            >>> opt.apply_gradients([(gg.tensor([1.0]), w)])
            >>> opt.get_slot(w, "velocity").numpy().tolist()
            [-0.10000000149011612]
        """
        entry = self._state.get(id(var))
        if entry is None or name not in entry[1]:
            have = sorted(entry[1]) if entry is not None else []
            raise KeyError(f"{self.name} has no slot {name!r} for this variable (it has {have})")
        return Tensor._wrap(entry[1][name], var._device)

    def variables(self) -> list[Variable]:
        """The variables this optimizer has updated, in the order it first saw them."""
        return [var for var, _ in self._state.values()]

    def __repr__(self) -> str:
        return f"{self.name}(learning_rate={self._learning_rate!r}, iterations={self.iterations})"

    # --- state: checkpoints, pickling and copying -------------------------------------------------
    def _export_slots(self):
        """``[(variable, {slot name: host NumPy array}), ...]`` in the order the variables were first seen."""
        return [(var, {name: var._device.backend.to_numpy(array) for name, array in slots.items()})
                for var, slots in self._state.values()]

    def _import_slots(self, entries):
        """Set the slots from ``[(variable, {name: host array}), ...]``, replacing the old ones.

        A slot the optimizer already holds for that variable, of the same shape
        and dtype, is written in place (a ``gg.function`` that bound it sees the
        new values); others are new arrays on the variable's device.
        """
        state = {}
        for var, slots in entries:
            old = self._state.get(id(var), (var, {}))[1]
            new = {}
            for name, host in slots.items():
                array = old.get(name)
                value = var._device.backend.asarray(host, None, var._device.index)
                if array is not None and array.shape == value.shape and array.dtype == value.dtype:
                    array[...] = value
                else:
                    array = value.copy() if value is host else value  # the optimizer owns its slots
                new[name] = array
            state[id(var)] = (var, new)
        self._state = state

    def __getstate__(self) -> dict[str, Any]:
        """``pickle`` and ``copy.deepcopy``: the hyperparameters, ``iterations``, the schedule and the slots.

        The slots travel as host arrays beside their variables; unpickled, each
        goes to its variable's device. Pickle the variables (or the model) and
        the optimizer together, ``pickle.dumps((model, opt))``, and the
        unpickled optimizer updates the unpickled variables: pickle keeps the
        identity of an object within one pickle.

        Example:
            >>> import pickle, gpugrad as gg
            >>> w = gg.Variable([1.0])
            >>> opt = gg.optimizers.SGD(0.1, momentum=0.9)
            >>> opt.apply_gradients([(gg.tensor([1.0]), w)])
            >>> w2, opt2 = pickle.loads(pickle.dumps((w, opt)))
            >>> opt2.iterations, opt2.variables()[0] is w2, opt2.get_slot(w2, "velocity").numpy().tolist()
            (1, True, [-0.10000000149011612])
        """
        state = self.__dict__.copy()
        state["_state"] = self._export_slots()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        entries = state.pop("_state")
        self.__dict__.update(state)
        self._state = {}
        self._import_slots(entries)
