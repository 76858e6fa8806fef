"""The pytest plugin that ``gpugrad bench`` loads into its pytest run (``-p gpugrad._tools.bench.plugin``).

It appends one tab-separated line per event to the file named by the
environment variable ``GPUGRAD_BENCH_PROGRESS`` (nothing without it), which
the runner reads while pytest works: ``total N`` after collection, ``done
NODEID`` after each test, ``failed NODEID PHASE MESSAGE`` for a failure.

Example:
    >>> parse_event("done\\tbenchmarks/test_ops.py::test_op_gpugrad[tanh-1Ki-gpugrad-cpu]\\n")
    ('done', 'benchmarks/test_ops.py::test_op_gpugrad[tanh-1Ki-gpugrad-cpu]')
"""
import os

ENVIRONMENT_VARIABLE = "GPUGRAD_BENCH_PROGRESS"


def parse_event(line):
    """The fields of one event line, as a tuple of strings."""
    return tuple(line.rstrip("\n").split("\t"))


def _write(*fields):
    path = os.environ.get(ENVIRONMENT_VARIABLE)
    if path:
        text = "\t".join(" ".join(str(f).split()) for f in fields)  # no tabs or newlines inside a field
        with open(path, "a", encoding="utf-8") as f:
            f.write(text + "\n")


def pytest_collection_finish(session):
    _write("total", len(session.items))


def pytest_runtest_logreport(report):
    if report.failed:
        crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
        lines = [line for line in (getattr(crash, "message", "") or report.longreprtext).splitlines() if line.strip()]
        _write("failed", report.nodeid, report.when, lines[0] if crash is not None and lines else
               lines[-1] if lines else "")


def pytest_runtest_logfinish(nodeid, location):
    _write("done", nodeid)
