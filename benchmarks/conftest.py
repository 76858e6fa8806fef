"""Shared pieces of the benchmark suite (pytest-benchmark).

Not collected by the default ``pytest`` run (the project's testpaths are
``tests`` and ``gpugrad``). Run it, devices side by side in each group, with::

    pytest benchmarks/ --benchmark-group-by=group      # the whole suite (a few minutes on 2 cores)
    pytest benchmarks/ -m quick --gpugrad-rounds 10    # the subset of ``gpugrad bench --quick``
    gpugrad bench [--quick]                            # the same, as one device-comparison table

Every benchmark stores in ``benchmark.extra_info`` what ``gpugrad bench`` and
``ratios.py`` read: ``workload`` (``"W1"``, ``"tanh 256Ki"``, ...), ``label``
(the row title), ``impl`` (``"gpugrad"``; ``"gpugrad-function"``, the same
work through ``gg.function``, traced before timing and replayed, where a
workload has it; the peers ``"numpy"`` and ``"cupy"``, written by hand, and
``"torch"``) and ``device``. gpugrad, the hand-written baseline (NumPy on
the CPU, the same expression in CuPy on a GPU, where it exists) and PyTorch
run on every usable device; a peer that cannot use a device is skipped with
the reason.

Options added here: ``--gpugrad-rounds N`` caps every benchmark's timed
rounds at N (and its warm-up rounds at N // 5, at least 1);
``--gpugrad-max-time S`` times one call first (a warm-up) and then runs only
as many rounds as fit in about S seconds (at least 5); the ``quick`` marker
tags the subset that ``gpugrad bench --quick`` runs.
"""
import math
import os
import sys
import tempfile
import time

os.environ.setdefault("CUPY_CACHE_DIR", os.path.join(tempfile.gettempdir(), "gpugrad-bench-cupy-cache"))

import pytest  # noqa: E402

import gpugrad as gg  # noqa: E402

DEVICES = gg.devices()
MIN_ROUNDS = 5  # under --gpugrad-max-time
# files run in this order (the order of gpugrad bench's table); others after them, by name
FILE_ORDER = ["test_tape_overhead.py", "test_ops.py", "test_large_gradient.py", "test_training_step.py",
              "test_cnn_step.py", "test_lstm_step.py", "test_gpt_step.py", "test_optimizers.py", "test_g1_fused_kernels.py"]
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "GPUGRAD_NUM_THREADS")
_LIMITS = {"rounds": None, "max_time": None}  # set from the command line by pytest_configure


def pytest_addoption(parser):
    group = parser.getgroup("gpugrad", "gpugrad benchmarks")
    group.addoption("--gpugrad-rounds", type=int, default=None, metavar="N",
                    help="at most N timed rounds per benchmark (default: each one's own)")
    group.addoption("--gpugrad-max-time", type=float, default=None, metavar="SECONDS",
                    help=f"about SECONDS of timed rounds per benchmark, at least {MIN_ROUNDS} rounds "
                         "(default: each one's own rounds)")


def pytest_configure(config):
    config.addinivalue_line("markers", "quick: in the subset that `gpugrad bench --quick` runs")
    rounds = config.getoption("--gpugrad-rounds", default=None)
    max_time = config.getoption("--gpugrad-max-time", default=None)
    if rounds is not None and rounds < 1:
        raise pytest.UsageError(f"--gpugrad-rounds must be at least 1, not {rounds}")
    if max_time is not None and not max_time > 0:
        raise pytest.UsageError(f"--gpugrad-max-time must be above 0, not {max_time}")
    _LIMITS.update(rounds=rounds, max_time=max_time)


def pytest_collection_modifyitems(items):
    def rank(item):
        name = item.path.name
        return FILE_ORDER.index(name) if name in FILE_ORDER else len(FILE_ORDER)

    items.sort(key=rank)  # stable: within a file, the order of definition


