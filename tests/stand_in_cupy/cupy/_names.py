"""The names the real CuPy 14.2.0 has, from ``tests/stand_in_cupy/cupy_14.2.0_names.txt``.

The stand-in forwards to NumPy only names found here, so an API that the
real CuPy lacks is an ``AttributeError`` here too. The file is the output of
``tests/test_stand_in_contract.py::real_cupy_names``, and that test checks it
against the real CuPy wherever CuPy 14.2.0 is installed (CI). One line per
name: ``<namespace>.<name>``, e.g. ``cupy.ndarray.astype``.
"""
import os

FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cupy_14.2.0_names.txt")

with open(FILE) as _f:
    _ALL = frozenset(line.strip() for line in _f if line.strip())


def has(namespace, name):
    """True when the real CuPy's ``namespace`` (e.g. ``cupy.ndarray``) has ``name``."""
    return f"{namespace}.{name}" in _ALL
