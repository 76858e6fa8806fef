"""Check that every relative link and anchor of a built HTML site resolves, without the network.

Run after the build, from the repository root::

    python -m sphinx -W --keep-going -n -b html docs build/docs
    python docs/check_links.py build/docs

Every ``href`` and ``src`` of every page that is not a URL with a scheme (``https:``, ``mailto:``, ...)
must name a file of the site, and its ``#fragment``, if any, an ``id`` (or ``name``) in that file. Sphinx's
``linkcheck`` builder is not used: it fetches every external URL, and CI reaches no arbitrary host.
"""
import argparse
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    """The link targets and the anchors of one HTML page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.targets, self.anchors = [], set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("id", "name") and value:
                self.anchors.add(value)
            if name in ("href", "src") and value is not None and tag in ("a", "link", "img", "script", "iframe"):
                self.targets.append(value)


def _read(path, cache):
    if path not in cache:
        page = _Page()
        page.feed(path.read_text(encoding="utf-8", errors="replace"))
        cache[path] = page
    return cache[path]


def broken_links(site):
    """``(page, target, why)`` for every relative link of the HTML files under ``site`` that does not resolve.

    Example:
        >>> import tempfile
        >>> site = Path(tempfile.mkdtemp())
        >>> _ = (site / "a.html").write_text('<h1 id="top">A</h1><a href="b.html#x">b</a> <a href="#top">up</a>')
        >>> _ = (site / "b.html").write_text('<a href="a.html#gone">a</a> <a href="https://example.org/">web</a>')
        >>> broken_links(site)
        [('a.html', 'b.html#x', 'no id "x" in b.html'), ('b.html', 'a.html#gone', 'no id "gone" in a.html')]
    """
    site = Path(site).resolve()
    cache, broken = {}, []
    for page_path in sorted(site.rglob("*.html")):
        page = _read(page_path, cache)
        for target in page.targets:
            parts = urlsplit(target)
            if parts.scheme or parts.netloc or re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                continue  # https:, mailto:, javascript:, data:
            path = page_path if not parts.path else (page_path.parent / unquote(parts.path)).resolve()
            if path.is_dir():
                path = path / "index.html"
            where = page_path.relative_to(site).as_posix()
            if not path.exists():
                broken.append((where, target, "no such file"))
                continue
            if parts.fragment and path.suffix == ".html":
                if unquote(parts.fragment) not in _read(path, cache).anchors:
                    broken.append((where, target, f'no id "{unquote(parts.fragment)}" in {path.relative_to(site).as_posix()}'))
    return broken


def main(argv=None):
    """Print each broken link of the site and return 1 if there is one (0 and a count otherwise)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("site", nargs="?", default="build/docs", help="the built HTML [build/docs]")
    args = parser.parse_args(argv)
    pages = sorted(Path(args.site).rglob("*.html"))
    if not pages:
        print(f"FAIL: no HTML pages in {args.site}", file=sys.stderr)
        return 1
    broken = broken_links(args.site)
    for page, target, why in broken:
        print(f"{page}: {target}: {why}", file=sys.stderr)
    if broken:
        print(f"FAIL: {len(broken)} broken link(s) in {len(pages)} pages", file=sys.stderr)
        return 1
    print(f"links: every relative link and anchor of {len(pages)} pages resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
