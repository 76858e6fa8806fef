"""Recurrent layers with PyTorch's semantics: ``LSTMCell``, ``GRUCell`` (one step) and ``LSTM``, ``GRU``
(a sequence, one or more stacked layers, one or two directions; the LSTM with an optional projection).

Each layer holds PyTorch's parameters under PyTorch's names and shapes
(``torch.nn.LSTM``'s ``weight_ih_l0`` of shape (4 * hidden, input), ...), the
gates in PyTorch's order (i, f, g, o for the LSTM; r, z, n for the GRU), and
draws every weight and bias from U(-1/sqrt(hidden), 1/sqrt(hidden)) as PyTorch
does, so a PyTorch state dict copies in name by name (``bidirectional``'s
``*_reverse`` and ``proj_size``'s ``weight_hr_l{k}`` too). A sequence layer
projects the whole input with one matmul per layer, then runs a Python loop
over the time steps; under ``gg.function`` that loop traces once per sequence
length. The ops are gpugrad's differentiable ones (dense, split, sigmoid,
tanh, stack), so gradients and second derivatives need no rule of their own.

Example:
    >>> import gpugrad as gg
    >>> lstm = gg.nn.LSTM(3, 5, num_layers=2, batch_first=True, seed=0)
    >>> out, (h_n, c_n) = lstm(gg.ones((4, 7, 3)))
    >>> out.shape, h_n.shape, c_n.shape
    ((4, 7, 5), (2, 4, 5), (2, 4, 5))
    >>> both = gg.nn.LSTM(3, 5, bidirectional=True, proj_size=2, seed=0)
    >>> out, (h_n, c_n) = both(gg.ones((7, 4, 3)))
    >>> out.shape, h_n.shape, c_n.shape
    ((7, 4, 4), (2, 4, 2), (2, 4, 5))
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .. import ops
from ..errors import ShapeError
from ._common import child_seed, float_dtype, integer, make_variable, name_of, real
from .init import uniform
from .module import Module
from ..ops.base import unary

if TYPE_CHECKING:
    from .._typing import DeviceLike, DTypeLike, TensorLike
    from ..tensor import Tensor, Variable
    from .init import Seed

__all__ = ["LSTMCell", "GRUCell", "LSTM", "GRU"]

_GATES = {"LSTM": 4, "GRU": 3}


def _pytorch_uniform(hidden_size):
    """PyTorch's RNN initialiser: every weight and bias U(-k, k), k = 1 / sqrt(hidden_size)."""
    bound = 1.0 / math.sqrt(hidden_size)

    def init(shape, dtype=None, seed=None):
        return uniform(shape, -bound, bound, dtype, seed)
    return init


def _make_weights(owner, kind, input_size, hidden_size, bias, dtype, device, rng, name, suffix, proj_size=0):
    """Set ``weight_ih{suffix}``, ``weight_hh{suffix}``, the two biases and, with ``proj_size``,
    ``weight_hr{suffix}`` (proj_size, hidden) on ``owner``, in PyTorch's order."""
    rows = _GATES[kind] * hidden_size
    init = _pytorch_uniform(hidden_size)
    for weight, shape in (("weight_ih", (rows, input_size)), ("weight_hh", (rows, proj_size or hidden_size))):
        setattr(owner, weight + suffix, make_variable(init, shape, dtype, device, rng, name_of(name, weight + suffix)))
    for b in ("bias_ih", "bias_hh"):
        setattr(owner, b + suffix, make_variable(init, (rows,), dtype, device, rng, name_of(name, b + suffix))
                if bias else None)
    if proj_size:
        setattr(owner, "weight_hr" + suffix, make_variable(init, (proj_size, hidden_size), dtype, device, rng,
                                                           name_of(name, "weight_hr" + suffix)))


