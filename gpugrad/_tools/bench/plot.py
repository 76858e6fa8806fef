"""The chart of a benchmark report (``gpugrad bench --plot``), drawn with matplotlib (the ``plot`` extra).

What it shows is how fast gpugrad is against each peer, not the raw times:
one group of bars per workload (the table's rows, then the interleaved
benchmarks' ratios, the steadier ones on a busy machine), one bar per
comparison: gpugrad against the hand-written NumPy (CuPy on a GPU), against
PyTorch, the same work through ``gg.function`` against those peers and against
eager gpugrad, and the GPU against the CPU when both ran. A bar runs from 1 to
its ratio on a log scale, so right of 1 gpugrad (or gg.function, or the GPU) is
faster and left of 1 slower, by the factor printed at its end. Ratios of
medians carry no whiskers. The title says where it was measured: the CPU and
its cores, the GPUs, and the versions of Python, NumPy, PyTorch and CuPy.

Example:
    >>> isinstance(matplotlib_missing(), (str, type(None)))
    True
"""
import importlib.util
import math

from .report import FUNCTION, GPUGRAD, ReportError, collect, format_time

INSTALL_HINT = "pip install 'gpugrad[plot]' (or matplotlib)"
PEER_NAMES = {"numpy": "NumPy by hand", "cupy": "CuPy by hand", "torch": "PyTorch"}


def matplotlib_missing():
    """``None`` when matplotlib can be imported, else a sentence saying how to install it."""
    try:
        found = importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):  # a broken installation, or one removed from sys.modules
        found = False
    return None if found else f"--plot needs matplotlib, which is not installed: {INSTALL_HINT}"


def _pairs(medians, devices, several):
    """``[(comparison, ratio)]`` from ``medians[(impl, device)]``: each peer's median over gpugrad's and
    gg.function's on the same device, eager over gg.function, the CPU over the first GPU; with
    ``several`` devices in the report, each comparison ends with `` on <device>``."""
    on = (lambda d: f" on {d}") if several else (lambda d: "")
    found = []
    for ours, name in ((GPUGRAD, "gpugrad"), (FUNCTION, "gg.function")):
        for device in devices:
            mine = medians.get((ours, device))
            for peer, label in PEER_NAMES.items():
                theirs = medians.get((peer, device))
                if mine and theirs:
                    found.append((f"{name} vs {label}{on(device)}", theirs / mine))
    for device in devices:
        eager, traced = medians.get((GPUGRAD, device)), medians.get((FUNCTION, device))
        if eager and traced:
            found.append((f"gg.function vs eager gpugrad{on(device)}", eager / traced))
    gpus = [d for d in devices if d != "cpu"]
    if gpus and medians.get((GPUGRAD, "cpu")) and medians.get((GPUGRAD, gpus[0])):
        found.append((f"GPU vs CPU ({gpus[0]}, gpugrad)", medians[(GPUGRAD, "cpu")] / medians[(GPUGRAD, gpus[0])]))
    return found


def ratio_rows(report):
    """``[(row label, [(comparison, ratio)])]``: what the chart draws, above 1 meaning gpugrad is faster.

    A row per workload of the table (its label, and gpugrad's median on each
    device), then one per interleaved benchmark (on the CPU). Raises
    :class:`ReportError` when the report has no gpugrad results.

    Example:
        >>> def bench(impl, median):
        ...     return {"extra_info": {"workload": "W2", "label": "W2 MLP step", "impl": impl, "device": "cpu"},
        ...             "stats": {"median": median, "iqr": 0.0, "rounds": 9}}
        >>> ratio_rows({"benchmarks": [bench("gpugrad", 2e-3), bench("gpugrad-function", 1e-3),
        ...                            bench("numpy", 1.5e-3), bench("torch", 4e-3)]})  # doctest: +NORMALIZE_WHITESPACE
        [('W2 MLP step\\ngpugrad 2.00 ms', [('gpugrad vs NumPy by hand', 0.75), ('gpugrad vs PyTorch', 2.0),
          ('gg.function vs NumPy by hand', 1.5), ('gg.function vs PyTorch', 4.0),
          ('gg.function vs eager gpugrad', 2.0)])]
    """
    results = collect(report)
    devices = sorted({d for (_, impl, d) in results.cells if impl == GPUGRAD},
                     key=lambda d: (d != "cpu", d))
    rows = []
    for workload, label in results.labels.items():
        medians = {(impl, d): cell.median for (w, impl, d), cell in results.cells.items()
                   if w == workload and cell.median > 0}
        times = [f"{format_time(medians[(GPUGRAD, d)])}" + (f" on {d}" if len(devices) > 1 else "")
                 for d in devices if (GPUGRAD, d) in medians]
        pairs = _pairs(medians, devices, len(devices) > 1)
        if pairs:
            rows.append((f"{label}\ngpugrad {', '.join(times)}" if times else label, pairs))
    for bench in report.get("benchmarks", []):
        info = bench.get("extra_info") or {}
        if "interleaved_workload" not in info:
            continue
        medians = {(impl, "cpu"): float(v["median"]) for impl, v in (info.get("interleaved") or {}).items()
                   if isinstance(v, dict) and v.get("median")}
        pairs = _pairs(medians, ["cpu"], len(devices) > 1)
        if pairs:
            workload = str(info["interleaved_workload"])
            rows.append((f"{results.labels.get(workload, workload)} (interleaved)", pairs))
    if not rows and not results.cells:
        raise ReportError("the report has no gpugrad benchmark results to plot")
    return rows


