"""Memory: what tapes hold and release, a 10,000-step training soak, and running out of GPU memory.

- A non-persistent tape holds no tensor and no array after ``.gradient``
  (weak references to the intermediates and to their arrays die), also when
  the gradient fails.
- A persistent tape holds its records until ``reset()`` or until it is deleted.
- The soak trains the digits MLP for 10,000 steps and reads the memory in use
  after every 1,000: on the CPU the bytes ``tracemalloc`` traces (after a full
  ``gc.collect()``, which also empties CPython's free lists), on a GPU the bytes
  CuPy's memory pool hands to live arrays. Growth from step 1,000 to 10,000
  must stay under 1 %. It runs in a subprocess: one BLAS thread (on 2 shared
  cores a threaded BLAS makes the run several times slower), warnings as
  errors, and a heap no other test touched. Batches are 16 images: a step's
  cost is mostly per-op overhead, so the batch size barely matters, and SGD
  with momentum keeps optimizer state without Adam's extra passes. Run this
  file as a script (``python tests/test_memory.py cpu``) to print the figures.
- On a GPU an out-of-memory error in a fused kernel comes back as
  ``gg.OutOfMemoryError`` naming the kernel and the bytes asked for, after the
  pool's cached blocks are freed; a stand-in backend tests that on any machine.
"""
import gc
import json
import os
import subprocess
import sys
import types
import weakref

import numpy as np
import pytest

import gpugrad as gg
from gpugrad.backend import cupy_backend, kernel_source

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOAK_STEPS, SOAK_EVERY, SOAK_BATCH = 10_000, 1_000, 16


def forward(x, w1, w2):
    """A small two-layer network; returns the loss and every intermediate tensor it made."""
    h = gg.matmul(x, w1)
    a = gg.tanh(h)
    z = gg.matmul(a, w2)
    p = gg.softmax(z)
    loss = gg.mean(gg.square(p))
    return loss, [h, a, z, p]


def weights():
    rng = np.random.default_rng(0)
    return (gg.tensor(rng.normal(size=(8, 5)).astype(np.float32)),
            gg.Variable(rng.normal(size=(5, 6)).astype(np.float32)),
            gg.Variable(rng.normal(size=(6, 3)).astype(np.float32)))


def weak_refs(tensors):
    """Weak references to each tensor and to its array."""
    return [weakref.ref(t) for t in tensors] + [weakref.ref(t.data) for t in tensors]


def alive(refs):
    return [r for r in refs if r() is not None]


# ---------------------------------------------------------------- what tapes hold


def test_a_non_persistent_tape_holds_no_tensor_or_array_after_gradient():
    x, w1, w2 = weights()
    with gg.GradientTape() as tape:
        loss, intermediates = forward(x, w1, w2)
    refs = weak_refs(intermediates)
    del intermediates
    assert len(alive(refs)) == len(refs), "the tape holds the intermediates until .gradient"
    grads = tape.gradient(loss, [w1, w2])
    assert alive(refs) == [], "the tape still holds intermediates after .gradient"
    assert tape._ops is None and tape._watched is None
    # the gradients and the target are the caller's; nothing else of the sweep survives it
    assert all(g.shape == w.shape for g, w in zip(grads, [w1, w2]))


def test_a_non_persistent_tape_releases_everything_when_the_gradient_fails():
    x, w1, w2 = weights()
    with gg.GradientTape() as tape:
        loss, intermediates = forward(x, w1, w2)
    refs = weak_refs(intermediates)
    del intermediates
    w1.assign_add(np.ones((5, 6), np.float32))  # the gradient will refuse the stale record
    try:
        tape.gradient(loss, [w1, w2])
    except gg.GradientError:
        pass  # the exception (and its traceback's frames) is gone after this block
    else:
        pytest.fail("the gradient of a changed variable did not fail")
    assert alive(refs) == []


def test_a_persistent_tape_frees_everything_on_reset():
    x, w1, w2 = weights()
    with gg.GradientTape(persistent=True) as tape:
        loss, intermediates = forward(x, w1, w2)
    refs = weak_refs(intermediates)
    del intermediates
    first = tape.gradient(loss, w1)
    np.testing.assert_array_equal(tape.gradient(loss, w1).numpy(), first.numpy())
    assert len(alive(refs)) == len(refs), "a persistent tape keeps its records between gradients"
    tape.reset()
    assert alive(refs) == []
    assert tape.gradient(loss, w1) is None  # nothing recorded any more


