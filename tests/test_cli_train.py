"""``gpugrad train``: the main job from the command line: its options, where its output goes
(progress on stderr, drawn only on a terminal; the result on stdout, or as JSON), --quiet, --save."""
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import gpugrad as gg
from gpugrad import training
from gpugrad.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAVE_TQDM = importlib.util.find_spec("tqdm") is not None
SUMMARY_KEYS = {"accuracy", "loss", "time", "device", "epochs", "model", "seed"}


def gpugrad_train(*args, timeout=300, **popen):
    """``python -m gpugrad train ARGS`` on the CPU in a fresh process, stdout and stderr pipes (not terminals)."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("GPUGRAD_DEVICE", None)
    return subprocess.run([sys.executable, "-m", "gpugrad", "train", "--device", "cpu", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=timeout, **popen)


def test_train_prints_the_final_line(capsys):
    assert main(["train", "--epochs", "1", "--device", "cpu", "--no-progress"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    assert out[0].startswith("mlp: test accuracy ") and out[0].endswith("on cpu")


def test_train_with_progress_and_save(tmp_path, capsys):
    path = tmp_path / "mlp.npz"
    assert main(["train", "--epochs", "1", "--device", "cpu", "--save", str(path)]) == 0
    captured = capsys.readouterr()
    assert captured.err.startswith("mlp on cpu: epoch 1/1, loss ")  # not a terminal: the plain line, on stderr
    assert "epoch 1/1" not in captured.out
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
def test_bad_arguments_exit_2_with_one_line(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("gpugrad train: error: argument") and err.count("\n") == 1


@pytest.mark.skipif(gg.cuda_available(), reason="this machine has a GPU, so 'cuda' is valid here")
def test_cuda_without_a_gpu_is_a_clear_error(capsys):
    with pytest.raises(SystemExit) as exc:  # a usage error, as GPUGRAD_DEVICE=cuda is
        main(["train", "--epochs", "1", "--device", "cuda", "--no-progress"])
    assert exc.value.code == 2
    assert "error: argument --device: no CUDA device can be used" in capsys.readouterr().err


def test_python_dash_m_gpugrad_train():
    proc = subprocess.run([sys.executable, "-m", "gpugrad", "train", "--epochs", "1", "--device", "cpu",
                           "--no-progress", "--model", "cnn", "--batch-size", "128"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("cnn: test accuracy ")


# --------------------------------------------------------------------------- --save, checked before training


@pytest.mark.slow
def test_save_to_a_missing_folder_exits_2_within_a_second():
    start = time.perf_counter()
    proc = gpugrad_train("--save", "/no/such/dir/w.npz")  # default epochs: trains for seconds if not refused
    seconds = time.perf_counter() - start
    assert proc.returncode == 2, proc.stderr
    assert "gpugrad train: error: argument --save: the folder of '/no/such/dir/w.npz' does not exist" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert seconds < 1.0 + startup_seconds(), seconds  # interpreter and import, then the refusal
    print(f"refused in {seconds:.2f} s (python -m gpugrad --version: {startup_seconds():.2f} s)")


def startup_seconds():
    """Seconds of ``python -m gpugrad --version`` here: the interpreter and gpugrad's import, no work."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "gpugrad", "--version"], capture_output=True, env=env, cwd=ROOT,
                   timeout=120, check=True)
    return time.perf_counter() - start


@pytest.mark.parametrize("name, message", [
    ("missing/w.npz", "the folder of '{path}' does not exist"),
    (".", "'{path}' is a folder, not a file name"),
])
def test_a_save_path_that_cannot_be_written_is_refused_before_training(name, message, tmp_path, monkeypatch,
                                                                       capsys):
    monkeypatch.setattr(training, "train", lambda *a, **k: pytest.fail("trained before --save was checked"))
    path = str(tmp_path / name)
    start = time.perf_counter()
    with pytest.raises(SystemExit) as exc:
        main(["train", "--save", path])
    assert time.perf_counter() - start < 1.0
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"gpugrad train: error: argument --save: {message.format(path=path)}" in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into any folder, so none can be made unwritable here")
def test_a_read_only_folder_is_refused(tmp_path, capsys):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(SystemExit) as exc:
            main(["train", "--save", str(folder / "w.npz")])
    finally:
        folder.chmod(0o700)
    assert exc.value.code == 2 and "is not writable" in capsys.readouterr().err


