"""The ``gpugrad`` command: one small function per subcommand.

- ``gpugrad info``: versions, devices (each GPU's name, memory and compute
  capability), backends, fused kernels and the compiled-kernel cache;
- ``gpugrad train``: the main job, a digits classifier;
- ``gpugrad bench``: the benchmark suite as one device-comparison table;
- ``gpugrad check``: the gradient check of every registered op on every device.

Every bad value of an option, from a flag or from the environment, prints one
line and exits with 2 (argparse's code): a flag's value, a combination of flags,
and ``GPUGRAD_DEVICE``, ``GPUGRAD_NUM_THREADS`` or ``GPUGRAD_DISTRIBUTED_TIMEOUT``
(checked before any subcommand runs); a gpugrad error while a subcommand runs
prints one line and exits with 1. Progress bars go to stderr,
and only when stderr is a terminal; in a pipe or a file they are plain lines.

Example:
    >>> main(["info"])  # doctest: +ELLIPSIS
    gpugrad ...
    0
"""
import argparse
import os
import platform
import sys
import time

import numpy as np

import gpugrad as gg
from .errors import GpugradError


# --------------------------------------------------------------------------- info


def cmd_info(args):
    """Print what gpugrad sees on this machine; return the exit code."""
    lines = [f"gpugrad {gg.__version__} (Python {platform.python_version()})"]
    lines.append(f"devices: {', '.join(gg.devices())}")
    lines.append("backends:")
    lines.append(f"  numpy {np.__version__} (cpu; large elementwise ops on {gg.get_num_threads()} threads)")
    lines.append(f"  {_cupy_line()}")
    lines.extend(f"    {line}" for line in _gpu_lines())
    default = gg.get_device(None)  # the default Device: its name and backend
    lines.append(f"default device: {default.name} ({default.backend.name} backend)")
    lines.append(_fused_kernels_line())
    lines.append(kernel_cache_line())
    lines.append(f"ops: {len(gg.registered_ops())} with registered gradients, "
                 f"{len(gg.registry.not_differentiable_ops())} not differentiable")
    print("\n".join(lines))
    return 0


def _cupy_line():
    """One line on CuPy: its version and GPUs, or why gpugrad cannot use a GPU."""
    from .backend import cupy_backend

    reason = cupy_backend.unavailable_reason()
    version = _cupy_version()
    if reason is None:
        gpus = [d for d in gg.devices() if d.startswith("cuda")]
        return f"cupy {version} ({', '.join(gpus)})"
    if version is None:
        return f"cupy: not used: {reason}"
    return f"cupy {version}: no GPU: {reason}"


def _cupy_version():
    try:
        import cupy
    except Exception:  # not installed, or broken: unavailable_reason() says which
        return None
    return getattr(cupy, "__version__", "unknown version")


def _gpu_lines():
    """One :func:`gpu_line` per GPU that CuPy can use (none without one)."""
    from .backend import cupy_backend

    if cupy_backend.unavailable_reason() is not None:
        return []
    import cupy

    runtime = cupy.cuda.runtime
    return [gpu_line(i, runtime.getDeviceProperties(i)) for i in range(runtime.getDeviceCount())]


def gpu_line(index, properties):
    """A GPU's name, memory and compute capability from CUDA's device properties (CuPy's dict).

    Example:
        >>> gpu_line(0, {"name": b"NVIDIA H200", "totalGlobalMem": 150 * 2**30, "major": 9, "minor": 0})
        'cuda:0: NVIDIA H200, 150.0 GiB, compute capability 9.0'
    """
    name = properties.get("name", b"unknown GPU")
    name = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
    memory = properties.get("totalGlobalMem", 0) / 2**30
    return (f"cuda:{index}: {name}, {memory:.1f} GiB, compute capability "
            f"{properties.get('major', '?')}.{properties.get('minor', '?')}")


def _fused_kernels_line():
    from .backend import kernel_source

    try:
        folder = kernel_source.kernels_dir()
    except GpugradError as exc:
        return f"fused kernels: none found ({exc})"
    files = len(kernel_source.names(folder))
    return (f"fused kernels: {len(kernel_source.names())} ({files} files in {folder}, "
            f"{len(kernel_source.names()) - files} generated from declared expressions)")