def _lstm_step(xw, h, c, w_hh_t):
    """One LSTM step from ``xw = x @ W_ih^T + b_ih + b_hh``; ``h``, ``c`` None stand for zeros.

    i, f, g, o = split(xw + h @ W_hh^T); c' = sig(f) * c + sig(i) * tanh(g); h' = sig(o) * tanh(c').
    """
    gates = xw if h is None else xw + ops.dense(h, w_hh_t)
    i, f, g, o = ops.split(gates, 4, axis=-1)
    c_new = ops.sigmoid(i) * ops.tanh(g)
    if c is not None:
        c_new = ops.sigmoid(f) * c + c_new
    return ops.sigmoid(o) * ops.tanh(c_new), c_new


def _gru_step(xw, h, w_hh_t, b_hh):
    """One GRU step from ``xw = x @ W_ih^T + b_ih``; ``h`` None stands for zeros (PyTorch's formula).

    r = sig(x_r + h_r), z = sig(x_z + h_z), n = tanh(x_n + r * h_n), h' = (1 - z) * n + z * h,
    where h_* = W_h* h + b_h* (r multiplies b_hn too).
    """
    hidden = xw.shape[-1] // 3
    x_rz, x_n = ops.split(xw, [2 * hidden, hidden], axis=-1)
    hw = b_hh if h is None else ops.dense(h, w_hh_t, b_hh)  # h = 0: W_hh h is zero, b_hh is left
    if hw is None:  # no h, no bias: r multiplies zero
        z = ops.sigmoid(ops.split(x_rz, 2, axis=-1)[1])
        n = ops.tanh(x_n)
    else:
        h_rz, h_n = ops.split(hw, [2 * hidden, hidden], axis=-1)
        r, z = ops.split(ops.sigmoid(x_rz + h_rz), 2, axis=-1)
        n = ops.tanh(x_n + r * h_n)
    return n - z * n if h is None else n + z * (h - n)  # (1 - z) * n + z * h


def _add_biases(b_ih, b_hh):
    if b_ih is None:
        return None
    return b_ih if b_hh is None else b_ih + b_hh


def _check_input(x, input_size, layer, ndims, like) -> Tensor:
    """``x`` as a Tensor of ``ndims`` (batched) or ``ndims - 1`` (unbatched) dimensions whose last is input_size."""
    x = unary(x, like)
    if x.ndim not in (ndims, ndims - 1) or x.shape[-1] != input_size:
        want = "(batch, input_size) or (input_size,)" if ndims == 2 else \
            "(seq_len, batch, input_size), (batch, seq_len, input_size) with batch_first, or (seq_len, input_size)"
        raise ShapeError(f"{layer}: input has shape {want} with input_size {input_size}, got {x.shape}")
    return x


def _check_state(state, shape, layer, what, like) -> Tensor | None:
    if state is None:
        return None
    state = unary(state, like)
    if tuple(state.shape) != tuple(shape):
        raise ShapeError(f"{layer}: {what} has shape {tuple(shape)} for this input, got {state.shape}")
    return state


class _Cell(Module):
    """What both cells share: their constructor (PyTorch's arguments, then gpugrad's dtype, device, seed,
    name); the class attribute ``kind`` selects the gates (four for "LSTM", three for "GRU")."""

    kind = "LSTM"
    weight_ih: Variable
    weight_hh: Variable
    bias_ih: Variable | None
    bias_hh: Variable | None

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, dtype: DTypeLike = None,
                 device: DeviceLike = None, seed: Seed = None, name: str | None = None) -> None:
        super().__init__()
        layer = f"{self.kind}Cell"
        self.input_size = integer(input_size, "input_size", layer, 1)
        self.hidden_size = integer(hidden_size, "hidden_size", layer, 1)
        self.bias = bool(bias)
        _make_weights(self, self.kind, self.input_size, self.hidden_size, self.bias,
                      float_dtype(dtype, layer), device, child_seed(seed), name, "")
        self.name = name

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


