"""gpugrad's type hints, as a user's type checker sees them: mypy (pinned in the test extra) on a user script
that trains the digits MLP and on ``-p gpugrad``, and the script itself run for real; plus the check that
the op modules' ``__all__`` spelled out for type checkers is the one they compute at import.

mypy missing skips the mypy tests with a reason, and fails them under GPUGRAD_REQUIRE_KERNELCHECK=1 (CI)."""
import ast
import importlib
import importlib.util
import os
import re
import subprocess
import sys
import time

import pytest

import gpugrad as gg
from gpugrad._tools import declared_names
from tests.conftest import skip_or_fail

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER_SCRIPT = os.path.join("tests", "typing", "user_train_mlp.py")
NO_MYPY = "mypy is not installed: pip install -e '.[test]' (it pins mypy)"

# What mypy infers for the values user_train_mlp.py reveals, in its order.
REVEALED = ["gpugrad.tensor._tensor.Tensor",  # gg.tensor(...) * 2
            "gpugrad.tensor._tensor.Tensor",  # gg.sum(...)
            "gpugrad.tensor._tensor.Tensor",  # tape.gradient(y, w)
            "list[gpugrad.tensor._tensor.Tensor]",  # tape.gradient(y, [w])
            "gpugrad.tensor._tensor.Tensor",  # x.sum(axis=0).mean()
            "gpugrad.tensor._tensor.Tensor",  # 2.0 - x[0]
            "gpugrad.nn.linear.Dense",  # gg.nn.Dense(...)
            "gpugrad.nn.containers.Sequential",  # gg.nn.Sequential(...)
            "gpugrad.optimizers.adam.Adam",  # gg.optimizers.Adam(...)
            "gpugrad.tensor._tensor.Tensor",  # model(x)
            "gpugrad.tensor._tensor.Tensor"]  # optimizer.minimize(...)


@pytest.fixture(scope="module")
def mypy(tmp_path_factory):
    """Run mypy (the repository's [tool.mypy] config, a cache of this module's own) on ``args``."""
    if importlib.util.find_spec("mypy") is None:
        skip_or_fail(NO_MYPY)
    cache = tmp_path_factory.mktemp("mypy-cache")

    def run(*args):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "mypy", "--config-file", "pyproject.toml",
                               "--cache-dir", str(cache), *args],
                              cwd=ROOT, capture_output=True, text=True, timeout=600)
        print(f"mypy {' '.join(args)}: {time.perf_counter() - start:.1f} s")
        return done

    return run


