"""``gg.function(jit_compile=True)`` on a GPU: its fused kernels against the device's copy bandwidth, and the
digits-MLP step (W2) as fused kernels against eager gpugrad, CuPy by hand and PyTorch CUDA eager.

Run on a machine with a GPU, from the repository root (``benchmarks/device_run.sh`` runs it as its ``jit`` part)::

    PYTHONPATH=. python3 -m benchmarks.gpu_jit            # 64 Mi float32 (device_run.sh gives it 50 s)
    PYTHONPATH=. python3 -m benchmarks.gpu_jit --smoke    # tiny sizes: every row runs (tests/test_gpu_jit_bench.py)

One line per figure, each starting with ``jit``, flushed as it is measured (a run cut short keeps its lines):

- ``copy``: the device-to-device copy of 64 Mi float32 (``cupy.copyto``, a ``cudaMemcpyAsync``): bytes read and
  written over the time, the unit of the rows below;
- ``W3``: the gradient of ``sum(square(log(x)))`` (``benchmarks/workload_w3.py``) over 64 Mi float32, through
  ``gg.function(jit_compile=True)``, through ``gg.function`` unfused, and by hand in CuPy; each row's bandwidth
  is the least its kernels must move (read ``x`` once, write the gradient once: 8 bytes an element) over its
  time, as a % of the copy's;
- ``chain``: ten elementwise ops (``mul, add, tanh, square, sub, exp, mul, abs, sqrt, add``) over 64 Mi
  float32, the same three ways, against the same least bytes (read ``x``, write ``y``);
- ``W2``: the digits-MLP training step (``benchmarks/workload_mlp.py``) on cuda, eager gpugrad,
  ``gg.function``, ``gg.function(jit_compile=True)`` (its fused kernels replayed in the plan's CUDA graphs where
  the plan makes graphs), CuPy by hand (eager) and PyTorch CUDA eager where PyTorch can use the GPU (else a line
  says why), timed in alternating blocks of steps each ended by a synchronisation (``conftest.run_interleaved``'s
  way: every peer meets the same spells of load).

Kernel times are CUDA events around back-to-back calls after warm-up (the host's launch work overlaps the
GPU's), the median of several repeats (as ``g1_fused_kernels.gpu_time``). The must-show target, ``W3`` and
``chain`` through ``jit_compile=True`` at >= 80 % of the copy bandwidth, is judged on each ``jit`` row
(``ok`` / ``MISS``); ``--smoke`` judges nothing (its sizes are too small to say anything about a GPU).
Each ``gg.function`` row's ``fn.diagnostics()`` (regions fused, CUDA graphs) follows it on a ``jit ... plan``
line. Exit status 0 when every row ran and every result agreed with the hand-written CuPy; 2 without a GPU.
"""
import argparse
import statistics
import sys
import time

import numpy as np

MI = 1024 * 1024
TARGET = 0.80  # of the copy bandwidth: issue 29's must-show for W3 and the 10-op chain
FULL = {"n": 64 * MI, "launches": 10, "repeats": 5, "warmup": 2, "mlp_block": 40, "mlp_cycles": 9}
SMOKE = {"n": 4096, "launches": 2, "repeats": 1, "warmup": 1, "mlp_block": 2, "mlp_cycles": 1}
CHAIN_OPS = 10


def chain(x, m=None):
    """Ten elementwise ops, one input, one output: gpugrad's ops (``m`` None) or an array module's."""
    if m is None:
        import gpugrad as m
        y = m.tanh(x * 1.5 + 0.25)
        y = m.exp(m.square(y) - 0.5) * 0.75
        return m.sqrt(m.abs(y)) + 1.0
    y = m.tanh(x * np.float32(1.5) + np.float32(0.25))
    y = m.exp(m.square(y) - np.float32(0.5)) * np.float32(0.75)
    return m.sqrt(m.abs(y)) + np.float32(1.0)


def gpu_time(fn, launches, repeats, warmup):
    """Median milliseconds of one ``fn()`` over ``repeats`` timings of ``launches`` back-to-back calls (CUDA events),
    after ``warmup`` calls and a drained queue: G1's timing (``g1_fused_kernels.gpu_time``)."""
    from .g1_fused_kernels import gpu_time as timed
    return timed(fn, launches=launches, repeats=repeats, warmup=warmup)


def synchronize(cupy):
    """Wait for the GPU's queued work (an event recorded behind it)."""
    done = cupy.cuda.Event()
    done.record()
    done.synchronize()


