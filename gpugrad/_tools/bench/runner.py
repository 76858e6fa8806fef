"""Run the benchmark suite in a pytest subprocess and collect its pytest-benchmark JSON report.

A subprocess, not ``pytest.main`` in this process: each run starts with a
fresh interpreter (nothing of the caller's imports, tapes or GPU memory), and
thread settings (``--threads``) reach NumPy's BLAS, PyTorch and gpugrad's CPU ops, which read them
only when they are first imported. Progress comes back through a file that
:mod:`gpugrad._tools.bench.plugin` appends to.

Example:
    >>> args = pytest_arguments(suite_dir(), "out.json", quick=True, keyword="W1")
    >>> args[-4:]
    ['-m', 'quick', '-k', 'W1']
"""
import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ...errors import GpugradError
from .plugin import ENVIRONMENT_VARIABLE, parse_event

_PACKAGE_DIR = Path(__file__).resolve().parents[2]  # .../gpugrad
QUICK_MAX_TIME = 0.3  # seconds of timed rounds per benchmark under --quick (at least 5 rounds)
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "GPUGRAD_NUM_THREADS")


class BenchError(GpugradError):
    """The suite could not be found or run (not a failing benchmark: those are in the result)."""


class NothingMatched(BenchError):
    """The run selected no benchmark (a ``-k`` that matches none): a bad value of an option."""


@dataclasses.dataclass
class RunResult:
    """What one run left: pytest's exit code, its report, its failures and the text it printed."""

    returncode: int
    report: dict
    failures: list  # (nodeid, phase, last line of the error)
    log: str
    seconds: float
    count: int  # tests collected (benchmarks and, skipped under --benchmark-only, checks)


def suite_dir():
    """The benchmark suite's folder: ``gpugrad/benchmarks`` when installed, else the checkout's ``benchmarks/``.

    Example:
        >>> sorted(p.name for p in suite_dir().glob("test_*.py"))[:2]
        ['test_cnn_step.py', 'test_g1_fused_kernels.py']
    """
    for candidate in (_PACKAGE_DIR / "benchmarks", _PACKAGE_DIR.parent / "benchmarks"):
        if (candidate / "conftest.py").is_file():
            return candidate
    raise BenchError(f"the benchmark suite is missing: no benchmarks/conftest.py in {_PACKAGE_DIR} "
                     f"or {_PACKAGE_DIR.parent} (reinstall gpugrad)")


def missing_requirement():
    """``None`` when pytest and pytest-benchmark can be imported, else a sentence saying how to install them.

    Example:
        >>> missing_requirement() is None  # the test extra installs both
        True
    """
    import importlib.util

    for module, name in (("pytest", "pytest"), ("pytest_benchmark", "pytest-benchmark")):
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return f"gpugrad bench runs the suite with {name}, which is not installed: pip install 'gpugrad[bench]'"
    return None


def pytest_arguments(suite, json_path, quick=False, keyword=None, rounds=None, max_time=None):
    """The command line of pytest for one run of ``suite`` writing its report to ``json_path``."""
    args = [str(suite), "-p", "no:cacheprovider", "-p", "gpugrad._tools.bench.plugin", "-o", "addopts=",
            "--rootdir", str(suite), "-q", "--tb=short", "--benchmark-only", f"--benchmark-json={json_path}"]
    if max_time is None and quick:
        max_time = QUICK_MAX_TIME
    if max_time is not None:
        args += ["--gpugrad-max-time", str(max_time)]
    if rounds is not None:
        args += ["--gpugrad-rounds", str(rounds)]
    if quick:
        args += ["-m", "quick"]
    if keyword:
        args += ["-k", keyword]
    return args


def child_environment(threads=None):
    """The environment of the pytest subprocess: this gpugrad first on the path; thread counts when given."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_PACKAGE_DIR.parent), env.get("PYTHONPATH")]))
    if threads is not None:
        env.update({name: str(threads) for name in THREAD_VARIABLES})
    return env


def run_suite(json_path=None, quick=False, keyword=None, rounds=None, max_time=None, threads=None,
              on_event=None):
    """Run the suite; returns a :class:`RunResult`. ``on_event(fields)`` sees each progress event.

    ``json_path`` keeps the pytest-benchmark JSON report (else it goes to a
    temporary file). A benchmark that fails is listed in ``failures``; a run
    that produced no report at all raises :class:`BenchError` with pytest's
    last lines.
    """
    problem = missing_requirement()
    if problem:
        raise BenchError(problem)
    suite = suite_dir()
    with tempfile.TemporaryDirectory(prefix="gpugrad-bench-") as tmp:
        report_path = Path(json_path) if json_path else Path(tmp) / "report.json"
        progress_path = Path(tmp) / "progress.txt"
        log_path = Path(tmp) / "pytest.log"
        progress_path.write_text("")
        env = child_environment(threads)
        env[ENVIRONMENT_VARIABLE] = str(progress_path)
        command = [sys.executable, "-m", "pytest"] + pytest_arguments(suite, report_path, quick, keyword, rounds,
                                                                      max_time)
        failures, count = [], 0
        start = time.perf_counter()
        with open(log_path, "w") as log, open(progress_path, encoding="utf-8") as progress:
            proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
            try:
                while True:
                    line = progress.readline()
                    if line.endswith("\n"):
                        fields = parse_event(line)
                        if fields[0] == "total":
                            count = int(fields[1])
                        elif fields[0] == "failed":
                            failures.append(tuple(fields[1:4]))
                        if on_event is not None:
                            on_event(fields)
                    elif proc.poll() is not None:
                        break
                    else:
                        if line:  # a partial line: read it again once complete
                            progress.seek(progress.tell() - len(line.encode("utf-8")))
                        time.sleep(0.05)
            except BaseException:  # Ctrl-C: stop pytest too
                proc.terminate()
                proc.wait()
                raise
        seconds = time.perf_counter() - start
        text = log_path.read_text(errors="replace")
        if proc.returncode == 5:
            raise NothingMatched("no benchmark matched" + (f" -k {keyword!r}" if keyword else ""))
        from .report import ReportError, load

        try:
            report = load(report_path)
        except ReportError:
            tail = "\n".join(text.splitlines()[-30:])
            raise BenchError(f"pytest exited with {proc.returncode} and wrote no report; its last lines:\n"
                             f"{tail}") from None
        return RunResult(proc.returncode, report, failures, text, seconds, count)
