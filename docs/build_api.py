"""Build gpugrad's API reference from its docstrings with pdoc; any warning fails the build.

Run from the repository root, with the ``docs`` extra installed::

    python docs/build_api.py            # HTML pages in build/api (index.html first)
    python docs/build_api.py -o DIR

The reference covers what ``gpugrad.__all__`` exports (pdoc follows ``__all__``), the subpackages
it names (``gg.nn``, ``gg.optimizers``, ...) and their own ``__all__``. Docstrings are read as
Google style (``Example:`` sections with doctests). Every warning pdoc or an import raises is
collected and printed, and the exit status is 1 when there is one. (pdoc cannot parse the source of
a lambda stored in a table and warns on it, so the Tensor methods that gpugrad/ops/*.py's
``TENSOR_METHODS`` attach are defs, each with its docstring.)
"""
import argparse
import sys
import warnings
from pathlib import Path


def build(output_directory, modules=("gpugrad",)):
    """Write the HTML reference of ``modules`` into ``output_directory``; returns the warnings raised.

    Example:
        >>> import os, tempfile
        >>> with tempfile.TemporaryDirectory() as out:
        ...     failures = build(out, modules=("gpugrad.nn.init",))
        ...     pages = sorted(os.listdir(os.path.join(out, "gpugrad", "nn")))
        >>> failures, pages
        ([], ['init.html'])
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import pdoc
        import pdoc.render

        pdoc.render.configure(docformat="google")
        _materialise_lazy_names(modules)
        pdoc.pdoc(*modules, output_directory=Path(output_directory))
    return list(caught)


def _materialise_lazy_names(modules):
    """Put the names a module gives through its ``__getattr__`` (``gg.bfloat16``, which imports ml_dtypes
    on first use) into its namespace, so pdoc, which reads the namespace, finds every name of ``__all__``."""
    import importlib
    for name in modules:
        module = importlib.import_module(name)
        if hasattr(module, "__getattr__"):
            for member in getattr(module, "__all__", ()):
                if member not in vars(module):
                    setattr(module, member, getattr(module, member))


def main(argv=None):
    """Build the reference as the command line asks; returns the exit status (1 on a warning)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-o", "--output-directory", default="build/api", help="where the HTML goes [build/api]")
    args = parser.parse_args(argv)
    failures = build(args.output_directory)
    for w in failures:
        print(f"{w.filename}:{w.lineno}: {w.category.__name__}: {w.message}", file=sys.stderr)
    if failures:
        print(f"FAIL: {len(failures)} warning(s) while building the API reference", file=sys.stderr)
        return 1
    pages = sorted(Path(args.output_directory).rglob("*.html"))
    print(f"API reference: {len(pages)} pages in {args.output_directory}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
