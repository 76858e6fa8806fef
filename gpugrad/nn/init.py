"""Weight initialisers: glorot (Xavier) and He (Kaiming), uniform and normal; zeros, ones; seeded.

Each takes a shape, a ``dtype`` (float32 unless said otherwise) and a
``seed``: an int, a :class:`gpugrad.random.Generator`, a
``numpy.random.Generator``, or ``None`` for gpugrad's global generator
(``gg.random.seed(n)``, or :func:`set_seed` here, makes it repeat from run to
run). Each returns a NumPy array drawn on the host, so a seed gives the same
weights on every device; layers copy it into a Variable on their device.

Fans: a 2-D shape is ``(in, out)`` as :class:`gpugrad.nn.Dense`'s kernel; a
shape of 3 or more dimensions is ``(out, in, *kernel)`` as
:class:`gpugrad.nn.Conv2D`'s OIHW filters, with fan_in ``in * prod(kernel)``
and fan_out ``out * prod(kernel)``; a 1-D shape has both fans equal to its
length.

Example:
    >>> w = glorot_uniform((64, 32), seed=0)
    >>> w.shape, w.dtype, bool(abs(w).max() <= (6 / (64 + 32)) ** 0.5)
    ((64, 32), dtype('float32'), True)
    >>> bool((glorot_uniform((3, 3), seed=7) == glorot_uniform((3, 3), seed=7)).all())
    True
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .. import random as _random
from ..backend import CPU

if TYPE_CHECKING:
    from typing import TypeAlias

    from .._typing import DTypeLike, Shape

    # What a ``seed`` argument takes (see the module docstring).
    Seed: TypeAlias = int | np.random.Generator | _random.Generator | None

__all__ = ["glorot_uniform", "glorot_normal", "he_uniform", "he_normal", "zeros", "ones", "uniform", "normal",
           "compute_fans", "set_seed", "generator"]


def set_seed(seed: int | None) -> None:
    """Reseed gpugrad's global generator (``gg.random.seed``), which initialisers use without a ``seed``.

    Example:
        >>> set_seed(3); a = he_normal((2, 2))
        >>> set_seed(3); b = he_normal((2, 2))
        >>> bool((a == b).all())
        True
    """
    _random.seed(seed)


def generator(seed: Seed = None) -> np.random.Generator | _random.Generator:
    """The generator ``seed`` names: ``None`` is gpugrad's global one, an int makes a new
    :class:`gpugrad.random.Generator`, a gpugrad or NumPy Generator is used as is.

    Example:
        >>> a, b = uniform((3,), seed=generator(5)), uniform((3,), seed=generator(5))
        >>> bool((a == b).all())
        True
    """
    if isinstance(seed, (np.random.Generator, _random.Generator)):
        return seed
    if seed is None or (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool)):
        return _random.as_generator(seed)
    raise TypeError(f"seed is an int, a gpugrad or numpy.random.Generator or None, not {seed!r}")


def _uniform01(gen, shape):
    """float64 uniforms on [0, 1), drawn on the host."""
    if isinstance(gen, np.random.Generator):
        return gen.random(shape)
    return gen.random_array(shape, np.float64, CPU)


def _standard_normal(gen, shape):
    """float64 standard normals, drawn on the host."""
    if isinstance(gen, np.random.Generator):
        return gen.standard_normal(shape)
    return gen.normal_array(shape, np.float64, CPU)


def _shape(shape: Shape) -> tuple[int, ...]:
    """``shape`` (an int or a sequence of ints) as a tuple; TypeError for a size that is not an int (2.5
    would otherwise be truncated to 2), ValueError for a negative one."""
    sizes = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) for s in sizes):
        raise TypeError(f"an initialiser's shape holds ints, got {shape!r}")
    if any(s < 0 for s in sizes):
        raise ValueError(f"an initialiser's shape has no negative sizes, got {shape}")
    return tuple(int(s) for s in sizes)


def compute_fans(shape: Shape) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight of ``shape`` (see the module docstring for the layouts).

    Example:
        >>> compute_fans((64, 10)), compute_fans((16, 3, 5, 5)), compute_fans((7,))
        ((64, 10), (75, 400), (7, 7))
    """
    shape = _shape(shape)
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def uniform(shape: Shape, minval: float = -0.05, maxval: float = 0.05, dtype: DTypeLike = None,
            seed: Seed = None) -> np.ndarray:
    """Uniform on ``[minval, maxval)``.

    Example:
        >>> bool((uniform((100,), 0.0, 1.0, seed=0) >= 0).all())
        True
    """
    u = _uniform01(generator(seed), _shape(shape))
    return (minval + (maxval - minval) * u).astype(dtype or np.float32)


