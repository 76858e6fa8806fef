"""GradientTape: record ops on watched tensors, then ask for gradients.

Recording happens in :mod:`gpugrad._recorder` (per thread); the backward sweep
in :mod:`gpugrad._sweep`. This module holds the tape's user-facing API: what
it watches, when it records, and what ``gradient`` hands the sweep. A
non-persistent tape records no more once ``gradient`` is called and lets the
sweep free its records as it goes; a persistent one keeps them, and, inside
its own ``with`` block, records the sweep itself (as TensorFlow does), so
``tape.gradient(tape.gradient(y, x), x)`` is a second derivative.
"""

from __future__ import annotations

import contextlib
from collections import namedtuple
from typing import TYPE_CHECKING, Any, Iterator, Mapping, overload

from . import _nest as nest
from ._sweep import backward, seed_gradients
from .errors import GradientError, GradientUsageError, NotATensorError
from .ops import zeros_like
from ._recorder import Recording, pop_tape, push_tape
from .tensor import Tensor

if TYPE_CHECKING:
    from .tensor import Variable

TapeView = namedtuple("TapeView", "records watched watch_accessed")  # see GradientTape._diagnostic_view


class GradientTape:
    """Records ops on watched tensors for reverse-mode differentiation.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor(3.0)
        >>> with gg.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = x * x
        >>> tape.gradient(y, x).item()
        6.0
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True) -> None:
        self._persistent = bool(persistent)
        self._rec = Recording(None, bool(watch_accessed_variables))  # the recorder appends to it
        self._recording = False
        self._tapes_joined = None  # the thread's stack this tape records in, while it does

    # what it recorded and follows, for tests that look inside (None once a non-persistent tape is used)
    _ops = property(lambda self: self._rec.ops)
    _watched = property(lambda self: self._rec.watched)

    # --- recording ----------------------------------------------------------
    def __enter__(self) -> GradientTape:
        if self._recording:
            raise GradientUsageError("this GradientTape is already recording; tapes are entered once")
        if self._rec.ops is None:
            raise GradientError("this non-persistent GradientTape has been used; create a new one")
        self._start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop()

    def _stop(self):
        if self._recording:
            pop_tape(self._rec, self._tapes_joined)
            self._rec.tape = self._tapes_joined = None  # no cycle tape -> recording -> tape once stopped
            self._recording = False

    def _start(self):
        self._rec.tape = self
        self._tapes_joined = push_tape(self._rec)
        self._recording = True

    def watch(self, tensor: Any) -> None:
        """Follow ``tensor`` (or every tensor in a nested list/tuple/dict).

        Integer tensors cannot have gradients and are not followed.
        """
        if self._rec.ops is None:
            raise GradientError("this non-persistent GradientTape has been used; create a new one")
        for t in nest.flatten(tensor):
            if not isinstance(t, Tensor):
                raise NotATensorError(f"tape.watch() takes tensors or variables, not {type(t).__name__}")
            self._rec.watch(t)

    def watched_variables(self) -> tuple[Variable, ...]:
        """The variables this tape watches, in the order it first saw them (also after ``gradient()``)."""
        variables = self._rec.variables
        return tuple(variables.values()) if variables else ()

    @contextlib.contextmanager
    def stop_recording(self) -> Iterator[None]:
        """Ops inside this block are not recorded on this tape.

        Example:
            >>> import gpugrad as gg
            >>> x = gg.Variable(1.0)
            >>> with gg.GradientTape() as tape:
            ...     with tape.stop_recording():
            ...         y = x * 2
            >>> tape.gradient(y, x) is None
            True
        """
        if not self._recording:
            raise GradientError("stop_recording() is only valid while the tape is recording")
        self._stop()
        try:
            yield
        finally:
            self._start()

    def _diagnostic_view(self):
        """What ``gg.explain_gradient`` reads, read-only: the records, the ids followed (None once used).

        Example:
            >>> import gpugrad as gg
            >>> x = gg.tensor(2.0)
            >>> with gg.GradientTape() as tape:
            ...     tape.watch(x)
            ...     y = x * x
            >>> view = tape._diagnostic_view()
            >>> [rec[0] for rec in view.records], id(x) in view.watched, view.watch_accessed
            (['Mul'], True, True)
        """
        r = self._rec
        if r.ops is None:
            return TapeView(None, None, r.watch_accessed)
        return TapeView(tuple(r.ops), r.watched.keys(), r.watch_accessed)

    def graph(self, target: Any = None, sources: Any = None) -> Any:
        """What this tape recorded as a graph (a :class:`gpugrad.visual.OpGraph`): one node per recorded op
        (its type and each output's shape, dtype and device), one per source, target and constant it reads,
        and edges for the data flow. Given ``target``, the ops the gradient of ``target`` passes on its way
        back to ``sources`` (default: every tensor and variable the tape watches; a dict names them, as
        ``dict(model.named_variables())`` does) are marked ``"path"`` and
        those where it stops (``stop_gradient``, an integer result, a value taken out through NumPy) ``"cut"``;
        see ``gpugrad.visual.from_tape``. ``str()`` lists the ops in order, ``.to_dot()`` gives Graphviz
        DOT text and ``.render("step.svg")`` draws it (the ``graph`` extra). Like torchviz's ``make_dot``
        and TensorBoard's graph of a ``tf.function``; it reads the records without consuming them, so ask
        before ``gradient()`` on a non-persistent tape. Building it costs nothing while the tape records.

        Example:
            >>> import gpugrad as gg
            >>> w = gg.Variable([1.0, 2.0], name="w")
            >>> with gg.GradientTape() as tape:
            ...     loss = gg.sum(w * w)
            >>> print(tape.graph(target=loss))
            tape graph: 2 ops, 1 source, 1 target; 2 ops on the gradient path, 0 cut
              t0     source w
              op0    Mul              (2,) float32 cpu  <- t0  [path]
              op1    Sum              () float32 cpu {axes=(0,)}  <- op0  [path]
              t1     target   <- op1
        """
        from .visual.from_tape import tape_graph
        r = self._rec
        if r.ops is None:
            raise GradientError("this non-persistent GradientTape has computed a gradient and released what it "
                                "recorded; call tape.graph() before tape.gradient(), or use "
                                "GradientTape(persistent=True)")
        targets = [] if target is None else nest.flatten(target)
        labels = None
        if sources is None:
            flat_sources = [t for key, t in r.watched.items() if key in r.roots]
        elif isinstance(sources, Mapping):  # named sources ({name: variable}, a model's named_variables())
            labels, flat_sources = list(sources), list(sources.values())
        else:
            flat_sources = nest.flatten(sources)
        for t in targets + flat_sources:
            if not isinstance(t, Tensor):
                raise NotATensorError(f"tape.graph() takes tensors or variables, not {type(t).__name__}")
        return tape_graph(tuple(r.ops), r.watched.keys(), flat_sources, targets, labels=labels)

    def reset(self) -> None:
        """Forget everything recorded so far; the tape keeps recording if it was."""
        self._rec.reset()

    # --- differentiation ---------------------------------------------------
    # The result has the structure of `sources`; an unconnected source's None is typed as a Tensor (check
    # `is None` where a source may be unconnected, or pass unconnected_gradients="zero").
    @overload
    def gradient(self, target: Any, sources: Tensor, output_gradients: Any = None,
                 unconnected_gradients: str = "none") -> Tensor: ...
    @overload
    def gradient(self, target: Any, sources: list[Tensor] | list[Variable], output_gradients: Any = None,
                 unconnected_gradients: str = "none") -> list[Tensor]: ...
    @overload
    def gradient(self, target: Any, sources: tuple[Tensor, ...], output_gradients: Any = None,
                 unconnected_gradients: str = "none") -> tuple[Tensor, ...]: ...
    @overload
    def gradient(self, target: Any, sources: Mapping[str, Tensor], output_gradients: Any = None,
                 unconnected_gradients: str = "none") -> dict[str, Tensor]: ...
    @overload
    def gradient(self, target: Any, sources: Any, output_gradients: Any = None,
                 unconnected_gradients: str = "none") -> Any: ...

    def gradient(self, target: Any, sources: Any, output_gradients: Any = None,
                 unconnected_gradients: str = "none") -> Any:
        """Gradients of ``target`` with respect to ``sources``.

        ``sources`` may be a tensor or a nested list/tuple/dict of them; the
        result has the same structure. A non-scalar target is differentiated as
        its sum (or weighted by ``output_gradients``). An unconnected source
        gets ``None``, or zeros with ``unconnected_gradients="zero"``;
        ``gg.explain_gradient(tape, target, source)`` says why a gradient is None or zero.

        Example:
            >>> import gpugrad as gg
            >>> w = gg.Variable([1.0, 2.0])
            >>> b = gg.Variable(0.5)
            >>> with gg.GradientTape() as tape:
            ...     loss = ((w * 3.0) + b).sum()
            >>> grads = tape.gradient(loss, {"w": w, "b": b})
            >>> grads["w"].numpy().tolist(), grads["b"].item()
            ([3.0, 3.0], 2.0)
        """
        return self._gradient(target, sources, output_gradients, unconnected_gradients)

    def _gradient(self, target, sources, output_gradients, unconnected_gradients, on_final=None):
        """:meth:`gradient`, telling ``on_final(source_id, gradient or None)`` of each source's gradient as
        soon as the sweep has finished it (gg.distributed starts reducing it then)."""
        if unconnected_gradients not in ("none", "zero"):
            raise ValueError(f"unconnected_gradients is 'none' or 'zero', not {unconnected_gradients!r}")
        self._check_unused("gradient")
        targets = nest.flatten(target)
        flat_sources = nest.flatten(sources)
        for s in flat_sources:
            if not isinstance(s, Tensor):
                raise NotATensorError(f"gradient() sources must be tensors or variables, not {type(s).__name__}")
        seeds = seed_gradients(targets, output_gradients)
        records, source_ids, reached, release = self._take_records(flat_sources)
        grads = backward(records, seeds, source_ids, release=release, reached=reached, on_final=on_final)
        results = []
        for s in flat_sources:
            g = grads.get(id(s))
            if g is None and unconnected_gradients == "zero":
                g = zeros_like(s)
            results.append(g)
        return nest.pack_like(sources, results)

    def jacobian(self, target: Any, sources: Any, unconnected_gradients: str = "none",
                 parallel_iterations: int | None = None, experimental_use_pfor: bool = True) -> Any:
        """``d target / d source`` of shape ``target.shape + source.shape``, per source.

        One backward sweep per target element (see :mod:`gpugrad.jacobians`);
        TensorFlow's ``parallel_iterations`` and ``experimental_use_pfor`` change nothing.
        """
        from .jacobians import jacobian
        return jacobian(self, target, sources, unconnected_gradients)

    def batch_jacobian(self, target: Any, source: Tensor, unconnected_gradients: str = "none",
                       parallel_iterations: int | None = None, experimental_use_pfor: bool = True) -> Tensor:
        """Per batch entry ``b``, ``d target[b] / d source[b]``; one sweep per element of an entry."""
        from .jacobians import batch_jacobian
        return batch_jacobian(self, target, source, unconnected_gradients)

    def _check_unused(self, what):
        if self._rec.ops is None:
            raise GradientError(
                "a non-persistent GradientTape can compute gradients only once and has released "
                f"what it recorded; use GradientTape(persistent=True) to call {what}() again")

    def _take_records(self, flat_sources):
        """What a sweep needs from this tape: ``(records, source ids, reached ids or None, release)``.

        The one place of the release protocol. A non-persistent tape stops
        recording (as in TensorFlow) and gives its records up, so the sweep
        frees them as it goes; a persistent one keeps them and, inside its own
        block, records the sweep. Every record descends from a root, so with
        every root a source every tensor is reached and the path search is
        skipped (``reached`` is then the ids the tape follows; else None).
        """
        r = self._rec
        source_ids = {id(s) for s in flat_sources if id(s) in r.watched}  # unwatched sources get None
        records = r.ops
        reached = r.watched if r.roots <= source_ids else None
        if self._persistent:
            if self._recording and reached is not None:
                reached = set(reached)  # this tape records the sweep: a snapshot of what it follows now
            return records, source_ids, reached, False
        self._stop()
        r.ops = r.watched = r.roots = None
        return records, source_ids, reached, True
