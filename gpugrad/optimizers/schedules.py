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

__all__ = ["LearningRateSchedule", "StepDecay", "ExponentialDecay", "CosineDecay"]


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