def normal(shape: Shape, mean: float = 0.0, stddev: float = 1.0, dtype: DTypeLike = None,
           seed: Seed = None) -> np.ndarray:
    """Normal with ``mean`` and ``stddev``.

    Example:
        >>> normal((2, 3), seed=0).shape
        (2, 3)
    """
    z = _standard_normal(generator(seed), _shape(shape))
    return (mean + stddev * z).astype(dtype or np.float32)


def glorot_uniform(shape: Shape, dtype: DTypeLike = None, seed: Seed = None) -> np.ndarray:
    """Uniform on ``[-limit, limit)``, ``limit = sqrt(6 / (fan_in + fan_out))`` (Keras' default kernel init).

    Example:
        >>> w = glorot_uniform((300, 300), seed=1)
        >>> round(float(w.std()) * (600 / 2) ** 0.5, 1)  # variance 2 / (fan_in + fan_out)
        1.0
    """
    fan_in, fan_out = compute_fans(shape)
    limit = math.sqrt(6.0 / max(1, fan_in + fan_out))
    return uniform(shape, -limit, limit, dtype, seed)


def glorot_normal(shape: Shape, dtype: DTypeLike = None, seed: Seed = None) -> np.ndarray:
    """Normal with ``stddev = sqrt(2 / (fan_in + fan_out))`` (PyTorch's ``xavier_normal_``; not truncated).

    Example:
        >>> w = glorot_normal((300, 300), seed=1)
        >>> round(float(w.std()) * (600 / 2) ** 0.5, 1)
        1.0
    """
    fan_in, fan_out = compute_fans(shape)
    return normal(shape, 0.0, math.sqrt(2.0 / max(1, fan_in + fan_out)), dtype, seed)


def he_uniform(shape: Shape, dtype: DTypeLike = None, seed: Seed = None) -> np.ndarray:
    """Uniform on ``[-limit, limit)``, ``limit = sqrt(6 / fan_in)`` (for ReLU layers).

    Example:
        >>> w = he_uniform((400, 100), seed=2)
        >>> round(float(w.std()) * (400 / 2) ** 0.5, 1)  # variance 2 / fan_in
        1.0
    """
    fan_in, _ = compute_fans(shape)
    limit = math.sqrt(6.0 / max(1, fan_in))
    return uniform(shape, -limit, limit, dtype, seed)


def he_normal(shape: Shape, dtype: DTypeLike = None, seed: Seed = None) -> np.ndarray:
    """Normal with ``stddev = sqrt(2 / fan_in)`` (PyTorch's ``kaiming_normal_``; not truncated).

    Example:
        >>> w = he_normal((400, 100), seed=2)
        >>> round(float(w.std()) * (400 / 2) ** 0.5, 1)
        1.0
    """
    fan_in, _ = compute_fans(shape)
    return normal(shape, 0.0, math.sqrt(2.0 / max(1, fan_in)), dtype, seed)


def zeros(shape: Shape, dtype: DTypeLike = None, seed: Seed = None) -> np.ndarray:
    """Zeros (``seed`` is accepted and ignored, so every initialiser takes the same arguments).

    Example:
        >>> zeros((2,)).tolist()
        [0.0, 0.0]
    """
    return np.zeros(_shape(shape), dtype=dtype or np.float32)


def ones(shape: Shape, dtype: DTypeLike = None, seed: Seed = None) -> np.ndarray:
    """Ones (``seed`` is accepted and ignored).

    Example:
        >>> ones((2,)).tolist()
        [1.0, 1.0]
    """
    return np.ones(_shape(shape), dtype=dtype or np.float32)
