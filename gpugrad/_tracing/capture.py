"""Running a function once while capturing its array work as steps over buffers.

A :class:`Capture` runs the traced function in its thread. Every *root* (a function declared
through :mod:`.declare`: an op, a gradient rule, a variable update, ...) called from outside any
other root hands its call to the capture (:meth:`Capture.call_root`), which runs it as usual while
a collecting recording (one that follows every tensor) notes the ops it emits. When it returns it
becomes a step:

- folded: an op with no traced input, or one of ``ones_like``'s kind: its results are constants;
- kernel steps: an op whose every emitted op has a replay kernel (:mod:`.kernels`) and reads only
  buffers and constants: one prebound array call per emitted op, into its output array;
- a call step otherwise: the same function called again with the same arguments, its results
  (and every array its ops saved for their gradients) copied into the buffers it filled here.

A *buffer* is an array the trace made or was given: the function's tensor inputs (copies
the plan owns), every array a step produced. The trace's tensors keep wrapping their buffers,
so a call step replays with the very argument objects it was traced with, and a kernel step
is prebound to the very arrays. Variables are read and written where they live.

What a trace cannot follow is refused with the reason (:class:`Untraceable`, and then the
function runs eagerly): a root that raised (a caught error), a root run in another thread on
data the trace follows, what a root in another thread made from a Variable's values once it reaches
the trace, a host read in another thread of a Variable or of traced data (where the values go is out
of sight), a tensor made outside the roots that a later root reads. For the user's
own code it is raised as a TraceError naming the line: a traced tensor read on the host outside
an op. (The line is found by walking the stack, for the message only.)
"""
import os
import sys
import threading

import numpy as np

from .. import _nest as nest
from .._recorder import (ATTRS, INPUTS, OUTPUTS, TYPE, Op, collecting_recording, observing, pop_tape, push_tape,
                         recording_anywhere)
from ..errors import TraceError
from ..tensor import Tensor, Variable
from . import declare, kernels, state

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Untraceable(Exception):
    """The trace met work it cannot replay; the message says what and where."""


def user_line(depth=2):
    """``file:line`` of the innermost frame outside gpugrad (the user's line)."""
    frame = sys._getframe(depth)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame = frame.f_back
    if frame is None:
        return "an unknown line"
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def same_layout(a, xp):
    """An empty array of ``a``'s shape, dtype and strides (a NumPy view's too: a transpose, a slice); ``xp`` is
    ``a``'s array module."""
    if xp is not np or a.flags.c_contiguous or a.flags.f_contiguous:
        return xp.empty_like(a, order="K")
    lo = sum(min(0, (n - 1) * s) for n, s in zip(a.shape, a.strides))
    hi = sum(max(0, (n - 1) * s) for n, s in zip(a.shape, a.strides)) + a.itemsize
    raw = np.empty(hi - lo, np.uint8)
    return np.ndarray(a.shape, a.dtype, buffer=raw, offset=-lo, strides=a.strides)


def _argument_leaves(args, kwargs):
    """The leaves of a root's arguments, a gradient rule's ``op`` opened into what it holds."""
    if not (args or kwargs):
        return []
    leaves = []
    for x in nest.flatten([list(args), kwargs]):
        if isinstance(x, Op):
            leaves.extend(x.inputs)
            if isinstance(x.outputs, tuple):
                leaves.extend(x.outputs)
            for key, value in (x.attrs or {}).items():
                leaves.extend(a for _, a in _arrays_in(value, ()))
        else:
            leaves.append(x)
    return leaves


def _saved(record, path, a):
    """A saved-array entry ``(record, path, buffer, through_base)``: a read-only view (a broadcast made
    inside an op) is refilled through the array it views, which a replay's new view also views."""
    if _writable(a):
        return (record, path, a, False)
    root = _root_array(a)
    if root is a or not _writable(root):
        raise Untraceable(f"an op saves a read-only array of shape {a.shape} that a replay cannot refill")
    return (record, path, root, True)


def _writable_array(t):
    """Tensor ``t``'s array, replaced by a writable copy when it is read-only and views nothing (NumPy's 0-d
    results of a scalar): the buffer a replay refills."""
    a = t._data
    if isinstance(a, np.generic):  # a 0-d comparison's NumPy scalar
        a = t._data = np.array(a)
    elif not _writable(a) and _root_array(a) is a:
        a = t._data = a.copy()
    return a


