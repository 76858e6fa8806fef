"""The gradient check behind ``gpugrad check``: every op spec, every device, first order in float64.

Each spec's analytic Jacobian (one backward sweep per output element) is
compared with central differences (step 1e-6) by
:func:`gpugrad.gradient_checker.compute_gradient`; a spec passes when the
largest difference is at most ``tolerance * max(1, largest |numerical entry|)``,
the criterion of ``tests/test_gradients.py``.

Example:
    >>> from gpugrad._tools.op_specs import ALL_SPECS
    >>> results = run_checks([s for s in ALL_SPECS if s.op_type == "Tanh"], ["cpu"])
    >>> [(r.op_type, r.device, r.passed) for r in results]
    [('Tanh', 'cpu', True)]
"""
import dataclasses
import math

import numpy as np

from .. import backend
from ..errors import DeviceError
from ..gradient_checker import compute_gradient, max_error
from ..registry import registered_ops
from ..tensor import Tensor

TOLERANCE = 1e-6
DELTA = 1e-6


@dataclasses.dataclass(frozen=True)
class SpecResult:
    """The outcome of one spec on one device: ``error`` is the largest Jacobian difference."""

    op_type: str
    spec_id: str
    device: str
    error: float
    limit: float
    problem: str = ""  # the exception, when the check could not run

    @property
    def passed(self):
        return not self.problem and self.error <= self.limit


def missing_specs(specs):
    """The registered op types that no spec in ``specs`` covers, sorted.

    Example:
        >>> "Tanh" in missing_specs([])
        True
    """
    covered = {spec.op_type for spec in specs}
    return sorted(set(registered_ops()) - covered)


def check_spec(spec, device, tolerance=TOLERANCE):
    """Gradient-check ``spec`` on ``device`` in float64; a :class:`SpecResult` (exceptions included).

    Example:
        >>> import gpugrad as gg
        >>> from gpugrad._tools.op_specs import OpSpec
        >>> check_spec(OpSpec("Exp", gg.exp, [(3,)]), "cpu").passed
        True
    """
    if spec.refused_on(device):  # a CPU-only op passes where it refuses the device with a DeviceError
        return SpecResult(spec.op_type, spec.id, device, 0.0, tolerance, _refusal_problem(spec, device))
    try:
        with backend.device(device):  # constants a spec makes (indices, weights) follow the inputs
            xs = [Tensor(a, device=device) for a in spec.inputs()]
            theoretical, numerical = compute_gradient(spec.fn, xs, delta=DELTA)
    except Exception as exc:  # a broken op must show in the table, not end the run
        return SpecResult(spec.op_type, spec.id, device, math.nan, 0.0, f"{type(exc).__name__}: {exc}")
    scale = max([1.0] + [float(np.max(np.abs(n))) for n in numerical if n.size])
    return SpecResult(spec.op_type, spec.id, device, max_error(theoretical, numerical), tolerance * scale)


def _refusal_problem(spec, device):
    """"" when ``spec``'s op raises the DeviceError it must on ``device``, else what happened."""
    try:
        with backend.device(device):
            spec.fn(*[Tensor(a, device=device) for a in spec.inputs()])
    except DeviceError:
        return ""
    except Exception as exc:
        return f"expected a DeviceError ({spec.cpu_only}), got {type(exc).__name__}: {exc}"
    return f"expected a DeviceError ({spec.cpu_only}); the op ran"


def run_checks(specs, devices, tolerance=TOLERANCE, on_result=None):
    """:func:`check_spec` of every spec on every device, devices outermost; ``on_result(result)`` after each."""
    results = []
    for device in devices:
        for spec in specs:
            result = check_spec(spec, device, tolerance)
            results.append(result)
            if on_result is not None:
                on_result(result)
    return results


def table_lines(results, devices):
    """One row per op type (sorted): its number of specs and, per device, its largest error.

    A cell reads ``FAIL`` after the error when a spec of that op failed there.

    Example:
        >>> rows = [SpecResult("Exp", "Exp", "cpu", 2e-11, 1e-6), SpecResult("Log", "Log", "cpu", 0.5, 1e-6)]
        >>> print("\\n".join(table_lines(rows, ["cpu"])))
        op   specs  cpu
        Exp      1  2.0e-11
        Log      1  5.0e-01 FAIL
    """
    ops = {}
    for r in results:
        ops.setdefault(r.op_type, {}).setdefault(r.device, []).append(r)
    rows = [["op", "specs"] + list(devices)]
    for op_type in sorted(ops):
        per_device = ops[op_type]
        n_specs = max(len(v) for v in per_device.values())
        cells = []
        for device in devices:
            found = per_device.get(device, [])
            if not found:
                cells.append("-")
                continue
            worst = max((r.error for r in found if not r.problem), default=math.nan)
            text = "error" if math.isnan(worst) else f"{worst:.1e}"
            cells.append(text if all(r.passed for r in found) else f"{text} FAIL")
        rows.append([op_type, str(n_specs)] + cells)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.rjust(w) if i == 1 else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths)))
            .rstrip() for row in rows]
