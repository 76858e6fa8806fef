"""pickle, copy.copy and copy.deepcopy of tensors, Variables, Modules, optimizers, schedules and generators;
a model passed to a 'spawn' process; a GPU tensor unpickled where there is no GPU."""
import copy
import multiprocessing
import os
import pickle
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import gpugrad as gg
from gpugrad import nn
from gpugrad.backend import Device
from gpugrad.backend.numpy_backend import NumpyBackend
from tests.conftest import device_params

PROTOCOLS = range(2, pickle.HIGHEST_PROTOCOL + 1)


@pytest.fixture(autouse=True)
def on_the_cpu():
    """Each test on the CPU unless it names a device: a GPU generator's position is not saved, so the
    bit-exact resumes run where the default device is a GPU too."""
    with gg.device("cpu"):
        yield


def assert_same(new, old):
    """The same dtype, shape and bytes (NaN payloads and zero signs included), any dtype."""
    new, old = np.asarray(new), np.asarray(old)
    assert (new.dtype, new.shape) == (old.dtype, old.shape) and new.tobytes() == old.tobytes()


def round_trip(value, protocol=pickle.HIGHEST_PROTOCOL):
    return pickle.loads(pickle.dumps(value, protocol=protocol))


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64", "bool"])
def test_a_tensor_round_trips_with_its_dtype_shape_and_bits(protocol, dtype):
    values = np.random.default_rng(0).standard_normal((3, 4)) * 10
    t = gg.tensor(values.astype(dtype))
    back = round_trip(t, protocol)
    assert type(back) is gg.Tensor and back.device == t.device
    assert_same(back.numpy(), t.numpy())
    assert not np.shares_memory(back.data, t.data)


@pytest.mark.parametrize("array", [np.float32(2.5), np.zeros((0, 3), np.float32),
                                   np.arange(12.0).reshape(3, 4)[:, ::2], np.asfortranarray(np.ones((2, 3)))],
                         ids=["0-d", "empty", "strided-view", "fortran"])
def test_odd_layouts_round_trip(array):
    back = round_trip(gg.from_numpy(np.asarray(array)) if np.ndim(array) else gg.tensor(array))
    assert_same(back.numpy(), np.asarray(array))


def test_a_variable_keeps_name_and_trainable_and_starts_a_fresh_version():
    w = gg.Variable([1.0, 2.0], name="w", trainable=False)
    w.assign_add(1.0)
    back = round_trip(w)
    assert type(back) is gg.Variable and (back.name, back.trainable, back._version) == ("w", False, 0)
    assert back.numpy().tolist() == [2.0, 3.0]
    back.assign(5.0)  # its own, writable array
    assert w.numpy().tolist() == [2.0, 3.0] and back.numpy().tolist() == [5.0, 5.0]


def test_a_pickle_made_when_gpugrad_tensor_was_one_module_loads():
    """Pickles made when ``gpugrad.tensor`` was one module name its classes and unpickling functions there
    (protocol 2 writes each as the text ``c<module>\\n<name>``); the package keeps those names."""
    data = pickle.dumps([gg.tensor([1.0, 2.0], dtype="float64"), gg.Variable([3], name="w", trainable=False)],
                        protocol=2)
    old = data.replace(b"cgpugrad.tensor._tensor\n", b"cgpugrad.tensor\n").replace(
        b"cgpugrad.tensor._variable\n", b"cgpugrad.tensor\n")
    assert old.count(b"cgpugrad.tensor\n") == 4  # Tensor, _unpickle_tensor, Variable, _unpickle_variable
    t, w = pickle.loads(old)
    assert type(t) is gg.Tensor and t.numpy().tolist() == [1.0, 2.0] and t.dtype == np.float64
    assert type(w) is gg.Variable and (w.name, w.trainable, w.numpy().tolist()) == ("w", False, [3])


def test_no_tape_state_is_pickled():
    x = gg.tensor([1.0, 2.0])
    w = gg.Variable([3.0, 4.0], trainable=False)
    with gg.GradientTape(persistent=True) as tape:
        tape.watch([x, w])
        y = gg.sum(x * w)
        data = pickle.dumps((x, w, y))
    x2, w2, y2 = pickle.loads(data)
    assert tape.gradient(y, x).numpy().tolist() == [3.0, 4.0]
    assert tape.gradient(y, [x2, w2, y2]) == [None, None, None]  # unpickled: new objects no tape watched
    with gg.GradientTape() as fresh:
        z = gg.sum(x2 * x2)
    assert fresh.gradient(z, x2) is None and fresh.watched_variables() == ()