def test_a_persistent_tape_frees_everything_when_deleted():
    x, w1, w2 = weights()
    with gg.GradientTape(persistent=True) as tape:
        loss, intermediates = forward(x, w1, w2)
    refs = weak_refs(intermediates) + [weakref.ref(tape)]
    del intermediates
    tape.gradient(loss, [w1, w2])
    del tape
    assert alive(refs) == [], "a deleted tape must not survive in a reference cycle"


def test_nested_tapes_free_their_records_once_both_are_used():
    x, w1, w2 = weights()
    with gg.GradientTape() as outer:
        with gg.GradientTape() as inner:
            loss, intermediates = forward(x, w1, w2)
        g = inner.gradient(loss, w1)
        gnorm = gg.sum(g * g)
    refs = weak_refs(intermediates + [g])
    del intermediates, g
    outer.gradient(gnorm, w2)
    assert alive(refs) == []


# ---------------------------------------------------------------- the soak


def soak(device, steps=SOAK_STEPS, every=SOAK_EVERY, batch=SOAK_BATCH):
    """Train the digits MLP ``steps`` steps on ``device``; the bytes in use after every ``every`` steps.

    Tracing starts after a 200-step warm-up of a throw-away model (lazy imports,
    caches, kernel builds), before the measured model is built, so the figures
    include the model, its optimizer state and the data.
    """
    import time
    import tracemalloc

    from gpugrad.examples.digits_mlp import build_model
    from gpugrad.training import standardized_digits

    gpu = device != "cpu"
    if gpu:
        import cupy
        pool = cupy.get_default_memory_pool()

    def in_use():
        gc.collect()  # a full collection also empties CPython's free lists
        if gpu:
            cupy.cuda.Device().synchronize()
            return pool.used_bytes()
        return tracemalloc.get_traced_memory()[0]

    def train(n, readings=None):
        x, y, _, _ = standardized_digits(flatten=True, device=device)
        model = build_model(0, device)
        params = model.trainable_variables
        opt = gg.optimizers.SGD(0.01, momentum=0.9)
        rng = np.random.default_rng(0)
        for step in range(1, n + 1):
            idx = rng.integers(0, x.shape[0], batch)
            with gg.GradientTape() as tape:
                loss = gg.softmax_cross_entropy(model(x[idx]), y[idx])
            grads = tape.gradient(loss, params)
            opt.apply_gradients(zip(grads, params))
            if readings is not None and step % every == 0:
                del loss, grads, tape
                readings[step // every - 1] = in_use()
        return float(gg.softmax_cross_entropy(model(x[:256]), y[:256]).item())

    start = time.perf_counter()
    train(200)
    readings = [0] * (steps // every)
    if not gpu:
        tracemalloc.start()
    loss = train(steps, readings)
    if not gpu:
        tracemalloc.stop()
    return {"device": device, "steps": steps, "every": every, "batch": batch, "bytes_in_use": readings,
            "final_loss": loss, "seconds": round(time.perf_counter() - start, 1)}


def run_soak(device):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([ROOT] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    done = subprocess.run([sys.executable, "-W", "error", os.path.abspath(__file__), device],
                          capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == "", done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    at_1000, at_end = result["bytes_in_use"][0], result["bytes_in_use"][-1]
    growth = (at_end - at_1000) / at_1000
    print(f"\nsoak on {device}: {at_1000:,} bytes in use at step {SOAK_EVERY:,}, {at_end:,} at step "
          f"{SOAK_STEPS:,} ({growth:+.3%}), {result['seconds']} s")
    return result, growth


@pytest.mark.slow
def test_ten_thousand_training_steps_on_the_cpu_keep_memory_flat():
    result, growth = run_soak("cpu")
    assert result["final_loss"] < 0.5, result  # it trained
    assert abs(growth) < 0.01, result
    assert max(result["bytes_in_use"]) - min(result["bytes_in_use"]) < 0.01 * result["bytes_in_use"][0], result


@pytest.mark.gpu
@pytest.mark.skipif(os.environ.get("GPUGRAD_STAND_IN_CUPY") == "1",
                    reason="the CuPy stand-in's memory pool holds nothing (0 bytes): the soak would prove nothing")
def test_ten_thousand_training_steps_on_the_gpu_keep_the_memory_pool_flat():
    result, growth = run_soak("cuda")
    assert result["final_loss"] < 0.5, result
    assert abs(growth) < 0.01, result


# ---------------------------------------------------------------- out of GPU memory


class _Pool:
    def __init__(self):
        self.freed = 0

    def free_all_blocks(self):
        self.freed += 1

    def used_bytes(self):
        return 12_345


class _Device:
    def __init__(self, index):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _StandInOutOfMemoryError(MemoryError):
    """CuPy's OutOfMemoryError signature, for machines without CuPy."""

    def __init__(self, size, total, limit=0):
        self._size = size
        super().__init__(f"Out of memory allocating {size:,} bytes")


def _oom_class():
    """CuPy's out-of-memory class, or one stand-in class (the same on every call) without CuPy."""
    try:
        import cupy
        return cupy.cuda.memory.OutOfMemoryError
    except Exception:  # noqa: BLE001 - no CuPy here
        return _StandInOutOfMemoryError


def stand_in_backend(kernel):
    """A CupyBackend over NumPy arrays whose only kernel is ``kernel`` (a Python callable) as tanh_grad."""
    pool = _Pool()
    backend = object.__new__(cupy_backend.CupyBackend)
    backend.xp = types.SimpleNamespace(get_default_memory_pool=lambda: pool,
                                       cuda=types.SimpleNamespace(Device=_Device),
                                       ascontiguousarray=np.ascontiguousarray, ndarray=np.ndarray)
    backend.array_type = np.ndarray
    backend._get_device = lambda: 0
    backend._device_index = lambda a: 0
    backend._out_of_memory = _oom_class()
    dtype = np.dtype(np.float32)
    backend._kernels = {("tanh_grad", dtype, 0): cupy_backend._Fused(kernel, kernel_source.load("tanh_grad"), dtype)}
    return backend, pool


def test_out_of_memory_in_a_fused_kernel_names_it_and_the_size_and_frees_the_pool():
    oom = _oom_class()
    calls = []

    def kernel(y, dy):
        calls.append(y.shape)
        if len(calls) == 1:
            raise oom(4_000_000_000, 1_000)
        return dy * (1 - y * y)

    backend, pool = stand_in_backend(kernel)
    y, dy = np.full(3, 0.5, np.float32), np.ones(3, np.float32)
    with pytest.raises(gg.OutOfMemoryError) as info:
        backend.fused("tanh_grad", y, dy)
    message = str(info.value)
    assert "fused kernel 'tanh_grad' ran out of GPU memory on cuda:0 asking for 4,000,000,000 bytes" in message
    assert isinstance(info.value, MemoryError) and isinstance(info.value.__cause__, oom)
    assert pool.freed == 1, "the pool's cached blocks must be freed"
    np.testing.assert_allclose(backend.fused("tanh_grad", y, dy), [0.75, 0.75, 0.75])  # usable again


def test_out_of_memory_copying_to_the_gpu_names_the_shape():
    oom = _oom_class()
    backend, pool = stand_in_backend(None)

    def asarray(data, dtype=None):
        raise oom(8_000, 0)

    backend.xp.asarray = asarray
    with pytest.raises(gg.OutOfMemoryError, match=r"copying an array of shape \(1000,\) to the GPU .* 8,000 bytes"):
        backend.asarray(np.zeros(1000), None, 0)
    assert pool.freed == 1


@pytest.mark.gpu
def test_out_of_memory_on_the_gpu_names_the_op_and_leaves_the_pool_usable():
    import cupy

    y = gg.tensor(np.zeros(1, np.float32), device="cuda")
    huge = gg.broadcast_to(gg.tensor(np.ones(1, np.float32), device="cuda"), (1 << 42,))  # a view: no memory yet
    with pytest.raises(gg.OutOfMemoryError, match=r"fused kernel 'tanh_grad' ran out of GPU memory on cuda:0 "
                                                  r"asking for 17,592,186,044,416 bytes"):
        gg.ops.tanh_grad(y, huge)  # its output would need 16 TiB
    x = gg.tensor(np.linspace(-1, 1, 1 << 20, dtype=np.float32), device="cuda")
    with gg.GradientTape() as tape:
        tape.watch(x)
        loss = gg.sum(gg.tanh(x))
    g = tape.gradient(loss, x)
    np.testing.assert_allclose(g.numpy(), 1 - np.tanh(x.numpy()) ** 2, rtol=1e-5, atol=1e-6)
    assert cupy.get_default_memory_pool().used_bytes() < 1 << 30


if __name__ == "__main__":
    print(json.dumps(soak(sys.argv[1] if len(sys.argv) > 1 else "cpu")))
