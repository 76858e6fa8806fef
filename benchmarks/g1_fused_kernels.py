"""Benchmark G1: each fused kernel at 64 Mi float32 elements against a device-to-device copy.

For every kernel in ``kernels/``: the effective bandwidth of the fused kernel
(bytes it reads and writes / time), as a fraction of the bandwidth of a
device-to-device copy of 64 Mi float32 measured in the same run, and its speed
against the unfused CuPy expression of the same math (a chain of CuPy ops, from
``gpugrad._tools.kernelcheck.cases``). Times are CUDA events around ``LAUNCHES``
back-to-back launches after warm-up (so host launch overhead overlaps the GPU
work), the median of ``REPEATS``.

Targets: fused >= 80 % of the copy bandwidth for every elementwise
gradient kernel; fused >= 2x faster than the unfused expression (not
applicable where the unfused expression is a single op).

    PYTHONPATH=. python3 benchmarks/g1_fused_kernels.py [--json g1.json] [-n ELEMENTS] [NAME ...]

Needs a GPU; ``benchmarks/test_g1_fused_kernels.py`` runs the same timings
under pytest-benchmark.
"""
import argparse
import json
import os
import statistics
import sys
import time

N = 64 * 1024 * 1024
WARMUP, LAUNCHES, REPEATS = 2, 10, 5
BANDWIDTH_TARGET, SPEEDUP_TARGET = 0.80, 2.0
UPDATE_KERNELS = ("sgd_momentum_update", "adam_update")


def gpu_time(fn, launches=LAUNCHES, repeats=REPEATS, warmup=WARMUP):
    """Median milliseconds of one ``fn()`` over ``repeats`` timings of ``launches`` back-to-back calls."""
    import cupy

    for _ in range(warmup):
        fn()
    cupy.cuda.get_current_stream().synchronize()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(repeats):
        start.record()
        for _ in range(launches):
            fn()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) / launches)
    return statistics.median(times)


def copy_row(n=N):
    """The device-to-device copy of n float32: bytes read + written, ms, GB/s."""
    import cupy

    src = cupy.ones(n, dtype=cupy.float32)
    dst = cupy.empty_like(src)
    stream = cupy.cuda.get_current_stream()
    ms = gpu_time(lambda: dst.data.copy_from_device_async(src.data, src.nbytes, stream))
    moved = 2 * src.nbytes
    return {"kernel": "device-to-device copy", "bytes": moved, "fused_ms": ms, "fused_gbps": moved / ms / 1e6}


def bytes_moved(arrays, outputs, n_inputs, in_place):
    """What a fused call reads and writes: every input once, every output once (twice when updated in place)."""
    read = sum(a.nbytes for a in arrays[:n_inputs])
    written = sum(o.nbytes for o in outputs)
    return read + written + (written if in_place else 0)


def kernel_row(name, n=N, copy_gbps=None):
    """Time kernel ``name`` fused and unfused at n float32 elements; returns one table row."""
    import cupy
    import numpy as np

    import gpugrad as gg
    from gpugrad.backend import kernel_source
    from gpugrad._tools.kernelcheck import cases

    case = cases.CASES[name]
    backend = gg.get_device("cuda").backend
    n_inputs = len(kernel_source.load(name).array_inputs)
    arrays, params = case.draw(cupy, cupy.random.RandomState(0), n, np.dtype(np.float32))
    out = backend.fused(name, *arrays, **params)
    outputs = out if isinstance(out, tuple) else (out,)
    row = {"kernel": name, "bytes": bytes_moved(arrays, outputs, n_inputs, case.in_place),
           "unfused_ops": case.unfused_ops, "elementwise": name not in UPDATE_KERNELS}
    del out, outputs
    row["fused_ms"] = gpu_time(lambda: backend.fused(name, *arrays, **params))
    with np.errstate(all="ignore"):
        row["unfused_ms"] = gpu_time(lambda: case.unfused(cupy, arrays, params))
    row["fused_gbps"] = row["bytes"] / row["fused_ms"] / 1e6
    row["speedup"] = row["unfused_ms"] / row["fused_ms"]
    if copy_gbps:
        row["of_copy"] = row["fused_gbps"] / copy_gbps
    del arrays
    cupy.get_default_memory_pool().free_all_blocks()
    return row