class LSTMCell(_Cell):
    """One LSTM step, ``torch.nn.LSTMCell``'s: ``(h', c') = cell(x, (h, c))``.

    ``x`` is (batch, input_size) or (input_size,); the state ``(h, c)`` has
    shape (batch, hidden_size) (or (hidden_size,)) and defaults to zeros.
    Gates in PyTorch's order i, f, g, o: ``gates = x @ W_ih^T + b_ih + h @
    W_hh^T + b_hh``, ``c' = sigmoid(f) * c + sigmoid(i) * tanh(g)``, ``h' =
    sigmoid(o) * tanh(c')``. Parameters ``weight_ih`` (4 * hidden, input),
    ``weight_hh`` (4 * hidden, hidden), ``bias_ih``, ``bias_hh`` (4 * hidden,),
    each drawn from U(-1/sqrt(hidden), 1/sqrt(hidden)) as PyTorch does.

    Example:
        >>> import gpugrad as gg
        >>> cell = gg.nn.LSTMCell(3, 4, seed=0)
        >>> h, c = cell(gg.ones((2, 3)))
        >>> h, c = cell(gg.ones((2, 3)), (h, c))
        >>> h.shape, c.shape, cell.weight_ih.shape
        ((2, 4), (2, 4), (16, 3))
    """

    kind = "LSTM"

    def forward(self, x: TensorLike, state: tuple[TensorLike, TensorLike] | None = None) -> tuple[Tensor, Tensor]:
        x = _check_input(x, self.input_size, "LSTMCell", 2, self.weight_ih)
        h = c = None
        if state is not None:
            if not isinstance(state, (tuple, list)) or len(state) != 2:
                raise TypeError(f"LSTMCell: the state is a pair (h, c), not {type(state).__name__}")
            shape = tuple(x.shape[:-1]) + (self.hidden_size,)
            h = _check_state(state[0], shape, "LSTMCell", "h", x)
            c = _check_state(state[1], shape, "LSTMCell", "c", x)
        xw = ops.dense(x, ops.transpose(self.weight_ih), _add_biases(self.bias_ih, self.bias_hh))
        return _lstm_step(xw, h, c, None if h is None else ops.transpose(self.weight_hh))

    if TYPE_CHECKING:
        __call__ = forward


class GRUCell(_Cell):
    """One GRU step, ``torch.nn.GRUCell``'s: ``h' = cell(x, h)``.

    ``x`` is (batch, input_size) or (input_size,); ``h`` has shape (batch,
    hidden_size) (or (hidden_size,)) and defaults to zeros. Gates in
    PyTorch's order r, z, n with PyTorch's n gate: ``r = sigmoid(W_ir x + b_ir
    + W_hr h + b_hr)``, ``z`` alike, ``n = tanh(W_in x + b_in + r * (W_hn h +
    b_hn))``, ``h' = (1 - z) * n + z * h``. Parameters ``weight_ih`` (3 *
    hidden, input), ``weight_hh`` (3 * hidden, hidden), ``bias_ih``,
    ``bias_hh`` (3 * hidden,), each drawn from U(-1/sqrt(hidden),
    1/sqrt(hidden)).

    Example:
        >>> import gpugrad as gg
        >>> cell = gg.nn.GRUCell(3, 4, seed=0)
        >>> h = cell(gg.ones((2, 3)))
        >>> cell(gg.ones((2, 3)), h).shape, cell.weight_hh.shape
        ((2, 4), (12, 4))
    """

    kind = "GRU"

    def forward(self, x: TensorLike, h: TensorLike | None = None) -> Tensor:
        x = _check_input(x, self.input_size, "GRUCell", 2, self.weight_ih)
        h = _check_state(h, tuple(x.shape[:-1]) + (self.hidden_size,), "GRUCell", "h", x)
        xw = ops.dense(x, ops.transpose(self.weight_ih), self.bias_ih)
        return _gru_step(xw, h, None if h is None else ops.transpose(self.weight_hh), self.bias_hh)

    if TYPE_CHECKING:
        __call__ = forward


