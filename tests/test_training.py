"""The training job (gpugrad.training): seeded runs reproducible to the bit, saved weights that load back,
argument errors."""
import io

import numpy as np
import pytest

import gpugrad as gg
from gpugrad import training


def run(seed=0, **kwargs):
    return training.train("mlp", epochs=2, device="cpu", progress=False, seed=seed, **kwargs)


def test_a_seeded_run_is_reproducible_to_the_last_bit():
    first, second = run(seed=7), run(seed=7)
    assert first.final_loss == second.final_loss  # the float itself, not an approximation
    assert np.float64(first.final_loss).tobytes() == np.float64(second.final_loss).tobytes()
    assert (first.train_accuracy, first.test_accuracy, first.steps) == \
           (second.train_accuracy, second.test_accuracy, second.steps)


def test_another_seed_gives_another_loss():
    assert run(seed=7).final_loss != run(seed=8).final_loss


def test_the_result_describes_the_run():
    result = run(batch_size=100, optimizer="momentum", lr=0.05)
    assert (result.model, result.device, result.epochs) == ("mlp", "cpu", 2)
    assert result.steps == 2 * -(-1438 // 100)  # 1,438 training images, the last batch short
    assert result.test_accuracy > 0.85 and np.isfinite(result.final_loss)
    assert result.summary().startswith(f"mlp: test accuracy {result.test_accuracy:.2%}")


def test_saved_weights_load_back_into_a_new_model(tmp_path):
    path = tmp_path / "mlp.npz"
    result = run(save=str(path))
    assert path.is_file()
    fresh = training.build_model("mlp", seed=1, device="cpu")  # other initial weights until loaded
    _, _, x_test, y_test = training.standardized_digits(True, "cpu")
    assert training.accuracy(fresh, x_test, y_test) != result.test_accuracy
    loaded = gg.load(str(path), fresh)
    assert training.accuracy(loaded, x_test, y_test) == result.test_accuracy


def test_progress_without_tqdm_or_with_it_writes_to_out():
    out = io.StringIO()
    training.train("mlp", epochs=1, device="cpu", progress=True, out=out)
    assert "mlp on cpu" in out.getvalue()


@pytest.mark.parametrize("kwargs, message", [
    ({"model": "resnet"}, "unknown model 'resnet'"),
    ({"optimizer": "lbfgs"}, "unknown optimizer 'lbfgs'"),
    ({"epochs": 0}, "epochs and batch_size must be at least 1"),
    ({"batch_size": 0}, "epochs and batch_size must be at least 1"),
])
def test_invalid_arguments_raise_value_error(kwargs, message):
    arguments = {"model": "mlp", "epochs": 1, "device": "cpu", "progress": False}
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=message):
        training.train(**arguments)


def test_build_model_and_optimizer_reject_unknown_names():
    with pytest.raises(ValueError, match="mlp, cnn"):
        training.build_model("transformer")
    with pytest.raises(ValueError, match="sgd"):
        training.build_optimizer("newton", 0.1)
