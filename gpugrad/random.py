"""Seeded random numbers on any device: ``gg.random``.

A :class:`Generator` draws arrays on the CPU with a NumPy generator and on a
GPU with a CuPy generator of that GPU, all derived from one seed, so a seeded
program draws the same numbers on every run (a GPU draws other numbers than
the CPU). Ops that draw (dropout) and initialisers use the global generator
unless given one; ``gg.random.seed(n)`` replaces it.

Example:
    >>> import gpugrad as gg
    >>> gg.random.seed(0)
    >>> a = gg.random.uniform((3,))
    >>> gg.random.seed(0)
    >>> bool((gg.random.uniform((3,)).numpy() == a.numpy()).all())
    True
    >>> g = gg.random.Generator(42)
    >>> g.normal((2, 2), std=0.1).shape
    (2, 2)
"""
import numpy as np

from .backend import CPU, get_device
from .tensor import Tensor
from . import _dtypes as _dt
from ._tracing import declare

__all__ = ['Generator', 'seed', 'default_generator', 'uniform', 'normal', 'integers', 'permutation',
           'as_generator', 'get_state', 'set_state']


def _float_dtype(dtype):
    dtype = _dt.resolve(np.float32 if dtype is None else dtype)
    if not _dt.floating(dtype):
        raise TypeError(f"random floats take a float dtype, not {dtype}")
    return dtype


