"""One table-driven gradient check of every registered op, first and second order.

Analytic Jacobians from the tape against central differences in float64, on
every device present, plus a float32 first-order pass.
"""
import numpy as np
import pytest

import gpugrad as gg
from gpugrad.gradient_checker import compute_gradient, max_error
from gpugrad._recorder import active_tapes

from .conftest import TOL64, check, device_params, gradient_function, recorded_types  # noqa: F401 - shared
from gpugrad._tools.op_specs import ALL_SPECS, OpSpec, elementwise, special

SPEC_PARAMS = [pytest.param(spec, id=spec.id) for spec in ALL_SPECS]


def refused(spec, xs, device):
    """True (after checking the DeviceError) where the spec's op runs on the CPU only and ``device`` is another."""
    if not spec.refused_on(device):
        return False
    with pytest.raises(gg.DeviceError, match="CPU only"):
        spec.fn(*xs)
    return True


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("spec", SPEC_PARAMS)
def test_first_order_float64(spec: OpSpec, device):
    with gg.device(device):  # constants a spec makes (index tensors, weights) follow the inputs
        xs = [gg.tensor(a) for a in spec.inputs()]
        if refused(spec, xs, device):
            return
        assert spec.op_type in recorded_types(spec.fn, xs), f"spec does not record {spec.op_type}"
        check(spec.fn, xs, delta=1e-6, tol=TOL64)


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("spec", [p for p in SPEC_PARAMS if p.values[0].order >= 2])
def test_second_order_float64(spec: OpSpec, device):
    with gg.device(device):
        xs = [gg.tensor(a) for a in spec.inputs()]
        if refused(spec, xs, device):
            return
        check(gradient_function(spec.fn, len(xs)), xs, delta=1e-6, tol=1e-5)


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("spec", SPEC_PARAMS)
def test_first_order_float32(spec: OpSpec, device):
    with gg.device(device):
        xs = [gg.tensor(a) for a in spec.inputs(dtype=np.float32)]
        if refused(spec, xs, device):
            return
        check(spec.fn, xs, delta=1e-2, tol=3e-2)


ELEMENTWISE_PARAMS = [pytest.param(spec, id=spec.id) for spec in elementwise.SPECS + special.SPECS if spec.order >= 2]


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("spec", ELEMENTWISE_PARAMS)
def test_third_order_float64_elementwise(spec: OpSpec, device):
    """The gradient of the second-order gradient function: third derivatives, fused gradients' included."""
    with gg.device(device):
        xs = [gg.tensor(a) for a in spec.inputs()]
        second = gradient_function(spec.fn, len(xs))
        check(gradient_function(second, len(xs), seed=2), xs, delta=1e-6, tol=1e-5)


def test_third_order_check_catches_a_detached_second_derivative(monkeypatch):
    def detached(op, g):  # right values, but its first term is a constant: third order goes wrong
        y, dy = op.inputs
        return g * gg.tensor((-2.0 * dy * y).numpy()), gg.ops.tanh_grad(y, g)

    monkeypatch.setitem(gg.registry.rules, "TanhGrad", detached)
    xs = [gg.tensor(np.array([[-0.5, 0.2, 0.9]]))]
    second = gradient_function(gg.tanh, 1)
    check(second, xs, delta=1e-6, tol=1e-5)  # second order still agrees
    with pytest.raises(AssertionError):
        check(gradient_function(second, 1, seed=2), xs, delta=1e-6, tol=1e-5)

def test_every_registered_op_has_a_spec():
    covered = {spec.op_type for spec in ALL_SPECS}
    # gpugrad's own rules: the ones other tests register (any order of the suite) are theirs to check
    builtin = {op for op in gg.registered_ops() if gg.registry.rules[op].__module__.startswith("gpugrad.")}
    missing = sorted(builtin - covered)
    assert not missing, f"registered ops with no spec in gpugrad/_tools/op_specs: {missing}"


def test_checker_catches_a_wrong_gradient():
    @gg.RegisterGradient("WrongCubeForTest")
    def _wrong(op, dy):
        (x,) = op.inputs
        return [dy * 2.0 * x * x]  # the truth is 3 x^2

    def cube(x):
        y = gg.tensor(x.numpy() ** 3)
        gg.record_operation("WrongCubeForTest", [y], [x])
        return y

    x = gg.tensor(np.array([0.5, 1.0, 1.5]))
    theoretical, numerical = compute_gradient(cube, [x], delta=1e-6)
    assert max_error(theoretical, numerical) > 0.1
    with pytest.raises(AssertionError):
        check(cube, [x], delta=1e-6, tol=TOL64)
    gg.registry.rules.pop("WrongCubeForTest")


def test_no_tape_left_recording():
    assert not active_tapes()
