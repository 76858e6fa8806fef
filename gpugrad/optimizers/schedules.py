"""Learning-rate schedules: callables of the step, as Keras' ``LearningRateSchedule``.

An optimizer given a schedule calls it with its step count (0 for the first
update) before every update and uses the Python float it returns.

Example:
    >>> schedule = ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)
    >>> [round(schedule(step), 6) for step in (0, 10, 20)]
    [0.1, 0.05, 0.025]
"""
from __future__ import annotations

import math
from typing import Any

__all__ = ["LearningRateSchedule", "StepDecay", "ExponentialDecay", "CosineDecay", "LinearDecay", "Warmup", "OneCycle"]


def _positive_int(name, value):
    if int(value) != value or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _finite(name, value):
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return value


class LearningRateSchedule:
    """Base class: subclasses define ``__call__(step) -> float`` and ``get_config()``."""

    def __call__(self, step: int) -> float:
        raise NotImplementedError

    def get_config(self) -> dict[str, Any]:
        return {}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class StepDecay(LearningRateSchedule):
    """``initial_learning_rate * decay_rate ** (step // decay_steps)``: drop by a factor every ``decay_steps``.

    PyTorch's ``StepLR(step_size=decay_steps, gamma=decay_rate)``, counted in updates.

    Example:
        >>> schedule = StepDecay(1.0, decay_steps=100, decay_rate=0.1)
        >>> [schedule(s) for s in (0, 99, 100, 250)]
        [1.0, 1.0, 0.1, 0.010000000000000002]
    """

    def __init__(self, initial_learning_rate: float, decay_steps: int, decay_rate: float = 0.1) -> None:
        self.initial_learning_rate = _finite("initial_learning_rate", initial_learning_rate)
        self.decay_steps = _positive_int("decay_steps", decay_steps)
        self.decay_rate = _finite("decay_rate", decay_rate)

    def __call__(self, step: int) -> float:
        return self.initial_learning_rate * self.decay_rate ** (int(step) // self.decay_steps)

    def get_config(self) -> dict[str, Any]:
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "decay_rate": self.decay_rate}


class ExponentialDecay(LearningRateSchedule):
    """``initial_learning_rate * decay_rate ** (step / decay_steps)``, the exponent floored with ``staircase``.

    Keras' ``ExponentialDecay`` with the same arguments.

    Example:
        >>> smooth = ExponentialDecay(1.0, decay_steps=4, decay_rate=0.5)
        >>> stairs = ExponentialDecay(1.0, decay_steps=4, decay_rate=0.5, staircase=True)
        >>> smooth(2), stairs(2), stairs(4)
        (0.7071067811865476, 1.0, 0.5)
    """

    def __init__(self, initial_learning_rate: float, decay_steps: int, decay_rate: float,
                 staircase: bool = False) -> None:
        self.initial_learning_rate = _finite("initial_learning_rate", initial_learning_rate)
        self.decay_steps = _positive_int("decay_steps", decay_steps)
        self.decay_rate = _finite("decay_rate", decay_rate)
        self.staircase = bool(staircase)

    def __call__(self, step: int) -> float:
        exponent = step / self.decay_steps
        if self.staircase:
            exponent = math.floor(exponent)
        return self.initial_learning_rate * self.decay_rate ** exponent

    def get_config(self) -> dict[str, Any]:
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "decay_rate": self.decay_rate, "staircase": self.staircase}


