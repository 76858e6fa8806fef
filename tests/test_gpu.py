"""GPU tests: fused kernels against the CPU, fused against unfused, round trips, device errors.

Every test here carries ``@pytest.mark.gpu`` and is skipped, with the reason,
on a machine without a usable CUDA GPU. The table-driven gradient check of
every op on ``"cuda"`` lives in ``tests/test_gradients.py`` (its ``cuda``
params); :func:`test_gradients_on_gpu_match_the_cpu` below compares each spec's
values and gradients on the GPU with the CPU's directly.

Tolerances: the GPU contracts multiply-adds, flushes float32 subnormals to zero
(CuPy compiles with ``-ftz=true``) and has its own libm, so results differ from
the CPU in the last bits; near a cancellation (``1 - y*y`` at ``y = 1``) the
difference is relative to the size of the terms, not of the result. Hence a
relative tolerance plus an absolute one scaled by the largest result.
"""
import numpy as np
import pytest

import gpugrad as gg
from gpugrad.optimizers import kernels_ref
from gpugrad.backend import kernel_source
from gpugrad._tools.kernelcheck import cases

from .conftest import GPU_PRESENT
from gpugrad._tools.op_specs import ALL_SPECS
from .conftest import gradient_function

pytestmark = pytest.mark.gpu
GPU_COUNT = len([d for d in gg.devices() if d.startswith("cuda")])
TWO_GPUS = pytest.mark.skipif(GPU_COUNT < 2, reason=f"needs two GPUs; this machine has {GPU_COUNT}")
RTOL = {"float16": 4e-3, "bfloat16": 1.6e-2, "float32": 2e-5, "float64": 1e-12}  # 16 bits: about 2 or 4 ulps
LOW = ["float16", "bfloat16"]  # stored in 16 bits, computed in float32 by the kernels
OP_KERNELS = [n for n in sorted(cases.CASES) if isinstance(cases.CASES[n].reference, cases.OpReference)]
N = 100_003  # not a multiple of the block size


def assert_close(got, want, dtype, what=""):
    rtol = RTOL[np.dtype(dtype).name]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, what
        finite = np.isfinite(w)
        scale = float(np.max(np.abs(w[finite]))) if finite.any() else 1.0
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=rtol * scale,
                                   equal_nan=True, err_msg=what)


def backend():
    return gg.get_device("cuda").backend


def dtype_of(name):
    """The NumPy dtype ``name``; bfloat16 (CuPy 14 takes it from ml_dtypes) skips with the reason without it."""
    if not kernel_source.available(name):
        pytest.skip("ml_dtypes is not installed here: CuPy and NumPy have no bfloat16 without it")
    return kernel_source.dtype(name)


# ---------------------------------------------------------------- fused kernels against the CPU path


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("name", OP_KERNELS)
def test_fused_gradient_matches_the_cpu(name, dtype):
    case = cases.CASES[name]
    arrays, params = case.draw(np, np.random.RandomState(0), N, np.dtype(dtype))
    got = case.reference.on("cuda", arrays, params)  # the op on GPU tensors: the fused kernel
    want = cases.reference_at(case, arrays, params, dtype)
    assert (name, np.dtype(dtype), 0) in backend()._kernels, "the op did not go through the fused kernel"
    assert_close(got, want, dtype, f"{name} {dtype}")


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_fused_matches_unfused_cupy(name):
    import cupy

    case = cases.CASES[name]
    arrays, params = case.draw(cupy, cupy.random.RandomState(1), N, np.dtype(np.float32))
    n_in = len(kernel_source.load(name).array_inputs)
    fused = backend().fused(name, *[a.copy() for a in arrays], **params)
    fused = fused if isinstance(fused, tuple) else (fused,)
    if case.in_place:
        fused = fused[-(len(arrays) - n_in):]
    with np.errstate(all="ignore"):
        unfused = case.unfused(cupy, [a.copy() for a in arrays], params)
    assert_close([cupy.asnumpy(a) for a in fused], [cupy.asnumpy(a).astype(np.float32) for a in unfused],
                  np.float32, name)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("name", ["sgd_momentum_update", "adam_update"])
def test_update_kernels_match_their_reference(name, dtype):
    import cupy

    case = cases.CASES[name]
    arrays, params = case.draw(np, np.random.RandomState(2), N, dtype_of(dtype))
    on_gpu = [cupy.asarray(a) for a in arrays]
    n_in = len(kernel_source.load(name).array_inputs)
    out = backend().fused(name, *on_gpu, **params)
    assert all(o is t for o, t in zip(out, on_gpu[n_in:])), "updated in place"
    want = case.reference(arrays, params)  # in place on NumPy copies, float16 stored, computed in float32
    assert_close([cupy.asnumpy(o) for o in out], want, dtype, name)


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_16_bit_kernels_are_float32_math_rounded_once(name, dtype):
    """Every fused kernel on float16 and bfloat16 CuPy arrays runs its own 16-bit build and returns the
    float32 reference rounded once (within the GPU's FMA, -ftz and libm differences)."""
    import cupy

    dtype = dtype_of(dtype)
    case = cases.CASES[name]
    arrays, params = case.draw(np, np.random.RandomState(3), N, dtype)
    n_in = len(kernel_source.load(name).array_inputs)
    on_gpu = [cupy.asarray(a) for a in arrays]
    with np.errstate(all="ignore"):
        out = backend().fused(name, *on_gpu, **params)
    out = out if isinstance(out, tuple) else (out,)
    assert (name, dtype, 0) in backend()._kernels, "the 16-bit arrays did not reach their own kernel"
    assert all(o.dtype == dtype for o in out), "stored in the 16-bit dtype"
    if case.in_place:
        assert all(o is t for o, t in zip(out, on_gpu[n_in:])), "updated in place"
    want = cases.reference_at(case, arrays, params, dtype)
    assert_close([cupy.asnumpy(o) for o in out], want, dtype, f"{name} {dtype}")