@pytest.mark.slow
def test_mypy_on_the_user_script_finds_no_error_and_infers_tensors(mypy):
    done = mypy(USER_SCRIPT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^Success: no issues found in 1 source file$", done.stdout, re.M), done.stdout
    revealed = re.findall(r'^tests[\\/]typing[\\/]user_train_mlp\.py:\d+: note: Revealed type is "(.*)"$',
                          done.stdout, re.M)
    assert revealed == REVEALED, done.stdout


@pytest.mark.slow
def test_mypy_reports_a_wrong_use_of_the_api(mypy, tmp_path):
    """The check can fail: a str where gg.exp takes a tensor, a Tensor method that does not exist, a str
    for a layer's size or a learning rate, a model's output taken for an int."""
    script = tmp_path / "wrong_use.py"
    script.write_text("import gpugrad as gg\n"
                      "x = gg.tensor([1.0])\n"
                      "gg.exp('one')\n"
                      "x.no_such_method()\n"
                      "y: int = gg.sum(x)\n"
                      "model = gg.nn.Sequential(gg.nn.Dense('64', 10))\n"
                      "gg.optimizers.Adam(learning_rate='fast')\n"
                      "z: int = model(x)\n")
    done = mypy(str(script))
    assert done.returncode == 1, done.stdout
    assert 'Argument 1 to "exp" has incompatible type "str"' in done.stdout
    assert '"Tensor" has no attribute "no_such_method"' in done.stdout
    assert re.search(r':5: error: Incompatible types in assignment \(expression has type "Tensor", variable has '
                     r'type "int"\)', done.stdout), done.stdout
    assert 'Argument 1 to "Dense" has incompatible type "str"; expected "int"' in done.stdout
    assert 'Argument "learning_rate" to "Adam" has incompatible type "str"' in done.stdout
    assert re.search(r':8: error: Incompatible types in assignment \(expression has type "Tensor", variable has '
                     r'type "int"\)', done.stdout), done.stdout


@pytest.mark.slow
def test_mypy_on_the_package_is_clean(mypy):
    done = mypy("-p", "gpugrad")
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^Success: no issues found in \d+ source files$", done.stdout, re.M), done.stdout


@pytest.mark.slow
def test_the_user_script_runs_and_trains():
    done = subprocess.run([sys.executable, USER_SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert done.returncode == 0, done.stdout + done.stderr
    accuracy = float(re.search(r"test accuracy ([0-9.]+)", done.stdout).group(1))
    assert accuracy > 0.8


def _declared_all(module):
    """The list assigned to ``__all__`` under ``if TYPE_CHECKING:`` in ``module``'s source (None if none)."""
    with open(module.__file__) as f:
        return declared_names.declared(f.read())[0]


@pytest.mark.parametrize("name", declared_names.checked_modules())
def test_the_names_declared_for_type_checkers_are_the_computed_ones(name):
    """What a type checker reads: the same set of names, each once (gpugrad.ops' and raw_ops' are sorted)."""
    module = importlib.import_module(name)
    declared = _declared_all(module)
    assert len(set(declared)) == len(declared)
    assert sorted(declared) == sorted(module.__all__)


def test_the_declared_names_are_as_the_tool_writes_them():
    """After a merge or a new op: the lists are rewritten by one command, which this failure names."""
    stale = declared_names.stale_modules()
    assert stale == [], f"stale TYPE_CHECKING names in {stale}: run `{declared_names.COMMAND}`"


def test_the_raw_ops_imported_for_type_checkers_are_the_raw_ops():
    with open(gg.raw_ops.__file__) as f:
        tree = ast.parse(f.read())
    blocks = [n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", None) == "TYPE_CHECKING"]
    imported = [a.name for b in blocks for s in b.body if isinstance(s, ast.ImportFrom) for a in s.names]
    assert imported == sorted(gg.raw_ops.__all__)


@pytest.mark.parametrize("name", ["gpugrad.ops", "gpugrad.raw_ops", "gpugrad.ops.elementwise.math"])
def test_the_tool_rewrites_a_stale_list_to_the_true_one(name):
    """A list (and raw_ops' import) that lost a name and holds one that is not an op: the tool restores the file."""
    with open(importlib.import_module(name).__file__) as f:
        source = f.read()
    layout = dict(one_a_line=name in declared_names.SORTED, ops_import=name == "gpugrad.raw_ops")
    want = declared_names.expected(name)
    stale = declared_names.rewrite_source(source, want[1:] + ["not_an_op"], **layout)
    assert declared_names.declared(stale)[0] == want[1:] + ["not_an_op"]
    assert declared_names.rewrite_source(stale, want, **layout) == source


def test_the_tool_check_lists_a_stale_module_and_exits_1(monkeypatch, capsys):
    real = declared_names.rewritten
    monkeypatch.setattr(declared_names, "rewritten",
                        lambda name: real(name) + "# stale\n" if name == "gpugrad.raw_ops" else real(name))
    assert declared_names.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert out.splitlines() == [f"{os.path.join('gpugrad', 'raw_ops.py')}: the TYPE_CHECKING names of gpugrad.raw_ops "
                                f"are stale; run: {declared_names.COMMAND}"], out


def test_the_package_ships_its_py_typed_marker():
    assert os.path.isfile(os.path.join(os.path.dirname(gg.__file__), "py.typed"))
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        assert re.search(r'^"gpugrad" = \["py.typed"\]$', f.read(), re.M)
