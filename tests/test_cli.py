"""The ``gpugrad`` command line: subcommands, exit codes, usage errors."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import gpugrad as gg
from gpugrad.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_info_prints_version_devices_backends_and_op_count(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert f"gpugrad {gg.__version__}" in out
    assert f"devices: {', '.join(gg.devices())}" in out
    assert f"numpy {np.__version__}" in out
    assert "cupy" in out  # its version and GPUs, or why there is no GPU
    assert f"default device: {gg.default_device()}" in out
    assert f"ops: {len(gg.registered_ops())} with registered gradients" in out


def test_info_counts_the_fused_kernels_and_the_compiled_kernel_cache(tmp_path, monkeypatch, capsys):
    from gpugrad.backend import kernel_source

    cache = tmp_path / "cache"
    (cache / "sub").mkdir(parents=True)
    for name in ("a.cubin", "b.cubin", "sub/c.cubin"):
        (cache / name).write_bytes(b"\0")
    monkeypatch.setenv("CUPY_CACHE_DIR", str(cache))
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    files = len(kernel_source.names(kernel_source.kernels_dir()))
    assert (f"fused kernels: {len(kernel_source.names())} ({files} files in {kernel_source.kernels_dir()}, "
            f"{len(kernel_source.names()) - files} generated from declared expressions)") in out
    assert f"kernel cache: {cache} (3 compiled kernel files)" in out
    assert f"default device: {gg.default_device()} ({gg.get_device(None).backend.name} backend)" in out


def test_info_kernel_cache_defaults_to_the_home_folder(monkeypatch, tmp_path):
    from gpugrad.cli import kernel_cache_line

    monkeypatch.setenv("HOME", str(tmp_path))
    assert kernel_cache_line({}) == f"kernel cache: {tmp_path / '.cupy' / 'kernel_cache'} (not created yet)"


def test_info_lists_each_gpu_with_name_memory_and_compute_capability(capsys):
    if not gg.cuda_available():
        from gpugrad.cli import gpu_line

        line = gpu_line(1, {"name": b"NVIDIA A100-SXM4-40GB", "totalGlobalMem": 42_505_273_344, "major": 8,
                            "minor": 0})
        assert line == "cuda:1: NVIDIA A100-SXM4-40GB, 39.6 GiB, compute capability 8.0"
        return
    main(["info"])
    out = capsys.readouterr().out
    for device in [d for d in gg.devices() if d.startswith("cuda")]:
        assert re.search(rf"^    {device}: .+, \d+\.\d GiB, compute capability \d+\.\d+$", out, re.M), out


def test_info_says_why_there_is_no_gpu(capsys):
    if gg.cuda_available():
        pytest.skip("a GPU is usable here, so there is no reason to print")
    main(["info"])
    cupy_line = [line for line in capsys.readouterr().out.splitlines() if "cupy" in line][0]
    assert ("no GPU:" in cupy_line) or ("not used:" in cupy_line), cupy_line


def test_help_exits_zero_and_lists_info(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: gpugrad")
    assert "info" in out


@pytest.mark.parametrize("argv", [[], ["frobnicate"], ["info", "--no-such-option"], ["info", "extra"]],
                         ids=["no-command", "unknown-command", "unknown-option", "extra-argument"])
def test_bad_arguments_are_one_line_and_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    command = argv[0] if argv and argv[0] == "info" else None  # a subcommand's own parser reports its errors
    assert err.count("\n") == 1 and err.endswith(f"(see '{'gpugrad ' + command if command else 'gpugrad'} --help')\n")
    assert err.startswith(f"gpugrad {command}: error:" if command else "gpugrad: error:")


def test_bad_device_environment_is_one_line_exit_2():
    # The start-up default is computed once per process, so probe it in a fresh one (tests/test_cli_env.py
    # covers every subcommand and GPUGRAD_NUM_THREADS).
    env = dict(os.environ, GPUGRAD_DEVICE="tpu:3", PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, "-m", "gpugrad", "info"], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "invalid device 'tpu:3'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_python_dash_m_runs_info_in_a_subprocess():
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("GPUGRAD_DEVICE", None)
    proc = subprocess.run([sys.executable, "-m", "gpugrad", "info"], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"gpugrad {gg.__version__}")
    assert "default device:" in proc.stdout


def test_bad_arguments_in_a_subprocess_exit_2_without_traceback():
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, "-m", "gpugrad", "nope"], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.startswith("gpugrad: error: argument COMMAND: invalid choice: 'nope'")
    assert proc.stderr.count("\n") == 1
