#!/usr/bin/env python3
"""One prepared command for a lent GPU machine: the GPU tests, then benchmark G1, then a short table.

Run from the repository root, gpugrad not installed::

    PYTHONPATH=. python3 benchmarks/gpu_check.py [--budget SECONDS]

Parts, each in a process of its own with a time limit cut from one overall
budget (default 225 s, so the whole command ends in under 4 minutes); a part
that fails, crashes or runs out of time does not stop the next:

1. environment: Python, NumPy, CuPy, the GPU, ``gg.devices()``;
2. ``tests/test_gpu.py`` without its spec table: fused kernels against the CPU
   path (float16/32/64), fused against unfused CuPy, the update kernels,
   round trips and DLPack, device errors;
3. benchmark G1 (``benchmarks/g1_fused_kernels.py``): every kernel at 64 Mi
   float32, bandwidth against a device-to-device copy, speed against unfused;
4. the whole table-driven gradient check on ``"cuda"`` (every spec's values and
   gradients GPU against CPU, then ``tests/test_gradients.py``'s cuda params),
   then every other test marked ``gpu`` in ``tests/``. It runs last because
   compiling CuPy's kernels for every op on a fresh machine takes most of its
   time; whatever the budget leaves is its limit.

Logs, the pytest JUnit XML files and ``g1.json`` go to ``$OUT`` when it is set
(else ``$TMPDIR/gpugrad-gpu-check/``); the summary table is printed last. Exit status 0
only when every part passed.
"""
import argparse
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Part:
    """One step's outcome."""

    def __init__(self, name):
        self.name, self.status, self.seconds, self.detail, self.lines = name, "not run", 0.0, "", []


def run_part(part, cmd, timeout, log_path, env, echo=True):
    """Run ``cmd`` with ``timeout``, streaming its output to the console and ``log_path``.

    Sets ``part.status`` to passed / failed (exit N) / timed out / error; never raises.
    """
    start = time.monotonic()
    if timeout < 5:
        part.status, part.detail = "not run", "no time left in the budget"
        return part
    try:
        with open(log_path, "w") as log:
            log.write("$ " + " ".join(cmd) + "\n")
            proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, errors="replace", start_new_session=True)

            def pump():
                for line in proc.stdout:
                    part.lines.append(line)
                    log.write(line)
                    if echo:
                        sys.stdout.write(line)
                        sys.stdout.flush()

            reader = threading.Thread(target=pump, daemon=True)
            reader.start()
            try:
                code = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                code = None
            reader.join(timeout=10)
    except Exception as exc:  # a part that cannot even start is reported, not raised
        part.status, part.detail = "error", f"{type(exc).__name__}: {exc}"
        part.seconds = time.monotonic() - start
        return part
    part.seconds = time.monotonic() - start
    if code is None:
        part.status = f"timed out ({timeout:.0f} s)"
    else:
        part.status = "passed" if code == 0 else f"failed (exit {code})"
    summary = pytest_summary(part.lines)
    if summary:
        part.detail = summary
        if part.status == "passed" and not re.search(r"\d+ passed", summary):
            part.status = "nothing passed"  # e.g. every test skipped: no GPU was found
    return part


def pytest_summary(lines):
    """The last pytest result line, e.g. '270 passed, 2 skipped in 41.2s', or ''."""
    for line in reversed(lines):
        text = line.strip().strip("=").strip()
        if re.search(r"\d+ (passed|failed|error|skipped|deselected)", text) and " in " in text:
            return text
    progress = [line for line in lines if re.search(r"\[\s*\d+%\]\s*$", line)]
    return f"stopped at {progress[-1].strip()[-6:]}" if progress else ""


