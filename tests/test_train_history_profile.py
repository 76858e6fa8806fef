"""``gpugrad train``'s per-epoch history (``--json``), training curves (``--plot``) and ``--profile``."""
import json

import numpy as np
import pytest

from gpugrad.cli import main
from gpugrad.training import standardized_digits, train
from gpugrad._tools.bench.plot import matplotlib_missing
from gpugrad._tools.curves import series, write_curves

STEPS_PER_EPOCH = -(-1438 // 64)  # the digits' training images in batches of 64


def numpy_mlp_loss_and_accuracy(weights, x, y):
    """The MLP's mean softmax cross-entropy and accuracy in float64 NumPy, from its saved weights: an oracle."""
    h = x.astype(np.float64)
    for i in range(3):
        h = h @ weights[f"layers.{i}.kernel"].astype(np.float64) + weights[f"layers.{i}.bias"]
        if i < 2:
            h = np.maximum(h, 0.0)
    shifted = h - h.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -log_p[np.arange(len(y)), y].mean(), (h.argmax(axis=1) == y).mean()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    path = tmp_path_factory.mktemp("weights") / "mlp.npz"
    return train("mlp", epochs=3, device="cpu", progress=False, history=True, save=str(path)), path


def test_history_has_one_entry_per_epoch(run):
    result, _ = run
    assert [h["epoch"] for h in result.history] == [1, 2, 3]
    assert all(set(h) == {"epoch", "loss", "test_loss", "train_accuracy", "test_accuracy", "seconds"}
               for h in result.history)
    assert result.history[0]["loss"] > result.history[-1]["loss"]  # it learns
    assert sum(h["seconds"] for h in result.history) <= result.seconds + 1e-6  # evaluations left out


def test_the_last_epoch_is_what_the_final_weights_compute(run):
    result, path = run
    last = result.history[-1]
    assert last["train_accuracy"] == result.train_accuracy and last["test_accuracy"] == result.test_accuracy
    _, _, x_test, y_test = standardized_digits(True, "cpu")
    with np.load(path) as weights:
        loss, accuracy = numpy_mlp_loss_and_accuracy(weights, x_test.numpy(), y_test.numpy())
    assert last["test_loss"] == pytest.approx(loss, rel=1e-5) and last["test_accuracy"] == pytest.approx(accuracy)


def test_history_loss_is_the_mean_of_the_epochs_step_losses():
    losses = []
    import gpugrad.training as training

    real = training.function

    def recording(fn, **options):  # each step's loss as the run sees it
        traced = real(fn, **options)

        def step(*args):
            loss = traced(*args)
            losses.append(float(loss.item()))
            return loss
        return step

    training.function = recording
    try:
        result = train("mlp", epochs=2, device="cpu", progress=False, history=True)
    finally:
        training.function = real
    assert len(losses) == 2 * STEPS_PER_EPOCH
    for h, epoch_losses in zip(result.history, (losses[:STEPS_PER_EPOCH], losses[STEPS_PER_EPOCH:])):
        assert h["loss"] == pytest.approx(np.mean(epoch_losses), rel=1e-12)


def test_without_history_the_summary_has_none():
    result = train("mlp", epochs=1, device="cpu", progress=False)
    assert result.history is None and "history" not in result.summary_dict() and result.profile is None


def test_json_carries_the_history(capsys):
    assert main(["train", "--epochs", "2", "--device", "cpu", "--json", "--no-progress"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [h["epoch"] for h in summary["history"]] == [1, 2]
    assert summary["history"][-1]["test_accuracy"] == summary["accuracy"] and summary["plot"] is None


def test_series_of_a_history():
    history = [{"epoch": 1, "loss": 2.0, "test_loss": None, "train_accuracy": 0.5, "test_accuracy": 0.4},
               {"epoch": 2, "loss": 1.0, "train_accuracy": 0.6, "test_accuracy": 0.5}]
    drawn = series(history)
    assert drawn["loss"] == [("train", [1, 2], [2.0, 1.0])]  # no test loss: that series is left out
    assert drawn["accuracy"] == [("train", [1, 2], [0.5, 0.6]), ("test", [1, 2], [0.4, 0.5])]


@pytest.mark.skipif(matplotlib_missing() is not None, reason="needs matplotlib: pip install 'gpugrad[plot]'")
def test_plot_writes_the_curves(tmp_path, capsys, monkeypatch):
    import matplotlib.figure

    drawn = []
    real_plot = matplotlib.axes.Axes.plot
    monkeypatch.setattr(matplotlib.axes.Axes, "plot",
                        lambda ax, x, y, **kw: drawn.append((list(x), list(y), kw["label"])) or real_plot(ax, x, y, **kw))
    png = tmp_path / "curves.png"
    assert main(["train", "--epochs", "2", "--device", "cpu", "--json", "--no-progress", "--plot", str(png)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    h = summary["history"]
    assert drawn == [([1, 2], [e["loss"] for e in h], "train"), ([1, 2], [e["test_loss"] for e in h], "test"),
                     ([1, 2], [e["train_accuracy"] for e in h], "train"),
                     ([1, 2], [e["test_accuracy"] for e in h], "test")]
    assert summary["plot"] == str(png)


@pytest.mark.skipif(matplotlib_missing() is not None, reason="needs matplotlib: pip install 'gpugrad[plot]'")
def test_write_curves_in_svg(tmp_path):
    path = tmp_path / "c.svg"
    write_curves([{"epoch": 1, "loss": 1.0, "train_accuracy": 0.5}], str(path), "one epoch")
    assert "<svg" in path.read_text()[:500]


def test_profile_prints_the_table_of_the_second_epoch(capsys):
    assert main(["train", "--epochs", "2", "--device", "cpu", "--no-progress", "--profile"]) == 0
    out = capsys.readouterr().out.splitlines()
    title = out.index("profile of epoch 2 of 2 (the first after the warm-up epoch, which traces the step with "
                      "gg.function):")
    header, rows = out[title + 1].split(), [line.split() for line in out[title + 3:-1]]
    assert header[:3] == ["name", "kind", "calls"]
    function = [r for r in rows if r[1] == "function"]
    assert function == [[function[0][0], "function", str(STEPS_PER_EPOCH)] + function[0][3:]]
    host = [float(r[3]) for r in rows]
    assert host == sorted(host, reverse=True)


def test_eager_profile_counts_the_ops_of_one_epoch():
    result = train("mlp", epochs=2, device="cpu", progress=False, eager=True, profile=True)
    assert result.profile_epoch == 2
    rows = {(e["kind"], e["name"]): e["calls"] for e in result.profile.entries()}
    assert rows[("op", "Dense")] == 3 * STEPS_PER_EPOCH  # three dense layers a step
    assert rows[("grad", "Dense")] == 3 * STEPS_PER_EPOCH and rows[("op", "SoftmaxCrossEntropy")] == STEPS_PER_EPOCH
    assert rows[("update", "Adam")] == STEPS_PER_EPOCH


def test_profile_with_one_epoch_profiles_it_and_json_carries_it(capsys):
    assert main(["train", "--epochs", "1", "--device", "cpu", "--json", "--no-progress", "--profile"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["profile"]["epoch"] == 1
    calls = {(e["kind"], e["name"]): e["calls"] for e in summary["profile"]["entries"]}
    assert calls[("function", "train.<locals>.train_step")] == STEPS_PER_EPOCH


@pytest.mark.gpu
def test_profile_on_a_gpu_gives_the_steps_device_time():
    result = train("mlp", epochs=2, device="cuda", progress=False, profile=True, history=True)
    rows = {(e["kind"], e["name"]): e for e in result.profile.entries()}
    step = rows[("function", "train.<locals>.train_step")]
    assert step["calls"] == STEPS_PER_EPOCH and step["device_ms"] is not None and step["device_ms"] >= 0
    assert [h["epoch"] for h in result.history] == [1, 2]
