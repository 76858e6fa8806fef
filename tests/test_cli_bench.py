"""``gpugrad bench`` and ``gpugrad check``: the table, the JSON, --compare, --plot, the wheel, argument errors.

The runs here are filtered (``-k``) and capped (``--rounds``) so that they take
seconds; ``gpugrad bench --quick`` itself is measured in docs/guide/benchmarks.md.
"""
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import gpugrad as gg
from gpugrad._tools.bench import report as bench_report
from gpugrad._tools.bench.runner import suite_dir
from gpugrad.cli import main

ROOT = Path(__file__).resolve().parent.parent
HAVE_TORCH = importlib.util.find_spec("torch") is not None
HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
FILTER = "W1 or (tanh and 256Ki)"
pytestmark = pytest.mark.slow  # most of these run `gpugrad bench` or `check` (pytest) in a subprocess


def gpugrad_command(*args, cwd=ROOT, pythonpath=ROOT, timeout=300):
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    env.pop("GPUGRAD_DEVICE", None)
    return subprocess.run([sys.executable, "-m", "gpugrad", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=timeout)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """One filtered ``gpugrad bench --quick`` (two rounds per benchmark, one BLAS thread), with its JSON report."""
    path = tmp_path_factory.mktemp("bench") / "run.json"
    proc = gpugrad_command("bench", "--quick", "-k", FILTER, "--rounds", "2", "--threads", "1", "--json", str(path))
    return proc, path


def table_rows(out):
    """The table's header and rows: the lines between the blank line after the header lines and the next."""
    blocks = out.split("\n\n")
    return blocks[1].splitlines()


# --------------------------------------------------------------------------- bench


def test_bench_prints_one_table_of_workloads_by_device_and_peer(quick_run):
    proc, _ = quick_run
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("gpugrad bench --quick: ")
    rows = table_rows(proc.stdout)
    header = rows[0]
    assert header.split("  ")[0] == "workload"
    for column in ["gpugrad cpu", "gpugrad-function cpu", "numpy cpu", "gg/numpy", "fn/numpy"] + (
            ["torch cpu", "gg/torch", "fn/torch"] if HAVE_TORCH else []):
        assert column in header
    labels = [row.split("  ")[0] for row in rows[1:]]
    assert labels == ["W1 tape overhead (1001 ops on 16 floats)", "tanh fwd+bwd 256Ki"]
    for row in rows[1:]:
        assert re.search(r"\d+(\.\d+)? (us|ms|s) ±\d", row), row  # median ± spread
        assert re.search(r"\d+\.\d\dx", row), row  # a speedup
    assert re.search(r"\d+\.\d\dx$", rows[1]), rows[1]  # W1 has a gg.function row: fn/<peer> at the end
    assert rows[2].endswith(" -")  # the op sizes have none
    assert "above 1: gpugrad is faster" in proc.stdout  # the legend
    assert "fn/<peer>: the peer's median / gpugrad-function's" in proc.stdout
    assert "threads: OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1, MKL_NUM_THREADS=1" in proc.stdout
    assert re.search(r"^\[1/\d+\] test_", proc.stderr, re.M), proc.stderr  # stderr is a pipe: plain lines
    assert "\r" not in proc.stderr  # and no bar's frames


def test_progress_without_tqdm_is_one_plain_line_per_benchmark(monkeypatch, capsys):
    from gpugrad.cli import _Progress

    monkeypatch.setitem(sys.modules, "tqdm", None)  # as if it were not installed
    bar = _Progress(True, "bench", plain=True)
    for event in [("total", "2"), ("done", "test_ops.py::test_op_gpugrad[tanh-1Ki-gpugrad-cpu]"),
                  ("failed", "x", "call", "boom"), ("done", "test_ops.py::test_op_torch[tanh-1Ki-torch-cpu]")]:
        bar.event(event)
    bar.close()
    assert capsys.readouterr().err.splitlines() == ["[1/2] test_ops.py::test_op_gpugrad[tanh-1Ki-gpugrad-cpu]",
                                                    "[2/2] test_ops.py::test_op_torch[tanh-1Ki-torch-cpu]"]


def test_bench_json_is_pytest_benchmark_json(quick_run):
    _, path = quick_run
    report = json.loads(path.read_text())
    assert {"machine_info", "commit_info", "benchmarks", "datetime", "version"} <= set(report)
    impls = {(b["extra_info"]["impl"], b["extra_info"]["device"]) for b in report["benchmarks"]}
    assert {("gpugrad", "cpu"), ("numpy", "cpu")} <= impls
    for bench in report["benchmarks"]:
        assert bench["stats"]["rounds"] <= 2
        assert bench["stats"]["median"] > 0
    assert report["machine_info"]["gpugrad"]["version"] == gg.__version__
    # pytest-benchmark's own command line reads it
    proc = subprocess.run([sys.executable, "-c", "from pytest_benchmark.cli import main; main()", "compare",
                           str(path), "--columns=median"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "test_w1_gpugrad[gpugrad-cpu]" in proc.stdout


def test_load_shows_the_saved_table(quick_run, capsys):
    proc, path = quick_run
    assert main(["bench", "--load", str(path)]) == 0
    out = capsys.readouterr().out
    assert table_rows(out) == table_rows(proc.stdout)


def test_load_shows_the_interleaved_ratios_under_the_table(tmp_path, capsys):
    """A run_interleaved result is no table cell: its ratios get lines of their own, as speedups."""
    stats = {"median": 0.01, "iqr": 0.001, "rounds": 5, "min": 0.009}
    report = {"benchmarks": [
        {"extra_info": {"workload": "W1", "label": "W1 tape", "impl": "gpugrad", "device": "cpu"}, "stats": stats},
        {"extra_info": {"interleaved_workload": "W1", "block": 20, "interleaved": {
            "gpugrad": {"median": 0.004, "min": 0.003}, "torch": {"median": 0.010, "min": 0.008}}},
         "stats": stats}]}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(report))
    assert main(["bench", "--load", str(path)]) == 0
    out = capsys.readouterr().out
    assert "interleaved (peers in alternating blocks of calls, medians):\nW1  gg/torch 2.50x" in out
    assert "W1 tape" in out


def test_load_shows_the_interleaved_ratios_of_gg_function(tmp_path, capsys):
    """A gpugrad-function peer of run_interleaved: fn/<peer> ratios after gpugrad's, fn/gg among them."""
    stats = {"median": 0.01, "iqr": 0.001, "rounds": 5, "min": 0.009}
    report = {"benchmarks": [
        {"extra_info": {"workload": "W2", "label": "W2 step", "impl": "gpugrad", "device": "cpu"}, "stats": stats},
        {"extra_info": {"interleaved_workload": "W2", "block": 100, "interleaved": {
            "gpugrad": {"median": 0.004, "min": 0.003}, "gpugrad-function": {"median": 0.002, "min": 0.002},
            "numpy": {"median": 0.002, "min": 0.002}, "torch": {"median": 0.010, "min": 0.008}}},
         "stats": stats}]}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(report))
    assert main(["bench", "--load", str(path)]) == 0
    out = capsys.readouterr().out
    assert "W2  gg/numpy 0.50x  gg/torch 2.50x  fn/gg 2.00x  fn/numpy 1.00x  fn/torch 5.00x" in out
    assert "fn/gg (interleaved): eager gpugrad's median / gpugrad-function's" in out


def test_compare_shows_each_medians_change(quick_run, tmp_path, capsys):
    _, path = quick_run
    old = json.loads(path.read_text())
    for bench in old["benchmarks"]:
        bench["stats"]["median"] *= 2  # the earlier run took twice as long: now -50%
    old_path = tmp_path / "old.json"
    old_path.write_text(json.dumps(old))
    assert main(["bench", "--load", str(path), "--compare", str(old_path)]) == 0
    out = capsys.readouterr().out
    rows = table_rows(out)[1:]
    assert all(row.count("(-50%)") == row.count("±") >= 2 for row in rows), out  # every time cell of the row
    assert f"change of the median against {old_path}" in out


def test_compare_counts_only_matching_results(quick_run, tmp_path, capsys):
    _, path = quick_run
    old = json.loads(path.read_text())
    old["benchmarks"] = [b for b in old["benchmarks"] if b["extra_info"]["impl"] == "numpy"]
    old_path = tmp_path / "numpy_only.json"
    old_path.write_text(json.dumps(old))
    assert main(["bench", "--load", str(path), "--compare", str(old_path)]) == 0
    for row in table_rows(capsys.readouterr().out)[1:]:
        assert row.count("%)") == 1  # only the numpy cell has an earlier result


@pytest.mark.skipif(not HAVE_MATPLOTLIB, reason="matplotlib is not installed (pip install 'gpugrad[plot]'); "
                                                "test_plot_without_matplotlib covers the message instead")
def test_plot_writes_a_png_bar_chart(quick_run, tmp_path, capsys):
    import matplotlib.image

    _, path = quick_run
    png = tmp_path / "bench.png"
    assert main(["bench", "--load", str(path), "--plot", str(png)]) == 0
    assert f"bar chart in {png}" in capsys.readouterr().out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = matplotlib.image.imread(str(png))
    assert image.shape[0] > 200 and image.shape[1] > 500
    assert len({tuple(p) for p in image[::7, ::7, :3].reshape(-1, 3).round(2)}) > 5  # bars, not a blank page


@pytest.mark.skipif(not HAVE_MATPLOTLIB, reason="matplotlib is not installed (pip install 'gpugrad[plot]')")
def test_plot_draws_one_bar_per_speedup_of_the_table(quick_run, tmp_path):
    from gpugrad._tools.bench.plot import write_plot

    _, path = quick_run
    report = json.loads(path.read_text())
    results = bench_report.collect(report)
    speedups = sum(1 for w in results.labels for _, top, bottom in bench_report.speedup_columns(results)
                   if (w,) + top in results.cells and (w,) + bottom in results.cells)
    eager_over_function = sum(1 for (w, impl, device) in results.cells
                              if impl == "gpugrad-function" and (w, "gpugrad", device) in results.cells)
    interleaved = sum(line.count("x  ") + 1 for line in bench_report.interleaved_lines(report)[1:])
    assert speedups > 0
    assert write_plot(report, str(tmp_path / "bars.png")) == speedups + eager_over_function + interleaved


# --------------------------------------------------------------------------- the plot, from a canned report


def canned_report():
    """A run on a CPU and one GPU: gpugrad, gg.function, the hand-written peers and PyTorch, an interleaved W1."""
    def bench(workload, label, impl, device, median):
        return {"extra_info": {"workload": workload, "label": label, "impl": impl, "device": device},
                "stats": {"median": median, "iqr": median / 10, "q1": median * 0.9, "q3": median * 1.3,
                          "rounds": 20}}

    rows = []
    for device, scale, hand in (("cpu", 1.0, "numpy"), ("cuda:0", 0.05, "cupy")):
        rows += [bench("W1", "W1 tape overhead", "gpugrad", device, 6e-3),
                 bench("W1", "W1 tape overhead", "gpugrad-function", device, 2e-3),
                 bench("W1", "W1 tape overhead", hand, device, 2.4e-3),
                 bench("W1", "W1 tape overhead", "torch", device, 12e-3),
                 bench("W3", "W3 grad, 4 Mi", "gpugrad", device, 30e-3 * scale),
                 bench("W3", "W3 grad, 4 Mi", hand, device, 42e-3 * scale),
                 bench("W3", "W3 grad, 4 Mi", "torch", device, 81e-3 * scale)]
    rows.append({"extra_info": {"interleaved_workload": "W1", "block": 20, "interleaved": {
        "gpugrad": {"median": 5e-3}, "gpugrad-function": {"median": 2e-3}, "numpy": {"median": 2e-3},
        "torch": {"median": 11e-3}}}, "stats": {"median": 0.1, "iqr": 0.0, "rounds": 15}})
    machine = {"python_version": "3.11.7", "cpu": {"brand_raw": "Intel(R) Xeon(R) Platinum 8480+", "count": 16},
               "gpugrad": {"version": "0.1.0", "devices": ["cuda:0", "cpu"], "numpy": "2.4.6", "torch": "2.13.0",
                           "cupy": "14.0.1", "gpus": ["NVIDIA H200"], "cpu_count": 16, "threads": {}}}
    return {"machine_info": machine, "benchmarks": rows}


@pytest.mark.skipif(not HAVE_MATPLOTLIB, reason="matplotlib is not installed (pip install 'gpugrad[plot]')")
def test_plot_of_a_canned_report_is_a_png_of_ratio_bars_without_whiskers(tmp_path, monkeypatch):
    import matplotlib
    import matplotlib.axes
    import matplotlib.image
    from gpugrad._tools.bench.plot import write_plot

    drawn = []
    barh = matplotlib.axes.Axes.barh

    def spy(self, y, width, *args, **kwargs):
        drawn.append((kwargs.get("left"), width, kwargs))
        return barh(self, y, width, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "barh", spy)
    png = tmp_path / "ratios.png"
    bars = write_plot(canned_report(), str(png))
    # W1: 2 peers x (gpugrad, gg.function) x 2 devices, eager/gg.function x 2, GPU/CPU; W3: 2 peers x 2 devices,
    # GPU/CPU; the interleaved W1: 2 peers x 2, eager/gg.function
    assert bars == (8 + 2 + 1) + (4 + 1) + (4 + 1) == len(drawn)
    assert all("xerr" not in kwargs and "yerr" not in kwargs for _, _, kwargs in drawn)  # no whiskers
    assert all(left == 1 for left, _, _ in drawn)  # each bar runs from 1 to its ratio
    ends = sorted(round(1 + width, 6) for _, width, _ in drawn)
    assert ends[0] == pytest.approx(0.4) and ends[-1] == pytest.approx(20.0)  # W1 gg/numpy; W3 GPU/CPU
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = matplotlib.image.imread(str(png))
    assert image.shape[0] > 300 and image.shape[1] > 1000
    assert len({tuple(p) for p in image[::5, ::5, :3].reshape(-1, 3).round(2)}) > 8  # bars, not a blank page


def test_the_ratios_the_plot_draws():
    from gpugrad._tools.bench.plot import ratio_rows

    rows = dict(ratio_rows(canned_report()))
    assert list(rows) == ["W1 tape overhead\ngpugrad 6.00 ms on cpu, 6.00 ms on cuda:0",
                          "W3 grad, 4 Mi\ngpugrad 30.0 ms on cpu, 1.50 ms on cuda:0", "W1 tape overhead (interleaved)"]
    w1 = dict(rows["W1 tape overhead\ngpugrad 6.00 ms on cpu, 6.00 ms on cuda:0"])
    assert w1["gpugrad vs NumPy by hand on cpu"] == pytest.approx(0.4)
    assert w1["gpugrad vs CuPy by hand on cuda:0"] == pytest.approx(0.4)
    assert w1["gg.function vs PyTorch on cpu"] == pytest.approx(6.0)
    assert w1["gg.function vs eager gpugrad on cuda:0"] == pytest.approx(3.0)
    assert w1["GPU vs CPU (cuda:0, gpugrad)"] == pytest.approx(1.0)
    w3 = dict(rows["W3 grad, 4 Mi\ngpugrad 30.0 ms on cpu, 1.50 ms on cuda:0"])
    assert w3["GPU vs CPU (cuda:0, gpugrad)"] == pytest.approx(20.0) and w3["gpugrad vs PyTorch on cpu"] == 2.7
    assert not any(k.startswith("gg.function") for k in w3)  # W3 has no gg.function result
    interleaved = dict(rows["W1 tape overhead (interleaved)"])
    assert interleaved == pytest.approx({"gpugrad vs NumPy by hand on cpu": 0.4, "gpugrad vs PyTorch on cpu": 2.2,
                                         "gg.function vs NumPy by hand on cpu": 1.0,
                                         "gg.function vs PyTorch on cpu": 5.5,
                                         "gg.function vs eager gpugrad on cpu": 2.5})


def test_the_plot_title_names_the_machine_and_the_versions():
    from gpugrad._tools.bench.plot import title_lines

    heading, machine, versions = title_lines(canned_report(), "gpugrad bench --quick")
    assert heading.startswith("gpugrad bench --quick: speed ratios")
    assert machine == "Intel(R) Xeon(R) Platinum 8480+, 16 CPU cores; GPU: NVIDIA H200"
    assert versions == "gpugrad 0.1.0, Python 3.11.7, NumPy 2.4.6, PyTorch 2.13.0, CuPy 14.0.1"


def test_plot_without_matplotlib_is_a_clear_error_before_running(monkeypatch, quick_run, tmp_path, capsys):
    _, path = quick_run
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    png = tmp_path / "bench.png"
    with pytest.raises(SystemExit) as exc:  # a bad value of --plot: refused at once, no suite run
        main(["bench", "--quick", "--plot", str(png)])
    assert exc.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert "gpugrad bench: error: argument --plot: --plot needs matplotlib" in captured.err
    assert "pip install 'gpugrad[plot]'" in captured.err
    assert not png.exists()
    assert main(["bench", "--load", str(path)]) == 0  # without --plot, nothing is missing


def test_a_failing_benchmark_is_reported_and_exits_1(tmp_path, monkeypatch, capsys):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_tiny.py").write_text(
        "def tag(benchmark, impl):\n"
        "    benchmark.extra_info.update(workload='tiny', label='tiny sum', impl=impl, device='cpu')\n"
        "def test_passes(benchmark):\n"
        "    tag(benchmark, 'gpugrad')\n"
        "    benchmark.pedantic(sum, args=([1, 2],), rounds=3)\n"
        "def test_fails(benchmark):\n"
        "    tag(benchmark, 'numpy')\n"
        "    benchmark.pedantic(sum, args=([1, 2],), rounds=3)\n"
        "    assert False, 'the numbers disagree'\n")
    (suite / "conftest.py").write_text("")
    monkeypatch.setattr("gpugrad._tools.bench.runner.suite_dir", lambda: suite)
    assert main(["bench", "--no-progress"]) == 1
    captured = capsys.readouterr()
    assert "tiny sum" in captured.out and "gpugrad cpu" in captured.out  # the results that were measured
    assert "gpugrad: error: benchmark failed (call): test_tiny.py::test_fails: AssertionError: the numbers " \
           "disagree" in captured.err


