"""Tiny Shakespeare, embedded (no download): 1,115,394 characters of Shakespeare's plays, public domain."""

from __future__ import annotations

import functools
import gzip
import os

import numpy as np

_PATH = os.path.join(os.path.dirname(__file__), "tinyshakespeare.txt.gz")


@functools.lru_cache(maxsize=1)
def load_shakespeare() -> str:
    """The whole text (see ``gpugrad/data/README.md`` for its source and licence).

    Example:
        >>> text = load_shakespeare()
        >>> len(text), text[:14]
        (1115394, 'First Citizen:')
    """
    with gzip.open(_PATH, "rt", encoding="utf-8") as f:
        return f.read()


class CharVocabulary:
    """The characters of a text, each given an id in sorted order; ``encode`` and ``decode`` map between them.

    Example:
        >>> vocab = CharVocabulary("hello")
        >>> vocab.size, vocab.encode("hell").tolist(), vocab.decode([3, 2])
        (4, [1, 0, 2, 2], 'ol')
    """

    def __init__(self, text: str) -> None:
        self.chars = sorted(set(text))
        self.size = len(self.chars)
        self._index = {c: i for i, c in enumerate(self.chars)}

    def encode(self, text: str) -> np.ndarray:
        try:
            return np.fromiter((self._index[c] for c in text), dtype=np.int64, count=len(text))
        except KeyError as exc:
            raise ValueError(f"character {exc.args[0]!r} is not in the vocabulary") from None

    def decode(self, ids) -> str:
        return "".join(self.chars[int(i)] for i in ids)