class Generator:
    """A seeded source of random arrays on every device.

    ``seed`` is an int (the same numbers on every run) or None (fresh
    entropy). Each device gets its own stream, made on first use.

    Example:
        >>> import gpugrad as gg
        >>> a = gg.random.Generator(7).uniform((4,), low=-1.0, high=1.0)
        >>> b = gg.random.Generator(7).uniform((4,), low=-1.0, high=1.0)
        >>> a.numpy().tolist() == b.numpy().tolist()
        True
    """

    def __init__(self, seed=None):
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
            raise TypeError(f"a random seed is a non-negative int or None, not {seed!r}")
        self._sequence = np.random.SeedSequence(seed)
        self.seed = seed
        self._streams = {}  # Device -> NumPy Generator or CuPy RandomState

    def __repr__(self):
        return f"gg.random.Generator({self.seed!r})"

    # --- state: checkpoints and pickling ---------------------------------------------
    def get_state(self):
        """The generator's position as a dict of Python values (JSON-ready): its seed and its CPU stream.

        ``set_state`` of it, on this generator or another, makes the next draws
        repeat. A GPU stream's position cannot be read (CuPy's ``RandomState``
        exposes none): where one was made, this warns naming the device, and
        after ``set_state`` that stream starts again from the seed.

        Example:
            >>> import gpugrad as gg
            >>> g = gg.random.Generator(0)
            >>> _ = g.uniform((3,))
            >>> state = g.get_state()
            >>> a = g.uniform((2,)).numpy().tolist()
            >>> other = gg.random.Generator(5)
            >>> other.set_state(state)
            >>> other.uniform((2,)).numpy().tolist() == a, other.seed
            (True, 0)
        """
        gpus = [device.name for device in self._streams if device is not CPU]
        if gpus:
            import warnings
            warnings.warn(f"{self!r}: the position of its random stream on {', '.join(gpus)} cannot be saved "
                          f"(CuPy's RandomState exposes no state); restored, that stream starts again from the seed",
                          RuntimeWarning, stacklevel=2)
        cpu = self._streams.get(CPU)
        return {"seed": None if self.seed is None else int(self.seed), "entropy": int(self._sequence.entropy),
                "cpu": None if cpu is None else cpu.bit_generator.state}

    def set_state(self, state):
        """Put the generator where :meth:`get_state` found one (in place; its seed becomes that one's).

        Raises ValueError for a dict that is not such a state.

        Example:
            >>> import gpugrad as gg
            >>> g = gg.random.Generator()
            >>> g.set_state(gg.random.Generator(4).get_state())
            >>> g.seed, g.uniform((2,)).numpy().tolist() == gg.random.Generator(4).uniform((2,)).numpy().tolist()
            (4, True)
        """
        try:
            seed, entropy, cpu = state["seed"], int(state["entropy"]), state["cpu"]
            stream = None
            if cpu is not None:
                stream = np.random.Generator(getattr(np.random, cpu["bit_generator"])())
                stream.bit_generator.state = cpu
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"not a gg.random.Generator state ({type(exc).__name__}: {exc}): "
                             f"pass what Generator.get_state() returned") from None
        self._sequence = np.random.SeedSequence(entropy)
        self.seed = seed
        self._streams = {} if stream is None else {CPU: stream}

    def __getstate__(self):
        return self.get_state()

    def __setstate__(self, state):
        self.set_state(state)

    def _stream(self, device):
        stream = self._streams.get(device)
        if stream is None:
            if device is CPU:
                stream = np.random.default_rng(self._sequence)
            else:  # one stream per GPU, seeded from this generator's seed and the GPU's index
                child = np.random.SeedSequence(self._sequence.entropy, spawn_key=(1 + device.index,))
                with device.xp.cuda.Device(device.index):
                    stream = device.xp.random.RandomState(int(child.generate_state(1, np.uint64)[0] >> 1))
            self._streams[device] = stream
        return stream

    def random_array(self, shape, dtype, device):
        """Uniform [0, 1) floats of ``shape`` as a raw array on Device ``device`` (for ops)."""
        return self._draw("random", "random_sample", shape, dtype, device)

    def normal_array(self, shape, dtype, device):
        """Standard normal floats of ``shape`` as a raw array on Device ``device``."""
        return self._draw("standard_normal", "standard_normal", shape, dtype, device)

    def _draw(self, cpu_method, gpu_method, shape, dtype, device):
        """``shape`` draws of the device's stream method (NumPy's or CuPy's name), in float ``dtype``."""
        dtype = _float_dtype(dtype)
        draw = np.float64 if dtype == np.float64 else np.float32
        stream = self._stream(device)
        if device is CPU:
            a = getattr(stream, cpu_method)(shape, dtype=draw)
        else:
            with device.xp.cuda.Device(device.index):
                a = getattr(stream, gpu_method)(shape, dtype=draw)
        return a if a.dtype == dtype else a.astype(dtype)

    @declare.root(declare.HOST, effects="draws from the generator")
    def uniform(self, shape, low=0.0, high=1.0, dtype=None, device=None):
        """A tensor of floats drawn uniformly from [low, high) (float32 unless ``dtype`` says).

        Example:
            >>> import gpugrad as gg
            >>> x = gg.random.Generator(0).uniform((1000,), low=2.0, high=3.0)
            >>> bool(x.numpy().min() >= 2.0 and x.numpy().max() < 3.0)
            True
        """
        dev = get_device(device)
        a = self.random_array(_shape(shape), dtype, dev)
        if low != 0.0 or high != 1.0:
            a *= a.dtype.type(high - low)
            a += a.dtype.type(low)
        return Tensor._wrap(a, dev)

    @declare.root(declare.HOST, effects="draws from the generator")
    def normal(self, shape, mean=0.0, std=1.0, dtype=None, device=None):
        """A tensor of normally distributed floats (float32 unless ``dtype`` says).

        Example:
            >>> import gpugrad as gg
            >>> x = gg.random.Generator(0).normal((10000,), mean=1.0, std=0.5)
            >>> round(float(x.numpy().mean()), 1), round(float(x.numpy().std()), 1)
            (1.0, 0.5)
        """
        dev = get_device(device)
        a = self.normal_array(_shape(shape), dtype, dev)
        if std != 1.0:
            a *= a.dtype.type(std)
        if mean != 0.0:
            a += a.dtype.type(mean)
        return Tensor._wrap(a, dev)

    @declare.root(declare.HOST, effects="draws from the generator")
    def integers(self, low, high, shape, dtype=np.int64, device=None):
        """A tensor of ints drawn uniformly from [low, high).

        Example:
            >>> import gpugrad as gg
            >>> sorted(set(gg.random.Generator(0).integers(0, 3, (100,)).numpy().tolist()))
            [0, 1, 2]
        """
        dev = get_device(device)
        stream = self._stream(dev)
        if dev is CPU:
            a = stream.integers(low, high, size=_shape(shape), dtype=dtype)
        else:
            with dev.xp.cuda.Device(dev.index):
                a = stream.randint(low, high, size=_shape(shape), dtype=dtype)
        return Tensor._wrap(a, dev)

    @declare.root(declare.REFUSED)
    def permutation(self, n):
        """A NumPy array holding a random order of ``range(n)`` (drawn on the CPU, for shuffling).

        Example:
            >>> import gpugrad as gg
            >>> sorted(gg.random.Generator(3).permutation(5).tolist())
            [0, 1, 2, 3, 4]
        """
        return self._stream(CPU).permutation(n)