def kernel_cache_line(environ=None):
    """Where CuPy keeps compiled kernels (``CUPY_CACHE_DIR``, else ``~/.cupy/kernel_cache``) and how many.

    Example:
        >>> kernel_cache_line({"CUPY_CACHE_DIR": "/nonexistent/cache"})
        'kernel cache: /nonexistent/cache (not created yet)'
    """
    environ = os.environ if environ is None else environ
    path = environ.get("CUPY_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cupy", "kernel_cache")
    if not os.path.isdir(path):
        return f"kernel cache: {path} (not created yet)"
    count = sum(len(files) for _, _, files in os.walk(path))
    return f"kernel cache: {path} ({count} compiled kernel file{'' if count == 1 else 's'})"


# --------------------------------------------------------------------------- train


def cmd_train(args):
    """Train a digits classifier (``gpugrad train``); print progress and a final line; return the exit code.

    The progress goes to stderr; stdout holds the final line and where the weights went, or with
    ``--json`` one JSON object and nothing else; ``--quiet`` prints nothing but errors.
    """
    import json

    from .training import train

    history = bool(args.json or args.plot) and args.model != "gpt"  # the gpt run reports its own figures
    extra = dict(history=True) if history else {}
    if args.profile:
        extra["profile"] = True
    if args.jit:
        extra["jit"] = True
    result = train(args.model, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                   optimizer=args.optimizer, device=args.device, seed=args.seed, save=args.save,
                   progress=not (args.no_progress or args.quiet), eager=args.eager,
                   precision=args.precision, **extra)
    from . import distributed
    if distributed.rank() == 0:  # under mpiexec: one report, of the whole world
        if args.plot:
            from ._tools.curves import write_curves

            write_curves(result.history, args.plot, f"gpugrad train --model {result.model}: {result.epochs} epochs "
                                                    f"on {result.where}, test accuracy {result.test_accuracy:.2%}")
        if args.json:
            summary = dict(result.summary_dict(), saved=args.save)
            if args.profile:
                summary["profile"] = {"epoch": result.profile_epoch, "wall_ms": result.profile.wall_ms,
                                      "entries": result.profile.entries()}
            print(json.dumps(dict(summary, plot=args.plot)))
        elif not args.quiet:
            print(result.summary())
            if args.save:
                print(f"weights saved to {args.save}")
            if args.plot:
                print(f"training curves in {args.plot}")
            if args.profile:
                print(_profile_title(result))
                print(result.profile.table())
    return 0


def _profile_title(result):
    """The line above ``--profile``'s table: which epoch, and why that one.

    Example:
        >>> from types import SimpleNamespace
        >>> _profile_title(SimpleNamespace(profile_epoch=2, epochs=15, eager=False))
        'profile of epoch 2 of 15 (the first after the warm-up epoch, which traces the step with gg.function):'
    """
    if result.profile_epoch == 1:
        why = "the only one: its first steps trace the step" if not result.eager else "the only one"
    else:
        why = ("the first after the warm-up epoch, which traces the step with gg.function" if not result.eager
               else "the first after the warm-up epoch")
    return f"profile of epoch {result.profile_epoch} of {result.epochs} ({why}):"


# --------------------------------------------------------------------------- bench


def _bench_distributed(folder):
    """``gpugrad bench`` under ``mpiexec -n N``: allreduce bandwidth and the W4 step on the world, printed by rank 0."""
    import runpy

    runpy.run_path(str(folder / "distributed_bench.py"), run_name="__main__")
    return 0


