"""The ``gpugrad`` command: one small function per subcommand.

``gpugrad info`` prints the version, the devices, the backends and the number
of registered ops. Argument errors print a usage message and exit with 2
(argparse's convention); a gpugrad error (say, a bad ``GPUGRAD_DEVICE``) prints
one line and exits with 1.

Example:
    >>> main(["info"])  # doctest: +ELLIPSIS
    gpugrad ...
    0
"""
import argparse
import platform
import sys

import numpy as np

import gpugrad as gg
from .errors import GpugradError


def cmd_info(args):
    """Print what gpugrad sees on this machine; return the exit code."""
    lines = [f"gpugrad {gg.__version__} (Python {platform.python_version()})"]
    lines.append(f"devices: {', '.join(gg.devices())}")
    lines.append("backends:")
    lines.append(f"  numpy {np.__version__} (cpu)")
    lines.append(f"  {_cupy_line()}")
    lines.append(f"default device: {gg.default_device().name}")
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


def build_parser():
    """The argument parser: one subparser per subcommand.

    Example:
        >>> build_parser().parse_args(["info"]).command
        'info'
    """
    parser = argparse.ArgumentParser(
        prog="gpugrad",
        description="Reverse-mode automatic differentiation on CuPy (NVIDIA GPUs) and NumPy (CPU).")
    parser.add_argument("--version", action="version", version=f"gpugrad {gg.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    info = sub.add_parser("info", help="print the version, devices, backends and registered ops")
    info.set_defaults(run=cmd_info)
    return parser


def main(argv=None):
    """Run the ``gpugrad`` command line with ``argv`` (default: ``sys.argv[1:]``); return the exit code.

    Example:
        >>> main(["info"])  # doctest: +ELLIPSIS
        gpugrad ...
        default device: ...
        0
    """
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except GpugradError as exc:
        print(f"gpugrad: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