def test_copy_copies_the_data_as_numpy_does():
    """The choice (written in Tensor.__copy__): NumPy's copy.copy of an ndarray copies; so does gpugrad's."""
    a = np.array([1.0, 2.0])
    assert not np.shares_memory(copy.copy(a), a)  # NumPy's behaviour, which gpugrad matches
    t, w = gg.tensor([1.0, 2.0]), gg.Variable([1.0, 2.0], name="w")
    for value in (t, w):
        for copier in (copy.copy, copy.deepcopy):
            c = copier(value)
            assert type(c) is type(value) and c is not value and not np.shares_memory(c.data, value.data)
            assert_same(c.numpy(), value.numpy())
    c = copy.copy(w)
    c.assign_add(1.0)
    assert w.numpy().tolist() == [1.0, 2.0] and c.name == "w" and c.trainable


def test_deepcopy_keeps_identity_within_one_copy():
    w = gg.Variable([1.0])
    pair = copy.deepcopy([w, w])
    assert pair[0] is pair[1] and pair[0] is not w
    a, b = round_trip([w, w])
    assert a is b


def model(seed=0):
    return nn.Sequential(nn.Conv2D(1, 2, kernel_size=3, padding=1, seed=seed), nn.BatchNorm(2),
                         nn.MaxPool2D(2), nn.Flatten(), nn.Dense(8, 6, activation="relu", seed=seed + 1),
                         nn.Dropout(0.5, seed=seed + 2), nn.LayerNorm(6), nn.Dense(6, 3, seed=seed + 3))


X = gg.tensor(np.random.default_rng(1).standard_normal((2, 1, 4, 4)).astype(np.float32), device="cpu")


@pytest.mark.parametrize("copier", [round_trip, copy.deepcopy], ids=["pickle", "deepcopy"])
def test_a_module_round_trips_with_its_variables_and_its_dropout_generator(copier):
    m = model()
    m(X)  # draws a dropout mask: the layer's generator has moved
    c = copier(m)
    assert type(c) is nn.Sequential and [n for n, _ in c.named_variables()] == [n for n, _ in m.named_variables()]
    for va, vb in zip(m.variables, c.variables):
        assert va is not vb and (va.name, va.trainable, va.dtype) == (vb.name, vb.trainable, vb.dtype)
        assert_same(vb.numpy(), va.numpy())
    assert_same(c(X).numpy(), m(X).numpy())  # the same next dropout mask: the generator's state travelled
    assert_same(c.eval()(X).numpy(), m.eval()(X).numpy())


def test_copy_copy_of_a_module_shares_its_variables_as_python_and_pytorch_do():
    m = nn.Dense(2, 2, seed=0)
    shallow = copy.copy(m)
    assert shallow is not m and shallow.kernel is m.kernel


@pytest.mark.parametrize("make", [lambda: gg.optimizers.Adam(gg.optimizers.schedules.CosineDecay(0.1, 20)),
                                  lambda: gg.optimizers.SGD(0.1, momentum=0.9, nesterov=True),
                                  lambda: gg.optimizers.RMSProp(0.01, momentum=0.5, centered=True),
                                  lambda: gg.optimizers.AdaGrad(0.1)],
                         ids=["adam-schedule", "sgd", "rmsprop", "adagrad"])
@pytest.mark.parametrize("copier", [round_trip, copy.deepcopy], ids=["pickle", "deepcopy"])
def test_an_optimizer_pickled_with_its_model_keeps_training_the_same_bits(make, copier):
    m, opt = nn.Sequential(nn.Dense(3, 4, activation="tanh", seed=0), nn.Dense(4, 1, seed=1)), make()
    x = gg.tensor(np.random.default_rng(2).standard_normal((5, 3)).astype(np.float32))

    def step(model, optimizer):
        optimizer.minimize(lambda: gg.mean(gg.square(model(x))))

    for _ in range(3):
        step(m, opt)
    m2, opt2 = copier((m, opt))
    assert opt2.iterations == 3 and type(opt2.learning_rate) is type(opt.learning_rate)
    assert [v for v in opt2.variables()] == [v for v in m2.trainable_variables]  # bound to the copies
    assert all(a is b for a, b in zip(opt2.variables(), m2.trainable_variables))
    for _ in range(3):
        step(m, opt)
        step(m2, opt2)
    for va, vb in zip(m.variables, m2.variables):
        assert_same(vb.numpy(), va.numpy())