class _Recurrent(Module):
    """What both sequence layers share: their constructor (``torch.nn.LSTM``'s arguments in its order, then
    gpugrad's dtype, device, seed, name) and the run over layers and directions. The class attributes
    select the layer: ``kind`` (its gates, "LSTM" or "GRU") and ``_input_bias`` (which biases join the
    input's projection, once per sequence)."""

    kind = "LSTM"
    _input_bias = staticmethod(_add_biases)

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 dtype: DTypeLike = None, device: DeviceLike = None, seed: Seed = None,
                 name: str | None = None) -> None:
        super().__init__()
        layer = self.kind
        self.input_size = integer(input_size, "input_size", layer, 1)
        self.hidden_size = integer(hidden_size, "hidden_size", layer, 1)
        self.num_layers = integer(num_layers, "num_layers", layer, 1)
        self.bias = bool(bias)
        self.batch_first = bool(batch_first)
        self.dropout = real(dropout, "dropout", layer, 0.0, 1.0, high_open=True)
        self.bidirectional = bool(bidirectional)
        self.proj_size = integer(proj_size, "proj_size", layer, 0)
        if self.proj_size and layer != "LSTM":  # torch.nn.GRU refuses it alike
            raise ValueError(f"{layer}: proj_size is the LSTM's only (torch.nn.LSTM's), got {self.proj_size}")
        if self.proj_size >= self.hidden_size:
            raise ValueError(f"{layer}: proj_size must be smaller than hidden_size {self.hidden_size}, "
                             f"got {self.proj_size}")
        dtype = float_dtype(dtype, layer)
        rng = child_seed(seed)
        for k in range(self.num_layers):
            size = self.input_size if k == 0 else self._out_size * self._directions
            for suffix in self._suffixes:
                _make_weights(self, self.kind, size, self.hidden_size, self.bias, dtype, device, rng, name,
                              f"_l{k}{suffix}", self.proj_size)
        self.name = name

    @property
    def _directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def _suffixes(self) -> tuple[str, ...]:
        return ("", "_reverse") if self.bidirectional else ("",)

    @property
    def _out_size(self) -> int:
        """The size of h (and of each direction's output): proj_size when projected, else hidden_size."""
        return self.proj_size or self.hidden_size

    def _layer(self, k, suffix=""):
        names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")
        return tuple(getattr(self, f"{w}_l{k}{suffix}", None) for w in names)

    def _time_major(self, x) -> tuple[Tensor, bool]:
        """``(x as (seq_len, batch, input), batched)``."""
        x = _check_input(x, self.input_size, self.kind, 3, self._layer(0)[0])
        if x.shape[-2 if self.batch_first and x.ndim == 3 else 0] == 0:
            raise ShapeError(f"{self.kind}: the input sequence is empty (seq_len 0), shape {x.shape}")
        if x.ndim == 2:
            return ops.expand_dims(x, 1), False
        return (ops.swapaxes(x, 0, 1) if self.batch_first else x), True

    def _initial(self, state, batch, batched, what, size):
        """The initial state as a list of per-(layer, direction) (1, batch, size) tensors, or Nones for zeros."""
        count = self.num_layers * self._directions
        if state is None:
            return [None] * count
        shape = (count, batch, size) if batched else (count, size)
        state = _check_state(state, shape, self.kind, what, self._layer(0)[0])
        if not batched:
            state = ops.expand_dims(state, 1)
        return ops.split(state, count, axis=0)

    def _run(self, x, states, step):
        """Run every layer and direction over the sequence ``x`` (time-major);
        ``step(xw_t, state, w_hh_t, b_hh, w_hr_t) -> (h, state)``.

        Each layer projects the whole sequence at once and splits it into steps of shape (1, batch, gates):
        the step's tensors keep that leading 1, so the outputs concatenate back, and the gradient of the
        split is one concatenation (indexing ``xw[t]`` would scatter into zeros of the whole sequence at
        every step). The reverse direction runs the steps last to first; its outputs are put back in time
        order and concatenated after the forward direction's on the last axis (PyTorch's layout).
        """
        finals = []
        seq = x
        for k in range(self.num_layers):
            directions = []
            for suffix in self._suffixes:
                w_ih, w_hh, b_ih, b_hh, w_hr = self._layer(k, suffix)
                xw = ops.dense(seq, ops.transpose(w_ih), self._input_bias(b_ih, b_hh))
                w_hh_t = ops.transpose(w_hh)
                w_hr_t = None if w_hr is None else ops.transpose(w_hr)
                state = states[len(finals)]
                steps = ops.split(xw, x.shape[0], axis=0)
                outputs = []
                for xw_t in (reversed(steps) if suffix else steps):
                    h, state = step(xw_t, state, w_hh_t, b_hh, w_hr_t)
                    outputs.append(h)
                finals.append(state)
                directions.append(ops.concat(outputs[::-1] if suffix else outputs, axis=0))
            seq = directions[0] if len(directions) == 1 else ops.concat(directions, axis=-1)
            if self.dropout and self.training and k < self.num_layers - 1:  # PyTorch's: not after the last
                seq = ops.dropout(seq, self.dropout)  # masks from gpugrad's global generator (gg.random.seed)
        return seq, finals

    def _output(self, seq, batched):
        if not batched:
            return ops.squeeze(seq, 1)
        return ops.swapaxes(seq, 0, 1) if self.batch_first else seq

    def _final(self, tensors, batched):
        stacked = ops.concat(tensors, axis=0)  # each (1, batch, size): layer by layer, forward then reverse
        return stacked if batched else ops.squeeze(stacked, 1)

    def extra_repr(self) -> str:
        extra = "" if self.num_layers == 1 else f", num_layers={self.num_layers}"
        extra += "" if self.bias else ", bias=False"
        extra += ", batch_first=True" if self.batch_first else ""
        extra += f", dropout={self.dropout}" if self.dropout else ""
        extra += ", bidirectional=True" if self.bidirectional else ""
        extra += f", proj_size={self.proj_size}" if self.proj_size else ""
        return f"{self.input_size}, {self.hidden_size}{extra}"


