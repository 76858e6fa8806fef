"""Checkpoints that resume: gg.save/gg.load with the optimizer's and the generators' states; files that
are not checkpoints raise gg.CheckpointError naming the path and the problem."""
import io
import pickle
import zipfile

import numpy as np
import pytest

import gpugrad as gg
from gpugrad import nn
from gpugrad.serialization import CheckpointKeyError
from tests.conftest import device_params

RNG = np.random.default_rng(0)
X = RNG.standard_normal((32, 6)).astype(np.float32)
LABELS = RNG.integers(0, 3, 32)


@pytest.fixture(autouse=True)
def on_the_cpu():
    """Each test on the CPU unless it names a device: a GPU generator's position is not saved, so the
    bit-exact resumes run where the default device is a GPU too."""
    with gg.device("cpu"):
        yield


def mlp(seed):
    """A small MLP with two dropouts: one with its own generator, one drawing from gg.random."""
    return nn.Sequential(nn.Dense(6, 16, activation="relu", seed=seed), nn.Dropout(0.3, seed=seed + 100),
                         nn.Dense(16, 16, activation="relu", seed=seed + 1), nn.Dropout(0.2),
                         nn.Dense(16, 3, seed=seed + 2))


def adam():
    schedule = gg.optimizers.schedules.CosineDecay(0.05, decay_steps=30, alpha=0.1, warmup_target=0.1,
                                                   warmup_steps=5)
    return gg.optimizers.Adam(schedule)


def train(model, opt, epochs):
    """``epochs`` passes over the data in mini-batches of 8, shuffled by gg.random."""
    for _ in range(epochs):
        order = gg.random.permutation(len(X))
        for start in range(0, len(X), 8):
            batch = order[start:start + 8]
            x, y = gg.tensor(X[batch]), LABELS[batch]
            opt.minimize(lambda: gg.softmax_cross_entropy(model(x), y))


def state_bytes(model, opt):
    values = [v.numpy().tobytes() for v in model.variables]
    slots = [opt.get_slot(v, name).numpy().tobytes() for v in model.variables for name in ("m", "v")]
    return values, slots, opt.iterations


def test_a_run_stopped_at_epoch_5_and_resumed_gives_the_bits_of_an_uninterrupted_run(tmp_path):
    gg.random.seed(1)
    straight, straight_opt = mlp(0), adam()
    train(straight, straight_opt, 10)

    gg.random.seed(1)
    first, first_opt = mlp(0), adam()
    train(first, first_opt, 5)
    gg.save(tmp_path / "epoch5.npz", first, optimizer=first_opt, random_state=True)
    del first, first_opt

    gg.random.seed(12345)  # a fresh process: other weights, other random state, a new optimizer
    resumed, resumed_opt = mlp(50), adam()
    gg.load(tmp_path / "epoch5.npz", resumed, optimizer=resumed_opt, random_state=True)
    assert resumed_opt.iterations == 20 and resumed_opt.current_learning_rate() == adam().learning_rate(20)
    train(resumed, resumed_opt, 5)

    assert state_bytes(resumed, resumed_opt) == state_bytes(straight, straight_opt)


@pytest.mark.parametrize("left_out", ["optimizer", "random_state", "layer generator"])
def test_resuming_without_each_part_of_the_state_gives_other_weights(tmp_path, left_out):
    """The test above can fail: leave any part of the state out and the weights differ."""
    gg.random.seed(1)
    straight, straight_opt = mlp(0), adam()
    train(straight, straight_opt, 4)
    gg.random.seed(1)
    first, first_opt = mlp(0), adam()
    train(first, first_opt, 2)
    gg.save(tmp_path / "c.npz", first, optimizer=first_opt, random_state=True)
    gg.random.seed(777)
    resumed, resumed_opt = mlp(50), adam()
    gg.load(tmp_path / "c.npz", resumed, optimizer=None if left_out == "optimizer" else resumed_opt,
            random_state=left_out != "random_state")
    if left_out == "layer generator":
        resumed.layers[1]._generator.set_state(gg.random.Generator(5).get_state())
    train(resumed, resumed_opt, 2)
    assert [v.numpy().tobytes() for v in resumed.variables] != [v.numpy().tobytes() for v in straight.variables]


def test_sgd_momentum_state_round_trips_through_a_file(tmp_path):
    w = gg.Variable([1.0, -2.0], name="w")
    opt = gg.optimizers.SGD(gg.optimizers.schedules.StepDecay(0.1, 2, 0.5), momentum=0.9)
    for _ in range(3):
        opt.minimize(lambda: gg.sum(gg.square(w)))
    gg.save(tmp_path / "s.npz", {"w": w}, optimizer=opt)
    w2, opt2 = gg.Variable([0.0, 0.0]), gg.optimizers.SGD(gg.optimizers.schedules.StepDecay(0.1, 2, 0.5), momentum=0.9)
    gg.load(tmp_path / "s.npz", {"w": w2}, optimizer=opt2)
    assert opt2.iterations == 3 and opt2.variables() == [w2]
    np.testing.assert_array_equal(opt2.get_slot(w2, "velocity").numpy(), opt.get_slot(w, "velocity").numpy())
    for _ in range(2):
        opt.minimize(lambda: gg.sum(gg.square(w)))
        opt2.minimize(lambda: gg.sum(gg.square(w2)))
    assert w.numpy().tobytes() == w2.numpy().tobytes()


