"""Devices: names, the default device, GPUGRAD_DEVICE, clear errors, no silent copies.

A second device is simulated with a second NumPy-backed :class:`Device`
(``"fake:1"``), so the mixed-device checks run without a GPU.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import gpugrad as gg
from gpugrad.backend import CPU, Device, default_device, get_device
from gpugrad.backend.numpy_backend import NumpyBackend

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAKE = Device("fake:1", NumpyBackend(), 1)
NO_GPU = not gg.cuda_available()


def run_python(code, **env):
    """Run ``code`` in a fresh interpreter with ``env`` added; (returncode, stdout, stderr)."""
    full_env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), **env)
    done = subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    return done.returncode, done.stdout.strip(), done.stderr


# ---------------------------------------------------------------- listing and choosing


def test_devices_lists_the_cpu_last():
    names = gg.devices()
    assert "cpu" in names and names[-1] == "cpu"
    assert all(n.startswith("cuda:") for n in names[:-1])


@pytest.mark.skipif(not NO_GPU, reason="this machine has a usable CUDA GPU")
def test_devices_is_only_the_cpu_without_a_gpu():
    assert gg.devices() == ["cpu"]
    assert gg.cuda_available() is False


def test_devices_and_default_device_are_names_of_one_type():
    # Devices are strings (DESIGN.md): the list, the default and Tensor.device agree.
    listed, default = gg.devices(), gg.default_device()
    assert all(type(name) is str for name in listed) and type(default) is str
    assert default in listed
    assert gg.tensor(1.0).device == default
    assert gg.get_device(default) is gg.get_device(None)
    with gg.device("cpu") as dev:
        assert gg.default_device() == "cpu" == dev.name


def test_tensors_go_to_the_cpu_here_by_default():
    if NO_GPU:
        assert default_device() == "cpu" and get_device(None) is CPU
        assert gg.tensor(1.0).device == "cpu"
    assert gg.tensor(1.0, device="cpu").device == "cpu"


@pytest.mark.parametrize("spec", ["cpu", "CPU", " cpu ", "cpu:0", CPU])
def test_cpu_spellings(spec):
    assert get_device(spec) is CPU
    assert gg.tensor([1.0], device=spec).device == "cpu"


def test_with_device_sets_the_default_and_restores_it():
    before = default_device()
    with gg.device("cpu") as dev:
        assert dev is CPU
        assert default_device() == "cpu"
        assert gg.tensor([1.0]).device == "cpu"
        assert gg.ones((2,)).device == "cpu"
        with gg.device(FAKE):
            assert gg.tensor([1.0]).device == "fake:1"
            assert gg.zeros((2,)).device == "fake:1"
        assert gg.tensor([1.0]).device == "cpu"
    assert default_device() == before


def test_with_device_is_restored_after_an_exception():
    before = default_device()
    with pytest.raises(KeyError):
        with gg.device(FAKE):
            raise KeyError("boom")
    assert default_device() == before


def test_explicit_device_beats_the_with_block():
    with gg.device(FAKE):
        assert gg.tensor([1.0], device="cpu").device == "cpu"


def test_gpugrad_device_environment_variable():
    code = ("import gpugrad as gg; "
            "print(gg.default_device(), gg.tensor([1.0]).device, gg.Variable(1.0).device)")
    rc, out, err = run_python(code, GPUGRAD_DEVICE="cpu")
    assert rc == 0, err
    assert out == "cpu cpu cpu"


def test_gpugrad_device_invalid_value_names_it():
    rc, out, err = run_python("import gpugrad as gg; gg.tensor([1.0])", GPUGRAD_DEVICE="tpu:7")
    assert rc != 0
    assert "tpu:7" in err and "DeviceError" in err


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("spec", ["tpu", "cuda:x", "cuda:-1", "cpu:1", "", "cuda0", "metal:0"])
def test_invalid_device_string_raises_value_error_naming_it(spec):
    for attempt in (lambda: gg.tensor([1.0], device=spec), lambda: gg.device(spec).__enter__(),
                    lambda: gg.Variable(1.0, device=spec), lambda: gg.tensor(1.0).to(spec)):
        with pytest.raises(ValueError, match=repr(spec).replace("(", r"\(")) as info:
            attempt()
        assert isinstance(info.value, gg.DeviceError)


def test_non_string_device_raises_value_error():
    with pytest.raises(ValueError, match="3"):
        gg.tensor([1.0], device=3)


@pytest.mark.skipif(not NO_GPU, reason="this machine has a usable CUDA GPU")
@pytest.mark.parametrize("spec", ["cuda", "cuda:0", pytest.param("gpu", id="alias-of-cuda"), "CUDA:0"])
def test_cuda_without_a_gpu_raises_device_unavailable_saying_why(spec):
    with pytest.raises(gg.DeviceUnavailableError) as info:
        gg.tensor([1.0], device=spec)
    assert isinstance(info.value, RuntimeError)
    message = str(info.value)
    assert "CUDA" in message or "cuda" in message
    assert any(word in message for word in ("CuPy", "driver", "device")), message
    with pytest.raises(gg.DeviceUnavailableError):
        gg.tensor([1.0]).to(spec)
    with pytest.raises(gg.DeviceUnavailableError):
        with gg.device(spec):
            pass


@pytest.mark.skipif(not NO_GPU, reason="this machine has a usable CUDA GPU")
def test_cuda_unavailable_keeps_the_cpu_working():
    with pytest.raises(gg.DeviceUnavailableError):
        gg.tensor([1.0], device="cuda")
    assert (gg.tensor([1.0, 2.0]) * 2.0).numpy().tolist() == [2.0, 4.0]
    assert gg.devices()[-1] == "cpu"


# ---------------------------------------------------------------- two devices


def test_fake_device_tensors_compute_on_their_device():
    a = gg.tensor([1.0, 2.0], device=FAKE)
    b = gg.tensor([3.0, 4.0], device=FAKE)
    assert a.device == "fake:1"
    c = a * b + 1.0
    assert c.device == "fake:1"
    np.testing.assert_array_equal(c.numpy(), [4.0, 9.0])


@pytest.mark.parametrize("op", [gg.add, gg.subtract, gg.multiply, gg.divide, gg.power, gg.maximum,
                                gg.minimum], ids=lambda f: f.__name__)
def test_ops_mixing_devices_raise_naming_both(op):
    on_fake = gg.tensor([1.0, 2.0], device=FAKE)
    on_cpu = gg.tensor([3.0, 4.0], device="cpu")
    for x, y in ((on_fake, on_cpu), (on_cpu, on_fake)):
        with pytest.raises(gg.DeviceError) as info:
            op(x, y)
        assert "'fake:1'" in str(info.value) and "'cpu'" in str(info.value)


def test_operators_mixing_devices_raise():
    on_fake = gg.tensor([1.0, 2.0], device=FAKE)
    on_cpu = gg.tensor([3.0, 4.0])
    with pytest.raises(gg.DeviceError):
        on_fake + on_cpu
    with pytest.raises(gg.DeviceError):
        on_cpu * on_fake
    with pytest.raises(gg.DeviceError):
        gg.where(np.array([True, False]), on_cpu, on_fake)


def test_assigning_a_tensor_from_another_device_raises():
    v = gg.Variable([1.0, 2.0])
    with pytest.raises(gg.DeviceError, match="fake:1"):
        v.assign(gg.tensor([5.0, 6.0], device=FAKE))
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_to_moves_explicitly():
    a = gg.tensor([1.0, 2.0])
    assert a.to("cpu") is a
    moved = a.to(FAKE)
    assert moved.device == "fake:1"
    np.testing.assert_array_equal(moved.numpy(), [1.0, 2.0])
    back = moved.to("cpu")
    assert back.device == "cpu"
    np.testing.assert_array_equal((back + a).numpy(), [2.0, 4.0])


def test_gradients_stay_on_the_source_device():
    x = gg.tensor([1.0, 2.0], device=FAKE)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = (x * x + x).sum()
    g = tape.gradient(y, x)
    assert g.device == "fake:1"
    np.testing.assert_array_equal(g.numpy(), [3.0, 5.0])


def test_output_gradients_on_another_device_raise():
    x = gg.tensor([1.0, 2.0])
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = x + 1.0
    with pytest.raises(gg.DeviceError, match="fake:1"):
        tape.gradient(y, x, output_gradients=gg.tensor([1.0, 1.0], device=FAKE))


def test_numpy_asarray_of_a_non_cpu_tensor_refuses_a_silent_copy():
    t = gg.tensor([1.0], device=FAKE)
    with pytest.raises(gg.DeviceError, match="numpy"):
        np.asarray(t)
    np.testing.assert_array_equal(t.numpy(), [1.0])