def cmd_bench(args):
    """Run the benchmark suite (or show a saved run) as one table; ``--json``, ``--plot``, ``--compare``."""
    from ._tools.bench import plot, report
    from ._tools.bench.runner import run_suite, suite_dir
    from .distributed.world import launched_under_mpi

    if launched_under_mpi() and not args.load:  # under mpiexec: the collectives and the data-parallel step
        return _bench_distributed(suite_dir())
    old = report.load(args.compare) if args.compare else None
    failures = []
    if args.load:
        results = report.load(args.load)
        title = f"gpugrad bench: {args.load}"
    else:
        from ._tools.bench.runner import NothingMatched

        bar = _Progress(not args.no_progress, "bench", plain=True)
        try:
            run = run_suite(args.json, quick=args.quick, keyword=args.keyword, rounds=args.rounds,
                            max_time=args.max_time, threads=args.threads, on_event=bar.event)
        except NothingMatched as exc:  # a -k that selects nothing is a bad value of -k
            print(f"gpugrad: error: {exc}", file=sys.stderr)
            return 2
        finally:
            bar.close()
        results, failures = run.report, run.failures
        measured = len(report.collect(results).cells)
        title = (f"gpugrad bench{' --quick' if args.quick else ''}: {measured} results in {run.seconds:.1f} s "
                 f"(wall time of the pytest run)")
    lines = [title] + ([] if args.load else [f"suite: {suite_dir()}"]) + report.header_lines(results)
    lines += [""] + report.table_lines(results, old)
    interleaved = report.interleaved_lines(results)
    lines += [""] + interleaved if interleaved else []
    lines += [""] + report.legend_lines(results, args.compare)
    print("\n".join(lines))
    if args.json and args.load:
        _write_json(results, args.json)
    if args.json:
        print(f"JSON report (pytest-benchmark format) in {args.json}")
    if args.plot:
        plot.write_plot(results, args.plot, title.split(":")[0])
        print(f"bar chart in {args.plot}")
    for nodeid, phase, message in failures:
        print(f"gpugrad: error: benchmark failed ({phase}): {nodeid}: {message}", file=sys.stderr)
    if not args.load and run.returncode != 0 and not failures:  # say, a module that could not be collected
        tail = "\n".join(run.log.splitlines()[-20:])
        print(f"gpugrad: error: pytest exited with {run.returncode}; its last lines:\n{tail}", file=sys.stderr)
        return 1
    return 1 if failures else 0


def _write_json(report, path):
    import json

    with open(path, "w") as f:
        json.dump(report, f, indent=2)


class _Progress:
    """tqdm on stderr (the ``progress`` extra) while a run goes, when stderr is a terminal; else (a pipe, a
    file, or no tqdm) a plain line per step when ``plain``, and nothing otherwise."""

    def __init__(self, enabled, unit, plain=False):
        from .training import is_terminal

        self.enabled, self.unit, self.plain = enabled, unit, plain
        self.total, self.done, self.bar = None, 0, None
        self.tqdm = None
        if enabled and is_terminal(sys.stderr):
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            self.tqdm = tqdm

    def start(self, total):
        self.total = total
        if self.tqdm is not None:
            self.bar = self.tqdm(total=total, unit=self.unit, file=sys.stderr, dynamic_ncols=True, leave=False,
                                 mininterval=0.2)

    def advance(self, text):
        self.done += 1
        if self.bar is not None:
            self.bar.set_postfix_str(text[-60:], refresh=False)
            self.bar.update(1)
        elif self.enabled and self.plain:
            print(f"[{self.done:>{len(str(self.total or 0))}}/{self.total or '?'}] {text}", file=sys.stderr, flush=True)

    def event(self, fields):
        """One event of :mod:`gpugrad._tools.bench.plugin`: ``("total", n)`` or ``("done", nodeid)``."""
        if fields[0] == "total":
            self.start(int(fields[1]))
        elif fields[0] == "done":
            self.advance(fields[1].rpartition("/")[2])

    def close(self):
        if self.bar is not None:
            self.bar.close()


# --------------------------------------------------------------------------- check


