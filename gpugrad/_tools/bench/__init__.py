"""``gpugrad bench``: run the benchmark suite through pytest-benchmark and compare devices in one table.

- :mod:`gpugrad._tools.bench.runner` finds the suite (``gpugrad.benchmarks`` in a
  wheel, ``benchmarks/`` in a source checkout) and runs it in a pytest
  subprocess, reporting progress as it goes;
- :mod:`gpugrad._tools.bench.report` turns the pytest-benchmark JSON into the table;
- :mod:`gpugrad._tools.bench.plot` draws its speed ratios as a bar chart (matplotlib, the ``plot`` extra);
- :mod:`gpugrad._tools.bench.plugin` is the pytest plugin of the subprocess.

Example:
    >>> from gpugrad._tools.bench import suite_dir
    >>> (suite_dir() / "conftest.py").is_file()
    True
"""
from .report import ReportError, load, table_lines
from .runner import BenchError, run_suite, suite_dir

__all__ = ["BenchError", "ReportError", "load", "run_suite", "suite_dir", "table_lines"]
