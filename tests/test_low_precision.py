"""Every op of the spec table in float16 and bfloat16, against float64 on the same rounded inputs.

For each spec (``gpugrad/_tools/op_specs``) and each low dtype, the inputs are
rounded to the low dtype; the op's forward value and its first-order gradient
(one random output gradient, rounded too) are computed in the low dtype and in
float64 from those same rounded values. The normwise error of each, in units of
the dtype's eps (float16 2^-10, bfloat16 2^-7), must stay below ``BASE`` times
the spec's ``low_factor``. A spec whose op refuses the low dtypes
(``low_refuses``) must raise a DTypeError naming the op and the dtype; nothing
is skipped silently. The results keep the input's low dtype, as PyTorch's CPU
half ops do, even where the op computes in float32 inside.
"""
import importlib.util

import numpy as np
import pytest

import gpugrad as gg
from gpugrad._tools.op_specs import ALL_SPECS, OpSpec

from .conftest import device_params

HAVE_ML_DTYPES = importlib.util.find_spec("ml_dtypes") is not None
NO_ML_DTYPES = "bfloat16 needs ml_dtypes: pip install 'gpugrad[bfloat16]'"
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}
BASE = 8.0  # a few roundings of the result and of the float32 work, each within half an eps

SPEC_PARAMS = [pytest.param(spec, id=spec.id) for spec in ALL_SPECS]
DTYPE_PARAMS = [pytest.param("float16", id="float16"),
                pytest.param("bfloat16", id="bfloat16",
                             marks=pytest.mark.skipif(not HAVE_ML_DTYPES, reason=NO_ML_DTYPES))]


def rounded(arrays, dtype):
    """``arrays`` rounded to ``dtype`` (as low-dtype arrays)."""
    return [np.asarray(a).astype(dtype) for a in arrays]


def value_and_gradients(fn, arrays, w_seed=3):
    """``fn``'s output and the gradients of <w, fn(x)> by each input, as float64 NumPy arrays."""
    xs = [gg.tensor(a) for a in arrays]
    with gg.GradientTape() as tape:
        tape.watch(xs)
        y = fn(*xs)
    w = np.random.default_rng(w_seed).uniform(0.5, 1.5, y.shape).astype(y.dtype)
    grads = tape.gradient(y, xs, output_gradients=gg.tensor(w, dtype=y.dtype, device=y.device))
    return y, grads


def error_in_eps(low, ref, eps):
    """max |low - ref| / (eps * max |ref|): the normwise relative error in units of eps."""
    low, ref = np.asarray(low, np.float64), np.asarray(ref, np.float64)
    if ref.size == 0:
        return 0.0
    assert np.array_equal(np.isfinite(low), np.isfinite(ref)), "a non-finite value where float64 has none"
    finite = np.isfinite(ref)
    scale = max(float(np.max(np.abs(ref[finite]), initial=0.0)), np.finfo(np.float32).tiny)
    return float(np.max(np.abs(low[finite] - ref[finite]), initial=0.0)) / (eps * scale)


RATIOS = {}  # (dtype, spec id, device) -> the largest error ratio seen; printed by the summary test


def check_low(spec: OpSpec, dtype_name, device):
    dtype = gg._dtypes.resolve(dtype_name)
    with gg.device(device):
        low_inputs = rounded(spec.inputs(), dtype)
        if spec.low_refuses:  # the dtype is refused before the device (an op on the CPU only)
            with pytest.raises(gg.DTypeError, match=dtype_name) as caught:
                value_and_gradients(spec.fn, low_inputs)
            assert spec.op_type.lower() in str(caught.value).lower().replace("_", ""), caught.value
            return "refused"
        if spec.refused_on(device):
            with pytest.raises(gg.DeviceError, match="CPU only"):
                spec.fn(*[gg.tensor(a) for a in low_inputs])
            return "refused_device"
        y, grads = value_and_gradients(spec.fn, low_inputs)
        y64, grads64 = value_and_gradients(spec.fn, [a.astype(spec.low_reference) for a in low_inputs])
        y32 = spec.fn(*[gg.tensor(a.astype(np.float32)) for a in low_inputs])
    # the low dtype flows as float32 would: where float32 stays float32 the result is in the low dtype
    expected = dtype if y32.dtype == np.float32 else y32.dtype
    assert y.dtype == expected, f"{spec.id} in {dtype_name} returned {y.dtype}, not {expected}"
    eps, worst = EPS[dtype_name], 0.0
    worst = error_in_eps(y.numpy(), y64.numpy(), eps)
    for g, g64, a in zip(grads, grads64, low_inputs):
        assert (g is None) == (g64 is None)
        if g is not None:
            assert g.dtype == dtype, f"gradient of {spec.id} in {g.dtype}, its input is {dtype_name}"
            worst = max(worst, error_in_eps(g.numpy(), g64.numpy(), eps))
    RATIOS[(dtype_name, spec.id, device)] = worst
    allowed = BASE * spec.low_factor
    assert worst <= allowed, f"{spec.id} in {dtype_name}: error {worst:.3g} eps > {allowed:.3g} eps"
    return "checked"


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("dtype_name", DTYPE_PARAMS)
@pytest.mark.parametrize("spec", SPEC_PARAMS)
def test_low_precision_forward_and_gradient(spec, dtype_name, device):
    check_low(spec, dtype_name, device)