def test_a_run_that_cannot_start_shows_pytests_last_lines(tmp_path, monkeypatch, capsys):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text("import no_such_module_for_the_test\n")
    monkeypatch.setattr("gpugrad._tools.bench.runner.suite_dir", lambda: suite)
    assert main(["bench", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("gpugrad: error: pytest exited with") and "no_such_module_for_the_test" in err


def test_a_benchmark_module_that_cannot_be_collected_fails_the_run(tmp_path, monkeypatch, capsys):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text("")
    (suite / "test_good.py").write_text(
        "def test_good(benchmark):\n"
        "    benchmark.extra_info.update(workload='w', impl='gpugrad', device='cpu')\n"
        "    benchmark.pedantic(sum, args=([1],), rounds=2)\n")
    (suite / "test_broken.py").write_text("import no_such_module_for_the_test\n")
    monkeypatch.setattr("gpugrad._tools.bench.runner.suite_dir", lambda: suite)
    assert main(["bench", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "gpugrad: error: pytest exited with" in err and "no_such_module_for_the_test" in err


def test_without_pytest_benchmark_bench_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pytest_benchmark", None)  # as if it were not installed
    assert main(["bench", "--quick", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err == ("gpugrad: error: gpugrad bench runs the suite with pytest-benchmark, which is not installed: "
                   "pip install 'gpugrad[bench]'\n")


def test_a_keyword_that_matches_nothing_is_a_bad_value(capsys):
    assert main(["bench", "-k", "no_such_benchmark_anywhere", "--no-progress"]) == 2
    assert capsys.readouterr().err == "gpugrad: error: no benchmark matched -k 'no_such_benchmark_anywhere'\n"


def test_a_report_that_is_not_json_is_a_one_line_error(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--load", str(bad)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gpugrad bench: error: argument --load: {bad} is not JSON") and err.count("\n") == 1


def test_the_quick_subset(tmp_path):
    """--quick: W1, the 256 Ki op sizes, W2, W3, the CNN step (W1, W2 and the CNN through gg.function too) and the
    optimizers; nothing at 1 Ki or 4 Mi, no W4."""
    proc = subprocess.run([sys.executable, "-m", "pytest", str(suite_dir()), "-p", "no:cacheprovider", "-o",
                           "addopts=", "--collect-only", "-q", "-m", "quick"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ids = [line for line in proc.stdout.splitlines() if "::" in line]
    names = "\n".join(ids)
    for expected in ("test_w1_gpugrad", "test_w2_gpugrad", "test_w3_gpugrad", "test_cnn_gpugrad",
                     "test_w1_gpugrad_function", "test_w2_gpugrad_function", "test_cnn_gpugrad_function", "adam",
                     "sgd_momentum", "matmul-256Ki", "softmax_cross_entropy-256Ki"):
        assert expected in names
    assert not any(s in names for s in ("1Ki", "4Mi", "test_w4", "test_g1"))
    op_ids = [i for i in ids if "test_op_gpugrad" in i]  # every op once per device, at 256 Ki only
    ops = {i.split("[", 1)[1].split("-", 1)[0] for i in op_ids}
    assert ops >= {"tanh", "sigmoid", "relu", "log", "exp", "square", "softmax_cross_entropy", "matmul", "roll"}
    assert len(op_ids) == len(ops) * len(gg.devices()) and all("-256Ki-" in i for i in op_ids)


def test_the_suites_own_checks_pass():
    """Not the timings: that every implementation of every workload computes the same thing."""
    proc = subprocess.run([sys.executable, "-m", "pytest", str(suite_dir()), "-p", "no:cacheprovider", "-o",
                           "addopts=", "-q", "--benchmark-skip"], capture_output=True, text=True, cwd=ROOT,
                          timeout=600, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert re.search(r"\b\d{2,} passed", proc.stdout), proc.stdout[-500:]


# --------------------------------------------------------------------------- check


# In a fresh interpreter: a test module that registers an op of its own must not change what they see.
CHECK_WITH_A_WRONG_TANH = """
import sys
import gpugrad as gg
from gpugrad.cli import main

def wrong(op, dy):  # the truth is dy * (1 - y^2)
    return [dy * 2.0]

gg.registry.rules["Tanh"] = wrong
sys.exit(main(["check", "--no-progress", "--device", "cpu"]))
"""


def test_check_passes_and_lists_every_registered_op():
    proc = gpugrad_command("check", "--no-progress")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    out = proc.stdout
    rows = {line.split()[0] for line in out.splitlines()[1:] if line and not line.startswith(" ")}
    registered = subprocess.run([sys.executable, "-c", "import gpugrad as gg; print(*gg.registered_ops())"],
                                capture_output=True, text=True, cwd=ROOT, timeout=120,
                                env=dict(os.environ, PYTHONPATH=str(ROOT))).stdout.split()
    assert len(registered) > 50
    missing = sorted(set(registered) - rows)
    assert not missing, missing
    assert f"specs of {len(registered)} ops" in out
    header = out.splitlines()[0].split()
    assert header == ["op", "specs"] + gg.devices()
    assert "passed: all" in out and "FAIL" not in out


def test_check_fails_on_a_wrong_gradient():
    proc = subprocess.run([sys.executable, "-c", CHECK_WITH_A_WRONG_TANH], capture_output=True, text=True,
                          cwd=ROOT, timeout=300, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr
    tanh_row = next(line for line in proc.stdout.splitlines() if line.startswith("Tanh "))
    assert tanh_row.endswith("FAIL")
    assert "FAILED:" in proc.stdout and "Tanh on cpu: max error" in proc.stdout


def test_check_names_a_registered_op_with_no_spec(capsys):
    @gg.RegisterGradient("NoSpecForTheCliTest")
    def _rule(op, dy):
        return [dy]

    try:
        assert main(["check", "--no-progress"]) == 1
    finally:
        gg.registry.rules.pop("NoSpecForTheCliTest")
    err = capsys.readouterr().err
    assert "registered ops with no spec" in err and "NoSpecForTheCliTest" in err


# --------------------------------------------------------------------------- argument errors


@pytest.mark.parametrize("argv", [
    ["bench", "--rounds", "0"],
    ["bench", "--rounds", "many"],
    ["bench", "--threads", "-2"],
    ["bench", "--max-time", "0"],
    ["bench", "--compare", "no/such/old.json"],
    ["bench", "--load", "no/such/run.json"],
    ["bench", "--json", "no/such/folder/out.json"],
    ["bench", "--plot", "no/such/folder/out.png"],
    ["bench", "--frobnicate"],
    ["check", "--tolerance", "-1"],
    ["check", "extra"],
], ids=lambda argv: " ".join(argv))
def test_bad_arguments_are_one_line_and_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gpugrad {argv[0]}: error:") and err.count("\n") == 1


def test_load_cannot_be_combined_with_run_options(quick_run, capsys):
    _, path = quick_run
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--load", str(path), "--quick", "-k", "W1"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("gpugrad bench: error: --load") and "cannot be combined with --quick, -k" in err
    assert err.count("\n") == 1


def test_check_on_a_device_that_cannot_be_used_is_one_line():
    proc = gpugrad_command("check", "--device", "tpu:0", "--no-progress")
    assert proc.returncode == 2
    assert proc.stderr == ("gpugrad check: error: argument --device: invalid device 'tpu:0': "
                           "use 'cpu', 'cuda' or 'cuda:N' (see 'gpugrad check --help')\n")


def test_help_lists_every_subcommand(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for command in ("info", "train", "bench", "check"):
        assert re.search(rf"^\s+{command}\s+\w", out, re.M), command


# --------------------------------------------------------------------------- installed from the wheel


def can_build_wheels_offline():
    """Whether this interpreter's setuptools meets pyproject's build requirement (>= 77: PEP 639 licences)."""
    try:
        return int(importlib.metadata.version("setuptools").split(".")[0]) >= 77
    except importlib.metadata.PackageNotFoundError:
        return False


def test_the_wheel_ships_the_suite_and_the_specs_and_bench_runs_from_it(tmp_path):
    src = tmp_path / "src"  # a copy: a build writes build/ and *.egg-info next to the sources
    for folder in ("gpugrad", "kernels", "benchmarks"):
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    isolation = ["--no-build-isolation"] if can_build_wheels_offline() else []  # else pip fetches setuptools
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-q", "-w",
                           str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("gpugrad-*.whl")
    listed = set(zipfile.ZipFile(wheel).namelist())
    for name in [p.name for p in (ROOT / "benchmarks").glob("*.py")]:
        assert f"gpugrad/benchmarks/{name}" in listed
    for name in [p.name for p in (ROOT / "gpugrad" / "_tools" / "op_specs").glob("*.py")]:
        assert f"gpugrad/_tools/op_specs/{name}" in listed
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)  # a pure-Python wheel unpacked is an installed package
    work = tmp_path / "elsewhere"  # not the checkout: the suite must come from the wheel
    work.mkdir()
    proc = gpugrad_command("bench", "-k", "W1 and gpugrad", "--rounds", "1", "--no-progress", cwd=work,
                           pythonpath=site)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"suite: {site / 'gpugrad' / 'benchmarks'}" in proc.stdout
    assert "W1 tape overhead" in proc.stdout and "gpugrad cpu" in proc.stdout
    proc = gpugrad_command("check", "--device", "cpu", "--no-progress", cwd=work, pythonpath=site)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    assert "passed: all" in proc.stdout