class CosineDecay(LearningRateSchedule):
    """Cosine decay from ``initial_learning_rate`` to ``alpha`` times it over ``decay_steps``, after an
    optional linear warm-up; Keras' ``CosineDecay`` with the same arguments.

    Without warm-up, at step ``s`` (held at ``decay_steps`` afterwards):
    ``lr = initial * ((1 - alpha) * 0.5 * (1 + cos(pi s / decay_steps)) + alpha)``.
    With ``warmup_steps`` and ``warmup_target``, the rate rises linearly from
    ``initial_learning_rate`` to ``warmup_target`` over the first
    ``warmup_steps``, then decays from ``warmup_target`` as above.

    Example:
        >>> schedule = CosineDecay(1.0, decay_steps=10, alpha=0.1)
        >>> [round(schedule(s), 6) for s in (0, 5, 10, 20)]
        [1.0, 0.55, 0.1, 0.1]
        >>> warm = CosineDecay(0.0, decay_steps=10, warmup_target=1.0, warmup_steps=4)
        >>> [round(warm(s), 6) for s in (0, 2, 4, 9, 14)]
        [0.0, 0.5, 1.0, 0.5, 0.0]
    """

    def __init__(self, initial_learning_rate: float, decay_steps: int, alpha: float = 0.0,
                 warmup_target: float | None = None, warmup_steps: int = 0) -> None:
        self.initial_learning_rate = _finite("initial_learning_rate", initial_learning_rate)
        self.decay_steps = _positive_int("decay_steps", decay_steps)
        self.alpha = _finite("alpha", alpha)
        self.warmup_target = None if warmup_target is None else _finite("warmup_target", warmup_target)
        if int(warmup_steps) != warmup_steps or warmup_steps < 0:
            raise ValueError(f"warmup_steps must be a non-negative integer, got {warmup_steps!r}")
        self.warmup_steps = int(warmup_steps)

    def __call__(self, step: int) -> float:
        start = self.initial_learning_rate
        if self.warmup_target is not None and self.warmup_steps:
            if step < self.warmup_steps:
                return start + (self.warmup_target - start) * (step / self.warmup_steps)
            start, step = self.warmup_target, step - self.warmup_steps
        progress = min(step, self.decay_steps) / self.decay_steps
        cosine = 0.5 * (1.0 + math.cos(math.pi * progress))
        return start * ((1.0 - self.alpha) * cosine + self.alpha)

    def get_config(self) -> dict[str, Any]:
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "alpha": self.alpha, "warmup_target": self.warmup_target, "warmup_steps": self.warmup_steps}


class LinearDecay(LearningRateSchedule):
    """Linear decay from ``initial_learning_rate`` to ``end_learning_rate`` over ``decay_steps``, then held:
    Keras' ``PolynomialDecay(power=1.0)`` (PyTorch's ``LinearLR`` with factors of the two rates).

    ``lr = (initial - end) * (1 - min(step, decay_steps) / decay_steps) + end``.

    Example:
        >>> schedule = LinearDecay(1.0, decay_steps=4, end_learning_rate=0.2)
        >>> [round(schedule(s), 6) for s in (0, 2, 4, 9)]
        [1.0, 0.6, 0.2, 0.2]
    """

    def __init__(self, initial_learning_rate: float, decay_steps: int, end_learning_rate: float = 0.0) -> None:
        self.initial_learning_rate = _finite("initial_learning_rate", initial_learning_rate)
        self.decay_steps = _positive_int("decay_steps", decay_steps)
        self.end_learning_rate = _finite("end_learning_rate", end_learning_rate)

    def __call__(self, step: int) -> float:
        left = 1.0 - min(step, self.decay_steps) / self.decay_steps
        return (self.initial_learning_rate - self.end_learning_rate) * left + self.end_learning_rate

    def get_config(self) -> dict[str, Any]:
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "end_learning_rate": self.end_learning_rate}


