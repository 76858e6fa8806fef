"""The documentation's promises: every relative link in README.md and docs/**/*.md reaches a file of
the repository, the README points to the docs, CI builds the site with Sphinx (warnings and unresolved
references as errors) and checks its links offline with docs/check_links.py, which finds a broken link."""
import doctest
import importlib.util
import re
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli", reason="Python 3.10 reads pyproject.toml with tomli")

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")
INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.M)
HTML_LINK = re.compile(r"<(?:a|img)\s[^>]*?(?:href|src)=\"([^\"]+)\"", re.I)


def links(markdown):
    """Every link target of ``markdown`` outside code blocks and code spans.

    Example:
        >>> links("see [notes](docs/design.md#layout), `[not](a.md)`, <https://x.org>\\n[r]: LICENSE")
        ['docs/design.md#layout', 'LICENSE']
    """
    text = INLINE_CODE.sub("", FENCE.sub("", markdown))
    found = []
    for pattern in (INLINE_LINK, REFERENCE_LINK, HTML_LINK):
        found += [(m.start(), m.group(1)) for m in pattern.finditer(text)]
    return [target for _, target in sorted(found)]


def broken_links(page):
    """The relative link targets of ``page`` (a Markdown file) that name no file or folder."""
    broken = []
    for target in links(page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
            continue  # https:, mailto:, an anchor of the same page
        path = target.split("#", 1)[0].split("?", 1)[0]
        if not (page.parent / path).exists():
            broken.append(target)
    return broken


def load_check_links():
    spec = importlib.util.spec_from_file_location("check_links", ROOT / "docs" / "check_links.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_reaches_a_file(page):
    if page.name in ("README.md", "index.md"):
        assert links(page.read_text(encoding="utf-8")), f"{page.name} has no links: is the parser reading it?"
    broken = broken_links(page)
    assert not broken, f"{page.relative_to(ROOT)} links to files that do not exist: {broken}"


def test_a_broken_link_is_found(tmp_path):
    (tmp_path / "there.md").write_text("x")
    page = tmp_path / "page.md"
    page.write_text("[ok](there.md) [gone](missing.md#a) [web](https://example.org/x.md)\n"
                    "```sh\n[code](nowhere.md)\n```\n[ref]: also-missing.md\n")
    assert broken_links(page) == ["missing.md#a", "also-missing.md"]


def test_the_readme_points_to_the_docs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for target in ("docs/index.md", "docs/guide/design.md", "docs/api/index.rst"):
        assert f"]({target}" in readme, f"the README does not link {target}"
    assert (ROOT / "docs" / "guide" / "design.md").read_text(encoding="utf-8").startswith("# gpugrad design notes\n")


def test_ci_builds_the_site_with_warnings_as_errors_and_checks_its_links():
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"]["docs"]
    assert extra and all("==" in pin for pin in extra), f"the docs extra is not pinned: {extra}"
    assert any(pin.startswith("sphinx==") for pin in extra) and any(pin.startswith("myst-parser==") for pin in extra)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "docs" in re.search(r'pip install --quiet -e "\.\[([^\]]*)\]"', ci).group(1)
    build = re.search(r"^python -m sphinx (.*) docs (\S+)$", ci, re.M)
    assert build and {"-W", "--keep-going", "-n", "-b html"} <= {*build.group(1).split(), "-b html"} and "-b html" in build.group(1)
    assert re.search(rf"^python docs/check_links\.py {re.escape(build.group(2))}$", ci, re.M)
    assert "linkcheck" not in ci  # it would fetch every external URL


def test_the_link_checker_examples_run():
    result = doctest.testmod(load_check_links())
    assert result.attempted > 0 and result.failed == 0


def test_the_link_checker_finds_a_missing_page_and_a_missing_anchor(tmp_path):
    check = load_check_links()
    (tmp_path / "api").mkdir()
    (tmp_path / "index.html").write_text('<a href="api/">api</a><a href="api/gone.html">x</a><img src="logo.png">'
                                         '<a href="mailto:x@y.z">m</a><a href="api/index.html#gpugrad.exp">exp</a>')
    (tmp_path / "api" / "index.html").write_text('<dt id="gpugrad.exp">exp</dt><a href="../index.html#nowhere">up</a>')
    assert check.broken_links(tmp_path) == [
        ("api/index.html", "../index.html#nowhere", 'no id "nowhere" in index.html'),
        ("index.html", "api/gone.html", "no such file"),
        ("index.html", "logo.png", "no such file"),
    ]
    assert check.main([str(tmp_path)]) == 1
    assert check.main([str(tmp_path / "api" / "nothing")]) == 1  # no pages is a failure, not a pass


@pytest.mark.slow
def test_the_site_builds_without_a_warning_and_its_links_resolve(tmp_path):
    """The build CI runs (Sphinx -W -n), into a temporary folder, then the offline link check."""
    pytest.importorskip("sphinx", reason="Sphinx is not installed (pip install -e '.[docs]', Python >= 3.11)")
    pytest.importorskip("myst_parser", reason="MyST-Parser is not installed (pip install -e '.[docs]')")
    import subprocess
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-b", "html",
                           str(ROOT / "docs"), str(tmp_path / "site")], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert load_check_links().broken_links(tmp_path / "site") == []
    exp = (tmp_path / "site" / "api" / "ops.html").read_text(encoding="utf-8")
    assert 'id="gpugrad.exp"' in exp and 'id="gpugrad.matmul"' in exp  # the ops under the name users call