def environment():
    """A few lines on the machine, gpugrad's view of it, and the GPU."""
    lines = [f"python {platform.python_version()} on {platform.machine()}"]
    try:
        import numpy

        lines.append(f"numpy {numpy.__version__}")
    except Exception as exc:
        lines.append(f"numpy: {exc}")
    try:
        import cupy

        runtime = cupy.cuda.runtime
        props = runtime.getDeviceProperties(0)
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        lines.append(f"cupy {cupy.__version__}, CUDA runtime {runtime.runtimeGetVersion()}, driver "
                     f"{runtime.driverGetVersion()}, {runtime.getDeviceCount()} GPU(s): {name}, "
                     f"sm_{props['major']}{props['minor']}, {props['totalGlobalMem'] / 2**30:.0f} GiB")
    except Exception as exc:
        lines.append(f"cupy/GPU: {type(exc).__name__}: {exc}")
    try:
        import gpugrad as gg

        lines.append(f"gpugrad {gg.__version__} from {os.path.dirname(gg.__file__)}; devices {gg.devices()}")
    except Exception as exc:
        lines.append(f"gpugrad: {type(exc).__name__}: {exc}")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget", type=float, default=225.0, help="seconds for the whole command")
    parser.add_argument("--quiet", action="store_true", help="do not echo the parts' output (logs keep it)")
    parser.add_argument("--pytest-arg", action="append", default=[], metavar="ARG",
                        help="one more argument for every pytest run (repeat it), e.g. -W default::DeprecationWarning")
    parser.add_argument("--environment", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.environment:  # part 1, in its own process
        sys.path.insert(0, ROOT)
        print("\n".join(environment()), flush=True)
        return 0
    deadline = time.monotonic() + args.budget
    out = os.environ.get("OUT") or os.path.join(tempfile.gettempdir(), "gpugrad-gpu-check")
    os.makedirs(out, exist_ok=True)
    sys.path.insert(0, ROOT)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")]))
    env.setdefault("CUPY_CACHE_DIR", "/tmp/gpugrad-cupy-cache")  # shared by the parts; kept on a warm machine
    env.pop("GPUGRAD_DEVICE", None)
    os.environ.update(CUPY_CACHE_DIR=env["CUPY_CACHE_DIR"])
    py = sys.executable
    pytest_base = [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfEs", "--tb=short", "-o", "addopts=",
                   *args.pytest_arg]
    parts = []

    print("== 1/4 environment", flush=True)
    env_part = run_part(Part("environment"), [py, os.path.abspath(__file__), "--environment"], 60.0,
                        os.path.join(out, "environment.txt"), env, True)
    env_part.detail = env_part.lines[-1].strip() if env_part.lines else env_part.detail
    parts.append(env_part)

    def remaining(reserve):
        return deadline - time.monotonic() - reserve

    print("\n== 2/4 GPU tests: tests/test_gpu.py (fused kernels, round trips, devices)", flush=True)
    parts.append(run_part(Part("GPU tests"), pytest_base + [
        "tests/test_gpu.py", "-k", "not gradients_on_gpu", "--continue-on-collection-errors",
        f"--junitxml={os.path.join(out, 'test_gpu.xml')}"],
        min(100.0, remaining(110)), os.path.join(out, "test_gpu.log"), env, not args.quiet))

    print("\n== 3/4 benchmark G1 (64 Mi float32 per kernel)", flush=True)
    g1_json = os.path.join(out, "g1.json")
    parts.append(run_part(Part("benchmark G1"), [py, os.path.join(ROOT, "benchmarks", "g1_fused_kernels.py"),
                                                  "--json", g1_json],
                          min(90.0, remaining(35)), os.path.join(out, "g1.log"), env, not args.quiet))

    print("\n== 4/4 gradient table on cuda (every spec GPU vs CPU, tests/test_gradients.py [cuda]), "
          "then the other gpu-marked tests", flush=True)
    others = sorted(f"tests/{f}" for f in os.listdir(os.path.join(ROOT, "tests"))
                    if f.startswith("test_") and f.endswith(".py") and f not in ("test_gpu.py", "test_gradients.py"))
    parts.append(run_part(Part("gradient table + other GPU tests"), pytest_base + [
        "-m", "gpu", "--continue-on-collection-errors", "tests/test_gpu.py::test_gradients_on_gpu_match_the_cpu",
        # the 10,000-step memory soak (about 25 s on an H200) ran on an H200 before; run it by hand
        "--deselect", "tests/test_memory.py::test_ten_thousand_training_steps_on_the_gpu_keep_the_memory_pool_flat",
        "tests/test_gradients.py", *others, f"--junitxml={os.path.join(out, 'test_gradients_cuda.xml')}"],
        remaining(5), os.path.join(out, "test_gradients_cuda.log"), env, not args.quiet))

    print("\n== summary", flush=True)
    width = max(len(p.name) for p in parts)
    lines = [f"{p.name:<{width}}  {p.status:<20} {p.seconds:6.1f} s  {p.detail}" for p in parts]
    try:
        sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
        import g1_fused_kernels as g1

        with open(g1_json) as f:
            result = json.load(f)
        partial = " -- PARTIAL: the run stopped early" if result.get("partial") else ""
        lines += ["", f"G1 on {result['device']} ({result['n'] / 2**20:g} Mi float32; copy "
                      f"{result['copy_gbps']:.0f} GB/s){partial}", g1.table(result["rows"])]
    except Exception as exc:
        lines += ["", f"G1 table: not available ({type(exc).__name__}: {exc})"]
    text = "\n".join(lines)
    print(text, flush=True)
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write(text + "\n")
    print(f"\nlogs in {out}", flush=True)
    return 0 if all(p.status == "passed" for p in parts) else 1


if __name__ == "__main__":
    sys.exit(main())
