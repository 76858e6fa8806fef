"""The 8×8 handwritten digits, embedded (no download), with a fixed train/test split."""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from ..tensor import Tensor

if TYPE_CHECKING:
    from .._typing import DeviceLike

_PATH = os.path.join(os.path.dirname(__file__), "digits.npz")
CLASSES = 10


@functools.lru_cache(maxsize=1)
def _arrays():
    with np.load(_PATH) as archive:
        return {key: archive[key] for key in archive.files}


def load_digits(split: str = "train", flatten: bool = True, dtype: Any = np.float32,
                device: DeviceLike = None) -> tuple[Tensor, Tensor]:
    """``(images, labels)`` of the digits ``split`` ("train", 1,438 images, or "test", 359).

    Images are scaled from 0..16 to [0, 1]; ``flatten=True`` gives shape
    ``(n, 64)``, else ``(n, 1, 8, 8)`` (NCHW, for a CNN). Labels are int64.

    Example:
        >>> images, labels = load_digits("train", flatten=False, device="cpu")
        >>> images.shape, float(images.numpy().max())
        ((1438, 1, 8, 8), 1.0)
    """
    if split not in ("train", "test"):
        raise ValueError(f"split is 'train' or 'test', not {split!r}")
    arrays = _arrays()
    images = arrays[f"{split}_images"].astype(dtype) / dtype(16)
    images = images.reshape(len(images), -1) if flatten else images[:, None, :, :]
    labels = arrays[f"{split}_labels"].astype(np.int64)
    return Tensor._adopt(images, device), Tensor._adopt(labels, device)  # both fresh: astype copied them


def batches(images: Tensor, labels: Tensor, batch_size: int, shuffle: bool = True, seed: Any = None,
            drop_last: bool = False) -> Iterator[tuple[Tensor, Tensor]]:
    """Yield ``(images, labels)`` mini-batches, reshuffled on each call when ``shuffle``.

    Batches stay on the tensors' device; the order comes from a NumPy
    generator seeded with ``seed``, so a seeded run sees the same batches.

    Example:
        >>> import gpugrad as gg
        >>> x, y = gg.data.load_digits("test", device="cpu")
        >>> [b[0].shape[0] for b in batches(x, y, 128, seed=0)]
        [128, 128, 103]
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    n = images.shape[0]
    if labels.shape[0] != n:
        raise ValueError(f"{n} images but {labels.shape[0]} labels")
    order = np.random.default_rng(seed).permutation(n) if shuffle else np.arange(n)
    xp = images._device.xp
    order = xp.asarray(order)
    stop = n - n % batch_size if drop_last else n
    for start in range(0, stop, batch_size):
        index = order[start:start + batch_size]
        yield (Tensor._wrap(images._data[index], images._device),
               Tensor._wrap(labels._data[index], labels._device))
