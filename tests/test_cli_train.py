"""``gpugrad train``: the main job from the command line."""
import subprocess
import sys

import numpy as np
import pytest

import gpugrad as gg
from gpugrad.cli import main


def test_train_prints_the_final_line(capsys):
    assert main(["train", "--epochs", "1", "--device", "cpu", "--no-progress"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    assert out[0].startswith("mlp: test accuracy ") and out[0].endswith("on cpu")


def test_train_with_progress_bar_and_save(tmp_path, capsys):
    path = tmp_path / "mlp.npz"
    assert main(["train", "--epochs", "1", "--device", "cpu", "--save", str(path)]) == 0
    captured = capsys.readouterr()
    assert "step" in captured.out + captured.err  # tqdm's bar (or the per-epoch line)
    assert f"weights saved to {path}" in captured.out
    with np.load(path) as saved:
        assert len(saved.files) == 6  # three Dense layers: kernel and bias each


@pytest.mark.parametrize("argv", [
    ["train", "--model", "resnet"],
    ["train", "--epochs", "0"],
    ["train", "--lr", "-1"],
    ["train", "--optimizer", "lbfgs"],
    ["train", "--batch-size", "many"],
])
def test_bad_arguments_exit_2_with_usage(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "usage: gpugrad train" in capsys.readouterr().err


@pytest.mark.skipif(gg.cuda_available(), reason="this machine has a GPU, so 'cuda' is valid here")
def test_cuda_without_a_gpu_is_a_clear_error(capsys):
    assert main(["train", "--epochs", "1", "--device", "cuda", "--no-progress"]) == 1
    assert "gpugrad: error: no CUDA device can be used" in capsys.readouterr().err


def test_python_dash_m_gpugrad_train():
    proc = subprocess.run([sys.executable, "-m", "gpugrad", "train", "--epochs", "1", "--device", "cpu",
                           "--no-progress", "--model", "cnn", "--batch-size", "128"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("cnn: test accuracy ")