@pytest.mark.parametrize("device", device_params())
def test_adam_resumes_to_the_bit_on_each_device(tmp_path, device):
    x = gg.tensor(X, device=device)

    def make():
        return nn.Sequential(nn.Dense(6, 8, activation="tanh", seed=0, device=device),
                             nn.Dense(8, 3, seed=1, device=device)), adam()

    def steps(model, opt, n):
        for _ in range(n):
            opt.minimize(lambda: gg.softmax_cross_entropy(model(x), LABELS))

    straight, straight_opt = make()
    steps(straight, straight_opt, 6)
    first, first_opt = make()
    steps(first, first_opt, 3)
    gg.save(tmp_path / "c.npz", first, optimizer=first_opt)
    resumed, resumed_opt = make()
    gg.load(tmp_path / "c.npz", resumed, optimizer=resumed_opt)
    assert all(isinstance(resumed_opt._state[id(v)][1]["m"], v._device.array_type) for v in resumed.variables)
    steps(resumed, resumed_opt, 3)
    assert state_bytes(resumed, resumed_opt) == state_bytes(straight, straight_opt)


@pytest.mark.gpu
def test_a_generator_that_drew_on_a_gpu_says_its_gpu_stream_is_not_saved():
    g = gg.random.Generator(0)
    g.uniform((3,), device="cuda")
    g.uniform((3,), device="cpu")
    with pytest.warns(RuntimeWarning, match=r"its random stream on cuda:0 cannot be saved"):
        state = g.get_state()
    restored = gg.random.Generator(9)
    restored.set_state(state)
    assert restored.uniform((2,), device="cpu").tolist() == g.uniform((2,), device="cpu").tolist()  # CPU: restored


def test_a_training_checkpoint_loads_into_the_model_alone(tmp_path):
    model, opt = mlp(0), adam()
    train(model, opt, 1)
    gg.save(tmp_path / "full.npz", model, optimizer=opt, random_state=True)
    assert sorted(gg.load(tmp_path / "full.npz")) == sorted(name for name, _ in model.named_variables())
    other = gg.load(tmp_path / "full.npz", mlp(9))  # strict: the optimizer's entries are not variables
    assert [v.numpy().tobytes() for v in other.variables] == [v.numpy().tobytes() for v in model.variables]


def test_optimizer_mismatches_are_named(tmp_path):
    w = gg.Variable([1.0])
    opt = gg.optimizers.Adam(0.1)
    opt.minimize(lambda: gg.sum(w * w))
    gg.save(tmp_path / "a.npz", [w], optimizer=opt)
    with pytest.raises(gg.CheckpointError, match=r"a\.npz: holds the state of a Adam optimizer, not of a SGD"):
        gg.load(tmp_path / "a.npz", [gg.Variable([0.0])], optimizer=gg.optimizers.SGD(0.1, momentum=0.9))
    stranger = gg.Variable([3.0], name="stranger")
    opt.minimize(lambda: gg.sum(stranger * w))
    with pytest.raises(gg.CheckpointError, match=r"holds state for Variable 'stranger' \(float32\), which is not "
                                                  r"among the variables saved"):
        gg.save(tmp_path / "b.npz", [w], optimizer=opt)


# --- files written by gpugrad before optimizer state was saved --------------------------------------

def old_format_file(path, model):
    """What gg.save wrote before the optimizer's state: one array per variable path, nothing else."""
    with open(path, "wb") as f:
        np.savez(f, **{name: var.numpy() for name, var in model.named_variables()})


def test_files_of_the_old_format_still_load(tmp_path):
    model = mlp(0)
    old_format_file(tmp_path / "old.npz", model)
    loaded = mlp(3)
    generator_state = loaded.layers[1]._generator.get_state()
    gg.load(tmp_path / "old.npz", loaded)
    assert [v.numpy().tobytes() for v in loaded.variables] == [v.numpy().tobytes() for v in model.variables]
    assert loaded.layers[1]._generator.get_state() == generator_state  # the file has none: left as it was
    assert sorted(gg.load(tmp_path / "old.npz")) == sorted(name for name, _ in model.named_variables())
    with pytest.raises(CheckpointKeyError, match="holds no optimizer state"):
        gg.load(tmp_path / "old.npz", mlp(3), optimizer=adam())
    opt = adam()
    gg.load(tmp_path / "old.npz", mlp(3), optimizer=opt, strict=False)
    assert opt.iterations == 0 and opt.variables() == []
    with pytest.raises(CheckpointKeyError, match="holds no gg.random state"):
        gg.load(tmp_path / "old.npz", mlp(3), random_state=True)


def test_a_model_without_generators_writes_the_old_format(tmp_path):
    """A plain gg.save of a model with no generator and no optimizer writes only the variables, as before."""
    model = nn.Sequential(nn.Dense(2, 3, seed=0), nn.Dense(3, 1, seed=1))
    gg.save(tmp_path / "m.npz", model)
    assert sorted(np.load(tmp_path / "m.npz").files) == sorted(name for name, _ in model.named_variables())


