"""Data sets shipped inside the package, and mini-batches of them on any device.

Example:
    >>> import gpugrad as gg
    >>> images, labels = gg.data.load_digits("test", device="cpu")
    >>> images.shape, labels.shape, labels.dtype
    ((359, 64), (359,), dtype('int64'))
"""
from .digits import batches, load_digits
from .shakespeare import CharVocabulary, load_shakespeare

__all__ = ["load_digits", "batches", "load_shakespeare", "CharVocabulary"]
