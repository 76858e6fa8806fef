"""The device-comparison table of a pytest-benchmark JSON report (``gpugrad bench``).

Rows are workloads, columns are ``<impl> <device>`` (gpugrad on each device,
``gpugrad-function`` — the same work through ``gg.function``, replayed — on
each device, then the peers: the hand-written ``numpy`` / ``cupy`` baseline and
``torch``), each cell the median time of one call and the interquartile range
of its rounds. The speedup columns divide medians: ``GPU/CPU`` is gpugrad's
median on the CPU over gpugrad's on the first GPU, ``gg/<peer>`` the peer's
median over gpugrad's on the same device, ``fn/<peer>`` the peer's median over
gpugrad-function's, so above 1 the GPU (or gpugrad) is faster.
Every benchmark of the suite tags ``extra_info`` with ``workload``, ``label``,
``impl`` and ``device``; results without those tags are left out.

Example:
    >>> report = {"benchmarks": [
    ...     {"extra_info": {"workload": "W3", "impl": "gpugrad", "device": "cpu"},
    ...      "stats": {"median": 0.020, "iqr": 0.001, "rounds": 20}},
    ...     {"extra_info": {"workload": "W3", "impl": "numpy", "device": "cpu"},
    ...      "stats": {"median": 0.030, "iqr": 0.002, "rounds": 20}}]}
    >>> print("\\n".join(table_lines(report)))
    workload  gpugrad cpu   numpy cpu     gg/numpy
    W3        20.0 ms ±1.0  30.0 ms ±2.0     1.50x
"""
import dataclasses
import json
import math

from ...errors import GpugradError

GPUGRAD = "gpugrad"
FUNCTION = "gpugrad-function"  # the work through gg.function (traced once, replayed)
PEER_ORDER = ("numpy", "cupy", "torch")


class ReportError(GpugradError, ValueError):
    """A file that is not a pytest-benchmark JSON report."""


@dataclasses.dataclass(frozen=True)
class Cell:
    """One result: the median and interquartile range of a call's time, in seconds."""

    median: float
    iqr: float
    rounds: int
    q1: float | None = None  # the quartiles, when the report has them
    q3: float | None = None


@dataclasses.dataclass
class Results:
    """The tagged results of a report: ``labels`` in row order, ``cells[(workload, impl, device)]``."""

    labels: dict
    cells: dict

    @property
    def columns(self):
        """``(impl, device)`` pairs: gpugrad's (CPU first), gpugrad-function's, then the peers', then any others."""
        found = {(impl, device) for _, impl, device in self.cells}
        return sorted(found, key=_column_rank)


def load(path):
    """The report in the pytest-benchmark JSON file ``path`` (``--benchmark-json``, ``gpugrad bench --json``).

    Raises :class:`ReportError` for a file that is not one.
    """
    try:
        with open(path) as f:
            report = json.load(f)
    except OSError as exc:
        raise ReportError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ReportError(f"{path} is not JSON: {exc}") from None
    if not isinstance(report, dict) or not isinstance(report.get("benchmarks"), list):
        raise ReportError(f"{path} is not a pytest-benchmark report (no 'benchmarks' list)")
    return report


def collect(report):
    """The tagged results of ``report`` as :class:`Results` (first appearance sets the row order).

    Example:
        >>> r = collect({"benchmarks": [{"extra_info": {"workload": "W1", "label": "W1 tape", "impl": "gpugrad",
        ...                                              "device": "cpu"},
        ...                              "stats": {"median": 2e-3, "iqr": 1e-4, "rounds": 60}}]})
        >>> r.labels, r.columns, r.cells[("W1", "gpugrad", "cpu")].median
        ({'W1': 'W1 tape'}, [('gpugrad', 'cpu')], 0.002)
    """
    labels, cells = {}, {}
    for bench in report.get("benchmarks", []):
        info, stats = bench.get("extra_info") or {}, bench.get("stats") or {}
        if not all(k in info for k in ("workload", "impl")) or "median" not in stats:
            continue
        workload = str(info["workload"])
        labels.setdefault(workload, str(info.get("label") or workload))
        q1, q3 = stats.get("q1"), stats.get("q3")
        cells[(workload, str(info["impl"]), str(info.get("device", "cpu")))] = Cell(
            float(stats["median"]), float(stats.get("iqr") or 0.0), int(stats.get("rounds") or 0),
            None if q1 is None else float(q1), None if q3 is None else float(q3))
    return Results(labels, cells)


