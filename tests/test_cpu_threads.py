"""Large elementwise CPU ops split across threads: the same bits as one NumPy call, errors as NumPy's.

Sizes are just above the thresholds (``SPLIT_MIN_COSTLY`` for log/exp/tanh,
``SPLIT_MIN_CHEAP`` for arithmetic), so every test here runs the split path;
``gg.set_num_threads(1)`` gives the one-call result to compare with.
"""
import multiprocessing
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import gpugrad as gg
from gpugrad.backend import cpu_threads
from gpugrad.ops.hot import HOT_GRADIENTS

BIG = cpu_threads.SPLIT_MIN_CHEAP + 4099  # above both thresholds, not a multiple of the chunk block
RNG = np.random.default_rng(11)


@pytest.fixture
def two_threads():
    previous = gg.set_num_threads(2)
    yield
    gg.set_num_threads(previous)


def one_thread(fn, *args):
    previous = gg.set_num_threads(1)
    try:
        return fn(*args)
    finally:
        gg.set_num_threads(previous)


UNARY = {"log": (gg.log, 0.1, 3.0), "exp": (gg.exp, -5.0, 5.0), "tanh": (gg.tanh, -3.0, 3.0),
         "sigmoid": (gg.sigmoid, -30.0, 30.0), "sqrt": (gg.sqrt, 0.0, 4.0), "square": (gg.square, -3.0, 3.0),
         "relu": (gg.relu, -1.0, 1.0), "expm1": (gg.expm1, -2.0, 2.0), "log1p": (gg.log1p, -0.5, 2.0)}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_split_forward_ops_give_the_bits_of_one_call(two_threads, name, dtype):
    fn, low, high = UNARY[name]
    x = gg.tensor(RNG.uniform(low, high, BIG), dtype=dtype)
    got, want = fn(x).numpy(), one_thread(lambda: fn(x).numpy())
    assert got.dtype == want.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, want)


HOT = {name: h for name, h in HOT_GRADIENTS.items() if h.cost is not None}  # every one that can split


@pytest.mark.parametrize("layout", ["contiguous", "broadcast_dy", "transposed", "rows"])
@pytest.mark.parametrize("name", sorted(HOT))
def test_split_hot_gradients_give_the_bits_of_one_call(two_threads, name, layout):
    shape = (BIG,) if layout in ("contiguous", "broadcast_dy") else (1031, 1021)
    a = RNG.uniform(0.5, 2.0, shape).astype(np.float32)
    dy = RNG.normal(size=shape).astype(np.float32)
    if layout == "broadcast_dy":  # as a sum's gradient arrives
        dy = np.broadcast_to(np.float32(0.75), shape)
    elif layout == "transposed":
        a, dy = np.ascontiguousarray(a.T).T, np.ascontiguousarray(dy.T).T
    h = HOT[name]

    def fn(x, dy):
        return h.function(x, dy, **h.check.params)

    got = fn(gg.tensor(a), gg.tensor(dy)).numpy()
    want = one_thread(lambda: fn(gg.tensor(a), gg.tensor(dy)).numpy())
    np.testing.assert_array_equal(got, want)


def test_a_whole_gradient_is_the_same_with_one_or_two_threads(two_threads):
    x = gg.tensor(RNG.uniform(0.5, 2.0, BIG), dtype="float32")

    def grad():
        with gg.GradientTape() as tape:
            tape.watch(x)
            loss = gg.sum(gg.square(gg.log(x)) + gg.tanh(x))
        return tape.gradient(loss, x).numpy()

    np.testing.assert_array_equal(grad(), one_thread(grad))


def test_numpy_error_state_reaches_the_threads(two_threads):
    x = gg.tensor(np.full(BIG, -1.0, np.float32))
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError):
        gg.log(x)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(gg.log(x).numpy()).all()
    with np.errstate(invalid="warn"), pytest.warns(RuntimeWarning, match="invalid value"):
        gg.log(x)


def test_mixed_dtypes_and_shapes_are_left_to_one_call(two_threads):
    """split_formula (what cpu_fast.run calls) gives NumPy's own result where it cannot split."""
    a = np.linspace(0.5, 1.5, BIG, dtype=np.float32)
    for formula, arrays in [(np.add, (a, np.ones(BIG, np.float64))), (np.add, (a, np.ones(1, np.float32))),
                            (np.negative, (np.arange(BIG, dtype=np.int64),))]:
        got, want = cpu_threads.split_formula(formula, arrays), formula(*arrays)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_set_num_threads_checks_its_argument():
    for bad in (0, -1, 1.5, "2", True, None):
        with pytest.raises(ValueError, match="whole number >= 1"):
            gg.set_num_threads(bad)
    previous = gg.set_num_threads(3)
    try:
        assert gg.get_num_threads() == 3
    finally:
        assert gg.set_num_threads(previous) == 3


def test_the_thread_count_comes_from_the_environment():
    code = "import gpugrad as gg; print(gg.get_num_threads())"
    env = dict(os.environ, GPUGRAD_NUM_THREADS="3")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "3"
    env["GPUGRAD_NUM_THREADS"] = "many"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode != 0 and "GPUGRAD_NUM_THREADS must be a whole number >= 1, not 'many'" in out.stderr


def _log_in_child(queue):
    x = gg.tensor(np.full(BIG, np.e, np.float32))
    queue.put(float(gg.log(x).numpy()[-1]))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forking needs a POSIX system")
def test_a_forked_child_splits_with_threads_of_its_own(two_threads):
    gg.log(gg.tensor(np.ones(BIG, np.float32)))  # the parent's pool exists before the fork
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_log_in_child, args=(queue,))
    child.start()
    child.join(timeout=60)
    if child.is_alive():
        child.kill()
    assert child.exitcode == 0, "the child hung or failed (a pool with the parent's dead threads)"
    assert queue.get(timeout=5) == pytest.approx(1.0)


def test_softmax_family_splits_its_exp_and_keeps_the_bits(two_threads):
    logits = gg.tensor(RNG.normal(size=(1031, 257)) * 5, dtype="float32")  # 265 Ki elements
    labels = RNG.integers(0, 257, 1031)

    def run():
        with gg.GradientTape() as tape:
            tape.watch(logits)
            outs = [gg.softmax(logits), gg.log_softmax(logits), gg.softmax_cross_entropy(logits, labels)]
        return [o.numpy() for o in outs] + [tape.gradient(outs[2], logits).numpy()]

    for got, want in zip(run(), one_thread(run)):
        np.testing.assert_array_equal(got, want)