def title_lines(report, title="gpugrad bench"):
    """The chart's title: what it is, then the machine (CPU, cores, GPUs), then the versions.

    Example:
        >>> report = {"machine_info": {"python_version": "3.11.7", "cpu": {"brand_raw": "AMD EPYC", "count": 2},
        ...           "gpugrad": {"version": "0.1.0", "numpy": "2.4.6", "torch": "2.13.0+cpu", "cpu_count": 2}}}
        >>> print("\\n".join(title_lines(report)[1:]))
        AMD EPYC, 2 CPU cores; GPU: none
        gpugrad 0.1.0, Python 3.11.7, NumPy 2.4.6, PyTorch 2.13.0+cpu, CuPy: not used
    """
    machine = report.get("machine_info") or {}
    cpu = machine.get("cpu") or {}
    ours = machine.get("gpugrad") or {}
    model = cpu.get("brand_raw") or machine.get("processor") or machine.get("machine") or "unknown CPU"
    cores = cpu.get("count") or ours.get("cpu_count")
    gpus = ours.get("gpus") or []
    where = f"{model}, {cores} CPU cores" if cores else str(model)
    where += f"; GPU: {', '.join(gpus)}" if gpus else "; GPU: none"
    threads = ours.get("threads") or {}
    if threads:
        where += "; threads: " + ", ".join(f"{k}={v}" for k, v in threads.items())
    versions = [f"gpugrad {ours.get('version', '?')}", f"Python {machine.get('python_version', '?')}",
                f"NumPy {ours.get('numpy', '?')}",
                f"PyTorch {ours['torch']}" if ours.get("torch") else "PyTorch: not run",
                f"CuPy {ours['cupy']}" if ours.get("cupy") else "CuPy: not used"]
    return [f"{title}: speed ratios (the peer's median time / ours; right of 1: gpugrad faster)", where,
            ", ".join(versions)]


COLOURS = {  # tab10 indices, fixed by the comparison so that two charts read alike
    "gpugrad vs NumPy by hand": 0, "gpugrad vs CuPy by hand": 0, "gpugrad vs PyTorch": 3,
    "gg.function vs NumPy by hand": 9, "gg.function vs CuPy by hand": 9, "gg.function vs PyTorch": 1,
    "gg.function vs eager gpugrad": 2, "GPU vs CPU": 4,
}


def _style(comparison, colours):
    """The bar's legend entry and colour (by the kind of comparison: the device left out, NumPy and CuPy
    by hand one entry) and its hatch (hatched: measured on a GPU)."""
    base, _, device = comparison.partition(" on ")
    base = "GPU vs CPU" if base.startswith("GPU vs CPU") else base.replace("CuPy by hand", "NumPy by hand")
    return base, colours[COLOURS.get(base, 7)], ("///" if device and device != "cpu" else None)


def _legend_rank(comparison):
    """The legend by peer: NumPy's (or CuPy's) pair, PyTorch's pair, eager against gg.function, GPU against CPU."""
    for rank, word in enumerate(("by hand", "PyTorch", "eager", "GPU vs CPU", "hatched")):
        if word in comparison:
            return rank
    return 5


