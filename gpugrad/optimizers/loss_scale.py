"""``LossScaleOptimizer``: dynamic loss scaling for float16 training, as TensorFlow's.

The loss is multiplied by the loss scale before the backward sweep (so small float16 gradients do
not flush to zero) and the gradients divided by it after. The scale moves as in
``tf.keras.mixed_precision.LossScaleOptimizer`` (``_DynamicLossScaleState.update`` and
``apply_gradients`` in tensorflow/python/keras/mixed_precision/loss_scale_optimizer.py, Keras 2):

- every gradient finite: ``counter + 1 >= growth_interval`` doubles the scale (kept only when the
  doubled scale is finite) and sets ``counter = 0``; else ``counter += 1``. The update is applied.
- any gradient inf or NaN: the update is skipped, ``scale = max(scale / 2, 1)``, ``counter = 0``.

A skipped step is no step of the wrapped optimizer: its ``iterations``, which Adam's bias correction
and the learning-rate schedule read, counts applied updates only (Keras 3's ``LossScaleOptimizer``,
whose skip branch touches only the scale and counter; PyTorch's ``GradScaler.step`` does not call
``optimizer.step()``). So a run with a skipped step ends where the same run without that step does.
The ``LossScaleOptimizer``'s own ``iterations`` counts every step, applied or skipped (what TF 2's
counted, and what the training loop and :attr:`history` number steps by).

The finiteness check is one reduction over all the unscaled gradients: they are written into one
flat buffer per dtype and device (the unscaling pass itself) and summed once in float64, which is
finite exactly when every gradient is (float32 values cannot overflow a float64 sum).

Example:
    >>> import gpugrad as gg
    >>> w = gg.Variable([1.0, 2.0])
    >>> opt = gg.optimizers.LossScaleOptimizer(gg.optimizers.SGD(0.5), initial_scale=8.0, growth_interval=2)
    >>> _ = opt.minimize(lambda: gg.sum(w * w))
    >>> w.numpy().tolist(), opt.loss_scale, opt.counter
    ([0.0, 0.0], 8.0, 1)
    >>> opt.apply_gradients([(gg.tensor([float("inf"), 0.0]), w)])  # skipped: the scale halves
    >>> w.numpy().tolist(), opt.loss_scale, opt.counter, opt.iterations, opt.optimizer.iterations
    ([0.0, 0.0], 4.0, 0, 2, 1)
"""
import math

import numpy as np

from ..tensor import Tensor, Variable
from .optimizer import Optimizer
from .._tracing import declare

__all__ = ["LossScaleOptimizer"]