def _column_rank(column):
    impl, device = column
    device_rank = (0, 0) if device == "cpu" else (1, int(device.partition(":")[2] or 0))
    if impl == GPUGRAD:
        return (0, device_rank, impl)
    if impl == FUNCTION:
        return (1, device_rank, impl)
    if impl in PEER_ORDER:
        return (2 + PEER_ORDER.index(impl), device_rank, impl)
    return (2 + len(PEER_ORDER), device_rank, impl)


_SCALE = {"s": 1.0, "ms": 1e3, "us": 1e6}


def _unit(seconds):
    return "s" if seconds >= 1 else "ms" if seconds >= 1e-3 else "us"


def _decimals(value):
    """Decimals that show ``value`` (in its unit, 1 to 999) with three significant digits."""
    return min(3, max(0, 2 - int(math.floor(math.log10(abs(value)))))) if value else 2


def format_time(seconds, unit=None):
    """Seconds with three significant digits in s, ms or us (or in ``unit``): ``"2.31 ms"``.

    Example:
        >>> format_time(0.00231), format_time(4.5e-5), format_time(12.0), format_time(0.0005, "ms")
        ('2.31 ms', '45.0 us', '12.0 s', '0.500 ms')
    """
    unit = unit or _unit(seconds)
    value = seconds * _SCALE[unit]
    return f"{value:.{_decimals(value)}f} {unit}"


def cell_text(cell, old=None):
    """``"<median> ±<iqr>"``, the IQR in the median's unit and decimals; with ``old``, the median's change.

    Example:
        >>> cell_text(Cell(0.0021, 0.00013, 10), old=Cell(0.0020, 0.0001, 10))
        '2.10 ms ±0.13 (+5%)'
    """
    unit = _unit(cell.median)
    decimals = _decimals(cell.median * _SCALE[unit])
    text = f"{format_time(cell.median)} ±{cell.iqr * _SCALE[unit]:.{decimals}f}"
    if old is not None and old.median > 0:
        text += f" ({(cell.median / old.median - 1) * 100:+.0f}%)"
    return text


def speedup_columns(results):
    """``[(header, numerator column, denominator column)]``: GPU/CPU, gpugrad against each peer, then gpugrad-function.

    Example:
        >>> cells = {("W1", impl, "cpu"): Cell(1e-3, 0.0, 5) for impl in ("gpugrad", "gpugrad-function", "numpy")}
        >>> [header for header, _, _ in speedup_columns(Results({"W1": "W1"}, cells))]
        ['gg/numpy', 'fn/numpy']
    """
    columns = results.columns
    specs = []
    gpus = [c for c in columns if c[0] == GPUGRAD and c[1] != "cpu"]
    if (GPUGRAD, "cpu") in columns and gpus:
        specs.append(("GPU/CPU", (GPUGRAD, "cpu"), gpus[0]))
    for ours, prefix in ((GPUGRAD, "gg"), (FUNCTION, "fn")):
        for impl, device in columns:
            if impl in (GPUGRAD, FUNCTION) or (ours, device) not in columns:
                continue
            several = sum(1 for i, _ in columns if i == impl) > 1
            specs.append((f"{prefix}/{impl} {device}" if several else f"{prefix}/{impl}", (impl, device),
                          (ours, device)))
    return specs


