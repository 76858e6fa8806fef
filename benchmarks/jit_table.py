"""``gg.function(jit_compile=True)``'s must-show table (issue 29) from one interleaved run, in one command::

    PYTHONPATH=. python -m benchmarks.jit_table [--json OUT.json] [--cycles N]

It runs the interleaved benchmarks of W1, W3, W2 (the digits MLP), W4 and the CNN step in one pytest run (each
times its peers in alternating blocks: NumPy by hand, eager gpugrad, ``gg.function`` unfused,
``gg.function(jit_compile=True)`` and PyTorch where installed; see ``conftest.run_interleaved``), which is::

    pytest -p no:cacheprovider benchmarks/test_tape_overhead.py benchmarks/test_large_gradient.py \\
        benchmarks/test_training_step.py benchmarks/test_cnn_step.py -k interleaved --benchmark-json=OUT.json
    python benchmarks/ratios.py --jit-table OUT.json

then prints :func:`benchmarks.ratios.jit_table_lines`: per workload each peer's median ms per call, the ratios
jit/numpy and jit/unfused, and the target each must meet. It needs numba (``pip install 'gpugrad[jit]'``): without
it there is no fused peer to time, and it says so and exits 2. ``--cycles N`` caps each benchmark's cycles
(``--gpugrad-rounds``; default 15 each), for a shorter, noisier run. The whole run takes a few minutes on 2 cores.
"""
import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILES = ("test_tape_overhead.py", "test_large_gradient.py", "test_training_step.py", "test_cnn_step.py")


def pytest_command(json_path, cycles=None):
    """The pytest command of the interleaved run."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               *(os.path.join(ROOT, "benchmarks", name) for name in FILES), "-k", "interleaved",
               f"--benchmark-json={json_path}"]
    return command + ([f"--gpugrad-rounds={cycles}"] if cycles else [])


def main(argv=None):
    parser = argparse.ArgumentParser(description="gg.function(jit_compile=True)'s must-show table, one interleaved run")
    parser.add_argument("--json", help="keep the benchmark JSON here (default: a temporary file)")
    parser.add_argument("--cycles", type=int, help="at most N cycles per benchmark (default: each one's own, 15)")
    args = parser.parse_args(argv)
    if args.cycles is not None and args.cycles < 1:
        print(f"jit_table: --cycles must be at least 1, not {args.cycles}", file=sys.stderr)
        return 2
    if importlib.util.find_spec("numba") is None:
        print("jit_table: numba is not installed, so there is no gg.function(jit_compile=True) peer to time: "
              "pip install 'gpugrad[jit]'", file=sys.stderr)
        return 2
    from . import ratios

    with tempfile.TemporaryDirectory() as scratch:
        json_path = args.json or os.path.join(scratch, "interleaved.json")
        done = subprocess.run(pytest_command(json_path, args.cycles), cwd=ROOT)
        if done.returncode != 0:
            print(f"jit_table: the interleaved benchmarks failed (pytest exit {done.returncode})", file=sys.stderr)
            return 1
        return ratios.main(["--jit-table", json_path])


if __name__ == "__main__":
    sys.exit(main())