def pytest_benchmark_update_machine_info(config, machine_info):
    """What ``gpugrad bench`` prints above its table: versions, devices, GPUs, thread settings."""
    import numpy

    info = {"version": gg.__version__, "devices": DEVICES, "numpy": numpy.__version__,
            "cpu_count": os.cpu_count(), "threads": {v: os.environ[v] for v in THREAD_VARIABLES if v in os.environ}}
    if "torch" in sys.modules:  # imported by a torch benchmark of this run
        info["torch"] = sys.modules["torch"].__version__
    if any(d.startswith("cuda") for d in DEVICES):
        import cupy

        info["cupy"] = cupy.__version__
        info["gpus"] = [cupy.cuda.runtime.getDeviceProperties(i)["name"].decode(errors="replace")
                        for i in range(cupy.cuda.runtime.getDeviceCount())]
    machine_info["gpugrad"] = info


def device_params(impl="gpugrad"):
    """One ``pytest.param`` per usable device, id ``<impl>-<device>``."""
    return [pytest.param(d, id=f"{impl}-{d}") for d in DEVICES]


def synchronize(device):
    """Wait for the device to finish its queued work (a no-op on the CPU)."""
    if device.startswith("cuda"):
        import cupy

        cupy.cuda.Device(gg.get_device(device).index).synchronize()


def array_module(device):
    """The array module of the hand-written baseline on ``device``: NumPy, or CuPy on a GPU."""
    return gg.get_device(device).xp


def to_host(array):
    """A NumPy copy of a NumPy or CuPy array (of the hand-written baselines' results)."""
    return array.get() if hasattr(array, "get") else array


def baseline_impl(device):
    """The name of the hand-written baseline on ``device``: ``"numpy"`` or ``"cupy"``."""
    return "numpy" if device == "cpu" else "cupy"


def torch_device(torch, device):
    """The ``torch.device`` of a gpugrad device name, or skip when PyTorch cannot use that device."""
    if device != "cpu" and not torch.cuda.is_available():
        pytest.skip(f"this PyTorch ({torch.__version__}) cannot use {device}")
    return torch.device(device)


def torch_synchronize(torch, device):
    """Wait for PyTorch's queued work on ``device`` (a no-op on the CPU)."""
    if device != "cpu":
        torch.cuda.synchronize(torch.device(device))


