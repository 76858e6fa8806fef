"""The documentation's promises: every relative link in README.md and docs/*.md reaches a file of
the repository, the README points to the design notes, and docs/build_api.py (the API reference,
built by pdoc from the docstrings) fails on a warning and lets through only what it names."""
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
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
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


def load_build_api():
    spec = importlib.util.spec_from_file_location("build_api", ROOT / "docs" / "build_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_reaches_a_file(page):
    assert links(page.read_text(encoding="utf-8")), f"{page.name} has no links: is the parser reading it?"
    broken = broken_links(page)
    assert not broken, f"{page.relative_to(ROOT)} links to files that do not exist: {broken}"


def test_a_broken_link_is_found(tmp_path):
    (tmp_path / "there.md").write_text("x")
    page = tmp_path / "page.md"
    page.write_text("[ok](there.md) [gone](missing.md#a) [web](https://example.org/x.md)\n"
                    "```sh\n[code](nowhere.md)\n```\n[ref]: also-missing.md\n")
    assert broken_links(page) == ["missing.md#a", "also-missing.md"]


def test_the_readme_points_to_the_design_notes():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.search(r"\[design notes\]\(docs/design\.md\)", readme)
    assert (ROOT / "docs" / "design.md").read_text(encoding="utf-8").startswith("# gpugrad design notes\n")


def test_the_readme_says_how_to_build_the_reference():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Documentation\n", 1)[1].split("\n## ", 1)[0]
    assert 'pip install -e ".[docs]" && python docs/build_api.py' in section
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"]["docs"]
    assert extra and all("==" in pin for pin in extra), f"the docs extra is not pinned: {extra}"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "docs/build_api.py" in ci and "docs" in re.search(r'pip install --quiet -e "\.\[([^\]]*)\]"', ci).group(1)


def test_the_build_script_examples_run():
    pytest.importorskip("pdoc", reason="pdoc is not installed (pip install -e '.[docs]')")
    module = load_build_api()
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


def _probe_package(root, name, init_source, **modules):
    package = root / "src" / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(init_source)
    for module, source in modules.items():
        (package / f"{module}.py").write_text(source)
    return root / "src"


def test_the_reference_build_fails_on_any_lambda_method(tmp_path, monkeypatch):
    """A method attached from a table as a lambda (as TENSOR_METHODS did) makes pdoc warn, and the warning
    fails the build, whatever the method's name; the def beside it documents cleanly."""
    pytest.importorskip("pdoc", reason="pdoc is not installed (pip install -e '.[docs]')")
    build_api = load_build_api()
    monkeypatch.syspath_prepend(str(_probe_package(tmp_path, "docs_probe_lambdas", (
        '"""A probe."""\n__all__ = ["Thing"]\n\n\n'
        'class Thing:\n    """A thing."""\n\n\n'
        'def _flatten(self):\n    """Documented."""\n    return 1\n\n\n'
        'for _name, _fn in {\n    "flatten": _flatten,\n    "reshape": lambda self: 2,\n}.items():\n'
        '    setattr(Thing, _name, _fn)\n'))))
    failures = [str(w.message) for w in build_api.build(tmp_path / "out", modules=("docs_probe_lambdas",))]
    sys.modules.pop("docs_probe_lambdas", None)
    assert len(failures) == 1 and '"reshape": lambda' in failures[0], failures
    assert "Documented." in (tmp_path / "out" / "docs_probe_lambdas.html").read_text(encoding="utf-8")


def test_the_reference_build_fails_on_a_module_that_does_not_import(tmp_path, monkeypatch):
    pytest.importorskip("pdoc", reason="pdoc is not installed (pip install -e '.[docs]')")
    build_api = load_build_api()
    monkeypatch.syspath_prepend(str(_probe_package(
        tmp_path, "docs_probe_broken", '"""A probe."""\n__all__ = ["broken"]\n',
        broken='"""Fails to import."""\nraise ImportError("no such dependency")\n')))
    with pytest.raises(RuntimeError, match="Error importing docs_probe_broken.broken"):
        build_api.build(tmp_path / "out", modules=("docs_probe_broken",))
    for name in ("docs_probe_broken", "docs_probe_broken.broken"):
        sys.modules.pop(name, None)


def test_the_tensor_methods_attached_from_tables_are_documented(tmp_path):
    """reshape, transpose, flatten, searchsorted and take (once lambdas in TENSOR_METHODS) are defs: the
    reference shows each under Tensor with its docstring, and building the Tensor page warns of nothing."""
    pytest.importorskip("pdoc", reason="pdoc is not installed (pip install -e '.[docs]')")
    import gpugrad as gg

    failures = [str(w.message) for w in load_build_api().build(tmp_path, modules=("gpugrad.tensor",))]
    assert failures == []
    page = (tmp_path / "gpugrad" / "tensor.html").read_text(encoding="utf-8")
    for name in ("reshape", "transpose", "flatten", "searchsorted", "take"):
        method = getattr(gg.Tensor, name)
        assert method.__name__ != "<lambda>" and method.__doc__ and "Example:" in method.__doc__, name
        section = page.split(f'id="Tensor.{name}"', 1)[1].split("</section>", 1)[0]
        first_line = method.__doc__.split("\n", 1)[0]
        assert first_line.split("``")[1] in section, (name, first_line)