def test_bfloat16_gradients_of_every_op_reach_their_kernel():
    """The ops on bfloat16 GPU tensors run the bfloat16 kernels (float32 math, rounded once)."""
    dtype = dtype_of("bfloat16")
    for name in OP_KERNELS:
        case = cases.CASES[name]
        arrays, params = case.draw(np, np.random.RandomState(0), N, dtype)
        try:
            got = case.reference.on("cuda", arrays, params)
        except gg.DTypeError as exc:
            pytest.skip(f"this gpugrad takes no bfloat16 tensors ({exc}); the kernels alone are checked above")
        assert (name, dtype, 0) in backend()._kernels, f"{name} on bfloat16 tensors did not run its kernel"
        assert_close(got, cases.reference_at(case, arrays, params, dtype), dtype, f"{name} bfloat16")


def test_sgd_nesterov_step_matches_the_reference():
    import cupy

    p, v, g = (np.random.RandomState(s).uniform(-1, 1, 1000).astype(np.float32) for s in range(3))
    want_p, want_v = p.copy(), v.copy()
    kernels_ref.sgd_momentum_update(want_p, want_v, g, lr=0.1, momentum=0.9, nesterov=True)
    gp, gv = cupy.asarray(p), cupy.asarray(v)
    backend().fused("sgd_momentum_update", cupy.asarray(g), gp, gv, lr=0.1, momentum=0.9, weight_decay=0.0,
                    nesterov=True)
    assert_close([gp.get(), gv.get()], [want_p, want_v], np.float32)


def test_kernels_are_built_once_per_kernel_dtype_device():
    b = backend()
    first = b.kernel("tanh_grad", np.dtype(np.float32), 0)
    assert b.kernel("tanh_grad", np.dtype(np.float32), 0) is first
    assert b.kernel("tanh_grad", np.dtype(np.float64), 0) is not first


def test_second_order_through_fused_kernels_matches_the_cpu():
    def f(x):
        return gg.sum(gg.tanh(x) * gg.sigmoid(x) + gg.softplus(x) * gg.abs(x))

    values = np.linspace(-2, 2, 9)
    results = []
    for device in ("cpu", "cuda"):
        x = gg.tensor(values, device=device)
        with gg.GradientTape() as outer:
            outer.watch(x)
            with gg.GradientTape() as inner:
                inner.watch(x)
                y = f(x)
            g = inner.gradient(y, x)
            g_squared = gg.sum(g * g)  # recorded on the outer tape
        h = outer.gradient(g_squared, x)
        results.append((g.numpy(), h.numpy()))
    assert_close(results[1], results[0], np.float64)


# ---------------------------------------------------------------- every spec: GPU against CPU


STOCHASTIC = {"Dropout"}  # draw different random numbers on each device


def _values_and_grads(spec, device):
    with gg.device(device):  # tensors a spec makes itself (indices, constants) go to the same device
        return _values_and_grads_here(spec)


def _values_and_grads_here(spec):
    xs = [gg.tensor(a) for a in spec.inputs()]
    with gg.GradientTape() as tape:
        tape.watch(xs)
        y = spec.fn(*xs)
    w = np.random.default_rng(7).uniform(0.5, 1.5, y.shape)
    grads = tape.gradient(y, xs, output_gradients=gg.tensor(w, dtype=y.dtype, device=y.device))
    out = [y.numpy()] + [np.zeros(x.shape) if g is None else g.numpy() for g, x in zip(grads, xs)]
    if spec.order >= 2:
        second = gradient_function(spec.fn, len(xs))
        with gg.GradientTape() as tape:
            tape.watch(xs)
            total = second(*xs)
        out += [np.zeros(x.shape) if g is None else g.numpy() for g, x in zip(tape.gradient(total, xs), xs)]
    return out