def table_lines(report, old=None):
    """The lines of the table of ``report``; with ``old`` (an earlier report) each time cell shows its change."""
    results = collect(report)
    before = collect(old).cells if old is not None else {}
    columns = results.columns
    speedups = speedup_columns(results)
    rows = [["workload"] + [f"{impl} {device}" for impl, device in columns] + [h for h, _, _ in speedups]]
    for workload, label in results.labels.items():
        row = [label]
        for impl, device in columns:
            cell = results.cells.get((workload, impl, device))
            row.append(cell_text(cell, before.get((workload, impl, device))) if cell else "-")
        for _, top, bottom in speedups:
            a, b = results.cells.get((workload,) + top), results.cells.get((workload,) + bottom)
            row.append(f"{a.median / b.median:.2f}x" if a and b and b.median > 0 else "-")
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    first_speedup = 1 + len(columns)
    lines = []
    for row in rows:
        cells = [cell.rjust(w) if i >= first_speedup else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
    return lines


def interleaved_lines(report):
    """The ratios of the interleaved benchmarks (peers timed in alternating blocks), as the table's speedups.

    The table's peers are timed one after another; these ratios are what a
    machine whose speed changes from second to second cannot tilt. Nothing
    when the report has none.

    Example:
        >>> report = {"benchmarks": [{"extra_info": {"interleaved_workload": "W1", "block": 20, "interleaved": {
        ...     "gpugrad": {"median": 0.006}, "torch": {"median": 0.012}, "numpy": {"median": 0.002}}}}]}
        >>> interleaved_lines(report)
        ['interleaved (peers in alternating blocks of calls, medians):', 'W1  gg/numpy 0.33x  gg/torch 2.00x']

    A ``gpugrad-function`` peer gets ``fn/<peer>`` ratios, ``fn/gg`` (eager gpugrad over it) among them:

        >>> report["benchmarks"][0]["extra_info"]["interleaved"]["gpugrad-function"] = {"median": 0.002}
        >>> interleaved_lines(report)[1]
        'W1  gg/numpy 0.33x  gg/torch 2.00x  fn/gg 3.00x  fn/numpy 1.00x  fn/torch 6.00x'
    """
    lines = []
    for bench in report.get("benchmarks", []):
        info = bench.get("extra_info", {})
        timed = info.get("interleaved") or {}
        if "interleaved_workload" not in info:
            continue
        ratios = _interleaved_ratios(timed, GPUGRAD, "gg", skip=(GPUGRAD, FUNCTION))
        ratios += _interleaved_ratios(timed, FUNCTION, "fn", skip=(FUNCTION,))
        if ratios:
            lines.append(f"{info['interleaved_workload']}  " + "  ".join(ratios))
    return ["interleaved (peers in alternating blocks of calls, medians):"] + lines if lines else []


def _interleaved_ratios(timed, ours, prefix, skip):
    """``["<prefix>/<peer> <ratio>x", ...]``: each peer's median over ``ours``'s (none without ``ours``)."""
    mine = timed.get(ours, {}).get("median")
    if not mine:
        return []
    return [f"{prefix}/{'gg' if peer == GPUGRAD else peer} {timed[peer]['median'] / mine:.2f}x"
            for peer in sorted(timed) if peer not in skip]


def legend_lines(report, old_name=None):
    """What the cells and the speedup columns mean, for the lines under the table.

    Example:
        >>> legend_lines({"benchmarks": []})[0]
        'cells: median time of one call ± interquartile range of the rounds (s, ms, us)'
    """
    lines = ["cells: median time of one call ± interquartile range of the rounds (s, ms, us)"]
    names = [h for h, _, _ in speedup_columns(collect(report))]
    if "GPU/CPU" in names:
        lines.append("GPU/CPU: gpugrad's median on the CPU / on the GPU (above 1: the GPU is faster)")
    if any(n.startswith("gg/") for n in names):
        lines.append("gg/<peer>: the peer's median / gpugrad's on the same device (above 1: gpugrad is faster); "
                     "numpy and cupy are the hand-written baselines")
    if any(n.startswith("fn/") for n in names) or any(" fn/" in line for line in interleaved_lines(report)):
        lines.append("fn/<peer>: the peer's median / gpugrad-function's (the work through gg.function, traced once and "
                     "replayed) on the same device; fn/gg (interleaved): eager gpugrad's median / gpugrad-function's")
    if old_name:
        lines.append(f"(+N%): change of the median against {old_name} (negative: faster now)")
    return lines


def header_lines(report):
    """One or two lines on where the report was measured: CPU, devices, GPUs, versions, threads.

    Example:
        >>> header_lines({"machine_info": {"cpu": {"brand_raw": "AMD EPYC", "count": 2},
        ...                                "gpugrad": {"version": "0.1.0", "devices": ["cpu"], "numpy": "2.4.0"}}})
        ['machine: AMD EPYC, 2 CPU cores; devices: cpu', 'versions: gpugrad 0.1.0, numpy 2.4.0; threads: library defaults']
    """
    machine = report.get("machine_info") or {}
    cpu = machine.get("cpu") or {}
    ours = machine.get("gpugrad") or {}
    cores = cpu.get("count") or ours.get("cpu_count")
    where = ", ".join(str(x) for x in (cpu.get("brand_raw") or machine.get("processor") or machine.get("machine"),
                                       f"{cores} CPU cores" if cores else None) if x)
    devices = ", ".join(ours.get("devices") or [])
    gpus = "; GPUs: " + ", ".join(ours["gpus"]) if ours.get("gpus") else ""
    first = f"machine: {where or 'unknown'}" + (f"; devices: {devices}" if devices else "") + gpus
    versions = [f"{name} {ours[key]}" for name, key in (("gpugrad", "version"), ("numpy", "numpy"), ("cupy", "cupy"),
                                                       ("torch", "torch")) if key in ours]
    threads = ", ".join(f"{k}={v}" for k, v in (ours.get("threads") or {}).items()) or "library defaults"
    lines = [first]
    if versions:
        lines.append(f"versions: {', '.join(versions)}; threads: {threads}")
    return lines
