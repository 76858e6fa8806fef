"""The README's promises: its two commands, its Python snippets, the names it mentions."""
import os
import re
import subprocess
import sys

import pytest

import gpugrad as gg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


def blocks(language):
    """(line number, source) of every fenced block of ``language`` in the README."""
    with open(README, encoding="utf-8") as f:
        text = f.read()
    return [(text.count("\n", 0, m.start()) + 1, m.group(2)) for m in FENCE.finditer(text)
            if m.group(1) == language]


PYTHON_BLOCKS = [pytest.param(source, id=f"line{line}") for line, source in blocks("python")]


def test_readme_starts_with_the_two_commands():
    with open(README, encoding="utf-8") as f:
        head = f.read().split("\n")[:5]
    assert head == ["# gpugrad", "", "```sh",
                    "pip install -e \".[progress]\" && gpugrad train",
                    'pip install -e ".[test]" && pytest']
    assert head[4].split("&& ")[-1] == "pytest"  # .ci/run runs this command


def test_readme_has_python_snippets_for_each_quick_start_topic():
    sources = "\n".join(source for _, source in blocks("python"))
    for name in ("GradientTape", "RegisterGradient", "record_operation", "custom_gradient",
                 "compute_gradient"):
        assert name in sources, f"the README's quick start shows no {name}"


@pytest.mark.parametrize("source", PYTHON_BLOCKS)
def test_readme_python_snippet_runs(source):
    """Each snippet runs on its own in a fresh interpreter, as a reader would paste it."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=300)
    assert proc.returncode == 0, f"README snippet failed:\n{source}\n--- stderr ---\n{proc.stderr}"


def test_every_gg_name_in_the_readme_exists():
    with open(README, encoding="utf-8") as f:
        names = set(re.findall(r"\bgg\.([A-Za-z_]\w*)", f.read()))
    missing = sorted(n for n in names if not hasattr(gg, n))
    assert not missing, f"the README mentions gg names that do not exist: {missing}"