@pytest.mark.parametrize("spec", [pytest.param(s, id=s.id) for s in ALL_SPECS])
def test_gradients_on_gpu_match_the_cpu(spec):
    if spec.op_type in STOCHASTIC:
        pytest.skip(f"{spec.op_type} is random: the CPU and the GPU draw different numbers")
    if spec.refused_on("cuda"):  # the op refuses the GPU, naming the reason
        with pytest.raises(gg.DeviceError, match="CPU only"):
            _values_and_grads(spec, "cuda")
        return
    cpu = _values_and_grads(spec, "cpu")
    gpu = _values_and_grads(spec, "cuda")
    assert len(cpu) == len(gpu)
    for c, g in zip(cpu, gpu):
        np.testing.assert_allclose(g, c, rtol=1e-9, atol=1e-9 * max(1.0, float(np.max(np.abs(c), initial=0))))


# ---------------------------------------------------------------- round trips and zero-copy exchange


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64", "bool"])
def test_cpu_gpu_round_trip(dtype):
    a = (np.arange(24).reshape(2, 3, 4) % 5).astype(dtype)
    t = gg.tensor(a, device="cpu")
    g = t.to("cuda")
    assert g.device == "cuda:0" and g.dtype == a.dtype and g.shape == a.shape
    assert g.to("cuda") is g
    back = g.to("cpu")
    assert back.device == "cpu"
    np.testing.assert_array_equal(back.numpy(), a)
    np.testing.assert_array_equal(g.numpy(), a)


def test_cuda_array_interface_and_dlpack_share_memory():
    import cupy

    t = gg.tensor(np.arange(6.0, dtype=np.float32), device="cuda")
    pointer = t.data.data.ptr
    assert t.__cuda_array_interface__["data"][0] == pointer
    assert cupy.asarray(t).data.ptr == pointer  # through __cuda_array_interface__
    assert cupy.from_dlpack(t).data.ptr == pointer  # through __dlpack__
    c = cupy.arange(4, dtype=cupy.float64)
    u = gg.from_dlpack(c)
    assert u.device == "cuda:0" and u.data.data.ptr == c.data.ptr
    c[0] = 42.0
    assert u.numpy()[0] == 42.0


def test_dlpack_with_pytorch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed; the exchange with it is skipped")
    if not torch.cuda.is_available():
        pytest.skip("this PyTorch build has no CUDA")
    x = torch.arange(5, dtype=torch.float32, device="cuda")
    t = gg.from_dlpack(x)
    assert t.device == "cuda:0" and t.data.data.ptr == x.data_ptr()
    back = torch.from_dlpack(t)
    assert back.data_ptr() == x.data_ptr()


def test_numpy_conversion_of_a_gpu_tensor_is_explicit():
    t = gg.tensor([1.0, 2.0], device="cuda")
    with pytest.raises(gg.DeviceError, match="call .numpy"):
        np.asarray(t)
    assert t.numpy().tolist() == [1.0, 2.0]


# ---------------------------------------------------------------- devices


def test_ops_on_cpu_and_gpu_tensors_name_both_devices():
    a, b = gg.tensor([1.0], device="cpu"), gg.tensor([1.0], device="cuda")
    with pytest.raises(gg.DeviceError, match=r"'cpu'.*'cuda:0'|'cuda:0'.*'cpu'"):
        gg.add(a, b)
    with pytest.raises(gg.DeviceError, match=r"cpu.*cuda:0|cuda:0.*cpu"):
        gg.ops.tanh_grad(b, a)


def test_same_device_path_with_the_device_context():
    import cupy

    with gg.device("cuda:0"):
        assert cupy.cuda.runtime.getDevice() == 0
        x = gg.tensor([0.5, -0.5])
        assert x.device == "cuda:0"
        g = gg.ops.tanh_grad(gg.tanh(x), gg.ones_like(x))
        assert g.device == "cuda:0"


def test_a_missing_gpu_index_is_unavailable():
    with pytest.raises(gg.DeviceUnavailableError, match=f"this machine has {GPU_COUNT} CUDA device"):
        gg.get_device(f"cuda:{GPU_COUNT}")


@TWO_GPUS
def test_ops_on_two_gpus_name_both_devices():
    a, b = gg.tensor([1.0], device="cuda:0"), gg.tensor([1.0], device="cuda:1")
    with pytest.raises(gg.DeviceError, match=r"cuda:0.*cuda:1"):
        gg.multiply(a, b)
    with pytest.raises(gg.DeviceError, match=r"cuda:0.*cuda:1|cuda:1.*cuda:0"):
        gg.ops.tanh_grad(a, b)


@TWO_GPUS
def test_gpu_to_gpu_copy_and_fused_kernel_on_the_second_gpu():
    import cupy

    a = gg.tensor(np.linspace(-1, 1, 11), device="cuda:0")
    b = a.to("cuda:1")
    assert b.device == "cuda:1" and b.data.device.id == 1
    np.testing.assert_array_equal(b.numpy(), a.numpy())
    assert cupy.cuda.runtime.getDevice() == 0
    g = gg.ops.tanh_grad(b, gg.ones_like(b))  # fused kernel on device 1 while device 0 is current
    assert g.device == "cuda:1" and g.data.device.id == 1
    with gg.device("cuda:1"):
        assert cupy.cuda.runtime.getDevice() == 1
    assert cupy.cuda.runtime.getDevice() == 0


def test_gpu_present_for_this_module():
    assert GPU_PRESENT and GPU_COUNT >= 1