def _lstm_layer_step(xw, hc, w_hh_t, b_hh, w_hr_t):
    """One step of an LSTM layer: the cell's, then h' = h' @ W_hr^T when projected (PyTorch's proj_size)."""
    h, c = _lstm_step(xw, hc[0], hc[1], w_hh_t)
    if w_hr_t is not None:
        h = ops.dense(h, w_hr_t)
    return h, (h, c)


def _gru_layer_step(xw, h, w_hh_t, b_hh, w_hr_t):
    h = _gru_step(xw, h, w_hh_t, b_hh)
    return h, h


class LSTM(_Recurrent):
    """A stack of ``num_layers`` LSTM layers over a sequence, ``torch.nn.LSTM``'s semantics.

    ``LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, proj_size=0, dtype=None, device=None, seed=None, name=None)``.
    ``out, (h_n, c_n) = lstm(x, (h_0, c_0))``: ``x`` is (seq_len, batch,
    input_size), or (batch, seq_len, input_size) with ``batch_first=True``
    (the default is PyTorch's, False), or unbatched (seq_len, input_size).
    ``out`` holds the last layer's h at every step, laid out as ``x``, of
    size D * H_out on its last axis (D = 2 with ``bidirectional``, the
    forward direction's h then the reverse direction's; H_out = proj_size if
    set, else hidden_size); ``h_0`` and ``h_n`` have shape (D * num_layers,
    batch, H_out), ``c_0`` and ``c_n`` (D * num_layers, batch, hidden_size),
    layer by layer, forward then reverse (no batch axis for an unbatched
    input); the initial state defaults to zeros. Each step is
    :class:`LSTMCell`'s (gates i, f, g, o), then with ``proj_size`` h is
    projected: ``h = W_hr (sigmoid(o) * tanh(c))``. Layer k's parameters are
    ``weight_ih_l{k}`` (4 * hidden, input_size for k = 0, else D * H_out),
    ``weight_hh_l{k}`` (4 * hidden, H_out), ``bias_ih_l{k}`` and
    ``bias_hh_l{k}`` (4 * hidden,), ``weight_hr_l{k}`` (proj_size, hidden)
    with ``proj_size``, the reverse direction's the same with ``_reverse``
    appended, in PyTorch's order and with its initialisation
    U(-1/sqrt(hidden), 1/sqrt(hidden)). ``dropout`` applies dropout to every
    layer's output but the last's while training, as PyTorch's.

    Example:
        >>> import gpugrad as gg
        >>> lstm = gg.nn.LSTM(2, 3, seed=0)
        >>> out, (h, c) = lstm(gg.ones((5, 4, 2)))  # (seq_len, batch, input)
        >>> out.shape, h.shape, bool((out[-1] == h[0]).numpy().all())
        ((5, 4, 3), (1, 4, 3), True)
    """

    kind = "LSTM"
    _input_bias = staticmethod(_add_biases)  # both biases add to the gates: once per sequence

    def forward(self, x: TensorLike, state: tuple[TensorLike, TensorLike] | None = None
                ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        x, batched = self._time_major(x)
        if state is None:
            hs = cs = self._initial(None, x.shape[1], batched, "h_0", self._out_size)
        else:
            if not isinstance(state, (tuple, list)) or len(state) != 2:
                raise TypeError(f"LSTM: the state is a pair (h_0, c_0), not {type(state).__name__}")
            hs = self._initial(state[0], x.shape[1], batched, "h_0", self._out_size)
            cs = self._initial(state[1], x.shape[1], batched, "c_0", self.hidden_size)
        seq, finals = self._run(x, list(zip(hs, cs)), _lstm_layer_step)
        return self._output(seq, batched), (self._final([h for h, _ in finals], batched),
                                            self._final([c for _, c in finals], batched))

    if TYPE_CHECKING:
        __call__ = forward


def _gru_input_bias(b_ih, b_hh):
    return b_ih  # b_hn sits inside r * (...): b_hh joins h @ W_hh^T at each step


class GRU(_Recurrent):
    """A stack of ``num_layers`` GRU layers over a sequence, ``torch.nn.GRU``'s semantics.

    ``GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, dtype=None, device=None, seed=None, name=None)``
    (``proj_size`` is the LSTM's only: ValueError, as PyTorch's).
    ``out, h_n = gru(x, h_0)``: shapes as :class:`LSTM`'s (``batch_first``
    defaults to False, as PyTorch's; ``out``'s last axis is D * hidden_size,
    the forward direction's then the reverse's), with one state ``h`` of
    shape (D * num_layers, batch, hidden_size), zeros by default. Each step
    is :class:`GRUCell`'s (gates r, z, n; ``n = tanh(W_in x + b_in + r *
    (W_hn h + b_hn))``). Parameters ``weight_ih_l{k}`` (3 * hidden, ...),
    ``weight_hh_l{k}`` (3 * hidden, hidden), ``bias_ih_l{k}``,
    ``bias_hh_l{k}`` (3 * hidden,), and with ``_reverse`` appended for the
    reverse direction: PyTorch's names, order and initialisation.

    Example:
        >>> import gpugrad as gg
        >>> gru = gg.nn.GRU(2, 3, num_layers=2, batch_first=True, bidirectional=True, seed=0)
        >>> out, h = gru(gg.ones((4, 5, 2)))  # (batch, seq_len, input)
        >>> out.shape, h.shape
        ((4, 5, 6), (4, 4, 3))
    """

    kind = "GRU"
    _input_bias = staticmethod(_gru_input_bias)

    def forward(self, x: TensorLike, h_0: TensorLike | None = None) -> tuple[Tensor, Tensor]:
        x, batched = self._time_major(x)
        hs = self._initial(h_0, x.shape[1], batched, "h_0", self.hidden_size)
        seq, finals = self._run(x, hs, _gru_layer_step)
        return self._output(seq, batched), self._final(finals, batched)

    if TYPE_CHECKING:
        __call__ = forward
