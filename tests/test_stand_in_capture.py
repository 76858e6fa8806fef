"""The stand-in's stream capture held to CuPy 14.2's: what a capture refuses, checked against the real wheel.

CuPy 14.2 refuses, while the current stream captures (``cupy.cuda.Stream.begin_capture``):
cuBLAS, cuSOLVER and cuRAND calls (``setStream`` of ``cupy_backends/cuda/libs/{cublas,cusolver,curand}.pyx``:
``NotImplementedError``), host transfers (``MemoryPointer.copy_to_host_async`` / ``copy_from_host_async`` in
``cupy/cuda/memory.pyx``: ``RuntimeError``, met by ``get``, ``item``, ``tolist``, ``bool``, ``float``,
``cupy.asnumpy``, ``cupy.asarray`` of host data) and a capture on the legacy stream (``cupy/cuda/stream.pyx``).
CUB (``cupy/cuda/cub.pyx``) and Thrust (``cupy/cuda/thrust.pyx``) check nothing: their workspace comes from
the pool, which the graph keeps using after the capture gave it back; the stand-in refuses those itself.

The real wheel is checked without a GPU: Cython 3.1 stores a module's string constants zlib-compressed in
the ``.so``; :func:`cython_strings` reads them back, so each message the stand-in raises is found in the
module whose check it copies, and CUB's and Thrust's modules are shown to hold no capture check.
"""
import re
import zlib
from pathlib import Path

import pytest

from tests.conftest import run_in_stand_in as in_stand_in, skip_or_fail

ROOT = Path(__file__).resolve().parent.parent
CUDA_PY = ROOT / "tests" / "stand_in_cupy" / "cupy" / "cuda.py"


def real_wheel():
    """The real CuPy wheel's site-packages folder, or skip (fail in CI): found without importing its CUDA modules."""
    import importlib.util

    spec = importlib.util.find_spec("cupy")
    if spec is None or spec.origin is None or "stand_in" in spec.origin:
        skip_or_fail("the real CuPy wheel is not installed: pip install -e '.[kernelcheck]'")
    return Path(spec.origin).parent.parent


def cython_strings(so_path):
    """The string constants of a Cython 3.1 module: every zlib stream in the file, decompressed and joined."""
    data = so_path.read_bytes()
    found = []
    for m in re.finditer(rb"\x78[\x01\x5e\x9c\xda]", data):
        try:
            text = zlib.decompressobj().decompress(data[m.start():m.start() + (1 << 20)])
        except zlib.error:
            continue
        if len(text) > 200:
            found.append(text)
    return b"\n".join(found).decode("utf-8", "replace")


def module_file(site, dotted):
    [path] = (site / Path(*dotted.split(".")[:-1])).glob(dotted.split(".")[-1] + ".cpython-*.so")
    return path


def stand_in_messages():
    """The message constants of the stand-in's cuda.py (read as text: it loads only inside the stand-in)."""
    source = CUDA_PY.read_text()
    return {name: re.search(rf'^{name} = "([^"]*)"', source, re.M).group(1)
            for name in ("_LIBRARY_MESSAGE", "_HOST_TRANSFER_MESSAGE", "_LEGACY_STREAM_MESSAGE")}


@pytest.mark.parametrize("library,module", [("cuBLAS", "cupy_backends.cuda.libs.cublas"),
                                            ("cuSOLVER", "cupy_backends.cuda.libs.cusolver"),
                                            ("cuRAND", "cupy_backends.cuda.libs.curand")])
def test_library_refusal_is_the_real_wheel_s(library, module):
    text = cython_strings(module_file(real_wheel(), module))
    assert stand_in_messages()["_LIBRARY_MESSAGE"].format(library) in text


def test_host_transfer_and_legacy_stream_refusals_are_the_real_wheel_s():
    site, messages = real_wheel(), stand_in_messages()
    memory = cython_strings(module_file(site, "cupy.cuda.memory"))
    for direction in ("D2H", "H2D"):
        assert messages["_HOST_TRANSFER_MESSAGE"].format(direction) in memory
    assert messages["_LEGACY_STREAM_MESSAGE"] in cython_strings(module_file(site, "cupy.cuda.stream"))