def cmd_check(args):
    """Gradient-check every registered op on every device (first order, float64); print the table."""
    from ._tools.op_specs import ALL_SPECS
    from ._tools import gradcheck as check

    missing = check.missing_specs(ALL_SPECS)
    if missing:
        print(f"gpugrad: error: registered ops with no spec in gpugrad/_tools/op_specs: {', '.join(missing)}",
              file=sys.stderr)
        return 1
    devices = [gg.get_device(d).name for d in args.device] if args.device else gg.devices()
    bar = _Progress(not args.no_progress, "spec")
    bar.start(len(devices) * len(ALL_SPECS))
    start = time.perf_counter()
    results = check.run_checks(ALL_SPECS, devices, args.tolerance, on_result=lambda r: bar.advance(r.spec_id))
    bar.close()
    failed = [r for r in results if not r.passed]
    lines = check.table_lines(results, devices)
    n_ops = len({r.op_type for r in results})
    lines.append("")
    lines.append(f"first-order gradients in float64 against central differences (step {check.DELTA:g}); a spec "
                 f"passes at max error <= {args.tolerance:g} x max(1, largest numerical entry)")
    if failed:
        lines.append(f"FAILED: {len(failed)} of {len(results)} checks ({len(ALL_SPECS)} specs of {n_ops} ops on "
                     f"{', '.join(devices)}, {time.perf_counter() - start:.1f} s)")
        lines += [f"  {r.spec_id} on {r.device}: " + (r.problem or f"max error {r.error:.3g} > {r.limit:.3g}")
                  for r in failed]
    else:
        lines.append(f"passed: all {len(ALL_SPECS)} specs of {n_ops} ops on {', '.join(devices)} "
                     f"({time.perf_counter() - start:.1f} s)")
    print("\n".join(lines))
    return 1 if failed else 0


# --------------------------------------------------------------------------- the parser


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _positive_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid float value: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, not {text}")
    return value


def _usable_device(text):
    """A ``--device`` value this machine can use (as ``GPUGRAD_DEVICE`` is checked): a malformed name or a GPU the
    machine lacks is a usage error (exit 2, one line), from the flag as from the environment."""
    from .backend import get_device
    from .errors import DeviceError, DeviceUnavailableError

    try:
        get_device(text)
    except (DeviceError, DeviceUnavailableError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _existing_file(text):
    if not os.path.isfile(text):
        raise argparse.ArgumentTypeError(f"no such file: {text!r}")
    return text


def _bench_report(text):
    """A pytest-benchmark JSON file (``--compare``, ``--load``): one that is missing or is not such a report
    is a bad value, refused before anything runs."""
    from ._tools.bench.report import ReportError, load

    _existing_file(text)
    try:
        load(text)
    except ReportError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _plot_path(text):
    """A ``--plot`` file: writable (:func:`_writable_path`), and matplotlib (the ``plot`` extra) installed."""
    from ._tools.bench.plot import matplotlib_missing

    _writable_path(text)
    missing = matplotlib_missing()
    if missing:
        raise argparse.ArgumentTypeError(missing)
    return text


def _curves_path(text):
    """``gpugrad train --plot``'s file: as :func:`_plot_path`, with a suffix matplotlib writes the format of."""
    from ._tools.curves import FORMATS

    if os.path.splitext(text)[1].lower() not in FORMATS:
        raise argparse.ArgumentTypeError(f"{text!r} must end in {', '.join(FORMATS)} (the image's format)")
    return _plot_path(text)


def _keyword_expression(text):
    """A pytest ``-k`` expression, checked by pytest's own parser where this pytest has it."""
    try:
        from _pytest.mark.expression import Expression
    except ImportError:  # no pytest (bench then says what to install), or a pytest without this parser
        return text
    try:
        Expression.compile(text)
    except Exception as exc:  # pytest's ParseError (SyntaxError from pytest 8.4)
        raise argparse.ArgumentTypeError(f"not a pytest -k expression: {exc}") from None
    return text


def _writable_path(text):
    """``text`` when a file can be written there: its folder exists and is writable, and it is no folder."""
    folder = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"the folder of {text!r} does not exist")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text!r} is a folder, not a file name")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"the folder of {text!r} is not writable")
    if os.path.exists(text) and not os.access(text, os.W_OK):
        raise argparse.ArgumentTypeError(f"{text!r} exists and is not writable")
    return text


