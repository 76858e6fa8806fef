"""``python -m benchmarks.jit_table``: gg.function(jit_compile=True)'s must-show table from one interleaved run.
Its command selects the five interleaved benchmarks, ``benchmarks/ratios.py`` judges each workload against its
target, and without numba there is nothing to time: it says so and exits 2."""
import ast
import json
import os
import re

from benchmarks import jit_table, ratios


def interleaved(workload, fused=None, **medians):
    """A pytest-benchmark entry of an interleaved benchmark: ``peer=seconds`` medians (the minimums 0.9 of them);
    ``fused``: what its jit peer fused (``conftest.jit_fused``)."""
    timed = {peer.replace("_", "-"): {"median": t, "min": 0.9 * t, "calls": 10} for peer, t in medians.items()}
    info = {"interleaved_workload": workload, "block": 1, "interleaved": timed}
    if fused:
        info["jit_fused"] = fused
    return {"extra_info": info, "stats": {"median": 1.0, "min": 1.0}}


def report():
    jit = "gpugrad_function_jit"
    return {"benchmarks": [
        interleaved("W1", fused="1 regions (1001 ops)", numpy=1e-3, gpugrad=4e-3, gpugrad_function=1e-3,
                    torch=5e-3, **{jit: 0.2e-3}),
        interleaved("W3", numpy=1e-2, gpugrad=8e-3, gpugrad_function=7e-3, **{jit: 5e-3}),
        interleaved("W4", fused="no regions", numpy=1e-1, gpugrad=9e-2, gpugrad_function=8e-2, **{jit: 8.8e-2}),
        interleaved("CNN", numpy=2e-2, gpugrad=2e-2, gpugrad_function=1.8e-2, torch=2e-2)]}


def test_the_table_judges_each_workload_against_its_target():
    lines = ratios.jit_table_lines(ratios.medians(report()))
    rows = {line.split()[0]: line for line in lines[2:7]}
    assert list(rows) == ["W1", "W3", "W2", "W4", "CNN"]  # the order, whatever the run's
    assert re.search(r"^W1 +1\.000 +4\.000 +1\.000 +0\.200 +5\.000 +0\.20 \(0\.20\) +0\.20 \(0\.20\)  "
                     r"jit/numpy <= 0\.25: ok$", rows["W1"]), rows["W1"]
    assert rows["W3"].endswith("jit/numpy <= 0.35: MISS")  # 0.50
    assert rows["W2"] == "W2      not run"
    assert re.search(r" 1\.10 \(1\.10\)  jit/unfused <= 1\.00: MISS$", rows["W4"]), rows["W4"]
    assert re.search(r" n/a +n/a  jit/unfused <= 1\.00: not timed \(no numba: the jit extra\)$", rows["CNN"])
    # then what each jit peer fused, in the same order: a ratio near 1 with nothing fused says why
    assert lines[7:] == ["W1 fused: 1 regions (1001 ops)", "W4 fused: no regions"]


def test_ratios_prints_the_table_after_its_lines_or_alone(tmp_path, capsys):
    path = tmp_path / "out.json"
    path.write_text(json.dumps(report()))
    assert ratios.main([str(path)]) == 0
    everything = capsys.readouterr().out
    assert ratios.main(["--jit-table", str(path)]) == 0
    table = capsys.readouterr().out
    assert table.startswith("gg.function(jit_compile=True), interleaved") and len(table.splitlines()) == 9
    assert everything.endswith("\n\n" + table)
    assert "W1  interleaved gpugrad-function-jit(cpu)/numpy = 0.20 (min 0.20)" in everything


def test_the_command_runs_the_five_interleaved_benchmarks_in_one_pytest_run(tmp_path):
    command = jit_table.pytest_command(tmp_path / "out.json", cycles=3)
    assert command[-1] == "--gpugrad-rounds=3" and f"--benchmark-json={tmp_path / 'out.json'}" in command
    assert command[command.index("-k") + 1] == "interleaved"
    files = [a for a in command if a.endswith(".py")]
    # what -k interleaved selects in those files: the tests whose names hold the word (read from their source,
    # which collecting them would take seconds to import)
    selected = sorted(node.name for path in files for node in ast.parse(open(path).read()).body
                      if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
                      and "interleaved" in node.name)
    assert selected == ["test_cnn_interleaved", "test_w1_interleaved", "test_w2_interleaved", "test_w3_interleaved",
                        "test_w4_interleaved"]
    for path in files:
        assert "interleaved" not in os.path.basename(path)  # -k reads the file's name too


def test_without_numba_it_exits_2_with_one_line(monkeypatch, capsys):
    real = jit_table.importlib.util.find_spec
    monkeypatch.setattr(jit_table.importlib.util, "find_spec", lambda name: None if name == "numba" else real(name))
    assert jit_table.main([]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "pip install 'gpugrad[jit]'" in captured.err


def test_a_cycle_count_below_one_is_refused_with_exit_2_and_one_line(capsys):
    assert jit_table.main(["--cycles", "0"]) == 2
    assert capsys.readouterr().err == "jit_table: --cycles must be at least 1, not 0\n"


def test_what_the_jit_peer_fused_is_read_from_its_diagnostics():
    import functools

    import numpy as np

    import gpugrad as gg
    from benchmarks.conftest import jit_fused

    class Traced:
        def __call__(self, x):
            return x

        def diagnostics(self):
            return ["trace 1 (cpu): 3 kernel steps; fused: 2 regions (3 ops over 4 elements), compiled in 0.1 s"]

    assert jit_fused(functools.partial(Traced(), 1)) == "2 regions (3 ops over 4 elements), compiled in 0.1 s"
    assert jit_fused(Traced()) == "2 regions (3 ops over 4 elements), compiled in 0.1 s"
    assert jit_fused(lambda: None) is None and jit_fused(None) is None
    unfused = gg.function(gg.square)  # a replay without jit_compile fuses nothing and says nothing of it
    unfused(gg.tensor(np.ones(3)))
    assert jit_fused(unfused) is None


def test_a_long_account_of_what_was_fused_is_cut_to_one_line_of_the_table():
    entry = interleaved("W1", fused="; ".join(["64 ops over 16 elements"] * 20), numpy=1e-3,
                        gpugrad_function_jit=1e-4)
    (line,) = ratios.jit_table_lines(ratios.medians({"benchmarks": [entry]}))[7:]
    assert line.startswith("W1 fused: 64 ops over 16 elements; 64 ops") and line.endswith(" ...") and len(line) == 116


def test_the_jit_peer_follows_the_unfused_replay_not_pytorch(monkeypatch):
    import importlib.util

    from benchmarks.conftest import with_jit_peer

    peers = {"gpugrad": 1, "gpugrad-function": 2, "numpy": 3, "torch": 4}
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object() if name == "numba" else real(name))
    assert list(with_jit_peer(peers, lambda: 5)) == ["gpugrad", "gpugrad-function", "gpugrad-function-jit", "numpy",
                                                     "torch"]
    assert list(with_jit_peer({"numpy": 3}, lambda: 5)) == ["numpy", "gpugrad-function-jit"]
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "numba" else real(name))
    assert with_jit_peer(peers, lambda: 5) == peers
