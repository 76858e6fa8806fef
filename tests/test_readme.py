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
# on the line above a fence: the block is shown, not run, for the reason given (a GPU, mpiexec, ...)
NOT_RUN = re.compile(r"^<!-- not run: (\S.*?) -->\n\Z")


def fenced_blocks(path, language):
    r"""(line number, source, why not run or None) of every fenced block of ``language`` in the Markdown file.

    Example:
        >>> import tempfile
        >>> with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
        ...     _ = f.write("```python\n1\n```\n<!-- not run: needs a GPU -->\n```python\n2\n```\n")
        >>> fenced_blocks(f.name, "python")
        [(1, '1\n', None), (5, '2\n', 'needs a GPU')]
        >>> os.unlink(f.name)
    """
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found = []
    for m in FENCE.finditer(text):
        if m.group(1) == language:
            line_above = text[text.rfind("\n", 0, max(m.start() - 1, 0)) + 1:m.start()]
            not_run = NOT_RUN.match(line_above)
            found.append((text.count("\n", 0, m.start()) + 1, m.group(2), not_run.group(1) if not_run else None))
    return found


def blocks(language):
    """(line number, source) of every fenced block of ``language`` in the README."""
    return [(line, source) for line, source, _ in fenced_blocks(README, language)]


def run_snippet(source, what):
    """Run ``source`` on its own in a fresh interpreter from the repository root, as a reader would paste it."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=300)
    assert proc.returncode == 0, f"{what} failed:\n{source}\n--- stderr ---\n{proc.stderr}"


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
    missing = sorted(n for n in names if not hasattr(gg, n))
    assert not missing, f"the README mentions gg names that do not exist: {missing}"
