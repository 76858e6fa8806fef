"""Neural-network building blocks: ``Module``, layers, ``Sequential``, initialisers, functional ops.

Layers hold their weights as Variables found by :class:`Module`; the ops they
call are those of :mod:`gpugrad.nn.functional` (also importable from here,
e.g. ``gg.nn.relu``).

Example:
    >>> import gpugrad as gg
    >>> model = gg.nn.Sequential(gg.nn.Dense(64, 32, activation="relu", seed=0), gg.nn.Dense(32, 10, seed=1))
    >>> logits = model(gg.ones((8, 64)))
    >>> logits.shape, len(model.trainable_variables)
    ((8, 10), 4)
"""
from . import functional, init
from .containers import Sequential
from .attention import MultiHeadAttention
from .conv import Conv2D
from .conv_layers import Conv1D, ConvTranspose1D, ConvTranspose2D
from .dropout import Dropout
from .embedding import Embedding
from .functional import *  # noqa: F401,F403
from .linear import Dense, Flatten
from .module import Module
from .normalization import BatchNorm, LayerNorm
from .pooling import AvgPool1D, AvgPool2D, MaxPool1D, MaxPool2D
from .recurrent import GRU, LSTM, GRUCell, LSTMCell
from .resizing import AdaptiveAvgPool2D, GroupNorm, Upsample
from .transformer import PositionalEmbedding, RMSNorm, SinusoidalPositionalEmbedding, TransformerBlock

__all__ = ["Module", "Sequential", "Dense", "Flatten", "Conv2D", "MaxPool2D", "AvgPool2D", "Dropout",
           "Embedding", "LayerNorm", "BatchNorm", "LSTMCell", "GRUCell", "LSTM", "GRU", "init", "functional",
           "MultiHeadAttention", "RMSNorm", "PositionalEmbedding", "SinusoidalPositionalEmbedding",
           "TransformerBlock", "Conv1D", "ConvTranspose2D", "ConvTranspose1D", "MaxPool1D", "AvgPool1D",
           "AdaptiveAvgPool2D", "Upsample", "GroupNorm"] + functional.__all__
