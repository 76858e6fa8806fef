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


def cmd_train(args):
    """Train a digits classifier (``gpugrad train``); print progress and a final line; return the exit code."""
    from .training import train

    result = train(args.model, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                   optimizer=args.optimizer, device=args.device, seed=args.seed, save=args.save,
                   progress=not args.no_progress)
    print(result.summary())
    if args.save:
        print(f"weights saved to {args.save}")
    return 0


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _positive_float(text):
    value = float(text)
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, not {text}")
    return value


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

    from .training import DEFAULTS, MODELS, OPTIMIZERS

    train = sub.add_parser(
        "train", help="train a small classifier on the embedded 8x8 digits and print its test accuracy",
        description="Train a classifier on the embedded 8x8 handwritten digits (1,438 training and 359 "
                    "test images, no download) on the default device (the first GPU, else the CPU), "
                    "then print the test accuracy, the time and the device.")
    train.add_argument("--model", choices=MODELS, default="mlp",
                       help="mlp: 64-256-256-10 ReLU; cnn: two 3x3 convolutions, pooling, two dense layers "
                            "(default: mlp)")
    train.add_argument("--epochs", type=_positive_int, help="passes over the training images "
                       f"(default: {DEFAULTS['mlp']['epochs']} for mlp, {DEFAULTS['cnn']['epochs']} for cnn)")
    train.add_argument("--batch-size", type=_positive_int, help="images per step (default: 64)")
    train.add_argument("--lr", type=_positive_float, help="learning rate (default: 0.001 for mlp, 0.002 for cnn)")
    train.add_argument("--optimizer", choices=OPTIMIZERS, help="default: adam")
    train.add_argument("--device", help="cpu, cuda or cuda:N (default: GPUGRAD_DEVICE, else the first GPU, "
                       "else the CPU)")
    train.add_argument("--seed", type=int, default=0, help="seed of the weights and the batch order (default: 0)")
    train.add_argument("--save", metavar="PATH", help="write the trained weights to this .npz file")
    train.add_argument("--no-progress", action="store_true", help="no progress bar, only the final line")
    train.set_defaults(run=cmd_train)
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
