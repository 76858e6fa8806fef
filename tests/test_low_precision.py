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


def test_the_check_catches_a_sum_accumulated_in_bfloat16():
    """The tolerance can fail: a sum that adds up in bfloat16 (ml_dtypes' own reduce) is far off."""
    pytest.importorskip("ml_dtypes", reason=NO_ML_DTYPES)

    def sum_in_bfloat16(x):
        y = gg.tensor(x.numpy().sum())  # ml_dtypes' reduce adds in bfloat16: 256 + 1 rounds back to 256
        gg.record_operation("Identity", [y], [x], lambda dy: [gg.ones_like(x) * dy])
        return y

    spec = OpSpec("Identity", sum_in_bfloat16, [(4096,)], low=0.9, high=1.1)
    with pytest.raises(AssertionError, match="eps >"):
        check_low(spec, "bfloat16", "cpu")


@pytest.mark.parametrize("dtype_name", DTYPE_PARAMS)
def test_reductions_of_many_elements_accumulate_in_float32(dtype_name):
    """4096 ones: a float16 or bfloat16 accumulator stops at 2048 or 256; float32 reaches 4096 (exact in both)."""
    x = gg.ones((4096,), dtype=dtype_name)
    assert gg.sum(x).dtype == x.dtype and gg.sum(x).item() == 4096
    assert gg.mean(x).item() == 1.0 and gg.var(x).item() == 0.0 and gg.std(x).item() == 0.0
    assert gg.cumsum(x).numpy()[-1] == 4096 and gg.logsumexp(gg.zeros((4096,), dtype=dtype_name)).item() == \
        pytest.approx(np.log(4096), rel=EPS[dtype_name])
    assert gg.linalg.norm(x).item() == 64.0
    assert (gg.ones((1, 4096), dtype=dtype_name) @ gg.ones((4096, 1), dtype=dtype_name)).item() == 4096
    p = gg.softmax(gg.zeros((1, 4096), dtype=dtype_name))
    assert p.dtype == x.dtype and float(gg.sum(p).item()) == pytest.approx(1.0, rel=EPS[dtype_name])
    y = gg.layer_norm(gg.tensor(np.arange(4096.0).reshape(1, -1) % 7, dtype=dtype_name), (4096,))
    assert y.dtype == x.dtype and abs(float(gg.mean(y).item())) < 8 * EPS[dtype_name]


@pytest.mark.parametrize("dtype_name", DTYPE_PARAMS)
def test_low_dtypes_promote_as_numpy_and_gradients_keep_each_inputs_dtype(dtype_name):
    low = gg.Variable(np.array([1.0, 2.0]), dtype=dtype_name)
    single = gg.Variable(np.array([3.0, 4.0], np.float32))
    with gg.GradientTape() as tape:
        y = gg.sum(low * single)
    assert y.dtype == np.result_type(low.dtype, np.float32) == np.float32
    g_low, g_single = tape.gradient(y, [low, single])
    assert (g_low.dtype, g_single.dtype) == (low.dtype, np.float32)
    assert g_low.numpy().astype(np.float64).tolist() == [3.0, 4.0]
    other = "bfloat16" if dtype_name == "float16" else "float16"
    if HAVE_ML_DTYPES:  # float16 with bfloat16: float32, NumPy's (ml_dtypes') rule
        assert (low + gg.tensor([1.0, 1.0], dtype=other)).dtype == np.float32


def test_bfloat16_without_ml_dtypes_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # import ml_dtypes raises ImportError
    for make in (lambda: gg.tensor([1.0], dtype="bfloat16"), lambda: gg.zeros((2,), dtype="bfloat16"),
                 lambda: gg.cast(gg.tensor([1.0]), "bfloat16"), lambda: gg.bfloat16):
        with pytest.raises(gg.DTypeError, match=r"pip install 'gpugrad\[bfloat16\]'"):
            make()


@pytest.mark.skipif(not HAVE_ML_DTYPES, reason=NO_ML_DTYPES)
def test_bfloat16_arrays_and_names_make_bfloat16_tensors():
    import ml_dtypes

    x = gg.tensor(np.array([1, 2], ml_dtypes.bfloat16))
    assert x.dtype == gg.bfloat16 and x.dtype.name == "bfloat16"
    assert gg.tensor([1.5], dtype="bfloat16").dtype == x.dtype == gg.Variable([1.0], dtype=gg.bfloat16).dtype
    assert gg.cast(gg.tensor([1.0]), gg.bfloat16).dtype == x.dtype