class Warmup(LearningRateSchedule):
    """A linear warm-up from ``start_learning_rate`` to ``after``'s first rate over ``warmup_steps``, then
    ``after`` (a schedule or a constant rate) counted from the warm-up's end.

    The warm-up of Keras' ``CosineDecay(warmup_target=, warmup_steps=)`` put in front of any schedule (as
    Hugging Face's ``get_linear_schedule_with_warmup`` does with a linear decay):
    ``lr = start + (after(0) - start) * step / warmup_steps`` for ``step < warmup_steps``.

    Example:
        >>> schedule = Warmup(LinearDecay(1.0, decay_steps=4), warmup_steps=2)
        >>> [round(schedule(s), 6) for s in (0, 1, 2, 4, 6)]
        [0.0, 0.5, 1.0, 0.5, 0.0]
    """

    def __init__(self, after: LearningRateSchedule | float, warmup_steps: int,
                 start_learning_rate: float = 0.0) -> None:
        self.after = after if callable(after) else _finite("after", after)
        self.warmup_steps = _positive_int("warmup_steps", warmup_steps)
        self.start_learning_rate = _finite("start_learning_rate", start_learning_rate)

    def _after(self, step):
        return self.after(step) if callable(self.after) else self.after

    def __call__(self, step: int) -> float:
        if step < self.warmup_steps:
            target = self._after(0)
            return self.start_learning_rate + (target - self.start_learning_rate) * (step / self.warmup_steps)
        return self._after(step - self.warmup_steps)

    def get_config(self) -> dict[str, Any]:
        return {"after": self.after, "warmup_steps": self.warmup_steps,
                "start_learning_rate": self.start_learning_rate}


class OneCycle(LearningRateSchedule):
    """The one-cycle policy (Smith and Topin, 2018) as PyTorch's ``OneCycleLR`` (two phases), in updates.

    From ``max_learning_rate / div_factor`` up to ``max_learning_rate`` over the first
    ``pct_start * total_steps - 1`` steps, then down to ``initial / final_div_factor`` at step
    ``total_steps - 1``, each phase annealed by ``anneal_strategy`` ``"cos"`` (PyTorch's default)
    or ``"linear"``. Past ``total_steps - 1`` the final rate is held (PyTorch raises there).

    Example:
        >>> schedule = OneCycle(1.0, total_steps=10, pct_start=0.5, div_factor=10.0, final_div_factor=1.0,
        ...                     anneal_strategy="linear")
        >>> [round(schedule(s), 6) for s in (0, 2, 4, 9)]
        [0.1, 0.55, 1.0, 0.1]
    """

    def __init__(self, max_learning_rate: float, total_steps: int, pct_start: float = 0.3, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, anneal_strategy: str = "cos") -> None:
        self.max_learning_rate = _finite("max_learning_rate", max_learning_rate)
        self.total_steps = _positive_int("total_steps", total_steps)
        self.pct_start = _finite("pct_start", pct_start)
        if not 0.0 <= self.pct_start <= 1.0:
            raise ValueError(f"pct_start must be in [0, 1], got {pct_start!r}")
        self.div_factor = _finite("div_factor", div_factor)
        self.final_div_factor = _finite("final_div_factor", final_div_factor)
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy is 'cos' or 'linear', not {anneal_strategy!r}")
        self.anneal_strategy = anneal_strategy

    def _anneal(self, start, end, pct):
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1.0)
        return (end - start) * pct + start

    def __call__(self, step: int) -> float:
        initial = self.max_learning_rate / self.div_factor
        final = initial / self.final_div_factor
        up_end = float(self.pct_start * self.total_steps) - 1.0
        down_end = float(self.total_steps - 1)
        at = min(float(step), down_end)
        if at <= up_end:  # as PyTorch: each phase's fraction from the previous phase's end step
            return self._anneal(initial, self.max_learning_rate, at / up_end if up_end > 0 else 1.0)
        span = down_end - up_end
        return self._anneal(self.max_learning_rate, final, (at - up_end) / span if span > 0 else 1.0)

    def get_config(self) -> dict[str, Any]:
        return {"max_learning_rate": self.max_learning_rate, "total_steps": self.total_steps,
                "pct_start": self.pct_start, "div_factor": self.div_factor,
                "final_div_factor": self.final_div_factor, "anneal_strategy": self.anneal_strategy}