@pytest.mark.parametrize("module", ["cupy.cuda.cub", "cupy.cuda.thrust", "cupy._core._routines_linalg"])
def test_cub_thrust_and_the_products_own_code_check_no_capture(module):
    # so the refusal of their pool temporaries is the stand-in's own (the real capture succeeds, then corrupts)
    text = cython_strings(module_file(real_wheel(), module))
    assert len(text) > 1000 and "captur" not in text


def test_cython_strings_reads_a_compressed_table(tmp_path):
    blob = tmp_path / "m.so"
    blob.write_bytes(b"\x00junk" + zlib.compress(b"calling cuBLAS API during stream capture " * 10) + b"\x00")
    assert "calling cuBLAS API" in cython_strings(blob)


REFUSALS = """
    import numpy as np, pytest, cupy
    s = cupy.cuda.Stream()
    a, b, v = cupy.ones((3, 4), np.float32), cupy.ones((4, 2), np.float32), cupy.arange(3.0)
    out, one, vec, eye = cupy.empty((3, 2), np.float32), cupy.empty((), np.float64), cupy.empty(3), cupy.eye(2)
    refused = {
        "calling cuBLAS API during stream capture is currently unsupported": [
            lambda: cupy.matmul(a, b, out=out), lambda: cupy.dot(a, b, out=out), lambda: a @ b],
        "calling cuSOLVER API during stream capture": [lambda: cupy.linalg.inv(eye)],
        "calling cuRAND API during stream capture": [lambda: cupy.random.RandomState(0).random_sample(3)],
        "D2H transfers are disallowed": [lambda: v.get(), lambda: v[0].item(), lambda: bool(v[0]),
                                         lambda: float(v[0]), lambda: int(v[0]), lambda: v.tolist(),
                                         lambda: cupy.asnumpy(v)],
        "H2D transfers are disallowed": [lambda: cupy.asarray(np.ones(2))],
        "temporaries from CuPy's memory pool": [
            lambda: cupy.matmul(v, v, out=one), lambda: cupy.sort(v), lambda: v.sum(out=one),
            lambda: cupy.cumsum(v, out=vec), lambda: cupy.argsort(v),
            lambda: cupy.add(v[1:], v[:-1], out=v[:2])],  # overlapping operand: CuPy copies it
    }
    for message, calls in refused.items():
        for call in calls:
            s.begin_capture()
            try:
                with pytest.raises((NotImplementedError, RuntimeError), match=message):
                    call()
            finally:
                s.end_capture()
    with pytest.raises(RuntimeError, match="cannot capture on the default"):
        cupy.cuda.Stream(null=True).begin_capture()
    # what a capture holds: launches into arrays that exist, run at each launch of the graph
    s.begin_capture()
    cupy.add(v, 1.0, out=vec)
    cupy.multiply(vec, vec, out=vec)
    g = s.end_capture()
    assert vec.get().tolist() != [1.0, 4.0, 9.0]  # nothing ran yet
    g.launch(s)
    assert vec.get().tolist() == [1.0, 4.0, 9.0]
    # outside a capture all of it runs
    assert cupy.matmul(v, v).item() == 5.0 and v.get().tolist() == [0.0, 1.0, 2.0] and bool(v[1])
    print("ok")
"""


def test_stand_in_refuses_in_a_capture_what_cupy_14_2_refuses(tmp_path):
    assert in_stand_in(REFUSALS, tmp_path).strip() == "ok"