def seed_value(text):
    """A seed as NumPy's ``SeedSequence`` takes it: a whole number >= 0, of any size (decimal digits).

    Negative numbers, fractions, exponents (``1e3``) and words are refused, as
    ``np.random.default_rng`` refuses negative and non-integer seeds.

    Example:
        >>> seed_value("42"), seed_value(str(2**128)) == 2**128
        (42, True)
        >>> seed_value("-1")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: must be a whole number >= 0 (NumPy's SeedSequence takes no negative seeds), not -1
    """
    digits = text.strip()
    if digits.startswith("-") and digits[1:].isascii() and digits[1:].isdigit():
        raise argparse.ArgumentTypeError(
            f"must be a whole number >= 0 (NumPy's SeedSequence takes no negative seeds), not {text.strip()}")
    if digits.startswith("+"):
        digits = digits[1:]
    if not (digits.isascii() and digits.isdigit()):
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0 written in digits, not {text!r}")
    try:
        value = int(digits)
    except ValueError:  # past Python's limit on the digits of an int (sys.get_int_max_str_digits())
        limit = getattr(sys, "get_int_max_str_digits", lambda: 4300)()
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0 of at most {limit} digits, "
                                         f"not one of {len(digits)}") from None
    np.random.SeedSequence(value)  # what the run seeds with: any int >= 0 is accepted
    return value


def _add_info(sub):
    info = sub.add_parser(
        "info", help="print versions, devices, backends, fused kernels and the kernel cache",
        description="Print gpugrad's version, the usable devices (each GPU's name, memory and compute "
                    "capability), the backends, the fused kernels shipped, where CuPy caches compiled kernels "
                    "and how many it holds, and the number of registered ops.")
    info.set_defaults(run=cmd_info, parser=info)


def _add_train(sub):
    from .gpt import DEFAULTS as GPT_DEFAULTS
    from .training import DEFAULTS, MODELS, OPTIMIZERS, PRECISIONS

    train = sub.add_parser(
        "train", help="train a small classifier on the embedded 8x8 digits and print its test accuracy",
        description="Train a classifier on the embedded 8x8 handwritten digits (1,438 training and 359 "
                    "test images, no download) on the default device (the first GPU, else the CPU), "
                    "then print the test accuracy, the time and the device.")
    train.add_argument("--model", choices=MODELS, default="mlp",
                       help="mlp: 64-256-256-10 ReLU; cnn: two 3x3 convolutions, pooling, two dense layers; "
                            "gpt: a 2-layer character transformer on the embedded Tiny Shakespeare, reporting "
                            "validation bits per character and a sample (default: mlp)")
    train.add_argument("--epochs", type=_positive_int, help="passes over the training images "
                       f"(default: {DEFAULTS['mlp']['epochs']} for mlp, {DEFAULTS['cnn']['epochs']} for cnn); for gpt, "
                       f"rounds of 100 steps (default: {GPT_DEFAULTS['epochs']})")
    train.add_argument("--batch-size", type=_positive_int, help="images per step (default: 64); for gpt, windows of 64 "
                       "characters per step (default: 32)")
    train.add_argument("--lr", type=_positive_float, help="learning rate (default: 0.001 for mlp, 0.002 for cnn, "
                       "for gpt 0.003: the peak after the warm-up)")
    train.add_argument("--optimizer", choices=OPTIMIZERS, help="default: adam")
    train.add_argument("--device", type=_usable_device, help="cpu, cuda or cuda:N (default: GPUGRAD_DEVICE, else the first GPU, "
                       "else the CPU)")
    train.add_argument("--seed", type=seed_value, default=0,
                       help="seed of the weights and the batch order: a whole number >= 0, as NumPy's "
                            "SeedSequence takes (default: 0)")
    train.add_argument("--save", metavar="PATH", type=_writable_path,
                       help="write the trained weights to this .npz file (its folder must exist and be writable; "
                            "checked before training)")
    train.add_argument("--no-progress", action="store_true", help="no progress bar, only the final line")
    train.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")
    train.add_argument("--json", action="store_true",
                       help="print the result as one JSON object on stdout (model, device, ranks, epochs, steps, "
                            "seed, eager, accuracy, train_accuracy, loss, time, samples_per_second, precision, loss_scale, "
                            "history: one object per epoch with epoch, loss, test_loss, train_accuracy, test_accuracy "
                            "and seconds, saved, plot) and "
                            "nothing else there; progress still goes to stderr unless --quiet or --no-progress")
    train.add_argument("--eager", action="store_true",
                       help="run each step op by op instead of through gg.function (traced once, replayed)")
    train.add_argument("--jit", action="store_true",
                       help="fuse each step's elementwise runs into generated kernels (gg.function(jit_compile=True); "
                            "numba on the CPU: pip install 'gpugrad[jit]')")
    train.add_argument("--precision", choices=tuple(PRECISIONS), default="float32",
                       help="float32 (default); mixed16: matmuls and convolutions in float16 with float32 weights and "
                            "dynamic loss scaling (the scale's skips and growths in the final line and --json); "
                            "bf16: the same in bfloat16, unscaled")
    train.add_argument("--plot", metavar="PATH", type=_curves_path,
                       help="draw the loss (train and test) and accuracy (train and test) per epoch into this .png, "
                            ".svg or .pdf (needs matplotlib: pip install 'gpugrad[plot]'); not for gpt")
    train.add_argument("--profile", action="store_true",
                       help="profile one epoch with gg.profile() (the second: the first after the warm-up epoch, "
                            "which traces the step; the first when there is one) and print its table after the "
                            "final line (with --json: a \"profile\" object); not for gpt")
    train.set_defaults(run=cmd_train, parser=train)