def _writable(a):
    """Whether array ``a`` can be written element by element (not read-only, not a broadcast: CuPy's arrays
    have no writeable flag, and a broadcast's stride-0 elements share memory)."""
    return getattr(a.flags, "writeable", True) and (a.size <= 1 or 0 not in a.strides)


def _arrays_in(value, path):
    """``(path, array)`` for each array in attribute ``value`` (an array, or tuples and lists of them)."""
    if _is_array(value):
        yield path, value
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            yield from _arrays_in(item, path + (i,))


def _root_array(a):
    while getattr(a, "base", None) is not None and hasattr(a.base, "dtype"):
        a = a.base
    return a


def _is_array(x):
    """Whether ``x`` is a NumPy or CuPy array (not a NumPy scalar: an immutable value, as a Python number)."""
    return hasattr(x, "__array_priority__") and hasattr(x, "dtype") and hasattr(x, "shape") \
        and not isinstance(x, (Tensor, np.generic))


def _numpy_line():
    """``file:line`` of the innermost frame outside gpugrad and NumPy (the user's line)."""
    frame = sys._getframe(2)
    while frame is not None and (os.path.abspath(frame.f_code.co_filename).startswith((_PACKAGE, _NUMPY))):
        frame = frame.f_back
    return "an unknown line" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


_NUMPY = os.path.dirname(os.path.abspath(np.__file__))


def _check_numpy_use(what):
    """TraceError when the calling thread's trace runs NumPy on a NumPy argument outside gpugrad's ops."""
    capture = state.current()
    if capture is not None and capture._root is None:
        raise TraceError(
            f"{what} of a NumPy argument inside a gg.function at {_numpy_line()}: a replay feeds each call's "
            f"array by value into the trace, and NumPy work on it outside gpugrad's ops runs at the trace only. "
            f"Compute with gpugrad ops (they take NumPy arrays), do it before the call and pass the result, "
            f"or run this function eagerly")


class TracedArray(np.ndarray):
    """A NumPy argument as the traced function sees it: the plan's input buffer, refilled with each call's
    array. Views of it (slices, reshapes, ``.T``) follow the buffer; NumPy computation or a host read of it
    outside gpugrad's ops (``np.mean(a)``, ``a * 2``, ``a[0]``, ``float(a)``) raises TraceError, as a traced
    tensor's host read does, since a replay does not run that code again."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        _check_numpy_use(f"np.{ufunc.__name__}")
        inputs = tuple(x.view(np.ndarray) if isinstance(x, TracedArray) else x for x in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(x.view(np.ndarray) if isinstance(x, TracedArray) else x for x in kwargs["out"])
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        _check_numpy_use(f"np.{func.__name__}")
        return func(*_plain(args), **{k: _plain(v) for k, v in kwargs.items()})

    def __getitem__(self, key):
        out = super().__getitem__(key)
        if not isinstance(out, np.ndarray):
            _check_numpy_use("reading an element")
        return out

    def __setitem__(self, key, value):
        _check_numpy_use("writing into an element")
        super().__setitem__(key, value)


def _plain(x):
    """``x`` with every :class:`TracedArray` in it (in lists and tuples too) viewed as a plain ndarray."""
    if isinstance(x, TracedArray):
        return x.view(np.ndarray)
    if isinstance(x, (list, tuple)):
        return type(x)(_plain(item) for item in x)
    return x


def _guarded(name):
    method = getattr(np.ndarray, name)

    def read(self, *args, **kwargs):
        _check_numpy_use(f".{name}()" if not name.startswith("__") else name.strip("_"))
        return method(self.view(np.ndarray), *args, **kwargs)
    read.__name__ = name
    return read


for _name in ("item", "tolist", "tobytes", "copy", "astype", "fill", "__float__", "__int__", "__index__",
              "__complex__", "__bool__", "__iter__", "__repr__", "__str__", "__format__", "__reduce__"):
    setattr(TracedArray, _name, _guarded(_name))


class KernelStep:
    """One emitted op replayed by its kernel (:func:`.kernels.build`) from ``inputs`` into ``outputs``."""

    __slots__ = ("op_type", "inputs", "attrs", "outputs", "device", "fills")

    def __init__(self, op_type, inputs, attrs, outputs, device, fills=False):
        self.op_type, self.inputs, self.attrs, self.outputs, self.device = op_type, inputs, attrs, outputs, device
        self.fills = fills  # whether it computes the arrays it saves in attrs (kernels.FILLS_ATTRS) too

    def build(self, moved=None):
        """The kernel's prebound call, with arrays moved by liveness (``moved``: id -> array) replaced."""
        inputs, outputs = self.inputs, self.outputs
        if moved:
            inputs, outputs = [moved.get(id(a), a) for a in inputs], [moved.get(id(a), a) for a in outputs]
        return kernels.build(self.op_type, inputs, self.attrs, outputs, self.device, self.fills)

    def rebinder(self, moved=None):
        """``rebind(sub)``: the kernel's prebound call (as :meth:`build` makes it) with the arrays of ``sub``
        (id(array) -> the array this call uses in its place) replaced, for a plan that binds a call's own
        arrays (:mod:`.binding`); None where the step cannot be rebound so."""
        inputs, outputs = self.inputs, self.outputs
        if moved:
            inputs, outputs = [moved.get(id(a), a) for a in inputs], [moved.get(id(a), a) for a in outputs]
        op_type, attrs, device, fills = self.op_type, self.attrs, self.device, self.fills

        def rebind(sub):
            return kernels.build(op_type, [sub.get(id(a), a) for a in inputs], attrs,
                                 [sub.get(id(a), a) for a in outputs], device, fills)
        return rebind