def rounds_for(rounds, warmup_rounds, seconds_per_call=None):
    """``(rounds, warmup_rounds)`` after ``--gpugrad-max-time`` (given one call's time) and ``--gpugrad-rounds``."""
    max_time, cap = _LIMITS["max_time"], _LIMITS["rounds"]
    if max_time is not None and seconds_per_call is not None:
        rounds = min(rounds, max(MIN_ROUNDS, int(max_time / max(seconds_per_call, 1e-9))))
        warmup_rounds = min(warmup_rounds, max(1, rounds // 5))
    if cap is not None:
        rounds, warmup_rounds = min(rounds, cap), min(warmup_rounds, max(1, cap // 5))
    return rounds, warmup_rounds


def run(benchmark, fn, *args, workload, impl, device="cpu", rounds, warmup_rounds, ops=None, label=None):
    """Time ``fn(*args)`` with pedantic rounds (one call each) and tag the result.

    ``label`` is the row title of ``gpugrad bench`` (default: ``workload``).
    With ``ops`` (the number of ops the work records), ``extra_info["us_per_op"]``
    is the median time of one call divided by ``ops``, in microseconds.
    Returns what ``fn`` returned on its last call.
    """
    benchmark.extra_info.update(workload=workload, impl=impl, device=device, label=label or workload)
    once = None
    if _LIMITS["max_time"] is not None:  # one call, timed, as the first warm-up round
        start = time.perf_counter()
        fn(*args)
        once = time.perf_counter() - start
        warmup_rounds = max(0, warmup_rounds - 1)
    rounds, warmup_rounds = rounds_for(rounds, warmup_rounds, once)
    result = benchmark.pedantic(fn, args=args, rounds=rounds, warmup_rounds=warmup_rounds, iterations=1)
    stats = getattr(benchmark, "stats", None)  # None under --benchmark-disable
    if ops is not None:
        benchmark.extra_info["ops"] = ops
        if stats is not None:
            benchmark.extra_info["us_per_op"] = stats.stats.median / ops * 1e6
    return result


def with_jit_peer(peers, make):
    """``peers`` with ``"gpugrad-function-jit"`` (``make()``: the step through ``gg.function(jit_compile=True)``,
    traced and compiled before the timing) where numba (``gpugrad[jit]``) is installed, right after
    ``"gpugrad-function"``: in :func:`run_interleaved`'s cycle it then follows the unfused replay it is judged
    against, not PyTorch, whose OpenMP threads keep spinning after its block (the block after it ran 19 % slower).

    Example:
        >>> order = list(with_jit_peer({"gpugrad": 1, "gpugrad-function": 2, "torch": 3}, lambda: 4))
        >>> order in (["gpugrad", "gpugrad-function", "gpugrad-function-jit", "torch"],  # with numba
        ...           ["gpugrad", "gpugrad-function", "torch"])  # without
        True
    """
    import importlib.util
    if importlib.util.find_spec("numba") is None:
        return peers
    ordered = {}
    for name, fn in peers.items():
        ordered[name] = fn
        if name == "gpugrad-function":
            ordered["gpugrad-function-jit"] = make()
    if "gpugrad-function-jit" not in ordered:
        ordered["gpugrad-function-jit"] = make()
    return ordered


def run_interleaved(benchmark, peers, *, workload, block, cycles, ops=None):
    """Time ``peers`` (name -> function of no arguments) in alternating blocks of ``block`` calls.

    On a shared machine whose speed changes from second to second, peers timed
    one after another meet different spells of load, and their ratio moves
    with it (W1's gpugrad/torch ran from 0.45 to 1.11 that way). Blocks of a
    few milliseconds, alternating for ``cycles`` rounds, show every peer the
    same spells. pytest-benchmark times each cycle (one block of each peer);
    ``extra_info["interleaved"]`` holds each peer's median and minimum seconds
    per call (and microseconds per op with ``ops``); ``ratios.py`` and ``gpugrad bench`` divide them.
    With a ``gpugrad-function-jit`` peer, ``extra_info["jit_fused"]`` says what it fused (:func:`jit_fused`).
    """
    times = {name: [] for name in peers}

    def cycle():
        for name, fn in peers.items():
            append = times[name].append
            for _ in range(block):
                start = time.perf_counter()
                fn()
                append(time.perf_counter() - start)

    cycle()  # warm-up, not kept
    for kept in times.values():
        kept.clear()
    rounds, _ = rounds_for(cycles, 0)
    benchmark.extra_info.update(interleaved_workload=workload, block=block)
    benchmark.pedantic(cycle, rounds=rounds, iterations=1)
    summary = {}
    for name, kept in times.items():
        kept.sort()
        entry = {"median": kept[len(kept) // 2], "min": kept[0], "calls": len(kept)}
        if ops:
            entry["us_per_op"] = entry["median"] / ops * 1e6
        summary[name] = entry
    benchmark.extra_info["interleaved"] = summary
    fused = jit_fused(peers.get("gpugrad-function-jit"))
    if fused:
        benchmark.extra_info["jit_fused"] = fused
    return summary


def jit_fused(peer):
    """What ``gg.function(jit_compile=True)`` fused in the function ``peer`` calls (itself, or the function of a
    ``functools.partial``): the ``fused: ...`` part of its diagnostics (regions and their ops), or None."""
    fn = getattr(peer, "func", peer)
    lines = fn.diagnostics() if hasattr(fn, "diagnostics") else []
    found = [line.split("fused: ", 1)[1] for line in lines if "fused: " in line]
    return found[0] if found else None


@pytest.fixture(scope="session")
def optional_torch():
    """PyTorch where it is installed, else None: an interleaved benchmark times it as one more peer when it can."""
    try:
        import torch
    except ImportError:
        return None
    return torch


@pytest.fixture(scope="session")
def torch():
    """PyTorch, or skip: it is not a dependency of gpugrad, only a point of comparison."""
    torch = pytest.importorskip(
        "torch", reason="PyTorch is not installed (pip install torch); the comparison with it is skipped")
    return torch


def assert_function_steps_as_eager(setup, replays=2):
    """``setup()`` -> ``(step, variables)``: a step and a ``gg.function`` of another copy give the same losses
    and weights to the bit on the CPU, from one trace (the trace, then ``replays`` replays)."""
    import numpy as np

    step, variables = setup()
    fn_step, fn_variables = setup()
    fn = gg.function(fn_step)
    for _ in range(1 + replays):
        np.testing.assert_array_equal(fn().numpy(), step().numpy())
    for var, fn_var in zip(variables, fn_variables, strict=True):
        np.testing.assert_array_equal(fn_var.numpy(), var.numpy())
    assert fn.trace_count == 1



# --------------------------------------------------------------------------- training steps (W2, W4, W5, CNN, LSTM)


def load_weights(variables, arrays):
    """Assign ``arrays`` (NumPy, one per variable, in order) to ``variables``: every peer starts from one point."""
    for var, value in zip(variables, arrays, strict=True):
        var.assign(value)


def sgd_step(logits_of, params, x, labels, *, device, lr):
    """A gpugrad training step: one ``gg.optimizers.SGD(lr).minimize`` of the softmax cross-entropy (mean) of
    ``logits_of(x)`` against the integer ``labels`` (NumPy, put on ``device`` once), over ``params``."""
    optimizer = gg.optimizers.SGD(lr)
    xb, yb = gg.tensor(x, device=device), gg.tensor(labels, device=device)

    def step():
        return optimizer.minimize(lambda: gg.softmax_cross_entropy(logits_of(xb), yb), params)

    return step


def torch_sgd_step(torch, logits_of, parameters, x, labels, *, device, lr):
    """The same step in PyTorch's idiom: ``zero_grad``, ``F.cross_entropy`` (mean), ``backward``, ``optim.SGD``."""
    optimizer = torch.optim.SGD(parameters, lr=lr)
    xb, yb = torch.from_numpy(x).to(device), torch.from_numpy(labels).to(device)

    def step():
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(logits_of(xb), yb)
        loss.backward()
        optimizer.step()
        return loss

    return step


def traced(step, jit_compile=False):
    """``step`` through ``gg.function`` (``jit_compile``: fused), called twice: traced, then replayed once (neither
    is timed)."""
    fn = gg.function(step, jit_compile=jit_compile)
    fn()
    fn()
    return fn


def time_step(benchmark, step, sync, *, workload, label, impl, device, rounds, warmup_rounds):
    """Time ``step()`` then ``sync()`` (the device's queue drained) as :func:`run` does; ``extra_info["ms_per_step"]``
    holds the median; the last loss must be finite. A ``gg.function`` step must have replayed its one trace."""
    def work():
        loss = step()
        sync()
        return loss

    loss = run(benchmark, work, workload=workload, label=label, impl=impl, device=device, rounds=rounds,
               warmup_rounds=warmup_rounds)
    stats = getattr(benchmark, "stats", None)  # None under --benchmark-disable
    if stats is not None:
        benchmark.extra_info["ms_per_step"] = stats.stats.median * 1e3
    assert math.isfinite(float(loss.item() if hasattr(loss, "item") else loss))
    if hasattr(step, "trace_count"):
        assert step.trace_count == 1  # every timed step replayed the one trace


def interleave_steps(benchmark, make_step, others, *, workload, block, cycles):
    """gpugrad's step on the CPU eagerly and through ``gg.function`` (fused too, where numba is installed;
    ``make_step()`` builds one from the start weights) and the ``others`` (peer name -> step) in alternating
    blocks (see :func:`run_interleaved`)."""
    fn = traced(make_step())
    peers = with_jit_peer({"gpugrad": make_step(), "gpugrad-function": fn, **others},
                          lambda: traced(make_step(), jit_compile=True))
    summary = run_interleaved(benchmark, peers, workload=workload, block=block, cycles=cycles)
    calls = {entry["calls"] for entry in summary.values()}
    assert len(calls) == 1 and calls.pop() > 0, summary
    assert fn.trace_count == 1