def write_plot(report, path, title="gpugrad bench"):
    """Draw the speed ratios of ``report`` as a PNG at ``path``; returns the number of bars drawn.

    Example:
        >>> import os, tempfile
        >>> if matplotlib_missing() is None:
        ...     path = os.path.join(tempfile.mkdtemp(), "ratios.png")
        ...     report = {"benchmarks": [
        ...         {"extra_info": {"workload": "W1", "impl": impl, "device": "cpu"},
        ...          "stats": {"median": median, "iqr": 0.0, "rounds": 5}}
        ...         for impl, median in (("gpugrad", 2e-3), ("numpy", 1e-3))]}
        ...     assert write_plot(report, path) == 1 and open(path, "rb").read(4) == b"\\x89PNG"
    """
    import matplotlib

    matplotlib.use("Agg")  # files only, no window
    import matplotlib.patches
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    rows = ratio_rows(report)
    if not rows:
        raise ReportError("the report has no pair of results to compare (gpugrad and a peer on one device)")
    colours = plt.get_cmap("tab10").colors
    bar, gap = 0.8, 0.7  # bar thickness and the space between workloads, in bar slots
    positions, ticks, y = [], [], 0.0
    for label, pairs in rows:
        start = y
        for comparison, ratio in pairs:
            positions.append((y, comparison, ratio))
            y += 1
        ticks.append(((start + y - 1) / 2, label))
        y += gap
    bottom = y - gap  # below the last bar
    ratios = [r for _, _, r in positions]
    low = min(0.5, min(ratios) / 2.2)  # room for the labels at the bars' ends, and 1 never at an edge
    high = max(2.0, max(ratios) * 2.2)
    height = max(3.6, 1.2 + 0.22 * len(positions) + 0.1 * len(rows))
    fig, ax = plt.subplots(figsize=(12, height))
    ax.axvspan(low, 1, color="#f6e6e6", zorder=0)
    ax.axvspan(1, high, color="#e6f2e6", zorder=0)
    seen, gpu = set(), None
    for at, comparison, ratio in positions:
        entry, colour, hatch = _style(comparison, colours)
        if hatch:
            gpu = comparison.rpartition(" on ")[2]
        ax.barh(at, ratio - 1, left=1, height=bar, color=colour, hatch=hatch, edgecolor="white", linewidth=0,
                label=entry if entry not in seen else None, zorder=2)
        seen.add(entry)
        text = f"{ratio:.2f}x" if ratio < 100 else f"{ratio:.0f}x"
        ax.text(ratio * 1.04 if ratio >= 1 else ratio / 1.04, at, text, va="center",
                ha="left" if ratio >= 1 else "right", fontsize=7, zorder=3)
    ax.axvline(1, color="black", linewidth=0.9, zorder=2)
    ax.set_xscale("log")
    ax.set_xlim(low, high)
    ax.set_ylim(bottom + 0.2, -0.8)  # the first workload on top, as in the table
    ax.set_yticks([t for t, _ in ticks])
    ax.set_yticklabels([label for _, label in ticks], fontsize=8)
    ax.tick_params(axis="y", length=0)
    decades = math.log10(high / low)
    ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(10, subs=(1.0, 2.0, 5.0) if decades < 3 else (1.0,)))
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.grid(axis="x", which="major", alpha=0.4, zorder=1)
    ax.set_xlabel("speed ratio, log scale: the peer's median time per call / gpugrad's (eager gpugrad's / "
                  "gg.function's; the CPU's / the GPU's)", fontsize=8)
    ax.text(0.01, 1.005, "slower than the peer", transform=ax.transAxes, fontsize=8, color="#a04040", va="bottom")
    ax.text(0.99, 1.005, "faster than the peer", transform=ax.transAxes, fontsize=8, color="#3c7a3c",
            va="bottom", ha="right")
    heading, where, versions = title_lines(report, title)
    fig.suptitle(f"{heading}\n{where}\n{versions}", fontsize=9, y=0.995, va="top")
    handles, names = ax.get_legend_handles_labels()
    if gpu is not None:  # what the hatching means, and that the GPU's hand-written peer is CuPy
        names = [n.replace("NumPy by hand", "NumPy by hand (CuPy on the GPU)") for n in names]
        handles.append(matplotlib.patches.Patch(facecolor="lightgrey", hatch="///", edgecolor="white"))
        names.append(f"hatched: measured on {gpu}")
    order = sorted(range(len(names)), key=lambda i: (_legend_rank(names[i]), names[i].startswith("gg."), names[i]))
    columns = min(4, -(-len(names) // 2))  # filled column by column: gpugrad's and gg.function's one above the other
    fig.legend([handles[i] for i in order], [names[i] for i in order], loc="lower center", ncol=columns,
               fontsize=8, frameon=False)
    legend_rows = -(-len(names) // columns)
    fig.tight_layout(rect=(0, (0.1 + 0.17 * legend_rows) / height, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return len(positions)
