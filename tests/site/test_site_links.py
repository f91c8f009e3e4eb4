"""Every link of the built site reaches a file, and a missing address gets the site's own
404 page, in both languages, also from `tools/serve.py`.

The one link allowed to point at nothing is a PDF link inside a `hidden` element: the home
pages ship their link to the book's PDF hidden, since `make build` writes no PDF, and
`tools/pdf.py` shows it once the PDF is there (`tests/site/test_site_pdf.py`)."""

from __future__ import annotations

import posixpath
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from widgets.build.native import locale

LANGS = ("id", "zh")  # the default language first (at the site root)
VOID = frozenset("area base br col embed hr img input link meta source track wbr".split())
LINK_ATTRS = ("href", "src")


@dataclass(frozen=True)
class Link:
    page: str  # the page's file, from the site root
    tag: str
    attr: str
    url: str
    hidden: bool  # inside an element with the `hidden` attribute


class _Links(HTMLParser):
    """Every href/src of a page, with whether an ancestor (or the element) is hidden."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.page = page
        self.links: list[Link] = []
        self._open: list[tuple[str, bool]] = []  # (tag, hidden) of the open elements

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = dict(attrs)
        hidden = "hidden" in names or any(h for _, h in self._open)
        for attr in LINK_ATTRS:
            if names.get(attr):
                self.links.append(Link(self.page, tag, attr, names[attr] or "", hidden))
        if tag not in VOID:
            self._open.append((tag, "hidden" in names))

    def handle_endtag(self, tag: str) -> None:
        # An end tag closes what the HTML parser would close with it (an unclosed <p>).
        for index in range(len(self._open) - 1, -1, -1):
            if self._open[index][0] == tag:
                del self._open[index:]
                return


def links_of(site: Path) -> list[Link]:
    out = []
    for path in sorted(site.rglob("*.html")):
        parser = _Links(path.relative_to(site).as_posix())
        parser.feed(path.read_text(encoding="utf-8"))
        out += parser.links
    return out


def target(site: Path, link: Link) -> Path:
    """The file a same-site link asks the host for (a folder means its index.html)."""
    path = unquote(urlsplit(link.url).path)
    where = posixpath.dirname(link.page)
    resolved = path.lstrip("/") if path.startswith("/") else posixpath.normpath(posixpath.join(where, path or "."))
    file = site / resolved
    return file / "index.html" if path.endswith("/") or path in ("", ".") or file.is_dir() else file


def is_external(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.netloc) or url.startswith("//")


def cited_hosts(links: list[Link]) -> set[str]:
    """The hosts the references pages link to: the documented ones."""
    return {urlsplit(link.url).netloc for link in links
            if link.page.endswith("references/index.html") and is_external(link.url)}


def test_every_same_site_link_reaches_a_file(built_site: Path) -> None:
    links = links_of(built_site)
    cited = cited_hosts(links)
    assert {"arxiv.org", "github.com"} <= cited
    broken, outside, exempt = [], [], []
    checked = 0
    for link in links:
        if link.url.startswith("#") or link.url.startswith("mailto:"):
            continue
        assert not link.url.lower().startswith("javascript:"), link
        if link.url.startswith("data:"):
            assert link.attr == "src", link  # an inline image, allowed by img-src data:
            continue
        if is_external(link.url):
            # The reader may follow a citation; the site itself loads nothing from elsewhere.
            if (link.tag, link.attr) != ("a", "href") or urlsplit(link.url).netloc not in cited:
                outside.append(link)
            continue
        checked += 1
        if target(built_site, link).is_file():
            continue
        if link.hidden and urlsplit(link.url).path.endswith(".pdf"):
            exempt.append(link)
        else:
            broken.append(link)
    assert broken == [], "\n".join(f"{l.page}: <{l.tag} {l.attr}={l.url!r}>" for l in broken[:30])
    assert outside == [], "\n".join(f"{l.page}: <{l.tag} {l.attr}={l.url!r}>" for l in outside[:30])
    assert checked > 2000, checked  # about 3,300 when written
    # The build writes no PDF: each home page's link to its own is there, hidden.
    assert sorted((l.page, l.url) for l in exempt) == [
        ("index.html", "pdf/distributed-training-llm-id.pdf"),
        ("zh/index.html", "../pdf/distributed-training-llm-zh.pdf"),
    ]


def test_a_link_to_a_missing_file_is_found(tmp_path: Path) -> None:
    """The checker itself: a dead link, a dead link that is hidden but no PDF, a hidden
    PDF link (exempt), a live link."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "index.html").write_text(
        '<p>x <a href="../b/">b</a> <img src="/c.png"></p><div hidden><p><a href="d.pdf">d</a></div>'
        '<p><a href="../a/#top">self</a></p><section hidden><a href="e.html">e</a></section>', encoding="utf-8")
    found = {(l.url, l.hidden, target(tmp_path, l).is_file()) for l in links_of(tmp_path)}
    assert found == {("../b/", False, False), ("/c.png", False, False), ("d.pdf", True, False),
                     ("../a/#top", False, True), ("e.html", True, False)}