def _add_bench(sub):
    from ._tools.bench.runner import QUICK_MAX_TIME

    bench = sub.add_parser(
        "bench", help="run the benchmark suite and print one device-comparison table",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run gpugrad's benchmark suite (pytest-benchmark) on every usable device, with the\n"
                    "hand-written NumPy (CuPy on a GPU) baseline and PyTorch (when installed) beside it,\n"
                    "and print one table: a row per workload, a column per implementation and device\n"
                    "(median time of a call ± interquartile range), and speedup columns.",
        epilog="examples:\n"
               "  gpugrad bench --quick                         the subset, about a minute on 2 CPU cores\n"
               "  gpugrad bench --json run.json --plot run.png  the whole suite, saved and drawn\n"
               "  gpugrad bench --quick --compare run.json      the change against an earlier run\n"
               "  gpugrad bench --load run.json                 the table of a saved run")
    run = bench.add_argument_group("what to run")
    run.add_argument("--quick", action="store_true",
                     help=f"a subset (the 256 Ki op sizes, W1-W3, the CNN step, the optimizers) with about "
                          f"{QUICK_MAX_TIME:g} s of rounds per benchmark: under a minute on two CPU cores")
    run.add_argument("-k", dest="keyword", metavar="EXPRESSION", type=_keyword_expression,
                     help="only the benchmarks whose name matches this pytest -k expression, e.g. 'tanh and 1Ki'")
    run.add_argument("--rounds", type=_positive_int, metavar="N", help="at most N timed rounds per benchmark")
    run.add_argument("--max-time", type=_positive_float, metavar="SECONDS",
                     help="about SECONDS of timed rounds per benchmark, at least 5 rounds "
                          f"(default: each benchmark's own rounds; {QUICK_MAX_TIME:g} with --quick)")
    run.add_argument("--threads", type=_positive_int, metavar="N",
                     help="threads of NumPy's BLAS, PyTorch and gpugrad's elementwise CPU ops (OMP_NUM_THREADS, "
                          "OPENBLAS_NUM_THREADS, MKL_NUM_THREADS, GPUGRAD_NUM_THREADS; default: the libraries' own)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    out = bench.add_argument_group("output")
    out.add_argument("--json", type=_writable_path, metavar="PATH",
                     help="write the results as pytest-benchmark JSON (readable by --compare and --load)")
    out.add_argument("--plot", type=_plot_path, metavar="PATH",
                     help="write a PNG bar chart of the speed ratios: gpugrad against each peer, gg.function "
                          "against eager, the GPU against the CPU (needs matplotlib: pip install 'gpugrad[plot]')")
    out.add_argument("--compare", type=_bench_report, metavar="OLD_JSON",
                     help="show each median's change against an earlier --json (or pytest --benchmark-json) file")
    out.add_argument("--load", type=_bench_report, metavar="JSON",
                     help="show the table of a saved run instead of running the suite")
    bench.set_defaults(run=cmd_bench, parser=bench)


def _add_check(sub):
    from ._tools.gradcheck import TOLERANCE

    check = sub.add_parser(
        "check", help="gradient-check every registered op on every device",
        description="Compare the gradient of every registered op (the spec table of gpugrad._tools.op_specs) "
                    "with central differences, first order in float64, on every usable device, and print a "
                    "table of the largest errors. Exits with 1 when a check fails.")
    check.add_argument("--device", action="append", metavar="DEVICE", type=_usable_device,
                       help="check on this device only (cpu, cuda, cuda:N); repeat for several "
                            "(default: every usable device)")
    check.add_argument("--tolerance", type=_positive_float, default=TOLERANCE, metavar="TOL",
                       help=f"largest error allowed, relative to max(1, largest Jacobian entry) "
                            f"(default: {TOLERANCE:g})")
    check.add_argument("--no-progress", action="store_true", help="no progress bar")
    check.set_defaults(run=cmd_check, parser=check)


def build_parser():
    """The argument parser: one subparser per subcommand.

    Example:
        >>> build_parser().parse_args(["info"]).command
        'info'
    """
    parser = _Parser(
        prog="gpugrad",
        description="Reverse-mode automatic differentiation on CuPy (NVIDIA GPUs) and NumPy (CPU).",
        epilog="Run 'gpugrad COMMAND --help' for the options of a command.")
    parser.add_argument("--version", action="version", version=f"gpugrad {gg.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_info(sub)
    _add_train(sub)
    _add_bench(sub)
    _add_check(sub)
    return parser


class _Parser(argparse.ArgumentParser):
    """argparse's parser whose usage errors are one line (``gpugrad train: error: ...``), exit code 2, as the
    environment's errors are; its subcommands' parsers are of this class too."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def train_conflicts(args):
    """The flags of ``gpugrad train`` that cannot go together, one sentence (None: they can).

    Example:
        >>> args = build_parser().parse_args(["train", "--model", "gpt", "--precision", "bf16"])
        >>> train_conflicts(args)
        '--model gpt trains in float32 only, not --precision bf16'
    """
    if args.model == "gpt":
        if args.precision != "float32":
            return f"--model gpt trains in float32 only, not --precision {args.precision}"
        if args.optimizer not in (None, "adamw"):
            return f"--model gpt trains with AdamW (a warm-up and cosine schedule), not --optimizer {args.optimizer}"
        for flag in ("plot", "profile"):
            if getattr(args, flag):
                return f"--{flag} is for mlp and cnn: --model gpt reports no per-epoch history and is not profiled"
    if args.quiet and args.profile:
        return "--quiet prints nothing but errors: it cannot be combined with --profile, whose table it would hide"
    if args.jit and (args.eager or args.model == "gpt"):
        return "--jit fuses the traced step of the mlp and cnn models: not with --eager or --model gpt"
    return None


def _environment_problems():
    """What is wrong with the environment variables the command reads, one sentence each."""
    from .backend import environment_problems
    from .distributed.world import DistributedError, timeout_from

    problems = environment_problems()
    try:
        timeout_from(os.environ.get("GPUGRAD_DISTRIBUTED_TIMEOUT"))
    except DistributedError as exc:
        problems.append(str(exc))
    return problems


_RUN_OPTIONS = ("quick", "keyword", "rounds", "max_time", "threads")


def main(argv=None):
    """Run the ``gpugrad`` command line with ``argv`` (default: ``sys.argv[1:]``); return the exit code.

    Example:
        >>> main(["info"])  # doctest: +ELLIPSIS
        gpugrad ...
        default device: ...
        0
    """
    args, extra = build_parser().parse_known_args(argv)
    if extra:  # reported by the subcommand's parser, with its usage line
        args.parser.error(f"unrecognized arguments: {' '.join(extra)}")
    problems = _environment_problems()
    if problems:  # before anything runs: every subcommand reads them
        print(f"gpugrad: error: {'; '.join(problems)}", file=sys.stderr)
        return 2
    if args.command == "bench" and args.load:
        given = [name for name in _RUN_OPTIONS if getattr(args, name) not in (None, False)]
        if given:
            args.parser.error(f"--load shows a saved run: it cannot be combined with "
                              f"{', '.join('--' + n.replace('_', '-') if n != 'keyword' else '-k' for n in given)}")
    if args.command == "train":
        conflict = train_conflicts(args)
        if conflict:
            args.parser.error(conflict)
    try:
        return args.run(args)
    except GpugradError as exc:
        print(f"gpugrad: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # say, the folder of --save removed while training
        print(f"gpugrad: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("gpugrad: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