# --------------------------------------------------------------------------- --seed


@pytest.mark.parametrize("text, message", [
    ("-1", "must be a whole number >= 0 (NumPy's SeedSequence takes no negative seeds), not -1"),
    ("1.5", "must be a whole number >= 0 written in digits, not '1.5'"),
    ("1e3", "must be a whole number >= 0 written in digits, not '1e3'"),
    ("seven", "must be a whole number >= 0 written in digits, not 'seven'"),
    ("", "must be a whole number >= 0 written in digits, not ''"),
    ("9" * 5000, "must be a whole number >= 0 of at most"),
])
def test_a_seed_numpy_would_refuse_is_one_error_line(text, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["train", "--seed", text])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error" in line]
    assert errors == [errors[0]] and errors[0].startswith(f"gpugrad train: error: argument --seed: {message}"), err
    assert "Traceback" not in err


@pytest.mark.parametrize("text, value", [("0", 0), ("+7", 7), (str(2**32), 2**32), (str(2**128 + 1), 2**128 + 1)])
def test_a_seed_numpy_takes_is_taken_as_that_integer(text, value):
    from gpugrad.cli import build_parser

    assert build_parser().parse_args(["train", "--seed", text]).seed == value
    np.random.default_rng(value)  # and NumPy takes it


def test_a_seed_beyond_64_bits_trains_and_is_reproducible(capsys):
    seed = str(2**100 + 3)
    runs = []
    for _ in range(2):
        assert main(["train", "--epochs", "1", "--device", "cpu", "--seed", seed, "--json"]) == 0
        runs.append(json.loads(capsys.readouterr().out))
    assert runs[0]["seed"] == 2**100 + 3
    assert runs[0]["loss"] == runs[1]["loss"] and runs[0]["accuracy"] == runs[1]["accuracy"]
    assert main(["train", "--epochs", "1", "--device", "cpu", "--seed", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["loss"] != runs[0]["loss"]  # another seed, another run


# --------------------------------------------------------------------------- where the output goes


@pytest.mark.slow
def test_in_a_pipe_there_are_no_carriage_return_frames():
    proc = gpugrad_train("--epochs", "3")  # as in `gpugrad train 2>&1 | cat`: neither stream is a terminal
    assert proc.returncode == 0, proc.stderr
    assert "\r" not in proc.stdout and "\r" not in proc.stderr
    assert "\x1b[" not in proc.stderr  # nor cursor movements
    progress = proc.stderr.splitlines()
    assert [line.split(",")[0] for line in progress] == [f"mlp on cpu: epoch {e}/3" for e in (1, 2, 3)]
    assert proc.stdout.splitlines()[0].startswith("mlp: test accuracy ") and len(proc.stdout.splitlines()) == 1


def run_with_stderr_on_a_terminal(*args):
    """``gpugrad train ARGS`` with stderr on a pseudo-terminal of 100 columns; ``(returncode, stdout, terminal)``."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("GPUGRAD_DEVICE", None)
    proc = subprocess.Popen([sys.executable, "-m", "gpugrad", "train", "--device", "cpu", *args],
                            stdout=subprocess.PIPE, stderr=slave, env=env, cwd=ROOT)
    os.close(slave)
    chunks = []

    def drain():  # read as it comes, so that a full terminal buffer never blocks the child
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the child closed its end
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    stdout = proc.communicate(timeout=300)[0].decode()
    reader.join(timeout=30)
    os.close(master)
    return proc.returncode, stdout, b"".join(chunks).decode(errors="replace")


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_TQDM, reason="the bar is tqdm's (pip install 'gpugrad[progress]'); without it a "
                                          "terminal gets the plain lines too")
def test_a_terminal_gets_the_progress_bar():
    code, stdout, terminal = run_with_stderr_on_a_terminal("--epochs", "2")
    assert code == 0, terminal
    assert "\r" in terminal and "%|" in terminal and "step/s" in terminal  # tqdm redraws one line in place
    assert "100%|" in terminal and "mlp on cpu" in terminal
    assert "epoch 1/2" not in terminal  # no plain lines beside the bar
    assert stdout.startswith("mlp: test accuracy ") and "\r" not in stdout


@pytest.mark.slow
def test_quiet_on_a_terminal_draws_nothing(tmp_path):
    code, stdout, terminal = run_with_stderr_on_a_terminal("--epochs", "1", "--quiet", "--save",
                                                           str(tmp_path / "w.npz"))
    assert code == 0 and stdout == "" and terminal == ""
    assert (tmp_path / "w.npz").is_file()


@pytest.mark.slow
def test_json_is_one_object_and_nothing_else_on_stdout(tmp_path):
    path = tmp_path / "w.npz"
    proc = gpugrad_train("--epochs", "2", "--seed", "3", "--json", "--save", str(path))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)  # the whole of stdout
    assert SUMMARY_KEYS <= set(summary), summary
    assert (summary["model"], summary["device"], summary["epochs"], summary["seed"], summary["saved"]) == \
        ("mlp", "cpu", 2, 3, str(path))
    assert 0.5 < summary["accuracy"] <= 1 and 0 < summary["loss"] < 3 and summary["time"] > 0
    assert summary["steps"] == 2 * -(-1438 // 64) and summary["ranks"] == 1
    assert "epoch 2/2" in proc.stderr  # the progress is still there, on stderr
    assert path.is_file()


def test_json_matches_the_summary_line(capsys):
    assert main(["train", "--epochs", "1", "--device", "cpu", "--json", "--no-progress"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert main(["train", "--epochs", "1", "--device", "cpu", "--no-progress"]) == 0
    line = capsys.readouterr().out
    assert line.startswith(f"mlp: test accuracy {summary['accuracy']:.2%} ")
    assert f"final loss {summary['loss']:.4f}" in line


@pytest.mark.slow
def test_quiet_prints_nothing_but_errors(tmp_path):
    path = tmp_path / "w.npz"
    proc = gpugrad_train("--epochs", "1", "--quiet", "--save", str(path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == ""
    assert path.is_file()
    proc = gpugrad_train("--epochs", "1", "--quiet", "--save", str(tmp_path / "missing" / "w.npz"))
    assert proc.returncode == 2 and "error: argument --save" in proc.stderr  # errors still show


def test_quiet_with_json_prints_only_the_json(capsys):
    assert main(["train", "--epochs", "1", "--device", "cpu", "--quiet", "--json"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert SUMMARY_KEYS <= set(json.loads(captured.out))


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["bf16", "mixed16"])
def test_cnn_trains_on_the_gpu_in_16_bit_precisions(precision, capsys):
    """CuPy 14.2 has no batched bfloat16 product (conv2d's), and upcasts a batched float16 one to float32
    with copies both ways; gpugrad's GPU path (gpugrad/backend/cupy_gaps.py) does neither. On the stand-in,
    which records CuPy's float16 upcasts, an epoch of the CNN makes none."""
    if precision == "bf16":
        pytest.importorskip("ml_dtypes", reason="bfloat16 needs ml_dtypes (the bfloat16 extra)")
    import cupy

    upcasts = getattr(cupy, "_dtypes", None)  # the stand-in's record; the real CuPy has none
    before = len(upcasts.UPCASTS) if upcasts is not None else 0
    assert main(["train", "--epochs", "1", "--device", "cuda", "--model", "cnn", "--precision", precision,
                 "--no-progress", "--batch-size", "256"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("cnn: test accuracy ") and f"precision {precision}" in out, out
    if upcasts is not None:
        assert upcasts.UPCASTS[before:] == []