def bandwidth(bytes_moved, ms, copy_gbps=None):
    """``(GB/s, fraction of copy_gbps or None)`` of ``bytes_moved`` in ``ms`` milliseconds.

    Example:
        >>> bandwidth(8e9, 2.0, copy_gbps=5000.0)
        (4000.0, 0.8)
    """
    gbps = bytes_moved / ms / 1e6
    return gbps, (gbps / copy_gbps if copy_gbps else None)


def kernel_line(name, impl, ms, bytes_moved, copy_gbps, judge):
    """One figure line of a kernel row: time, bandwidth at the least bytes, % of copy, and (``judge``) the verdict.

    Example:
        >>> kernel_line("W3 64 Mi", "gg.function(jit)", 2.0, 8e9, 5000.0, judge=True)
        'jit  W3 64 Mi  gg.function(jit)       2.000 ms   4000 GB/s   80 % of copy  (target >= 80 %: ok)'
    """
    gbps, of_copy = bandwidth(bytes_moved, ms, copy_gbps)
    line = f"jit  {name}  {impl:<20} {ms:7.3f} ms {gbps:6.0f} GB/s  {of_copy * 100:3.0f} % of copy"
    if judge:
        line += f"  (target >= {TARGET * 100:.0f} %: {'ok' if of_copy >= TARGET else 'MISS'})"
    return line


def say(line):
    print(line, flush=True)


def size_name(n):
    return f"{n // MI} Mi" if n % MI == 0 else f"{n}"


def copy_figure(cupy, sizes, gpu_time):
    """The copy row; returns its GB/s (bytes read + written)."""
    n = sizes["n"]
    src = cupy.ones(n, dtype=np.float32)
    dst = cupy.empty(n, dtype=np.float32)
    ms = gpu_time(lambda: cupy.copyto(dst, src))
    gbps, _ = bandwidth(2 * src.nbytes, ms)
    say(f"jit  copy {size_name(n)} float32  {ms:7.3f} ms {gbps:6.0f} GB/s  (read + write, cupy.copyto)")
    del src, dst
    return gbps


def plan_line(name, impl, fn):
    """The ``fn.diagnostics()`` of a ``gg.function``, on one figure line."""
    say(f"jit  {name}  {impl} plan: {' | '.join(fn.diagnostics())}")


def kernel_rows(name, gg, cupy, x, work, hand, sizes, gpu_time, copy_gbps, judge):
    """Time ``work`` (a function of one tensor) through ``gg.function(jit_compile=True)`` and unfused, and ``hand``
    (the same on CuPy arrays); check both against ``hand``; print one line each. Returns False on a disagreement."""
    bytes_min = 2 * 4 * sizes["n"]  # float32: read x once, write the result once
    expected = cupy.asnumpy(hand(x._data)[:4096])
    agreed = True
    times = {}
    for impl, jit in (("gg.function(jit)", True), ("gg.function", False)):
        fn = gg.function(work, jit_compile=jit)
        fn(x)
        got = cupy.asnumpy(fn(x)._data[:4096])  # traced, then replayed once: neither timed
        if not np.allclose(got, expected, rtol=1e-5, atol=1e-6):
            say(f"jit  {name}  {impl}: DISAGREES with CuPy by hand (max |diff| {np.max(np.abs(got - expected)):.3g})")
            agreed = False
        times[impl] = gpu_time(lambda: fn(x))
        say(kernel_line(name, impl, times[impl], bytes_min, copy_gbps, judge and jit))
        plan_line(name, impl, fn)
        del fn
        cupy.get_default_memory_pool().free_all_blocks()
    times["cupy by hand"] = gpu_time(lambda: hand(x._data))
    say(kernel_line(name, "cupy by hand", times["cupy by hand"], bytes_min, copy_gbps, False))
    say(f"jit  {name}  jit/unfused = {times['gg.function(jit)'] / times['gg.function']:.2f}, "
        f"jit/cupy = {times['gg.function(jit)'] / times['cupy by hand']:.2f}")
    return agreed


def w3_figures(gg, cupy, sizes, gpu_time, copy_gbps, judge):
    from .workload_w3 import gpugrad_w3, numpy_w3

    x_host = np.random.default_rng(0).uniform(0.5, 2.0, sizes["n"]).astype(np.float32)
    x = gg.tensor(x_host, device="cuda")
    del x_host
    ok = kernel_rows(f"W3 {size_name(sizes['n'])}", gg, cupy, x, gpugrad_w3, lambda a: numpy_w3(a, cupy), sizes,
                     gpu_time, copy_gbps, judge)
    del x
    cupy.get_default_memory_pool().free_all_blocks()
    return ok


