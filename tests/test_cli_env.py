"""The ``gpugrad`` command and its environment: a bad ``GPUGRAD_DEVICE``, ``GPUGRAD_NUM_THREADS`` or
``GPUGRAD_DISTRIBUTED_TIMEOUT`` is one line on stderr and exit 2, for every subcommand, before the subcommand runs."""
import argparse
import os
import subprocess
import sys

import pytest

import gpugrad as gg
from gpugrad import cli
from gpugrad.backend import environment_problems

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def subcommands():
    """Every subcommand the parser has (a new one is covered here without a change to this file)."""
    action = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(action.choices)


ARGUMENTS = {"train": ["--epochs", "1", "--device", "cpu"], "bench": ["-k", "W1", "--rounds", "1"],
             "check": ["--device", "cpu"]}  # enough to parse; the subcommand never runs
BAD = [("GPUGRAD_DEVICE", "tpu:3", "GPUGRAD_DEVICE='tpu:3' cannot be used: invalid device 'tpu:3'"),
       ("GPUGRAD_DEVICE", "cuda:banana", "GPUGRAD_DEVICE='cuda:banana' cannot be used: invalid device"),
       ("GPUGRAD_NUM_THREADS", "0", "GPUGRAD_NUM_THREADS must be a whole number >= 1, not '0'"),
       ("GPUGRAD_NUM_THREADS", "-2", "GPUGRAD_NUM_THREADS must be a whole number >= 1, not '-2'"),
       ("GPUGRAD_NUM_THREADS", "2.5", "GPUGRAD_NUM_THREADS must be a whole number >= 1, not '2.5'"),
       ("GPUGRAD_NUM_THREADS", "four", "GPUGRAD_NUM_THREADS must be a whole number >= 1, not 'four'"),
       ("GPUGRAD_DISTRIBUTED_TIMEOUT", "soon", "GPUGRAD_DISTRIBUTED_TIMEOUT is how many seconds a collective waits "
                                               "for the other ranks: a positive number, not 'soon'"),
       ("GPUGRAD_DISTRIBUTED_TIMEOUT", "0", "GPUGRAD_DISTRIBUTED_TIMEOUT is how many seconds a collective waits "
                                            "for the other ranks: a positive number, not '0'")]
if not gg.cuda_available():  # a GPU this machine does not have is as unusable as a malformed name
    BAD.append(("GPUGRAD_DEVICE", "cuda", "GPUGRAD_DEVICE='cuda' cannot be used: no CUDA device can be used"))


def test_every_subcommand_is_covered():
    assert {"info", "train", "bench", "check"} <= set(subcommands())


@pytest.fixture
def ran(monkeypatch):
    """The subcommands that got to run: every ``cmd_*`` of gpugrad.cli replaced by a recorder."""
    calls = []
    for name in dir(cli):
        if name.startswith("cmd_"):
            monkeypatch.setattr(cli, name, lambda args, name=name: calls.append(name) or 0)
    monkeypatch.delenv("GPUGRAD_DEVICE", raising=False)
    monkeypatch.delenv("GPUGRAD_NUM_THREADS", raising=False)
    monkeypatch.delenv("GPUGRAD_DISTRIBUTED_TIMEOUT", raising=False)
    return calls


@pytest.mark.parametrize("command", subcommands())
@pytest.mark.parametrize("variable, value, message", BAD, ids=[f"{v}={x}" for v, x, _ in BAD])
def test_a_bad_variable_is_one_line_and_exit_2_before_the_subcommand_runs(command, variable, value, message, ran,
                                                                        monkeypatch, capsys):
    monkeypatch.setenv(variable, value)
    assert cli.main([command] + ARGUMENTS.get(command, [])) == 2
    captured = capsys.readouterr()
    assert ran == []  # checked before the subcommand started
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"gpugrad: error: {message}"), captured.err


@pytest.mark.parametrize("command", subcommands())
def test_good_or_blank_variables_let_the_subcommand_run(command, ran, monkeypatch, capsys):
    monkeypatch.setenv("GPUGRAD_DEVICE", "cpu")
    monkeypatch.setenv("GPUGRAD_NUM_THREADS", " 2 ")
    assert cli.main([command] + ARGUMENTS.get(command, [])) == 0
    monkeypatch.setenv("GPUGRAD_DEVICE", "")  # blank: unset, as before
    monkeypatch.setenv("GPUGRAD_NUM_THREADS", "")
    assert cli.main([command] + ARGUMENTS.get(command, [])) == 0
    assert ran == [f"cmd_{command}"] * 2
    assert capsys.readouterr().err == ""


def test_both_bad_are_named_on_the_one_line(ran, monkeypatch, capsys):
    monkeypatch.setenv("GPUGRAD_DEVICE", "tpu:3")
    monkeypatch.setenv("GPUGRAD_NUM_THREADS", "0")
    assert cli.main(["info"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "GPUGRAD_DEVICE='tpu:3'" in err and "GPUGRAD_NUM_THREADS" in err


def test_environment_problems_reads_the_mapping_it_is_given():
    assert environment_problems({}) == []
    assert environment_problems({"GPUGRAD_NUM_THREADS": "3"}) == []
    assert environment_problems({"GPUGRAD_NUM_THREADS": "\u00b2"}) == [  # a superscript two: not a number
        "GPUGRAD_NUM_THREADS must be a whole number >= 1, not '\u00b2'"]


def test_help_still_works_with_a_bad_variable(monkeypatch, capsys):
    monkeypatch.setenv("GPUGRAD_NUM_THREADS", "zero")
    with pytest.raises(SystemExit) as exc:
        cli.main(["train", "--help"])
    assert exc.value.code == 0 and "usage: gpugrad train" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.parametrize("command", subcommands())
@pytest.mark.parametrize("variable, value", [("GPUGRAD_DEVICE", "tpu:3"), ("GPUGRAD_NUM_THREADS", "0")])
def test_in_a_subprocess_no_traceback_and_exit_2(command, variable, value):
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("GPUGRAD_DEVICE", None)
    env[variable] = value
    proc = subprocess.run([sys.executable, "-m", "gpugrad", command] + ARGUMENTS.get(command, []),
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(f"gpugrad: error: {variable}"), proc.stderr


@pytest.mark.parametrize("command", ["train", "check"])
@pytest.mark.parametrize("variable, value, message", [b for b in BAD if b[0] == "GPUGRAD_DEVICE"],
                         ids=[value for variable, value, _ in BAD if variable == "GPUGRAD_DEVICE"])
def test_a_bad_device_flag_exits_as_the_variable_does(command, variable, value, message, ran, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main([command, "--device", value])
    assert exc.value.code == 2 and ran == []
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[-1].startswith(f"gpugrad {command}: error: argument --device: ")
    assert message.split("cannot be used: ")[1] in err[-1]