class CallStep:
    """A root called again: ``fn(*args, **kwargs)``; leaf ``i`` of its result copied into buffer ``b`` for
    each ``(i, b)`` of ``outputs``; ``(record, where, b)`` of ``saved``: the array its ``record``-th op
    saved (an output, an input made inside it, or an attribute) copied into ``b``."""

    __slots__ = ("fn", "args", "kwargs", "kind", "outputs", "saved", "op_types", "reads")

    def __init__(self, fn, args, kwargs, kind, outputs, saved, op_types, reads):
        self.fn, self.args, self.kwargs, self.kind = fn, args, kwargs, kind
        self.outputs, self.saved, self.op_types, self.reads = outputs, saved, op_types, reads

    @property
    def op_type(self):
        return getattr(self.fn, "__qualname__", repr(self.fn))


class Capture:
    """One trace: ``with capture: result = fn(*traced_args)``, then ``capture.steps`` and the buffers.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([1.0, 2.0])
        >>> capture = Capture()
        >>> x_traced = capture.input(x)
        >>> with capture:
        ...     y = gg.exp(x_traced) * 2.0
        >>> [type(s).__name__ for s in capture.steps]
        ['KernelStep', 'KernelStep']
    """

    def __init__(self, allow_new_variables=True):
        self.allow_new_variables = allow_new_variables
        self.steps = []
        self.inputs = []  # (buffer, device) per tensor input
        self.buffers = {}  # id(array) -> array, for every buffer
        self.tensors = {}  # id(tensor) -> tensor, for every traced tensor (kept alive)
        self.variables = {}  # id(variable) -> variable read or written
        self.var_arrays = {}  # id(array) -> variable, the live arrays of the variables seen
        self.viewed = set()  # ids of buffers that views made in the trace look into
        self.input_roots = set()  # ids of the memory under an input buffer laid out as a strided view (same_layout)
        self.births = {}  # id(array) -> why a root that reads it cannot replay (made outside the trace's roots)
        self.foreign = {}  # id(array) -> array: made in another thread from a Variable's values, while tracing
        self.keep = []  # arrays and tensors the ids above refer to
        self.refusal = None  # an Untraceable or TraceError to raise once the call returns
        self.modules = {}  # id(module) -> Module called while tracing (guarded by the replay)
        self._dynamic = None  # what declared an output shape from data inside the root now running
        self._host_read = False  # whether the root now running read a tensor on the host
        self.thread = threading.get_ident()
        self._root = None  # (function, arguments, keywords) of the root now running
        self._token = None

    # --- inputs and lookups ------------------------------------------------------
    def input(self, t):
        """A traced tensor for input tensor ``t``: a copy the plan owns and refills every call, laid out as
        ``t``'s array is (its strides: a reduction's order of additions follows the layout)."""
        buffer = same_layout(t._data, t._device.xp)
        buffer[...] = t._data
        traced = Tensor._wrap(buffer, t._device)
        self.inputs.append((buffer, t._device))
        self._add_buffer(buffer)
        self._add_tensor(traced)
        return traced

    def input_array(self, a, device):
        """A NumPy argument as the trace sees it: a :class:`TracedArray` over a buffer the plan owns and
        refills with each call's array (by value, as ``tf.function`` feeds a NumPy argument as a tensor)."""
        buffer = same_layout(a, device.xp)
        buffer[...] = a
        self.inputs.append((buffer, device))
        self._add_buffer(buffer)
        self.input_roots.add(id(_root_array(buffer)))  # its views (the TracedArray too) are known by their root
        return buffer.view(TracedArray)

    def _add_buffer(self, a):
        self.buffers[id(a)] = a
        self.keep.append(a)

    def _add_tensor(self, t):
        self.tensors[id(t)] = t

    def _note_variable(self, v):
        if id(v) not in self.variables:
            self.variables[id(v)] = v
            self.var_arrays[id(v._data)] = v

    def known_array(self, a):
        """Whether array ``a`` is a buffer or a variable's live array, or a view of one."""
        if id(a) in self.buffers or id(a) in self.var_arrays:
            return True
        root = _root_array(a)
        return id(root) in self.buffers or id(root) in self.var_arrays or id(root) in self.input_roots

    def is_traced(self, t):
        """Whether tensor ``t`` holds values that change from call to call (an input, a result, a variable)."""
        if isinstance(t, Variable):
            return True
        return id(t) in self.tensors or self.known_array(t._data)

    def check_host_read(self, t, what):
        if self._root is not None:  # an op reads a value on the host: only calling it again replays that
            self._host_read = True
            return
        if not self.is_traced(t):
            return
        raise TraceError(
            f"{what} of a traced tensor (shape {t.shape}, {t.dtype}) inside a gg.function at {user_line(3)}: its "
            f"value differs from call to call, and a trace runs the Python code once. Compute with gpugrad ops "
            f"instead (gg.where for an if, a mask instead of a loop), return the tensor and read it after the "
            f"call, or run this function eagerly")

    def note_dynamic_shape(self, what, deciders=()):
        """An op declared that its output's shape comes from the values of its input (:mod:`.state`);
        ``deciders`` (may be empty: then it does) hold those values. It replays only when every decider
        is a constant the root was given: one of its arguments, not traced (a value made inside the root
        may come from traced data)."""
        if self._root is None:
            self._refuse(Untraceable(f"{what} at {user_line(3)}: the output's shape depends on the data"))
            return
        if self._dynamic is not None:
            return
        if deciders:
            given = {id(x) for x in _argument_leaves(self._root[1], self._root[2])}
            if all(id(d) in given and not self._holds_traced(d) for d in deciders):
                return
        self._dynamic = f"{what} at {user_line(3)}"

    def _holds_traced(self, x):
        """Whether ``x`` (a tensor or an array) holds values that change from call to call."""
        if isinstance(x, Tensor):
            return self.is_traced(x)
        return isinstance(x, TracedArray) or (_is_array(x) and self.known_array(x))

    def note_host_read(self):
        """An op reads array values on the host (:func:`.state.reads_host_values`)."""
        if self._root is not None:
            self._host_read = True

    def note_module(self, module):
        """A Module is called while tracing: the replay guards its attributes (:mod:`.guards`)."""
        self.modules[id(module)] = module

    def check_new_variable(self):
        if self._root is None and not self.allow_new_variables:
            raise TraceError(
                f"a Variable created inside a gg.function on a later trace, at {user_line(3)}: a function may "
                f"create variables on its first trace only (as tf.function), since a replay does not run the "
                f"Python code that creates them. Create it outside the function, or on the first call only")

    def _traced_leaf(self, x):
        if isinstance(x, Tensor):
            if isinstance(x, Variable):
                self._note_variable(x)
                return True
            self._check_birth(x._data)
            return id(x) in self.tensors or self.known_array(x._data)
        if _is_array(x):
            self._check_birth(x)
            if self.known_array(x):
                return True
            if isinstance(x, TracedArray):
                raise TraceError(f"an array computed from a NumPy argument outside gpugrad's ops reaches an op at "
                                 f"{user_line(4)}: that computation ran at the trace only; compute it with "
                                 f"gpugrad ops, or before the call")
            return False
        return False

    def _check_birth(self, a):
        why = self.births.get(id(a))
        if why is not None:
            raise Untraceable(why)

    # --- the roots ------------------------------------------------------------------
    def __enter__(self):
        self._token = state.begin(self)
        recording_anywhere.append(None)  # so that every emit, in a root or not, tells the capture
        observing.append(None)
        return self

    def __exit__(self, exc_type, exc, tb):
        observing.pop()
        recording_anywhere.pop()
        state.end(self, self._token)
        if exc_type is None and self.refusal is not None:
            raise self.refusal
        return False

    def call_root(self, fn, kind, args, kwargs):
        """Run declared root ``fn`` (:mod:`.declare`) of ``kind`` as the function called it, and make its call
        a step: from outside any other root only; inside one, it is part of that root's work."""
        if self._root is not None:
            return fn(*args, **kwargs)
        name = getattr(fn, "__qualname__", repr(fn))
        if kind == declare.REFUSED:
            error = TraceError(f"{name} inside a gg.function at {user_line(3)} returns host data, which a trace "
                               f"would freeze at its first values; draw it outside the function and pass it in "
                               f"as an argument")
            self._refuse(error)
            raise error
        rec = collecting_recording()
        stack = push_tape(rec)
        self._dynamic, self._host_read = None, False
        self._root = (fn, args, kwargs)
        try:
            result = fn(*args, **kwargs)
        except BaseException:
            self._refuse(Untraceable(f"{name} raised inside the traced function at {user_line(3)}; a trace that "
                                     f"catches an op's error follows the data, not the code"))
            raise
        finally:
            self._root = None
            pop_tape(rec, stack)
        if self.refusal is None:
            try:
                self._make_step(fn, kind, args, kwargs, result, rec.ops)
            except (Untraceable, TraceError) as e:
                self._refuse(e)
        return result

    def note_foreign_call(self, fn, args, kwargs):
        """Root ``fn`` runs in a thread that does not trace: if it reads data this trace follows, its work is
        outside the capture, and this signature runs eagerly. True when it reads a Variable the trace has not
        read (yet), or what such a call made: its result (:meth:`note_foreign_result`) holds values of the
        call's time, which may reach the trace only as a constant."""
        if self.refusal is not None:
            return False
        derived = False
        for x in _argument_leaves(args, kwargs):
            if isinstance(x, Variable):
                seen = id(x) in self.variables
                derived = derived or not seen
            elif isinstance(x, Tensor):
                seen = self.is_traced(x)
                derived = derived or id(_root_array(x._data)) in self.foreign
            else:
                seen = _is_array(x) and self.known_array(x)
                derived = derived or (_is_array(x) and id(_root_array(x)) in self.foreign)
            if seen:
                self._refuse(Untraceable(
                    f"{getattr(fn, '__qualname__', fn)} ran in another thread on data the trace follows, at "
                    f"{user_line(4)}: a trace captures the tracing thread's work only; run the helper's ops in "
                    f"the traced function's thread, or run this function eagerly"))
                return False
        return derived

    def note_foreign_result(self, fn, result):
        """What root ``fn``, run in another thread on a Variable's values (:meth:`note_foreign_call`), returned:
        a root of this trace that reads it (or a view of it), or the function returning it, runs eagerly."""
        why = (f"{getattr(fn, '__qualname__', fn)} ran in another thread on a Variable at {user_line(4)}, and its "
               f"result reaches the traced function: a replay would hand on the values of the trace's time; run "
               f"the helper's ops in the traced function's thread, or run this function eagerly")
        for leaf in nest.flatten(result):
            if isinstance(leaf, Tensor) and not isinstance(leaf, Variable):
                a = leaf._data
                self.foreign[id(_root_array(a))] = _root_array(a)
                self.births[id(a)] = why
                self.keep.append(a)

    def note_foreign_host_read(self, t, what):
        """Tensor ``t`` read on the host in a thread that does not trace (:func:`.state.check_host_read`): when
        it holds values that change from call to call (a Variable's, this trace's, or made from a Variable in
        another thread), where they go is out of sight, maybe into this trace as a constant: this signature
        runs eagerly."""
        if self.refusal is not None:
            return
        if isinstance(t, Variable) or self.is_traced(t) or id(_root_array(t._data)) in self.foreign:
            self._refuse(Untraceable(
                f"{what} of {'a Variable' if isinstance(t, Variable) else 'values the trace follows'} in another "
                f"thread while tracing, at {user_line(4)}: its values may reach the traced function as constants "
                f"of the trace's time; read them in the traced function's thread, or run this function eagerly"))

    def note_emitted(self, op_type, inputs, outputs, attrs):
        """Op ``op_type`` emitted (:func:`.state.emitted`): inside a root it is that root's work; outside any,
        it was emitted by a function gpugrad does not know (a user's op written on ``emit``): a constant when it
        reads nothing traced, a kernel step when its replay is declared, else this signature runs eagerly."""
        if self._root is not None or self.refusal is not None:
            return
        try:
            if not any([self._traced_leaf(t) for t in inputs]):
                return
            rec = (op_type, tuple(inputs), tuple(outputs), attrs, None, None)
            if not self._kernel_steps([rec], list(outputs), list(inputs)):
                raise Untraceable(
                    f"op {op_type!r} at {user_line(5)} was emitted by a function gg.function does not know, and "
                    f"has no replay kernel for these inputs: declare that function "
                    f"(gpugrad._tracing.declare.root) so that a replay calls it again")
        except (Untraceable, TraceError) as e:
            self._refuse(e)

    def note_made(self, t, source):
        """Tensor ``t`` made from ``source`` outside the ops (:func:`.state.made_outside_ops`): it follows a
        buffer it wraps; when it copied traced data, an op that reads it cannot replay."""
        if self._root is not None or isinstance(t, Variable):
            return
        a = t._data
        if self.known_array(a):
            self._add_tensor(t)
            self.keep.append(t)
        elif self._holds_traced(source):
            self.births[id(a)] = f"an array made outside gpugrad's ops at {user_line(4)} is read by a later op"
            self.keep.append(a)

    def _refuse(self, error):
        if self.refusal is None:
            self.refusal = error

    # --- steps ---------------------------------------------------------------------
    def _make_step(self, fn, kind, args, kwargs, result, records):
        leaves = _argument_leaves(args, kwargs)
        traced = False
        for x in leaves:
            if self._traced_leaf(x):
                traced = True
        if kind == declare.SHAPE or (kind == declare.OP and not traced):
            return  # a constant
        if self._dynamic is not None:
            raise Untraceable(f"{self._dynamic} gives an output whose shape depends on the values of traced data, "
                              f"which a replay of the traced shape cannot follow")
        if kind == declare.OP and not self._host_read and self._kernel_steps(records, result, leaves):
            return
        self._call_step(fn, kind, args, kwargs, result, records)

    def _kernel_steps(self, records, result, arguments):
        """Kernel steps for ``records``; False (nothing added) when one cannot be replayed so.

        An op's inputs must be buffers, variables, the root's arguments (constants made before it)
        or outputs of its earlier ops: anything else was made inside the root, maybe from the data.
        """
        made = {id(x._data if isinstance(x, Tensor) else x): x for x in arguments
                if isinstance(x, Tensor) or _is_array(x)}
        made_by = {}  # id(array) -> index in planned of the record whose output it is
        planned = []
        for rec in records:
            op_type, inputs, outputs, attrs = rec[TYPE], rec[INPUTS], rec[OUTPUTS], rec[ATTRS]
            in_arrays = []
            for t in inputs:
                a = t._data
                if isinstance(t, Variable):
                    self._note_variable(t)
                elif not (id(a) in made or self.known_array(a) or id(t) in self.tensors or kernels.is_constant(a)):
                    return False
                in_arrays.append(a)
            fills = False
            for key, value in (attrs or {}).items():
                for _, a in _arrays_in(value, ()):
                    if id(a) in made or self.known_array(a):
                        continue
                    if key not in kernels.FILLS_ATTRS.get(op_type, ()):
                        return False  # an array the op saved for its gradient: only a call step refills it
                    fills = True
            out_arrays = [o._data for o in outputs]
            if all(self.known_array(a) or id(_root_array(a)) in made for a in out_arrays):
                for a in out_arrays:  # a view of a buffer: it follows the buffer by itself
                    self.viewed.add(id(_root_array(a)))
                planned.append(None)
            else:
                step = KernelStep(op_type, in_arrays, attrs, out_arrays, outputs[0]._device, fills)
                if step.build() is None:
                    return False
                for k in kernels.FILLS_INPUTS.get(op_type, ()):  # the op that made that input replays here
                    maker = made_by.get(id(in_arrays[k]))
                    if maker is None:
                        return False
                    planned[maker] = None
                planned.append(step)
            for a in out_arrays:
                made[id(a)] = a
                made_by[id(a)] = len(planned) - 1
        for leaf in nest.flatten(result):
            if isinstance(leaf, Tensor) and not (id(leaf._data) in made or id(leaf) in self.tensors
                                                 or isinstance(leaf, Variable) or self.known_array(leaf._data)):
                return False
        for rec, step in zip(records, planned):
            for o in rec[OUTPUTS]:
                self._add_buffer(o._data)
                self._add_tensor(o)
                self.keep.append(o)
            if step is not None and step.fills:
                for key in kernels.FILLS_ATTRS[rec[TYPE]]:
                    for _, a in _arrays_in(rec[ATTRS][key], ()):
                        if not self.known_array(a):
                            self._add_buffer(a)
            if step is not None:
                self.steps.append(step)
        for leaf in nest.flatten(result):
            if isinstance(leaf, Tensor) and not isinstance(leaf, Variable):
                self._add_tensor(leaf)
                self.keep.append(leaf)
        return True

    def _call_step(self, fn, kind, args, kwargs, result, records):
        outputs = []
        for i, leaf in enumerate(nest.flatten(result)):
            if not isinstance(leaf, Tensor) or isinstance(leaf, Variable):
                continue
            a = leaf._data
            if id(leaf) in self.tensors:
                if kind == declare.HOST:
                    raise Untraceable(f"{fn.__qualname__} returned a tensor it was given, which a replay cannot follow")
                continue  # an op that returns its input as it is, every time
            if self.known_array(a):
                if kind == declare.HOST:  # its result may be a view or a copy from call to call: a buffer of its own
                    a = leaf._data = a.copy()
                else:
                    self.viewed.add(id(_root_array(a)))
            a = _writable_array(leaf)
            entry = _saved(i, None, a)  # (i, None, buffer, through_base)
            outputs.append((i, entry[2], entry[3]))
            self._add_buffer(a)
            self._add_tensor(leaf)
            self.keep.append(leaf)
        saved = []
        for r, rec in enumerate(records):
            for j, o in enumerate(rec[OUTPUTS]):
                if id(o) not in self.tensors and not self.known_array(o._data):
                    saved.append(_saved(r, (OUTPUTS, j), _writable_array(o)))
                    self._add_buffer(o._data)
                    self._add_tensor(o)
                    self.keep.append(o)
            for j, t in enumerate(rec[INPUTS]):
                if isinstance(t, Variable):
                    self._note_variable(t)
                elif id(t) not in self.tensors and not self.known_array(t._data) and not kernels.is_constant(t._data):
                    saved.append(_saved(r, (INPUTS, j), _writable_array(t)))  # made inside this root, maybe from its inputs
                    self._add_buffer(t._data)
                    self._add_tensor(t)
                    self.keep.append(t)
            for key, value in (rec[ATTRS] or {}).items():
                for path, a in _arrays_in(value, (ATTRS, key)):
                    if not self.known_array(a):
                        saved.append(_saved(r, path, a))
                        self._add_buffer(a)
        op_types = tuple(rec[TYPE] for rec in records)
        reads = [x for x in _argument_leaves(args, kwargs) if isinstance(x, Tensor) or _is_array(x)]
        self.steps.append(CallStep(fn, tuple(args), dict(kwargs), kind, outputs, saved, op_types, reads))

    # --- the end ----------------------------------------------------------------------
    def output(self, leaf):
        """How the plan returns result leaf ``leaf``: ``("buffer", array, device)``, ``("value", leaf)``."""
        if isinstance(leaf, Tensor) and not isinstance(leaf, Variable):
            self._check_birth(leaf._data)
            if id(leaf) in self.tensors or self.known_array(leaf._data):
                return ("buffer", leaf._data, leaf._device)
        elif _is_array(leaf) and (isinstance(leaf, TracedArray) or self.known_array(leaf)):
            raise Untraceable("the function returns a NumPy argument or a view of it: a replay holds the trace's "
                              "buffer, not the caller's array")
        return ("value", leaf)
