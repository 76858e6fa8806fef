"""Each example of gpugrad/examples runs as a test, with few epochs: in-process through ``main(argv)``,
and once as ``python -m gpugrad.examples.NAME`` in a subprocess."""
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from gpugrad.examples import conv_autoencoder, digits_cnn, digits_mlp, linear_regression, sine_lstm

from .conftest import device_params

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the slope and intercept of 1000 noisy points (unit noise, unit-variance x) have a standard error
# of about 1 / sqrt(1000); 4 of them leave a false failure rate near 1e-4 over data seeds
LINE_TOL = 4 / math.sqrt(1000)


def least_squares_line():
    x, y = linear_regression.make_data(device="cpu")
    return np.polyfit(x.numpy().astype(np.float64), y.numpy().astype(np.float64), 1)


def test_linear_regression_finds_the_line(capsys):
    weight, bias = linear_regression.main(["--device", "cpu"])
    out = capsys.readouterr().out
    assert abs(weight - 3) < LINE_TOL and abs(bias - 2) < LINE_TOL
    fit_w, fit_b = least_squares_line()  # SGD converges to this sample's least-squares fit
    assert weight == pytest.approx(fit_w, abs=1e-3) and bias == pytest.approx(fit_b, abs=1e-3)
    assert f"W = {weight:.4f}, B = {bias:.4f}" in out
    losses = [float(v) for v in re.findall(r"loss ([0-9.]+)", out)]
    assert losses[0] > 60 and losses[-1] < 1.2, out  # from (2x + 8)^2 down to the noise variance


def test_linear_regression_runs_with_python_dash_m():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), GPUGRAD_DEVICE="cpu")
    proc = subprocess.run([sys.executable, "-m", "gpugrad.examples.linear_regression", "--steps", "150"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    found = re.search(r"W = (-?[0-9.]+), B = (-?[0-9.]+)", proc.stdout)
    assert found, proc.stdout
    weight, bias = float(found.group(1)), float(found.group(2))
    assert abs(weight - 3) < LINE_TOL and abs(bias - 2) < LINE_TOL


@pytest.mark.parametrize("device", device_params())
def test_digits_mlp_two_epochs(device, capsys):
    accuracy = digits_mlp.main(["--epochs", "2", "--device", device])
    out = capsys.readouterr().out
    assert accuracy > 0.85
    epoch_losses = [float(v) for v in re.findall(r"epoch \d+/2: loss ([0-9.]+)", out)]
    assert len(epoch_losses) == 2 and epoch_losses[1] < epoch_losses[0], out
    assert f"test accuracy {accuracy:.2%} after 2 epochs" in out


def test_digits_mlp_is_reproducible_for_a_seed(capsys):
    printed = []
    for _ in range(2):
        digits_mlp.main(["--epochs", "1", "--device", "cpu", "--seed", "3"])
        printed.append(re.sub(r"\(.* s on", "(", capsys.readouterr().out))  # all but the time
    assert printed[0] == printed[1] and "epoch 1/1: loss" in printed[0]


@pytest.mark.parametrize("device", device_params())
def test_digits_cnn_two_epochs(device, capsys):
    accuracy = digits_cnn.main(["--epochs", "2", "--device", device, "--quiet"])
    assert accuracy > 0.9
    assert "epoch" not in capsys.readouterr().out.split("test accuracy")[0]  # --quiet


def test_examples_reject_bad_arguments(capsys):
    with pytest.raises(SystemExit) as exit_info:
        digits_mlp.main(["--epochs", "two"])
    assert exit_info.value.code == 2 and "--epochs" in capsys.readouterr().err


@pytest.mark.parametrize("device", device_params())
def test_sine_lstm_loss_falls_and_beats_repeating_the_last_sample(device, capsys):
    test_loss, baseline = sine_lstm.main(["--steps", "100", "--device", device])
    out = capsys.readouterr().out
    x, y = sine_lstm.make_data(512, 1)  # the test set: its baseline from NumPy
    assert baseline == pytest.approx(float(np.mean((x.numpy()[:, -1] - y.numpy()) ** 2)), rel=1e-5)
    losses = [float(v) for v in re.findall(r"step \d+: loss ([0-9.]+)", out)]
    assert len(losses) == 3 and losses[0] > 0.1 and losses[-1] < losses[0] / 50, out
    assert test_loss < baseline / 5, out  # the LSTM read frequency and phase off the window


def test_conv_autoencoder_two_epochs(capsys):
    loss = conv_autoencoder.main(["--epochs", "2", "--device", "cpu"])
    out = capsys.readouterr().out
    epoch_losses = [float(v) for v in re.findall(r"epoch \d+/2: reconstruction loss ([0-9.]+)", out)]
    baseline = float(re.search(r"mean image: ([0-9.]+)", out).group(1))
    assert len(epoch_losses) == 2 and epoch_losses[1] < epoch_losses[0], out
    assert loss < 0.6 * baseline, out  # it reconstructs, well below predicting the mean image