# --- the 404 page -------------------------------------------------------------------------------


class _Sections(HTMLParser):
    """The text and links of each `<section lang=…>` of the article, the `<html lang>`."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lang: str | None = None
        self.sections: dict[str, dict[str, list[str]]] = {}
        self._current: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = dict(attrs)
        if tag == "html":
            self.lang = names.get("lang")
        elif tag == "section" and "w-notfound" in (names.get("class") or "").split():
            self._current = names.get("lang") or ""
            self.sections[self._current] = {"text": [], "href": [], "for": []}
        elif self._current is not None:
            for attr in ("href", "for"):
                if names.get(attr):
                    self.sections[self._current][attr].append(names[attr] or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "section":
            self._current = None

    def handle_data(self, data: str) -> None:
        if self._current is not None:
            self.sections[self._current]["text"].append(data)


def test_the_404_page_speaks_both_languages(built_site: Path) -> None:
    html = (built_site / "404.html").read_text(encoding="utf-8")
    page = _Sections()
    page.feed(html)
    assert page.lang == "id"  # the default language's chrome, as at the site root
    assert list(page.sections) == list(LANGS), page.sections
    for lang, home in zip(LANGS, ("/", "/zh/")):
        loc, section = locale(lang), page.sections[lang]
        text = " ".join("".join(section["text"]).split())
        for key in ("title", "text", "home"):
            assert loc.t(f"notfound.{key}") in text, f"{lang}: notfound.{key} missing from the 404 page"
        assert section["href"] == [home], section["href"]
    # The page's search box searches the Indonesian index: its section opens it.
    assert page.sections["id"]["for"] == ["__search"] and page.sections["zh"]["for"] == []
    assert locale("id").t("notfound.search") in "".join(page.sections["id"]["text"])
    assert f"<title>{locale('id').h('notfound.title')} - Distributed Training LLM</title>" in html
    assert "Not found" not in html and "404 -" not in html
    assert 'class="md-search"' in html  # the theme's chrome, search included
    zh = built_site / "zh" / "404.html"
    assert not zh.exists() or '<html lang="zh"' in zh.read_text(encoding="utf-8")


def test_the_local_server_answers_a_missing_path_with_the_404_page(built_site: Path, tmp_path: Path) -> None:
    from serve import start

    body = (built_site / "404.html").read_bytes()
    server, base = start(built_site, "/")
    try:
        for missing in ("nope/", "zh/nope/deeper/", "assets/nope.js"):
            with pytest.raises(urllib.error.HTTPError) as caught:
                urllib.request.urlopen(base + missing)
            error = caught.value
            assert error.code == 404
            assert error.headers["Content-Type"] == "text/html; charset=utf-8"
            assert error.headers["Cache-Control"] == "no-store"
            assert error.read() == body, missing
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(urllib.request.Request(base + "nope/", method="HEAD"))
        assert caught.value.code == 404 and caught.value.read() == b""
        assert caught.value.headers["Content-Length"] == str(len(body))
    finally:
        server.shutdown()
        server.server_close()
    # A folder without a 404.html gets the standard library's error page, as before.
    (tmp_path / "index.html").write_text("<p>home</p>", encoding="utf-8")
    server, base = start(tmp_path, "/")
    try:
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(base + "nope/")
        assert caught.value.code == 404 and b"Error code: 404" in caught.value.read()
        assert caught.value.headers["Cache-Control"] == "no-store"
    finally:
        server.shutdown()
        server.server_close()


def test_nginx_example_serves_the_404_page() -> None:
    conf = (Path(__file__).resolve().parents[2] / "nginx.conf.example").read_text(encoding="utf-8")
    assert re.search(r"^\s*error_page 404 /404\.html;", conf, re.M)