def _shape(shape):
    return (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)


_default = Generator()


def seed(n):
    """Replace the global generator with ``Generator(n)``: later draws repeat from run to run.

    Example:
        >>> import gpugrad as gg
        >>> gg.random.seed(1)
        >>> gg.random.default_generator().seed
        1
    """
    global _default
    _default = Generator(n)


def default_generator():
    """The global :class:`Generator` (the one :func:`seed` set last)."""
    return _default


def get_state():
    """The global generator's state: :meth:`Generator.get_state` of :func:`default_generator`.

    Example:
        >>> import gpugrad as gg
        >>> gg.random.seed(3)
        >>> state = gg.random.get_state()
        >>> a = gg.random.uniform((2,)).numpy().tolist()
        >>> gg.random.set_state(state)
        >>> gg.random.uniform((2,)).numpy().tolist() == a
        True
    """
    return _default.get_state()


def set_state(state):
    """Put the global generator where ``state`` (from :func:`get_state`) says, in place.

    Example:
        >>> import gpugrad as gg
        >>> gg.random.set_state(gg.random.Generator(8).get_state())
        >>> gg.random.default_generator().seed
        8
    """
    _default.set_state(state)


def as_generator(seed_or_generator):
    """A Generator from None (the global one), an int seed (a new one) or a Generator (itself).

    Example:
        >>> import gpugrad as gg
        >>> gg.random.as_generator(5).seed
        5
    """
    if seed_or_generator is None:
        return _default
    if isinstance(seed_or_generator, Generator):
        return seed_or_generator
    return Generator(seed_or_generator)


@declare.root(declare.HOST, effects="draws from the generator")
def uniform(shape, low=0.0, high=1.0, dtype=None, device=None):
    """Uniform floats from the global generator; see :meth:`Generator.uniform`.

    Example:
        >>> import gpugrad as gg
        >>> gg.random.uniform((2, 3)).shape
        (2, 3)
    """
    return _default.uniform(shape, low, high, dtype, device)


@declare.root(declare.HOST, effects="draws from the generator")
def normal(shape, mean=0.0, std=1.0, dtype=None, device=None):
    """Normal floats from the global generator; see :meth:`Generator.normal`.

    Example:
        >>> import gpugrad as gg
        >>> gg.random.normal((4,), dtype="float64").dtype
        dtype('float64')
    """
    return _default.normal(shape, mean, std, dtype, device)


@declare.root(declare.HOST, effects="draws from the generator")
def integers(low, high, shape, dtype=np.int64, device=None):
    """Ints in [low, high) from the global generator; see :meth:`Generator.integers`.

    Example:
        >>> import gpugrad as gg
        >>> gg.random.integers(0, 10, (3,)).dtype
        dtype('int64')
    """
    return _default.integers(low, high, shape, dtype, device)


@declare.root(declare.REFUSED)
def permutation(n):
    """A random order of ``range(n)`` from the global generator, as a NumPy array.

    Example:
        >>> import gpugrad as gg
        >>> len(gg.random.permutation(4))
        4
    """
    return _default.permutation(n)