def chain_figures(gg, cupy, sizes, gpu_time, copy_gbps, judge):
    x_host = np.random.default_rng(1).uniform(-1.0, 1.0, sizes["n"]).astype(np.float32)
    x = gg.tensor(x_host, device="cuda")
    del x_host
    ok = kernel_rows(f"chain of {CHAIN_OPS} ops {size_name(sizes['n'])}", gg, cupy, x, chain,
                     lambda a: chain(a, cupy), sizes, gpu_time, copy_gbps, judge)
    del x
    cupy.get_default_memory_pool().free_all_blocks()
    return ok


def interleaved_ms(steps, sync, block, cycles):
    """Median ms per step of each of ``steps`` (name -> step), timed in alternating blocks of ``block`` steps, each
    block ended by ``sync[name]()``; one cycle of warm-up first."""
    times = {name: [] for name in steps}
    for cycle in range(cycles + 1):
        for name, step in steps.items():
            start = time.perf_counter()
            for _ in range(block):
                step()
            sync[name]()
            if cycle:
                times[name].append((time.perf_counter() - start) / block * 1e3)
    return {name: statistics.median(t) for name, t in times.items()}


def w2_figures(gg, cupy, sizes):
    """The digits-MLP step on cuda: eager, gg.function, gg.function(jit), CuPy by hand, PyTorch CUDA eager."""
    from . import workload_mlp as w2

    def sync_cupy():
        synchronize(cupy)

    steps = {"gpugrad eager": w2.gpugrad_setup("W2", "cuda")[0]}
    for impl, jit in (("gg.function", False), ("gg.function(jit)", True)):
        fn = gg.function(w2.gpugrad_setup("W2", "cuda")[0], jit_compile=jit)
        fn()
        fn()
        steps[impl] = fn
    steps["cupy by hand"] = w2.numpy_setup("W2", cupy)[0]
    sync = dict.fromkeys(steps, sync_cupy)
    try:
        import torch
    except ImportError:
        torch = None
        say("jit  W2 MLP step  torch: not measured: PyTorch is not installed here")
    if torch is not None and not torch.cuda.is_available():
        say(f"jit  W2 MLP step  torch: not measured: this PyTorch ({torch.__version__}) cannot use a GPU")
        torch = None
    if torch is not None:
        steps[f"torch {torch.__version__} eager"] = w2.torch_setup(torch, "W2", torch.device("cuda"))[0]
        sync[f"torch {torch.__version__} eager"] = torch.cuda.synchronize
    losses = {name: float(step().item()) for name, step in steps.items()}  # one more step each, untimed
    agreed = all(np.isfinite(v) for v in losses.values())
    ms = interleaved_ms(steps, sync, sizes["mlp_block"], sizes["mlp_cycles"])
    for name, t in ms.items():
        say(f"jit  W2 MLP step  {name:<20} {t:7.3f} ms/step   {t / ms['gpugrad eager']:5.2f}x eager gpugrad"
            f"   {t / ms['cupy by hand']:5.2f}x cupy by hand")
    for impl in ("gg.function", "gg.function(jit)"):
        plan_line("W2 MLP step", impl, steps[impl])
    if not agreed:
        say(f"jit  W2 MLP step: a loss is not finite: {losses}")
    return agreed


def main(argv=None):
    parser = argparse.ArgumentParser(description="gg.function(jit_compile=True) on a GPU: bandwidth and the MLP step")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, no verdicts: that every row runs")
    args = parser.parse_args(argv)
    import gpugrad as gg

    if not any(d.startswith("cuda") for d in gg.devices()):
        print(f"gpu_jit: no GPU: gg.devices() lists {gg.devices()}", file=sys.stderr)
        return 2
    import cupy

    sizes = SMOKE if args.smoke else FULL
    judge = not args.smoke

    def timed(fn):
        return gpu_time(fn, launches=sizes["launches"], repeats=sizes["repeats"], warmup=sizes["warmup"])

    say(f"jit  gpugrad {gg.__version__}, cupy {cupy.__version__}, {size_name(sizes['n'])} float32"
        f"{' (smoke: tiny sizes, nothing judged)' if args.smoke else ''}")
    start = time.perf_counter()
    copy_gbps = copy_figure(cupy, sizes, timed)
    ok = True
    for part in (w3_figures, chain_figures):
        ok = part(gg, cupy, sizes, timed, copy_gbps, judge) and ok
    ok = w2_figures(gg, cupy, sizes) and ok
    say(f"jit  done in {time.perf_counter() - start:.1f} s{'' if ok else '; a result DISAGREED (see above)'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