# --- files that are not checkpoints: one CheckpointError, naming the path and the problem ---------------

def good_bytes(tmp_path):
    gg.save(tmp_path / "good.npz", nn.Dense(20, 10, seed=0))
    return (tmp_path / "good.npz").read_bytes()


def zip_of_text(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("notes.txt", "hello")
    return buffer.getvalue()


def zip_of_objects():
    buffer = io.BytesIO()
    np.savez(buffer, kernel=np.array([{"a": 1}], dtype=object))
    return buffer.getvalue()


def corrupted(tmp_path):
    data = bytearray(good_bytes(tmp_path))
    data[len(data) // 3:len(data) // 3 + 16] = b"\xff" * 16
    return bytes(data)


def npy_bytes(tmp_path):
    buffer = io.BytesIO()
    np.save(buffer, np.arange(3.0))
    return buffer.getvalue()


BAD_FILES = {
    "corrupted": (corrupted, "truncated or corrupted"),
    "truncated": (lambda tmp_path: good_bytes(tmp_path)[:-100], "truncated or corrupted"),
    "truncated_to_its_start": (lambda tmp_path: good_bytes(tmp_path)[:40], "truncated or corrupted"),
    "empty": (lambda tmp_path: b"", "the file is empty"),
    "npy": (npy_bytes, r"a single NumPy array \(\.npy\), not a checkpoint"),
    "text": (lambda tmp_path: b"layers.0.kernel = 1.0\n", "a text file, not a checkpoint"),
    "pickle": (lambda tmp_path: pickle.dumps({"kernel": np.ones(3)}), "a Python pickle, not a checkpoint"),
    "zip_of_other_things": (zip_of_text, "a zip archive that is not a checkpoint: it holds 'notes.txt'"),
    "object_array": (lambda tmp_path: zip_of_objects(), "holds Python objects"),
    "binary": (lambda tmp_path: bytes(range(256)), r"not a checkpoint \(not a \.npz zip archive\)"),
}


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
def test_a_bad_file_raises_checkpoint_error_naming_path_and_problem(tmp_path, kind):
    make, problem = BAD_FILES[kind]
    path = tmp_path / f"{kind}.npz"
    path.write_bytes(make(tmp_path))
    target = nn.Dense(20, 10, seed=1)
    before = target.kernel.numpy()
    for call in (lambda: gg.load(path, target), lambda: gg.load(path)):
        with pytest.raises(gg.CheckpointError, match=problem) as info:
            call()
        assert str(path) in str(info.value)
    np.testing.assert_array_equal(target.kernel.numpy(), before)


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_a_path_that_is_no_file_raises_checkpoint_error(tmp_path, kind):
    path = tmp_path / "absent.npz" if kind == "missing" else tmp_path
    with pytest.raises(gg.CheckpointError, match="no such file" if kind == "missing" else "a directory") as info:
        gg.load(path, nn.Dense(2, 2, seed=0))
    assert str(path) in str(info.value)


def test_checkpoint_error_is_caught_by_the_builtin_classes_code_caught_before():
    assert issubclass(gg.CheckpointError, gg.GpugradError)
    assert issubclass(gg.CheckpointError, ValueError) and issubclass(gg.CheckpointError, OSError)
    assert issubclass(CheckpointKeyError, gg.CheckpointError) and issubclass(CheckpointKeyError, KeyError)
    assert gg.serialization.CheckpointError is gg.CheckpointError


def test_metadata_from_a_newer_gpugrad_is_refused_by_name(tmp_path):
    path = tmp_path / "future.npz"
    meta = np.frombuffer(b'{"format": 99}', np.uint8)
    np.savez(path, **{"w": np.ones(2), "__gpugrad__": meta})
    with pytest.raises(gg.CheckpointError, match="format 99 by a newer gpugrad"):
        gg.load(path)


def test_bfloat16_variables_and_their_slots_round_trip_to_the_bit(tmp_path):
    pytest.importorskip("ml_dtypes", reason="bfloat16 needs ml_dtypes: pip install -e '.[bfloat16]'")
    w = gg.Variable(np.linspace(-3, 3, 7), dtype="bfloat16", name="w")
    opt = gg.optimizers.Adam(0.1)
    opt.minimize(lambda: gg.sum(gg.square(w)), [w])
    path = tmp_path / "bf16.npz"
    gg.save(path, [w], optimizer=opt)
    w2, opt2 = gg.Variable(np.zeros(7), dtype="bfloat16", name="w"), gg.optimizers.Adam(0.1)
    gg.load(path, [w2], optimizer=opt2)
    assert w2.dtype == w.dtype and w2.numpy().tobytes() == w.numpy().tobytes()
    for slot in ("m", "v"):
        a, b = opt.get_slot(w, slot), opt2.get_slot(w2, slot)
        assert a.dtype == b.dtype and a.numpy().tobytes() == b.numpy().tobytes()
    assert gg.load(path)["0"].dtype.name == "bfloat16"  # without a target too