# gpugrad under those refusals: a traced training step on the stand-in gets no failed capture, the eager bits
TRAINING_STEPS = """
    import numpy as np, gpugrad as gg
    from gpugrad.training import build_model
    for name, shape in (("mlp", (16, 64)), ("cnn", (16, 1, 8, 8))):
        nets = [build_model(name, 0, "cuda") for _ in range(2)]
        opts = [gg.optimizers.Adam(0.002) for _ in range(2)]
        steps = [(lambda m, o: lambda x, y: o.minimize(lambda: gg.softmax_cross_entropy(m(x), y),
                                                       m.trainable_variables))(m, o) for m, o in zip(nets, opts)]
        traced = gg.function(steps[1])
        rng = np.random.default_rng(0)
        for _ in range(3):
            x = gg.tensor(rng.standard_normal(shape).astype(np.float32), device="cuda")
            y = gg.tensor(rng.integers(0, 10, shape[0]), device="cuda")
            assert traced(x, y).numpy().tobytes() == steps[0](x, y).numpy().tobytes()
        for a, b in zip(nets[0].trainable_variables, nets[1].trainable_variables):
            assert a.numpy().tobytes() == b.numpy().tobytes()
        line = traced.diagnostics()[0]
        n = len(nets[1].trainable_variables)  # Adam's launches, one per variable, in the graphs
        assert "failed" not in line and "steps graphed" in line, line
        assert f"a host step and {n} update launches" in line, line
        print(name, line.split("; ")[-3])
"""


def test_traced_training_steps_capture_nothing_cupy_refuses(tmp_path):
    out = in_stand_in(TRAINING_STEPS, tmp_path)
    assert out.count("\n") == 2, out


LIBRARY_OPS = """
    import numpy as np, gpugrad as gg
    rng = np.random.default_rng(1)

    def f(a, m, v):
        # runs of elementwise kernels between a product, a vector . vector product, a reduction, a sort
        h = gg.tanh(gg.tanh(a) * 1.5 + 0.25)
        p = gg.matmul(h, m)
        q = gg.exp(gg.tanh(p) * 0.5) - 1.0
        d = gg.matmul(v, v)
        s = gg.sort(gg.tanh(gg.sin(v) * 2.0))
        return gg.sum(q) * d + gg.sum(gg.cumsum(s * 0.5 + 1.0))
    traced = gg.function(f)
    for _ in range(3):
        args = [gg.tensor(rng.standard_normal(s).astype(np.float32), device="cuda") for s in ((4, 5), (5, 3), (5,))]
        assert traced(*args).numpy().tobytes() == f(*args).numpy().tobytes()
    line = traced.diagnostics()[0]
    assert "failed" not in line and "steps graphed" in line, line
    print(line.split("; ")[-2])
"""


def test_a_traced_function_with_library_calls_graphs_its_elementwise_runs(tmp_path):
    out = in_stand_in(LIBRARY_OPS, tmp_path)
    assert re.search(r"CUDA graphs: \d+ segments?, \d+ of \d+ steps graphed", out), out


# A kernel's scalar param in a captured graph: a Python number is the value at the capture (CUDA copies a
# launch's arguments into the graph); a 0-d device array is read at each launch, as the device reads memory
SCALAR_PARAMS = """
    import cupy, numpy as np
    import gpugrad as gg
    from gpugrad.backend import get_device
    backend = get_device("cuda").backend
    stream = cupy.cuda.Stream()
    grad = cupy.ones(3, dtype=np.float32)
    lr = cupy.zeros((), dtype=np.float64)
    lr.fill(0.5)
    runs = {}
    for how in ("python float", "0-d array"):
        param, velocity = cupy.zeros(3, dtype=np.float32), cupy.zeros(3, dtype=np.float32)
        rate = 0.5 if how == "python float" else lr
        with stream:
            stream.begin_capture()
            backend.fused("sgd_momentum_update", grad, param, velocity, lr=rate, momentum=0.0, weight_decay=0.0,
                          nesterov=False)
            graph = stream.end_capture()
        assert param.get().tolist() == [0.0, 0.0, 0.0]  # captured, not run
        graph.launch(stream)
        lr.fill(0.25)
        graph.launch(stream)
        runs[how] = param.get().tolist()[0]
        lr.fill(0.5)
    assert runs == {"python float": -1.0, "0-d array": -0.75}, runs
    print("ok")
"""


def test_stand_in_graphs_read_a_0d_param_at_each_launch_and_freeze_a_python_one(tmp_path):
    assert in_stand_in(SCALAR_PARAMS, tmp_path).strip() == "ok"
