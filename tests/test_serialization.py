"""gg.save / gg.load: .npz checkpoints keyed by variable paths; round trips and the errors."""
import os

import numpy as np
import pytest

import gpugrad as gg
from gpugrad import nn
from tests.conftest import device_params


def model(seed, device=None):
    return nn.Sequential(nn.Dense(4, 6, activation="relu", seed=seed, device=device),
                         nn.Dense(6, 3, seed=seed + 1, device=device))


@pytest.mark.parametrize("device", device_params())
def test_module_round_trip(tmp_path, device):
    path = tmp_path / "model.npz"
    a, b = model(0, device), model(10, device)
    x = gg.ones((2, 4), device=device)
    gg.save(path, a)
    assert sorted(np.load(path).files) == ["layers.0.bias", "layers.0.kernel", "layers.1.bias", "layers.1.kernel"]
    assert not np.array_equal(a(x).numpy(), b(x).numpy())
    kernel = b.layers[0].kernel
    assert gg.load(path, b) is b
    assert b.layers[0].kernel is kernel  # loaded in place: optimizers and tapes keep their variables
    for va, vb in zip(a.variables, b.variables):
        np.testing.assert_array_equal(va.numpy(), vb.numpy())
        assert vb.device == va.device and vb.dtype == va.dtype
    np.testing.assert_array_equal(a(x).numpy(), b(x).numpy())


def test_round_trip_keeps_non_trainable_state_and_dtypes(tmp_path):
    bn_like = nn.Module()
    bn_like.scale = gg.Variable(np.array([1.5, 2.5]), name="scale")  # float64
    bn_like.stats = {"mean": gg.Variable([0.25, 0.5], trainable=False)}
    gg.save(tmp_path / "m.npz", bn_like)
    other = nn.Module()
    other.scale = gg.Variable(np.zeros(2))
    other.stats = {"mean": gg.Variable([0.0, 0.0], trainable=False)}
    gg.load(tmp_path / "m.npz", other)
    assert other.scale.dtype == np.float64 and other.scale.numpy().tolist() == [1.5, 2.5]
    assert other.stats["mean"].numpy().tolist() == [0.25, 0.5]


def test_lists_dicts_and_single_variables(tmp_path):
    w, b = gg.Variable([[1.0, 2.0]]), gg.Variable([3.0])
    gg.save(tmp_path / "d.npz", {"w": w, "b": b})
    assert sorted(gg.load(tmp_path / "d.npz")) == ["b", "w"]
    w2, b2 = gg.Variable([[0.0, 0.0]]), gg.Variable([0.0])
    gg.load(tmp_path / "d.npz", {"w": w2, "b": b2})
    assert w2.numpy().tolist() == [[1.0, 2.0]] and b2.numpy().tolist() == [3.0]
    gg.save(tmp_path / "l.npz", [w, b])
    assert sorted(gg.load(tmp_path / "l.npz")) == ["0", "1"]
    gg.save(tmp_path / "v.npz", b)
    single = gg.Variable([9.0])
    gg.load(tmp_path / "v.npz", single)
    assert single.item() == 3.0


def test_path_is_used_as_given_and_replaced_whole(tmp_path):
    path = tmp_path / "checkpoint"  # no suffix added
    gg.save(str(path), [gg.Variable([1.0])])
    gg.save(path, [gg.Variable([2.0])])
    assert os.listdir(tmp_path) == ["checkpoint"]  # no temporary file left beside it
    assert gg.load(path)["0"].tolist() == [2.0]


def test_missing_key_is_named(tmp_path):
    path = tmp_path / "small.npz"
    gg.save(path, nn.Sequential(nn.Dense(4, 6, seed=0)))
    bigger = model(1)
    before = [v.numpy() for v in bigger.variables]
    with pytest.raises(KeyError, match=r"no value for 'layers.1.kernel', 'layers.1.bias'") as info:
        gg.load(path, bigger)
    assert isinstance(info.value, gg.serialization.CheckpointKeyError)
    assert "it holds 'layers.0.bias', 'layers.0.kernel'" in str(info.value)
    for v, old in zip(bigger.variables, before):  # nothing was assigned
        np.testing.assert_array_equal(v.numpy(), old)
    gg.load(path, bigger, strict=False)  # strict=False loads what is there
    np.testing.assert_array_equal(bigger.layers[0].kernel.numpy(), gg.load(path)["layers.0.kernel"])
    np.testing.assert_array_equal(bigger.layers[1].kernel.numpy(), before[2])


def test_unexpected_key_is_named(tmp_path):
    path = tmp_path / "big.npz"
    gg.save(path, model(0))
    with pytest.raises(KeyError, match=r"'layers.1.bias', 'layers.1.kernel' match no variable"):
        gg.load(path, nn.Sequential(nn.Dense(4, 6, seed=0)))
    gg.load(path, nn.Sequential(nn.Dense(4, 6, seed=0)), strict=False)


def test_shape_mismatch_is_named(tmp_path):
    path = tmp_path / "m.npz"
    gg.save(path, model(0))
    wrong = nn.Sequential(nn.Dense(4, 5, seed=0), nn.Dense(5, 3, seed=1))
    before = wrong.layers[1].bias.numpy()
    with pytest.raises(gg.ShapeError, match=r"'layers.0.kernel' has shape \(4, 6\) in the file but the variable "
                                            r"has shape \(4, 5\)"):
        gg.load(path, wrong)
    np.testing.assert_array_equal(wrong.layers[1].bias.numpy(), before)  # checked before any assignment


def test_nothing_to_save_is_an_error(tmp_path):
    with pytest.raises(TypeError, match="found no Variable"):
        gg.save(tmp_path / "x.npz", {"not": 1})


def test_training_resumes_from_a_checkpoint(tmp_path):
    x = gg.tensor(np.random.default_rng(0).standard_normal((16, 4)).astype(np.float32))
    target = gg.tensor(np.random.default_rng(1).standard_normal((16, 3)).astype(np.float32))
    a = model(0)
    opt = gg.optimizers.SGD(0.05)
    for _ in range(5):
        opt.minimize(lambda: gg.mse(a(x), target))
    gg.save(tmp_path / "a.npz", a)
    b = gg.load(tmp_path / "a.npz", model(7))
    loss_a = gg.optimizers.SGD(0.05).minimize(lambda: gg.mse(a(x), target)).item()
    loss_b = gg.optimizers.SGD(0.05).minimize(lambda: gg.mse(b(x), target)).item()
    assert loss_a == loss_b


@pytest.mark.gpu
def test_gpu_checkpoint_loads_on_the_cpu_and_back(tmp_path):
    gpu = model(0, "cuda")
    gg.save(tmp_path / "g.npz", gpu)
    cpu = gg.load(tmp_path / "g.npz", model(5, "cpu"))
    for vg, vc in zip(gpu.variables, cpu.variables):
        assert vc.device == "cpu"
        np.testing.assert_array_equal(vg.numpy(), vc.numpy())
    back = gg.load(tmp_path / "g.npz", model(9, "cuda"))
    assert all(v.device.startswith("cuda") for v in back.variables)
    x = gg.ones((2, 4), device="cuda")
    np.testing.assert_array_equal(back(x).numpy(), gpu(x).numpy())