def verdict(row):
    """'ok' or what misses a target, for one kernel row."""
    misses = []
    if row.get("elementwise") and row.get("of_copy", 1.0) < BANDWIDTH_TARGET:
        misses.append(f"bandwidth {row['of_copy']:.0%} < {BANDWIDTH_TARGET:.0%}")
    if row.get("unfused_ops", 1) > 1 and row.get("speedup", SPEEDUP_TARGET) < SPEEDUP_TARGET:
        misses.append(f"speedup {row['speedup']:.2f}x < {SPEEDUP_TARGET:g}x")
    if row.get("unfused_ops") == 1:
        return "ok (unfused is 1 op)" if not misses else "; ".join(misses)
    return "ok" if not misses else "; ".join(misses)


def table(rows):
    """The G1 table as text."""
    lines = [f"{'kernel':<28} {'MB':>7} {'fused ms':>9} {'GB/s':>7} {'% copy':>7} {'ops':>4} "
             f"{'unfused ms':>10} {'speedup':>8}  targets"]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['kernel']:<28} ERROR {r['error']}")
            continue
        of_copy = f"{r['of_copy']:.0%}" if "of_copy" in r else ""
        unfused = f"{r['unfused_ms']:10.3f} {r['speedup']:7.2f}x" if "unfused_ms" in r else f"{'':10} {'':8}"
        ops = r.get("unfused_ops", "")
        note = verdict(r) if "unfused_ms" in r else "reference"
        lines.append(f"{r['kernel']:<28} {r['bytes'] / 1e6:7.0f} {r['fused_ms']:9.3f} {r['fused_gbps']:7.0f} "
                     f"{of_copy:>7} {ops:>4} {unfused}  {note}")
    return "\n".join(lines)


def run(names=None, n=N, log=print, on_row=None):
    """Every row of G1: the copy first, then each kernel (an error in one kernel is kept as its row).

    ``on_row(result_so_far)`` is called after each row, so a run cut short keeps what it measured.
    """
    import cupy

    from gpugrad.backend import kernel_source

    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    log(f"G1 on {name}, {n} float32 elements ({n / 2**20:g} Mi), {LAUNCHES} launches x {REPEATS} repeats")
    rows = [copy_row(n)]
    copy_gbps = rows[0]["fused_gbps"]
    result = {"device": name, "n": n, "copy_gbps": copy_gbps, "rows": rows, "partial": True}
    for kernel in names or kernel_source.names():
        if on_row is not None:
            on_row(result)
        start = time.perf_counter()
        try:
            row = kernel_row(kernel, n, copy_gbps)
        except Exception as exc:  # one broken kernel must not hide the others
            row = {"kernel": kernel, "error": f"{type(exc).__name__}: {exc}"[:300]}
            cupy.get_default_memory_pool().free_all_blocks()
        row["seconds"] = round(time.perf_counter() - start, 2)
        rows.append(row)
        log(f"  {kernel}: {row.get('fused_ms', float('nan')):.3f} ms fused ({row['seconds']} s)")
    result["partial"] = False
    if on_row is not None:
        on_row(result)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description="benchmark G1: fused kernels vs copy bandwidth and unfused CuPy")
    parser.add_argument("names", nargs="*")
    parser.add_argument("-n", type=int, default=N)
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    def save(result):
        if args.json:
            with open(args.json + ".tmp", "w") as f:
                json.dump(result, f, indent=1)
            os.replace(args.json + ".tmp", args.json)

    result = run(args.names, args.n, log=lambda s: print(s, flush=True), on_row=save)
    print(table(result["rows"]), flush=True)
    bad = [r for r in result["rows"] if "error" in r]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
