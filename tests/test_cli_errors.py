"""Every bad value of every option of every ``gpugrad`` subcommand: one line on stderr, exit 2, nothing run.

The table names each option of the parser (``test_every_option_has_a_bad_value_here`` fails for an option
added without a row), with values argparse refuses by type or choice, values the option's own check
refuses (a folder that does not exist, a file that is no report), flags that take no value, and the
combinations that cannot go together. The environment's variables are tested for every subcommand in
``tests/test_cli_env.py``.
"""
import argparse
import json
import sys

import pytest

from gpugrad import cli
from gpugrad._tools.bench import plot as bench_plot


def options_of(command):
    """The option strings of subcommand ``command`` (its first spelling each), help left out."""
    action = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(a.option_strings[0] for a in action.choices[command]._actions
                  if a.option_strings and not isinstance(a, argparse._HelpAction))


def subcommands():
    action = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(action.choices)


@pytest.fixture
def not_json(tmp_path):
    path = tmp_path / "not.json"
    path.write_text("not json")
    return str(path)


@pytest.fixture
def not_a_report(tmp_path):
    path = tmp_path / "list.json"
    path.write_text(json.dumps([1, 2]))
    return str(path)


# (argv, what the one line says after "error: "); {not_json}, {not_a_report}, {tmp} are filled in
BAD = [
    (["train", "--model", "resnet"], "argument --model: invalid choice: 'resnet'"),
    (["train", "--epochs", "0"], "argument --epochs: must be at least 1, not 0"),
    (["train", "--epochs", "two"], "argument --epochs: invalid int value: 'two'"),
    (["train", "--batch-size", "-3"], "argument --batch-size: must be at least 1, not -3"),
    (["train", "--batch-size", "1.5"], "argument --batch-size: invalid int value: '1.5'"),
    (["train", "--lr", "0"], "argument --lr: must be a finite number above 0, not 0"),
    (["train", "--lr", "inf"], "argument --lr: must be a finite number above 0, not inf"),
    (["train", "--lr", "nan"], "argument --lr: must be a finite number above 0, not nan"),
    (["train", "--optimizer", "lbfgs"], "argument --optimizer: invalid choice: 'lbfgs'"),
    (["train", "--device", "tpu"], "argument --device: invalid device 'tpu'"),
    (["train", "--device", "cuda:x"], "argument --device: invalid device 'cuda:x'"),
    (["train", "--seed", "-1"], "argument --seed: must be a whole number >= 0"),
    (["train", "--seed", "1e3"], "argument --seed: must be a whole number >= 0 written in digits"),
    (["train", "--save", "{tmp}/no/such/folder/w.npz"], "argument --save: the folder of"),
    (["train", "--save", "{tmp}"], "argument --save: "),
    (["train", "--precision", "fp8"], "argument --precision: invalid choice: 'fp8'"),
    (["train", "--plot", "{tmp}/curves.jpg"], "argument --plot: '{tmp}/curves.jpg' must end in .png, .svg, .pdf"),
    (["train", "--plot", "{tmp}/no/such/folder/curves.png"], "argument --plot: the folder of"),
    (["train", "--no-progress=yes"], "argument --no-progress: ignored explicit argument 'yes'"),
    (["train", "--quiet=1"], "argument --quiet/-q: ignored explicit argument '1'"),
    (["train", "--json=out.json"], "argument --json: ignored explicit argument 'out.json'"),
    (["train", "--eager=no"], "argument --eager: ignored explicit argument 'no'"),
    (["train", "--profile=all"], "argument --profile: ignored explicit argument 'all'"),
    (["train", "--model", "gpt", "--precision", "mixed16"], "--model gpt trains in float32 only"),
    (["train", "--model", "gpt", "--optimizer", "sgd"], "--model gpt trains with AdamW"),
    (["train", "--model", "gpt", "--plot", "{tmp}/c.png"], "--plot is for mlp and cnn"),
    (["train", "--model", "gpt", "--profile"], "--profile is for mlp and cnn"),
    (["train", "--quiet", "--profile"], "--quiet prints nothing but errors"),
    (["train", "--jit=1"], "argument --jit: ignored explicit argument '1'"),
    (["train", "--jit", "--eager"], "--jit fuses the traced step of the mlp and cnn models"),
    (["train", "--model", "gpt", "--jit"], "--jit fuses the traced step of the mlp and cnn models"),
    (["bench", "--quick=1"], "argument --quick: ignored explicit argument '1'"),
    (["bench", "-k", "tanh and ("], "argument -k: not a pytest -k expression"),
    (["bench", "--rounds", "0"], "argument --rounds: must be at least 1, not 0"),
    (["bench", "--max-time", "-1"], "argument --max-time: must be a finite number above 0"),
    (["bench", "--threads", "many"], "argument --threads: invalid int value: 'many'"),
    (["bench", "--no-progress=0"], "argument --no-progress: ignored explicit argument '0'"),
    (["bench", "--json", "{tmp}/no/such/folder/run.json"], "argument --json: the folder of"),
    (["bench", "--plot", "{tmp}/no/such/folder/run.png"], "argument --plot: the folder of"),
    (["bench", "--compare", "{tmp}/missing.json"], "argument --compare: no such file"),
    (["bench", "--compare", "{not_json}"], "argument --compare: {not_json} is not JSON"),
    (["bench", "--load", "{not_a_report}"], "argument --load: {not_a_report} is not a pytest-benchmark report"),
    (["bench", "--load", "{tmp}/missing.json"], "argument --load: no such file"),
    (["check", "--device", "tpu:0"], "argument --device: invalid device 'tpu:0'"),
    (["check", "--tolerance", "0"], "argument --tolerance: must be a finite number above 0, not 0"),
    (["check", "--tolerance", "small"], "argument --tolerance: invalid float value: 'small'"),
    (["check", "--no-progress=1"], "argument --no-progress: ignored explicit argument '1'"),
    (["info", "--verbose"], "unrecognized arguments: --verbose"),
    (["--version=2"], "argument --version: ignored explicit argument '2'"),
    (["frobnicate"], "argument COMMAND: invalid choice: 'frobnicate'"),
]


