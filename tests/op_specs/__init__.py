"""The op spec table of the tests: gpugrad's own (:mod:`gpugrad.testing.op_specs`).

The table lives in the package so that ``gpugrad check`` can run it on an
installed gpugrad; add a spec line there, in the family module of its op.
A module placed here with a ``SPECS`` list is still picked up (its specs are
appended), but ``gpugrad check`` does not see it.
"""
import importlib
import pkgutil

from gpugrad.testing.op_specs import ALL_SPECS as _PACKAGE_SPECS
from gpugrad.testing.op_specs import OpSpec, elementwise, special  # noqa: F401 - test_gradients imports them


def _local_specs():
    specs = []
    for info in pkgutil.iter_modules(__path__):
        specs.extend(importlib.import_module(f"{__name__}.{info.name}").SPECS)
    return specs


ALL_SPECS = _PACKAGE_SPECS + _local_specs()