def test_a_schedule_and_a_generator_round_trip():
    schedule = gg.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5, staircase=True)
    back = round_trip(schedule)
    assert [back(s) for s in (0, 10, 25)] == [schedule(s) for s in (0, 10, 25)]
    g = gg.random.Generator(3)
    g.uniform((4,))
    g2 = round_trip(g)
    assert g2.seed == 3 and g2.uniform((5,)).numpy().tolist() == g.uniform((5,)).numpy().tolist()
    fresh = gg.random.Generator()  # seeded from entropy: the entropy travels
    twin = round_trip(fresh)
    assert twin.seed is None and fresh.normal((3,)).numpy().tolist() == twin.normal((3,)).numpy().tolist()


def test_a_bad_generator_state_is_refused_by_name():
    with pytest.raises(ValueError, match="not a gg.random.Generator state"):
        gg.random.Generator(0).set_state({"seed": 1})


def predict(m, x):
    """Runs in a 'spawn' child: the model and the input arrive pickled."""
    return m.eval()(x).numpy()


def test_a_model_passed_to_a_spawn_process():
    m = model()
    expected = m.eval()(X).numpy()
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        got = pool.apply(predict, (m, X))
    assert_same(got, expected)


# --- a GPU tensor where there is no GPU ----------------------------------------------------------------

def test_a_tensor_pickled_on_a_missing_gpu_loads_on_the_cpu_with_a_warning_naming_it():
    """A stand-in 'cuda:7' (host arrays behind a GPU's name): no machine here has that GPU."""
    missing = Device("cuda:7", NumpyBackend(), 7)
    w = gg.Variable([1.0, 2.0], name="w")
    on_gpu = gg.Variable._wrap(w.numpy(), missing)
    on_gpu.trainable, on_gpu.name, on_gpu._version = True, "w", 0
    data = pickle.dumps([on_gpu, gg.Tensor._wrap(np.arange(3), missing)])
    assert b"cuda:7" in data
    with pytest.warns(RuntimeWarning, match=r"a tensor pickled on 'cuda:7' is loaded on the CPU: ") as caught:
        back, t = pickle.loads(data)
    assert back.device == t.device == "cpu" and back.name == "w" and back.numpy().tolist() == [1.0, 2.0]
    assert t.numpy().tolist() == [0, 1, 2] and len(caught) >= 1


@pytest.mark.parametrize("device", device_params())
def test_a_tensor_unpickles_on_its_device(device):
    t = gg.tensor([[1.0, 2.0]], dtype="float64", device=device)
    w = gg.Variable([3.0], device=device, name="w")
    opt = gg.optimizers.Adam(0.1)
    opt.apply_gradients([(gg.tensor([1.0], device=device), w)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the device exists: no fallback warning
        t2, w2, opt2 = round_trip((t, w, opt))
    assert t2.device == t.device and w2.device == w.device and t2.dtype == np.float64
    assert_same(t2.numpy(), t.numpy())
    assert_same(opt2.get_slot(w2, "m").numpy(), opt.get_slot(w, "m").numpy())
    assert isinstance(opt2._state[id(w2)][1]["m"], w2._device.array_type)  # the slot lives on the device
    c = copy.deepcopy(w)
    assert c.device == w.device and isinstance(c.data, w._device.array_type)


STAND_IN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stand_in_cupy")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def python(code, env):
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def test_a_gpu_tensor_pickled_in_one_process_loads_on_the_cpu_of_another(tmp_path):
    """Pickled on the stand-in CuPy's cuda:0, unpickled in a process that sees no GPU."""
    base = {k: v for k, v in os.environ.items()
            if k not in ("GPUGRAD_DEVICE", "GPUGRAD_STAND_IN_CUPY", "GPUGRAD_STAND_IN_RECORD")}
    gpu = {**base, "PYTHONPATH": os.pathsep.join([STAND_IN, ROOT]), "GPUGRAD_STAND_IN_CUPY": "1",
           "CUPY_CACHE_DIR": str(tmp_path / "cupy")}
    cpu = {**base, "PYTHONPATH": ROOT, "CUDA_VISIBLE_DEVICES": ""}
    path = tmp_path / "gpu.pickle"
    python(f"""
        import pickle, gpugrad as gg
        w = gg.Variable([[1.5, -2.0]], dtype="float64", device="cuda", name="w")
        assert type(w.data).__module__.startswith("cupy")
        open({str(path)!r}, "wb").write(pickle.dumps(w))
    """, gpu)
    out = python(f"""
        import pickle, warnings, gpugrad as gg
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            w = pickle.loads(open({str(path)!r}, "rb").read())
        print(w.device, w.name, w.dtype, w.numpy().tolist())
        print([str(c.message) for c in caught])
    """, cpu)
    assert "cpu w float64 [[1.5, -2.0]]" in out
    assert "a tensor pickled on 'cuda:0' is loaded on the CPU" in out