@pytest.mark.parametrize("dtype_name", DTYPE_PARAMS)
def test_a_decomposition_refuses_the_low_dtype_naming_op_and_dtype(dtype_name):
    a = gg.eye(3, dtype=dtype_name)
    with pytest.raises(gg.DTypeError, match=f"op 'MatrixInverse' cannot take dtype {dtype_name}"):
        gg.linalg.inv(a)


OPTIMIZERS = {"SGD": lambda: gg.optimizers.SGD(0.1), "SGD-nesterov": lambda: gg.optimizers.SGD(0.1, 0.9, nesterov=True),
              "Adam": lambda: gg.optimizers.Adam(0.05), "AdamW": lambda: gg.optimizers.AdamW(0.05),
              "RMSProp": lambda: gg.optimizers.RMSProp(0.01), "AdaGrad": lambda: gg.optimizers.AdaGrad(0.1)}


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("dtype_name", DTYPE_PARAMS)
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_every_optimizer_updates_low_precision_variables_in_their_dtype(name, dtype_name, device):
    """PyTorch's optimizers update float16 and bfloat16 parameters; so do these, within 2 eps of float32's."""
    trajectories = {}
    for dtype in (dtype_name, "float32"):
        w = gg.Variable(np.linspace(-1, 1, 5), dtype=dtype, device=device)
        opt = OPTIMIZERS[name]()
        for _ in range(5):
            opt.minimize(lambda: gg.sum(w * w), [w])
        trajectories[dtype] = w
    low = trajectories[dtype_name]
    assert low.dtype.name == dtype_name and low.device.startswith(device)
    error = np.abs(low.numpy().astype(np.float32) - trajectories["float32"].numpy()).max()
    assert error <= 2 * EPS[dtype_name], error


def _forward_and_gradients(spec, low_inputs, device):
    """The output and input gradients of ``spec`` on ``device``, as (dtype, NumPy array) pairs."""
    with gg.device(device):
        y, grads = value_and_gradients(spec.fn, low_inputs)
    return [(t.dtype, t.numpy()) for t in (y, *grads) if t is not None]


# The ops that reach CuPy's float16/bfloat16 gaps (gpugrad/backend/cupy_gaps.py): products, sorts, where,
# clip, erf. Their GPU results equal the CPU's; other ops' fused kernels compute a chain in float32 and
# round once where the CPU rounds each step, so they are held to float64 by the test above instead.
GAP_OP_TYPES = {"MatMul", "Einsum", "TensorDot", "Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "Where",
                "Clip", "Elu", "Erf", "Gelu", "GeluGrad"}
GAP_SPEC_IDS = {"GetItem-sort", "GetItem-sort_axis0", "GetItem-partition", "GetItem-median_odd",
                "GetItem-median_even", "GetItem-median_tuple", "GetItem-quantile", "GetItem-quantile_list",
                "GetItem-percentile"}


# the specs that compute in the low dtypes on a GPU (test_low_precision_forward_and_gradient checks the refusals)
GPU_SPEC_PARAMS = [pytest.param(spec, id=spec.id) for spec in ALL_SPECS
                   if not spec.low_refuses and not spec.refused_on("cuda")]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype_name", DTYPE_PARAMS)
@pytest.mark.parametrize("spec", GPU_SPEC_PARAMS)
def test_low_precision_gpu_keeps_the_dtype_and_equals_the_cpu(spec, dtype_name):
    """On the GPU every op returns the CPU's dtypes in float16/bfloat16, also where CuPy 14.2 has no
    kernel for the dtype (batched products, sorts, where, erf: ``gpugrad/backend/cupy_gaps.py``), and
    those ops give the CPU's numbers, within one unit of the low dtype's last place (a GPU adds in
    another order)."""
    dtype = gg._dtypes.resolve(dtype_name)
    low_inputs = rounded(spec.inputs(), dtype)
    cpu = _forward_and_gradients(spec, low_inputs, "cpu")
    gpu = _forward_and_gradients(spec, low_inputs, "cuda")
    assert [d for d, _ in gpu] == [d for d, _ in cpu], f"{spec.id}: GPU dtypes {gpu} differ from the CPU's"
    if spec.op_type not in GAP_OP_TYPES and spec.id not in GAP_SPEC_IDS:
        return
    for (d, g), (_, c) in zip(gpu, cpu):
        if d.char not in "eE":
            np.testing.assert_array_equal(g, c)
            continue
        g64, c64 = g.astype(np.float64), c.astype(np.float64)
        ulp = np.abs(np.spacing(c).astype(np.float64))  # one unit in the last place of the low dtype
        close = (g64 == c64) | (np.abs(g64 - c64) <= ulp) | (np.isnan(g64) & np.isnan(c64))
        assert close.all(), f"{spec.id} in {dtype_name}: GPU {g64[~close][:4]} CPU {c64[~close][:4]}"