class LossScaleOptimizer(Optimizer):
    """``optimizer`` with dynamic loss scaling (TF's ``LossScaleOptimizer``; PyTorch's ``GradScaler``).

    Args:
        optimizer: the optimizer that applies the unscaled gradients (its hyperparameters and slots
            are this optimizer's; its ``iterations`` counts the updates applied, skipped steps left out).
        initial_scale: the first loss scale (TF's default, 2**15).
        growth_interval: the finite steps in a row after which the scale doubles (TF's
            ``dynamic_growth_steps``, 2000).

    ``minimize`` scales the loss, unscales the gradients and applies them; with a tape of your own,
    ``get_scaled_loss`` and ``get_unscaled_gradients`` do the two halves and ``apply_gradients``
    the rest. ``history`` lists the scale's moves: ``(iteration, "skip" | "growth", new scale)``.
    """

    def __init__(self, optimizer, initial_scale=2.0 ** 15, growth_interval=2000, name=None):
        if not isinstance(optimizer, Optimizer) or isinstance(optimizer, LossScaleOptimizer):
            raise TypeError(f"LossScaleOptimizer wraps a gg.optimizers optimizer, not {type(optimizer).__name__}")
        scale = float(initial_scale)
        if not math.isfinite(scale) or scale < 1:
            raise ValueError(f"initial_scale must be a finite number >= 1, got {initial_scale!r}")
        if isinstance(growth_interval, bool) or int(growth_interval) != growth_interval or growth_interval < 1:
            raise ValueError(f"growth_interval must be an int >= 1, got {growth_interval!r}")
        # no Optimizer.__init__: the hyperparameters, slots and step count are the wrapped optimizer's
        self.optimizer = optimizer
        self.name = name or "LossScaleOptimizer"
        self.initial_scale = scale
        self.growth_interval = int(growth_interval)
        self.loss_scale = scale  # the current scale (a Python float; the truth)
        self.counter = 0  # finite steps since the scale last moved
        self.history = []  # (iteration, "skip" | "growth", new scale)
        self._steps = 0  # every step, applied or skipped (the wrapped optimizer counts the applied ones)
        self._scale_vars = {}  # device -> 0-d float32 Variable holding loss_scale (what a trace reads)

    # --- delegated to the wrapped optimizer -------------------------------------------------
    @property
    def iterations(self):
        """Every step taken, applied or skipped; ``optimizer.iterations`` counts the applied ones.

        Example:
            >>> import gpugrad as gg
            >>> w = gg.Variable([1.0])
            >>> opt = gg.optimizers.LossScaleOptimizer(gg.optimizers.Adam(0.1))
            >>> opt.apply_gradients([(gg.tensor([float("nan")]), w)])  # skipped
            >>> opt.iterations, opt.optimizer.iterations, w.numpy().tolist()
            (1, 0, [1.0])
        """
        return self._steps

    @iterations.setter
    def iterations(self, value):
        self._steps = int(value)

    @property
    def learning_rate(self):
        return self.optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        self.optimizer.learning_rate = value

    def current_learning_rate(self):
        return self.optimizer.current_learning_rate()

    def get_slot(self, var, name):
        return self.optimizer.get_slot(var, name)

    def variables(self):
        return self.optimizer.variables()

    def _export_slots(self):
        return self.optimizer._export_slots()

    def _import_slots(self, entries):
        self.optimizer._import_slots(entries)

    @property
    def inner_optimizer(self):
        """TensorFlow's name for the wrapped optimizer (``optimizer``)."""
        return self.optimizer

    @property
    def dynamic_growth_steps(self):
        """TensorFlow's name for ``growth_interval``.

        Example:
            >>> import gpugrad as gg
            >>> gg.optimizers.LossScaleOptimizer(gg.optimizers.SGD(0.1), growth_interval=8).dynamic_growth_steps
            8
        """
        return self.growth_interval

    @property
    def dynamic_counter(self):
        """TensorFlow's name for ``counter``: the finite steps since the scale last moved."""
        return self.counter

    @property
    def skipped_steps(self):
        """How many updates were skipped for a non-finite gradient."""
        return sum(1 for _, kind, _ in self.history if kind == "skip")

    @property
    def growths(self):
        """How many times the scale doubled."""
        return sum(1 for _, kind, _ in self.history if kind == "growth")

    def report(self):
        """The scale's record as a JSON-ready dict: the scale now, skips, growths and the moves.

        Example:
            >>> import gpugrad as gg
            >>> gg.optimizers.LossScaleOptimizer(gg.optimizers.SGD(0.1), initial_scale=4.0).report()
            {'scale': 4.0, 'skips': 0, 'growths': 0, 'history': []}
        """
        return {"scale": self.loss_scale, "skips": self.skipped_steps, "growths": self.growths,
                "history": [list(h) for h in self.history]}

    # --- scaling ----------------------------------------------------------------------------
    def _scale_tensor(self, device):
        var = self._scale_vars.get(device)
        if var is None:
            var = self._scale_vars[device] = Variable(np.float32(self.loss_scale), device=device, trainable=False)
        return var

    def get_scaled_loss(self, loss):
        """``loss * loss_scale`` (a recorded op: differentiate it under the tape).

        Example:
            >>> import gpugrad as gg
            >>> opt = gg.optimizers.LossScaleOptimizer(gg.optimizers.SGD(0.1), initial_scale=4.0)
            >>> opt.get_scaled_loss(gg.tensor(1.5)).item()
            6.0
        """
        from ..ops.elementwise.arithmetic import multiply
        loss = loss if isinstance(loss, Tensor) else Tensor(loss)
        return multiply(loss, self._scale_tensor(loss._device))

    def get_unscaled_gradients(self, grads):
        """Each gradient divided by the loss scale (times its reciprocal, as TF); None stays None.

        Example:
            >>> import gpugrad as gg
            >>> opt = gg.optimizers.LossScaleOptimizer(gg.optimizers.SGD(0.1), initial_scale=4.0)
            >>> [g.item() for g in opt.get_unscaled_gradients([gg.tensor(6.0)])]
            [1.5]
        """
        inverse = np.float32(1.0 / self.loss_scale)
        return [None if g is None else Tensor._wrap(g._data * inverse.astype(g._data.dtype), g._device)
                for g in grads]

    def minimize(self, loss_fn, var_list=None):
        """Scale ``loss_fn()``, compute the gradients, unscale and apply them (or skip); returns the
        unscaled loss."""
        losses = []

        def scaled():
            loss = loss_fn()
            losses.append(loss)
            return self.get_scaled_loss(loss)
        _, grads_and_vars = self._loss_and_gradients(scaled, var_list)
        pairs = [(self._checked(g, v), v, False) for g, v in grads_and_vars if g is not None]
        if not pairs:
            raise ValueError(f"{self.name}: no gradient for any variable (every gradient is None)")
        self._apply_pairs(pairs, True)
        return losses[0]

    # --- the step: one host step that gg.function replays whole -----------------------------------
    @declare.root(declare.HOST, effects="updates the variables, the slots and the loss scale")
    def _apply_pairs(self, pairs, scaled=False):
        """Unscale (when ``scaled``), check every gradient in one reduction, then update the scale and
        apply or skip; the wrapped optimizer counts only an applied step, this one every step."""
        unscaled, finite = _unscaled_and_finite(pairs, 1.0 / self.loss_scale if scaled else None)
        self._steps += 1
        if finite:
            self.optimizer._apply_pairs(unscaled)
            if self.counter + 1 >= self.growth_interval:
                grown = self.loss_scale * 2.0
                if math.isfinite(grown):
                    self._set_scale(grown)
                    self.history.append((self.iterations, "growth", grown))
                self.counter = 0
            else:
                self.counter += 1
        else:
            self._set_scale(max(self.loss_scale / 2.0, 1.0))
            self.counter = 0
            self.history.append((self.iterations, "skip", self.loss_scale))

    def _set_scale(self, value):
        self.loss_scale = float(value)
        for var in self._scale_vars.values():
            var._data[...] = np.float32(value)  # in place: a trace reads the variable's array
            var._version += 1

    # --- state ------------------------------------------------------------------------------------
    def _extra_state(self):
        """What a checkpoint stores beside the wrapped optimizer's slots and step count (JSON)."""
        return {"loss_scale": self.loss_scale, "counter": self.counter, "growth_interval": self.growth_interval,
                "optimizer": type(self.optimizer).__name__, "history": [list(h) for h in self.history],
                "applied": self.optimizer.iterations}

    def _check_extra_state(self, state):
        """ValueError unless ``state`` (from :meth:`_extra_state`) fits this optimizer."""
        if not isinstance(state, dict) or not {"loss_scale", "counter", "optimizer"} <= set(state):
            raise ValueError("the loss scale's state is missing")
        if state["optimizer"] != type(self.optimizer).__name__:
            raise ValueError(f"it wraps a {state['optimizer']}, not a {type(self.optimizer).__name__}")
        if not (math.isfinite(float(state["loss_scale"])) and float(state["loss_scale"]) >= 1):
            raise ValueError(f"the loss scale {state['loss_scale']!r} is not a finite number >= 1")

    def _set_extra_state(self, state):
        self._set_scale(float(state["loss_scale"]))
        self.counter = int(state["counter"])
        self.history = [tuple(h) for h in state.get("history", [])]
        # a checkpoint without "applied" comes from when the wrapped optimizer counted every step
        self.optimizer.iterations = int(state.get("applied", self.iterations))

    def __getstate__(self):
        """``pickle`` and ``copy.deepcopy``: the wrapped optimizer (with its slots), the scale and counter.

        Example:
            >>> import copy, gpugrad as gg
            >>> opt = gg.optimizers.LossScaleOptimizer(gg.optimizers.Adam(0.1), initial_scale=8.0)
            >>> twin = copy.deepcopy(opt)
            >>> twin.loss_scale, twin.optimizer.name
            (8.0, 'Adam')
        """
        state = self.__dict__.copy()
        state["_scale_vars"] = {}  # remade on first use, on the copy's devices
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if "_steps" not in state:  # pickled when the wrapped optimizer counted every step
            self._steps = self.optimizer.iterations

    def __repr__(self):
        return (f"LossScaleOptimizer({self.optimizer!r}, loss_scale={self.loss_scale!r}, counter={self.counter}, "
                f"growth_interval={self.growth_interval})")


