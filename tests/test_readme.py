"""The README's promises: its two commands, its Python snippets, the names it mentions."""
import os
import re

import pytest

import gpugrad as gg
from tests.conftest import fenced_blocks, gg_has, run_snippet

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
def blocks(language):
    """(line number, source) of every fenced block of ``language`` in the README."""
    return [(line, source) for line, source, _ in fenced_blocks(README, language)]


PYTHON_BLOCKS = [pytest.param(source, id=f"line{line}") for line, source in blocks("python")]


def test_readme_starts_with_the_two_commands():
    with open(README, encoding="utf-8") as f:
        head = f.read().split("\n")[:5]
    assert head == ["# gpugrad", "", "```sh",
                    "pip install -e \".[progress]\" && gpugrad train",
                    'pip install -e ".[test]" && pytest']
    assert head[4].split("&& ")[-1] == "pytest"  # .ci/run runs this command


def test_readme_has_python_snippets_for_each_quick_start_topic():
    """A tape, a training loop, gg.function; the other topics are the guide's (tests/test_docs_guide.py)."""
    sources = "\n".join(source for _, source in blocks("python"))
    for name in ("GradientTape", "tape.gradient", "for step in range", "@gg.function", "minimize"):
        assert name in sources, f"the README's quick start shows no {name}"


def test_readme_is_short():
    with open(README, encoding="utf-8") as f:
        lines = f.read().count("\n")
    assert lines <= 200, f"the README has {lines} lines: move the detail to docs/"


@pytest.mark.parametrize("source", PYTHON_BLOCKS)
def test_readme_python_snippet_runs(source):
    """Each snippet runs on its own in a fresh interpreter, as a reader would paste it."""
    run_snippet(source, "README snippet")


def test_every_gg_name_in_the_readme_exists():
    with open(README, encoding="utf-8") as f:
        names = set(re.findall(r"\bgg\.([A-Za-z_]\w*)", f.read()))
    missing = sorted(n for n in names if not gg_has(n))
    assert not missing, f"the README mentions gg names that do not exist: {missing}"
