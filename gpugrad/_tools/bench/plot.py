"""The bar chart of a benchmark report (``gpugrad bench --plot``), drawn with matplotlib (the ``plot`` extra).

One horizontal group of bars per workload, one bar per ``<impl> <device>``
column of the table (gpugrad on each device, then the peers), length = the
median time of a call on a log scale, whiskers = the first to the third quartile.

Example:
    >>> isinstance(matplotlib_missing(), (str, type(None)))
    True
"""
import importlib.util

from .report import ReportError, collect

INSTALL_HINT = "pip install 'gpugrad[plot]' (or matplotlib)"


def matplotlib_missing():
    """``None`` when matplotlib can be imported, else a sentence saying how to install it."""
    try:
        found = importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):  # a broken installation, or one removed from sys.modules
        found = False
    return None if found else f"--plot needs matplotlib, which is not installed: {INSTALL_HINT}"


def write_plot(report, path, title="gpugrad bench"):
    """Draw the table of ``report`` as a PNG bar chart at ``path``; returns the number of bars drawn."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no window
    import matplotlib.pyplot as plt

    results = collect(report)
    columns = results.columns
    workloads = list(results.labels)
    if not workloads:
        raise ReportError("the report has no gpugrad benchmark results to plot")
    height = 0.8 / max(1, len(columns))
    fig, ax = plt.subplots(figsize=(10, 1.2 + len(workloads) * max(0.35, 0.16 * len(columns))))
    colors = plt.get_cmap("tab10").colors
    bars = 0
    for j, (impl, device) in enumerate(columns):
        ys, widths, below, above = [], [], [], []
        for i, workload in enumerate(workloads):
            cell = results.cells.get((workload, impl, device))
            if cell is not None and cell.median > 0:
                ys.append(i + (j - (len(columns) - 1) / 2) * height)
                widths.append(cell.median * 1e3)
                if cell.q1 is not None and cell.q3 is not None:
                    below.append(max(0.0, cell.median - cell.q1) * 1e3)
                    above.append(max(0.0, cell.q3 - cell.median) * 1e3)
                else:
                    below.append(cell.iqr * 1e3 / 2)
                    above.append(cell.iqr * 1e3 / 2)
        if ys:
            ax.barh(ys, widths, height=height, xerr=[below, above], label=f"{impl} {device}", color=colors[j % len(colors)],
                    error_kw={"elinewidth": 0.8, "capsize": 1.5})
            bars += len(ys)
    ax.set_yticks(range(len(workloads)))
    ax.set_yticklabels([results.labels[w] for w in workloads], fontsize=8)
    ax.invert_yaxis()  # the first workload on top, as in the table
    ax.set_xscale("log")
    ax.set_xlabel("median time per call (ms, log scale; whiskers: first to third quartile) - shorter is faster")
    ax.set_title(title)
    ax.grid(axis="x", which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return bars