def _unscaled_and_finite(pairs, inverse):
    """``([(grad, var, free), ...], finite)``: the gradients times ``inverse`` (as they are when None), and
    whether all of them are finite, from one float64 sum per (device, dtype) group (one in practice).

    Unscaled, each gradient is a view of its group's flat buffer, which nothing else holds: the update
    may overwrite it (``free``).
    """
    groups = {}
    for k, (g, _, _) in enumerate(pairs):
        groups.setdefault((g._device, g._data.dtype), []).append(k)
    out = list(pairs)
    finite = True
    for (device, dtype), members in groups.items():
        xp = device.xp
        sizes = [pairs[k][0]._data.size for k in members]
        flat = xp.empty(sum(sizes), dtype=dtype)
        start = 0
        for k, size in zip(members, sizes):
            g, v, _ = pairs[k]
            piece = flat[start:start + size].reshape(g._data.shape)
            if inverse is None:
                piece[...] = g._data
            else:
                xp.multiply(g._data, dtype.type(inverse), out=piece)
            out[k] = (Tensor._wrap(piece, device), v, True)
            start += size
        # the one reduction, read on the host: a GPU step's one synchronisation. Whether the step applies
        # decides the wrapped optimizer's host state (its step count, which Adam's bias correction reads, the
        # scale's history), so it is known on the host, as torch.amp's GradScaler reads found_inf with .item()
        # before an ordinary optimizer's step; a device-side skip needs update kernels that take the flag
        # (torch's fused optimizers' found_inf)
        total = float(xp.sum(flat, dtype=np.float64))
        finite = finite and math.isfinite(total)
    return out, finite
