"""Exception classes raised by gpugrad.

Each subclasses the built-in exception a Python user would catch for the same
fault, so ``except ValueError`` keeps working.

Example:
    >>> import gpugrad as gg
    >>> try:
    ...     gg.tensor([1.0, 2.0]) + gg.tensor([1.0, 2.0, 3.0])
    ... except ValueError as e:
    ...     print(type(e).__name__)
    ShapeError

What raises what (each message names the op, the shapes, dtypes or devices, and what to do):

- ShapeError: shapes that do not broadcast (every binary op, ``where``, ``clip``),
  matmul/tensordot/einsum contractions, reshape sizes, concat/stack/split, axes out of
  range, ``output_gradients`` of the wrong shape.
- DTypeError: an integer *target* of ``tape.gradient``; ops that need one dtype
  (concat, stack, conv2d); float class labels; an optimizer given a gradient whose
  dtype is not its variable's. An integer *source* is not an error: its gradient is
  ``None``, as in TensorFlow. Elementwise ops on mixed float16/float32 (or float64)
  follow NumPy's promotion, and every gradient arrives in its own input's dtype (as in
  PyTorch: the sweep casts it once); bfloat16 promotes by ml_dtypes' rules, which NumPy
  applies (with float32: float32; with float16: float32). ``dtype="bfloat16"`` (or
  ``gg.bfloat16``) without the ``ml_dtypes`` package: the message names
  ``pip install 'gpugrad[bfloat16]'``. The ``gg.linalg`` decompositions (inv, solve, det,
  slogdet, cholesky, qr, eigh, eig, svd and what is built on them) refuse float16 and
  bfloat16, naming the op and the dtype, as NumPy's linalg and torch.linalg on the CPU do;
  every other op takes them, its reductions, softmax, norms, normalizations and losses
  accumulating in float32 and returning the input's dtype.
- IndexOutOfRangeError: indices, class labels and embedding ids outside their axis (on a GPU, for ones
  on the GPU, raised at the thread's next host read of a GPU tensor: gpugrad._device_checks).
- GradientError (a RuntimeError, as TensorFlow's for a used tape): a second ``.gradient``
  on a non-persistent tape, or entering it again; a Variable assigned after an op on a live
  tape read it (its version changed).
- GradientUsageError (a GradientError that is also a ValueError, TensorFlow's class for
  these): entering a tape that is already recording; a gradient rule, ``@custom_gradient``
  or ``record_operation`` that returns the wrong number of gradients, or one whose shape
  does not reduce to its input's.
- LookupGradientError (a GradientError and a LookupError): an op type with no registered gradient.
- NotATensorError (a TypeError, and a ValueError as TensorFlow raises): ``tape.watch``,
  ``gradient`` or ``jacobian`` given something that is not a tensor.
- OutOfMemoryError: a GPU ran out of memory in an op (its name and the bytes asked).
- TraceError (a RuntimeError, as TensorFlow's tracing errors): what ``gg.function`` cannot trace, said at
  trace time with the line: a traced tensor read on the host (``.item()``, ``.numpy()``, ``bool(t)``,
  ``if t > 0:``), a variable created on a second trace, a random draw that returns host data.
- LinAlgError (a ValueError, as ``numpy.linalg.LinAlgError``): a ``gg.linalg`` op given a singular
  or non-positive-definite matrix, or one whose decomposition does not converge.
- CheckpointError (a ValueError and an OSError): ``gg.load`` of a path that is missing, a directory,
  empty, truncated or corrupted, or a file of another kind (a ``.npy``, a pickle, text, a zip of
  other things); its subclass ``gg.serialization.CheckpointKeyError`` (also a KeyError) for a
  checkpoint whose keys do not match the variables it is loaded into.
"""


class GpugradError(Exception):
    """Base class of every gpugrad error."""


class ShapeError(GpugradError, ValueError):
    """Shapes that cannot be combined (broadcast, matmul, reshape, concat)."""


class DTypeError(GpugradError, TypeError):
    """A dtype an op cannot take, such as an integer source of a gradient."""


class DeviceError(GpugradError, ValueError):
    """An unknown device string, or tensors on two devices in one op."""


class DeviceUnavailableError(GpugradError, RuntimeError):
    """A device that is named correctly but cannot be used on this machine."""


class GradientError(GpugradError, RuntimeError):
    """A gradient that cannot be computed: no rule, a used tape, a bad rule result."""


class GradientUsageError(GradientError, ValueError):
    """The gradient machinery used wrongly where TensorFlow raises ValueError: a tape entered
    while it records; a rule, ``@custom_gradient`` or ``backward_fn`` that returns the wrong
    number of gradients, or one of a shape that does not reduce to its input's."""


class NotATensorError(GpugradError, TypeError, ValueError):
    """A tape given something other than a tensor to watch, differentiate or differentiate by:
    a TypeError (Python's class for an argument of the wrong type) and a ValueError
    (TensorFlow's, for ``tape.watch(1)``), so code written for either catches it."""


class LookupGradientError(GradientError, LookupError):
    """An op type with no registered gradient."""


class IndexOutOfRangeError(GpugradError, IndexError):
    """An index past the end of the axis it indexes (getitem, take, gather)."""


class AnomalyError(GpugradError, FloatingPointError):
    """A NaN or Inf that ``gg.detect_anomaly()`` caught in an op's output or gradient."""


class OutOfMemoryError(GpugradError, MemoryError):
    """A device that ran out of memory in an op; the message names the op and the bytes it asked for."""



class LinAlgError(GpugradError, ValueError):
    """A ``gg.linalg`` op that failed on its input's values: a singular matrix (``inv``, ``solve``),
    one that is not positive definite (``cholesky``), or a decomposition that did not converge.
    The message names the op and the input's shape. A ValueError, as ``numpy.linalg.LinAlgError``
    is, so code written for NumPy's class catches it by that base."""


class TraceError(GpugradError, RuntimeError):
    """What ``gg.function`` cannot trace: a traced tensor's value read on the host inside the
    function (``.item()``, ``.numpy()``, ``bool(t)``, data-dependent ``if``/``while``), a variable
    created on a second trace; the message names the line. Raised when tracing, not when replaying."""


class CheckpointError(GpugradError, ValueError, OSError):
    """A checkpoint ``gg.load`` cannot read: a missing path, a directory, an empty, truncated or
    corrupted file, or a file that is not a gpugrad checkpoint (a ``.npy``, a pickle, a text file, a
    zip of other things). The message names the path and the problem. A ValueError (bad contents)
    and an OSError (what ``open`` raises for a missing path or a directory), so code that caught
    either before keeps working."""