@pytest.fixture
def ran(monkeypatch):
    """The subcommands that started (none may, for a bad value)."""
    calls = []
    for name in ("cmd_info", "cmd_train", "cmd_bench", "cmd_check"):
        monkeypatch.setattr(cli, name, lambda args, name=name: calls.append(name) or 0)
    for variable in ("GPUGRAD_DEVICE", "GPUGRAD_NUM_THREADS", "GPUGRAD_DISTRIBUTED_TIMEOUT"):
        monkeypatch.delenv(variable, raising=False)
    return calls


def fill(text, tmp_path, not_json, not_a_report):
    return text.format(tmp=tmp_path, not_json=not_json, not_a_report=not_a_report)


@pytest.mark.parametrize("argv, message", BAD, ids=[" ".join(argv) for argv, _ in BAD])
def test_a_bad_value_is_one_line_and_exit_2(argv, message, ran, tmp_path, not_json, not_a_report, monkeypatch,
                                           capsys):
    monkeypatch.setattr(bench_plot, "matplotlib_missing", lambda: None)  # --plot's other checks, with or without it
    argv = [fill(a, tmp_path, not_json, not_a_report) for a in argv]
    message = fill(message, tmp_path, not_json, not_a_report)
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    command = argv[0] if argv[0] in subcommands() else None
    prefix = f"gpugrad {command}: error: " if command else "gpugrad: error: "
    assert out == "" and ran == []
    assert err.count("\n") == 1 and err.startswith(prefix + message), err
    assert err.endswith(f"(see '{prefix[:-len(': error: ')]} --help')\n")


@pytest.mark.parametrize("command", ["train", "bench"])
def test_plot_without_matplotlib_names_the_extra(command, ran, monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    with pytest.raises(SystemExit) as exc:
        cli.main([command, "--plot", str(tmp_path / "out.png")])  # a good path: only matplotlib is missing
    assert exc.value.code == 2 and ran == []
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'gpugrad[plot]'" in err


@pytest.mark.parametrize("command", ["train", "bench", "check", "info"])
def test_every_option_has_a_bad_value_here(command):
    tested = {a for argv, _ in BAD if argv[0] == command for a in argv[1:] if a.startswith("-")}
    tested = {a.split("=")[0] for a in tested}
    assert set(options_of(command)) - tested == set(), "an option with no bad value in BAD"


def test_every_subcommand_is_in_the_table():
    assert {argv[0] for argv, _ in BAD} >= set(subcommands())
