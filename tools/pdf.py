"""Print the whole book, one PDF per language, from the built site.

    python tools/pdf.py [--site site] [--out SITE/pdf] [--lang id] [--cache DIR]

writes `<out>/distributed-training-llm-<lang>.pdf`; the home page of each language links
to its book. How:

1. The languages and, for each, the pages in nav order are read from the BUILT site (the
   language switcher, the navigation of the home page); the Translate page is left out
   (it is about the website). Each page's `<article>` is taken as built, so widgets,
   numbers and math are exactly what the site pre-rendered (the widgets' default state).
2. One HTML document per language: a cover, a table of contents and every chapter, each
   starting on a new page. Ids are prefixed per chapter so they stay unique; links to
   other chapters become links inside the document, other site links become text; every
   `<details>` (the exercises' worked solutions) is opened, except a widget's table of
   all its numbers.
3. Headless Chromium (Playwright, Debian's `chromium`) opens that document at the root
   of the built site (served by `tools/serve.py`; the document itself is answered by a
   route, nothing is written into the site) so the site's stylesheets apply, including
   `print.css`; every request that is not for that local server is aborted. It prints A4
   with running headers (book, chapter) and page numbers from CSS page margin boxes.
4. It prints twice: the first PDF tells where each chapter starts (the named destination
   of its link in the contents), the second has those page numbers in the contents.
5. The PDF then gets an incremental update (pypdf reads it, this script appends): text in
   Chinese that copies and searches as written, the document's language, bookmarks for
   every chapter and section, and Chromium's dates set to SOURCE_DATE_EPOCH, so a build
   of the same commit gives the same bytes.
6. `--cache DIR` keeps each PDF under the hash of everything it is printed from, so an
   unchanged book is copied instead of printed (`make serve` rebuilds the site each time).
7. The home pages' link to the PDF is built `hidden` (`make build` writes no PDF, and a
   link to none would be dead): once the PDFs exist, every hidden paragraph of the built
   pages whose `.pdf` link reaches a non-empty file is shown (`show_pdf_links`), and the
   page's `.br`/`.gz` copies are written again.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import io
import os
import posixpath
import re
import shutil
import sys
import time
import unicodedata
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from chromium import CHROMIUM_ARGS, chromium_path  # noqa: E402  (tools/chromium.py)

NAME = "distributed-training-llm"  # the PDFs: <NAME>-<lang>.pdf
SKIP = ("translate.md",)  # pages about the website, not the book
ARTICLE = re.compile(r'<article class="md-content__inner md-typeset">(?P<body>.*?)</article>', re.S)
STYLESHEET = re.compile(r'<link rel="stylesheet" href="(?P<href>[^"]+)"')
H1 = re.compile(r"<h1\b[^>]*>(?P<text>.*?)</h1>", re.S)
H2 = re.compile(r'<h2 id="(?P<id>[^"]+)"[^>]*>(?P<text>.*?)</h2>', re.S)
HEADERLINK = re.compile(r'<a class="headerlink"[^>]*>.*?</a>', re.S)
TAG = re.compile(r"<[^>]+>")
ID_LIST_ATTRS = ("id", "for", "aria-labelledby", "aria-describedby", "aria-controls", "aria-owns", "headers")
ATTR = re.compile(r'(?P<lead>\s)(?P<name>%s|href|src)="(?P<value>[^"]*)"' % "|".join(ID_LIST_ATTRS))
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)
SCREEN_ONLY = re.compile(r'<p\b[^>]*\bclass="(?:[^"]*\s)?w-print-hide[\s"][^>]*>.*?</p>', re.S)
PARAGRAPH = re.compile(r"<p\b(?P<attrs>[^>]*)>(?P<body>.*?)</p>", re.S)
ATTRIBUTE = re.compile(r"""\s+(?P<name>[^\s=/>]+)(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]+))?""")
PDF_HREF = re.compile(r'\shref="(?P<href>[^"#?]+\.pdf)"', re.I)
PLACEHOLDER = "000"  # the first print's page numbers, as wide as the real ones
PAGE_MARGINS_MM = (20, 17)  # top and bottom, left and right (A4: 210 mm wide)
CONTENT_WIDTH_MM = 210 - 2 * PAGE_MARGINS_MM[1]
# Elements of the book wider than its column: (chapter, element, excess in px), outermost only.
OVERFLOW = """() => {
  const body = document.querySelector('.w-book-body');
  const limit = body.getBoundingClientRect().right + 1, found = [];
  for (const el of body.querySelectorAll('*')) {
    const box = el.getBoundingClientRect();
    if (!box.width || box.right <= limit || found.some(f => f.el.contains(el))) continue;
    const classes = (el.getAttribute('class') || '').trim().split(/\\s+/).filter(Boolean);
    found.push({el, row: [el.closest('article')?.id || '', [el.localName, ...classes].join('.'), Math.ceil(box.right - limit)]});
  }
  return found.map(f => f.row);
}"""
MARGIN_FONT = "font-family: Helvetica, Arial, sans-serif; font-size: 8pt; color: #666;"


def pdf_name(lang: str) -> str:
    return f"{NAME}-{lang}.pdf"


# --- the book's structure ----------------------------------------------------------------------


@dataclass
class Chapter:
    key: str  # `zero`: the anchor of the chapter, the prefix of its ids
    path: str  # its page in the site, from the site root: `zh/zero/`
    title: str  # its h1, as text
    part: str | None  # the nav section it sits in (translated), if any
    number: int | None  # chapter number in the table of contents (top-level chapters)
    body: str = ""
    sections: list[tuple[str, str]] = field(default_factory=list)  # (id in the book, title) of each h2


@dataclass
class Language:
    locale: str
    folder: str  # '' for the default language, `zh/` for the others
    site_name: str
    chapters: list[Chapter] = field(default_factory=list)


class _Nav(HTMLParser):
    """The primary navigation of a built page: (href, title, section title or None) of
    every page link in order; the current page's table of contents is skipped."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.pages: list[tuple[str, str, str | None]] = []
        self._depth = 0  # <nav> depth inside the primary nav (0: outside)
        self._skip = 0  # <nav> depth of the secondary nav being skipped
        self._sections: list[tuple[int, str | None]] = []  # (li depth, title) of open sections
        self._li = 0
        self._text: list[str] | None = None
        self._href: str | None = None
        self._label = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        classes = a.get("class", "").split()
        if tag == "nav":
            if self._depth == 0 and "md-nav--primary" in classes:
                self._depth = 1
            elif self._depth:
                self._depth += 1
                if "md-nav--secondary" in classes and not self._skip:
                    self._skip = self._depth
            return
        if not self._depth or self._skip:
            return
        if tag == "li":
            self._li += 1
            if "md-nav__item--nested" in classes:
                self._sections.append((self._li, None))
        elif tag == "a" and "md-nav__link" in classes and not a.get("href", "#").startswith("#"):
            self._href, self._text = a["href"], []
        elif tag == "label" and "md-nav__link" in classes and self._sections and self._sections[-1][1] is None:
            self._label, self._text = True, []

    def handle_endtag(self, tag: str) -> None:
        if tag == "nav" and self._depth:
            if self._skip == self._depth:
                self._skip = 0
            self._depth -= 1
            return
        if not self._depth or self._skip:
            return
        if tag == "li":
            if self._sections and self._sections[-1][0] == self._li:
                self._sections.pop()
            self._li -= 1
        elif tag == "a" and self._href is not None:
            section = next((title for _, title in reversed(self._sections) if title), None)
            self.pages.append((self._href, " ".join("".join(self._text or []).split()), section))
            self._href, self._text = None, None
        elif tag == "label" and self._label:
            depth, _ = self._sections[-1]
            self._sections[-1] = (depth, " ".join("".join(self._text or []).split()))
            self._label, self._text = False, None

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)


def languages(site: Path) -> list[Language]:
    """The languages of the built site, the default one (at the root) first: the
    language switcher's `hreflang` links, or the root page's own language."""
    home = (site / "index.html").read_text(encoding="utf-8")
    root = re.search(r'<html lang="([^"]+)"', home)
    codes = re.findall(r'<a [^>]*hreflang="([^"]+)" class="md-select__link"', home) or [root.group(1) if root else "en"]
    out = []
    for code in dict.fromkeys(codes):
        folder = "" if root and root.group(1) == code else f"{code}/"
        page = site / folder / "index.html"
        if not page.is_file():
            continue
        logo = re.search(r'title="([^"]*)" class="md-(?:header|nav)__button md-logo"', page.read_text(encoding="utf-8"))
        out.append(Language(code, folder, html.unescape(logo.group(1)) if logo else code))
    return sorted(out, key=lambda item: item.folder != "")


def nav_pages(site: Path, lang: Language) -> list[tuple[str, str | None]]:
    """(page folder from the site root, section title or None) in the order of the
    language's navigation, read from its built home page."""
    parser = _Nav()
    parser.feed((site / lang.folder / "index.html").read_text(encoding="utf-8"))
    out: dict[str, str | None] = {}
    for href, _title, section in parser.pages:
        if EXTERNAL.match(href) or href.startswith("/"):
            continue
        path = posixpath.normpath(posixpath.join(lang.folder or ".", href.split("#", 1)[0]))
        path = "" if path == "." else path + ("/" if href.endswith("/") or href in ("", "./") else "")
        out.setdefault(path, section)
    return list(out.items())


def page_file(site: Path, path: str) -> Path:
    return site / path / "index.html" if path.endswith("/") or path == "" else site / path


def text_of(fragment: str) -> str:
    return " ".join(html.unescape(TAG.sub("", HEADERLINK.sub("", fragment))).split())


def collect(site: Path, lang: Language, skip: tuple[str, ...] = SKIP) -> None:
    """Fill `lang.chapters` from the built pages, in nav order."""
    number = 0
    for path, part in nav_pages(site, lang):
        key = path[len(lang.folder):].strip("/").replace("/", "-") or "home"
        if f"{key}.md" in skip:
            continue
        source = page_file(site, path)
        if not source.is_file():
            raise SystemExit(f"pdf: {source} not found: build the site first (make build)")
        article = ARTICLE.search(source.read_text(encoding="utf-8"))
        if article is None:
            raise SystemExit(f"pdf: no <article> in {source}")
        h1 = H1.search(article["body"])
        top = part is None and key != "home"
        number += top
        lang.chapters.append(Chapter(key, path, text_of(h1["text"]) if h1 else key, part,
                                     number if top else None, article["body"]))


# --- one chapter's HTML inside the book --------------------------------------------------------


def rewrite(chapter: Chapter, chapters: dict[str, Chapter], book_path: str) -> str:
    """The chapter's article, made to live inside one document at `book_path`."""
    prefix = f"{chapter.key}--"
    ids = {html.unescape(ident) for ident in re.findall(r'\sid="([^"]*)"', chapter.body)}

    def anchor(fragment: str) -> str:
        return prefix + unquote(fragment)

    def attr(match: re.Match[str]) -> str:
        name, value, lead = match["name"], html.unescape(match["value"]), match["lead"]
        if name in ID_LIST_ATTRS:
            new = " ".join(anchor(token) for token in value.split())
            return f'{lead}{name}="{html.escape(new)}"'
        if value.startswith("#"):  # in the page; a widget's URL state (`#dp.gpus=64`) goes
            return f'{lead}{name}="#{html.escape(anchor(value[1:]))}"' if unquote(value[1:]) in ids else ""
        if EXTERNAL.match(value) or value.startswith("//"):
            return match[0]
        parts = urlsplit(value)
        target = posixpath.normpath(posixpath.join(chapter.path or ".", parts.path)) if parts.path else chapter.path
        target = "" if target == "." else target
        if parts.path.endswith("/") and target:
            target += "/"
        if name == "href":
            other = chapters.get(target) or chapters.get(target.removesuffix("index.html"))
            if other is None or parts.query:  # a widget state (`?gpus=64`) means nothing on paper
                return ""  # a page outside the book, or a file: the text stays, the link goes
            fragment = f"{other.key}--{unquote(parts.fragment)}" if parts.fragment else other.key
            return f'{lead}href="#{html.escape(fragment)}"'
        # src: rebase onto the book's location so images still load
        return f'{lead}{name}="{html.escape(posixpath.relpath(target, posixpath.dirname(book_path) or "."))}"'

    # What only the screen shows (the home page's link to this very PDF, hidden or shown)
    # never enters the book, so the book and its cache key are the same either way.
    body = SCREEN_ONLY.sub("", HEADERLINK.sub("", chapter.body))
    body = ATTR.sub(attr, body)
    # Open every worked solution; a widget's "all numbers" table stays closed (print.css
    # hides it): the figure and its stat cards already carry the numbers.
    body = re.sub(r"<details(?![^>]*\bopen\b)(?![^>]*\bw-details\b)", "<details open", body)
    return body


# --- the document ------------------------------------------------------------------------------


def css_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def build_date() -> str:
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH") or time.time())
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%d")


def stylesheets(site: Path, lang: Language, book_path: str) -> list[str]:
    """The home page's stylesheets (Material's, widgets.css, print.css), relative to the book."""
    home = lang.chapters[0].path
    where = posixpath.dirname(book_path) or "."
    sheets = [posixpath.relpath(posixpath.normpath(posixpath.join(home or ".", href)), where)
              for href in STYLESHEET.findall(page_file(site, home).read_text(encoding="utf-8"))]
    if not any(s.endswith("widgets/print.css") for s in sheets):
        sheets.append(posixpath.relpath("assets/widgets/print.css", where))
    return sheets


def book_html(site: Path, lang: Language, book_path: str) -> str:
    """One document: cover, contents (with placeholder page numbers) and every chapter."""
    from widgets.build.native import locale

    loc = locale(lang.locale)
    esc = html.escape
    home_page = page_file(site, lang.chapters[0].path).read_text(encoding="utf-8")
    body = re.search(r"<body([^>]*)>", home_page)
    body_attrs = re.sub(r'data-md-color-scheme="[^"]*"', 'data-md-color-scheme="default"', body.group(1) if body else "")
    by_path = {c.path: c for c in lang.chapters}
    # Running headers: the book on the left, the chapter on the right (one named page per
    # chapter); page numbers at the bottom; none on the cover.
    style = [
        f"@page {{ size: A4; margin: {PAGE_MARGINS_MM[0]}mm {PAGE_MARGINS_MM[1]}mm;"
        f" @top-left {{ content: {css_string(lang.site_name)}; {MARGIN_FONT} }}"
        f" @bottom-center {{ content: counter(page); {MARGIN_FONT} font-size: 8.5pt; }} }}",
        "@page cover { @top-left { content: none; } @bottom-center { content: none; } }",
        ".w-book-cover { page: cover; }",
    ]
    chapters_html, toc = [], []
    part = None
    for index, chapter in enumerate(lang.chapters):
        name = loc.t("print.preface") if chapter.key == "home" else chapter.title
        style.append(f"@page ch{index} {{ @top-right {{ content: {css_string(name)}; {MARGIN_FONT} }} }}")
        style.append(f"#{chapter.key} {{ page: ch{index}; }}")
        if chapter.part != part:
            if part is not None:
                toc.append("</ol></li>")
            if chapter.part is not None:
                toc.append(f'<li><p class="w-book-part">{esc(chapter.part)}</p><ol>')
            part = chapter.part
        toc.append(f'<li><a href="#{esc(chapter.key)}"><span class="w-book-num">{chapter.number or ""}</span>'
                   f'<span class="w-book-entry">{esc(name)}</span><span class="w-book-dots"></span>'
                   f'<span class="w-book-page" data-page-of="{esc(chapter.key)}">{PLACEHOLDER}</span></a></li>')
        body = rewrite(chapter, by_path, book_path)
        chapter.sections = [(html.unescape(m["id"]), text_of(m["text"])) for m in H2.finditer(body)]
        chapters_html.append(f'<article class="w-book-chapter" id="{esc(chapter.key)}">{body}</article>')
    if part is not None:
        toc.append("</ol></li>")
    links = "".join(f'<link rel="stylesheet" href="{esc(s)}">' for s in stylesheets(site, lang, book_path))
    # Chromium writes a named destination for every target of a link, hidden or not: these
    # give the PDF outline its sections.
    anchors = "".join(f'<a href="#{esc(ident)}"></a>' for c in lang.chapters for ident, _ in c.sections)
    return (
        f'<!doctype html><html lang="{esc(lang.locale)}"><head><meta charset="utf-8">'
        f"<title>{esc(lang.site_name)}</title>{links}<style>{chr(10).join(style)}</style></head>"
        f'<body{body_attrs} class="w-book">'
        f'<section class="w-book-cover md-typeset">'
        f'<p class="w-book-title">{esc(lang.chapters[0].title)}</p>'
        f'<p class="w-book-subtitle">{esc(lang.site_name)} · {loc.h("print.edition")}</p>'
        f'<p class="w-book-note">{loc.h("print.note")}</p>'
        f'<p class="w-book-meta">{loc.h("print.built", date=build_date())}</p></section>'
        f'<nav class="w-book-toc md-typeset"><h1>{loc.h("print.contents")}</h1><ol>{"".join(toc)}</ol></nav>'
        f'<nav hidden>{anchors}</nav>'
        f'<div class="md-typeset w-book-body">{"".join(chapters_html)}</div>'
        "</body></html>"
    )


# --- the home pages' link to the PDF ----------------------------------------------------------


def _linked_file(site: Path, page: Path, href: str) -> Path | None:
    """The file of the site that `href` on `page` points to (None: outside the site)."""
    href = unquote(href)
    target = site / href.lstrip("/") if href.startswith("/") else page.parent / href
    target = Path(os.path.normpath(target))
    return target if target.is_relative_to(site) else None


def show_pdf_links(site: Path) -> list[Path]:
    """Show every hidden paragraph of the built pages whose `.pdf` links all reach a
    non-empty file; returns the pages changed. Their `.br`/`.gz` copies are written
    again, or a host would go on sending the hidden version."""
    site = Path(site).resolve()
    changed = []
    for page in sorted(site.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        if ".pdf" not in text:
            continue
        new = PARAGRAPH.sub(lambda match: _shown(match, site, page), text)
        if new != text:
            page.write_text(new, encoding="utf-8")
            _recompress(page)
            changed.append(page)
    return changed


def _shown(paragraph: re.Match[str], site: Path, page: Path) -> str:
    """The paragraph without its `hidden` attribute if it is hidden and every PDF it
    links is there, else as it was."""
    hrefs = PDF_HREF.findall(paragraph["body"])
    hidden = any(a["name"].lower() == "hidden" for a in ATTRIBUTE.finditer(paragraph["attrs"]))
    if not hidden or not hrefs:
        return paragraph[0]
    for href in hrefs:
        target = _linked_file(site, page, href)
        if target is None or not target.is_file() or target.stat().st_size == 0:
            return paragraph[0]
    attrs = ATTRIBUTE.sub(lambda a: "" if a["name"].lower() == "hidden" else a[0], paragraph["attrs"])
    return f"<p{attrs}>{paragraph['body']}</p>"


def _recompress(path: Path) -> None:
    """The `.br`/`.gz` copies of a changed file, by the build's own rules
    (`widgets/build/compress.py`): a copy only of a large file, where it is worth it."""
    from widgets.build.compress import ENCODINGS, MIN_GAIN, MIN_SIZE, compress

    data = path.read_bytes()
    for encoding, suffix in ENCODINGS.items():
        sibling = path.with_name(path.name + suffix)
        out = compress(data, encoding) if len(data) >= MIN_SIZE else None
        if out is not None and len(out) <= len(data) * (1 - MIN_GAIN):
            sibling.write_bytes(out)
        elif sibling.is_file():
            sibling.unlink()


# --- printing ----------------------------------------------------------------------------------


def chapter_pages(pdf: Path, lang: Language) -> dict[str, int]:
    """On which page (1-based) each chapter starts: the table of contents links to every
    chapter, so Chromium writes a named destination for each."""
    from pypdf import PdfReader

    reader = PdfReader(str(pdf))
    named = {unquote(name.lstrip("/")): dest for name, dest in reader.named_destinations.items()}
    return {c.key: reader.get_destination_page_number(named[c.key]) + 1 for c in lang.chapters if c.key in named}


def print_pdf(page: Any, target: Path) -> None:
    """Print the open document (A4 and margins come from its @page rules)."""
    page.evaluate("document.fonts.ready.then(() => true)")
    page.pdf(path=str(target), prefer_css_page_size=True, print_background=True, display_header_footer=False)


def finish(book: Path, lang: Language) -> None:
    """Make the CJK text copy as written (ToUnicode maps), give the document its language
    and a reproducible date: an incremental update appended to Chromium's PDF, so nothing
    else of it is rewritten."""
    from pypdf import PdfReader
    from pypdf.generic import DictionaryObject, IndirectObject, NameObject, TextStringObject

    data = book.read_bytes()
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:  # Chromium's dates, in place (same length): a reproducible file
        stamp = datetime.fromtimestamp(int(epoch), tz=timezone.utc).strftime("%Y%m%d%H%M%S").encode()
        data = re.sub(rb"(/(?:CreationDate|ModDate) ?\(D:)\d{14}", lambda m: m.group(1) + stamp, data)
    tail = re.search(rb"startxref\s+(\d+)\s+%%EOF\s*$", data)
    if tail is None:
        raise SystemExit(f"pdf: {book}: no startxref; not a PDF Chromium wrote?")
    reader = PdfReader(io.BytesIO(data))
    updates: dict[tuple[int, int], bytes] = {}
    for font in _fonts(reader.pages):
        ref = font.raw_get("/ToUnicode") if "/ToUnicode" in font else None
        if ref is None or not hasattr(ref, "idnum"):
            continue
        fixed = fix_cmap(ref.get_object().get_data().decode("latin-1"))
        if fixed is not None:
            body = zlib.compress(fixed.encode("latin-1"))
            updates[(ref.idnum, ref.generation)] = (b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(body)
                                                    + body + b"\nendstream")

    def serialized(ref: Any, changes: dict[str, Any]) -> None:
        obj = DictionaryObject(ref.get_object())
        for key, value in changes.items():
            obj[NameObject(key)] = value
        out = io.BytesIO()
        obj.write_to_stream(out)
        updates[(ref.idnum, ref.generation)] = out.getvalue()

    serialized(reader.trailer.raw_get("/Info"), {"/Title": TextStringObject(lang.site_name),
                                                 "/Creator": TextStringObject("tools/pdf.py (Chromium)")})
    size = int(reader.trailer["/Size"])
    outline, size = _outline(reader, lang, size, updates)
    root_changes: dict[str, Any] = {"/Lang": TextStringObject(lang.locale)}
    if outline is not None:
        root_changes |= {"/Outlines": IndirectObject(outline, 0, reader), "/PageMode": NameObject("/UseOutlines")}
    serialized(reader.trailer.raw_get("/Root"), root_changes)
    out = bytearray(data if data.endswith(b"\n") else data + b"\n")
    offsets = {}
    for (number, generation), body in sorted(updates.items()):
        offsets[(number, generation)] = len(out)
        out += b"%d %d obj\n" % (number, generation) + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n"
    for (number, generation), offset in offsets.items():
        out += b"%d 1\n%010d %05d n \n" % (number, offset, generation)
    size = max(size, max(n for n, _ in offsets) + 1)
    root, info_ref = reader.trailer.raw_get("/Root"), reader.trailer.raw_get("/Info")
    out += (b"trailer\n<< /Size %d /Root %d %d R /Info %d %d R /Prev %s >>\nstartxref\n%d\n%%%%EOF\n"
            % (size, root.idnum, root.generation, info_ref.idnum, info_ref.generation, tail.group(1), xref))
    book.write_bytes(bytes(out))


def _outline(reader: Any, lang: Language, size: int, updates: dict[tuple[int, int], bytes]) -> tuple[int | None, int]:
    """PDF bookmarks: one per chapter, one per section under it (their named destinations,
    resolved to pages). New objects from `size` on go into `updates`; returns the outline
    root's number (None without destinations) and the new size."""
    named = {unquote(name.lstrip("/")): dest for name, dest in reader.named_destinations.items()}

    def target(name: str) -> bytes | None:
        dest = named.get(name)
        if dest is None or dest.page is None:
            return None
        page = reader.pages[reader.get_destination_page_number(dest)].indirect_reference
        top = dest.top if dest.top is not None else "null"
        return b"[%d %d R /XYZ 0 %s null]" % (page.idnum, page.generation, str(top).encode())

    def title(text: str) -> bytes:
        return b"<FEFF" + text.encode("utf-16-be").hex().upper().encode() + b">"

    from widgets.build.native import locale

    preface = locale(lang.locale).t("print.preface")
    tree: list[tuple[str, bytes, list[tuple[str, bytes]]]] = []
    for chapter in lang.chapters:
        where = target(chapter.key)
        if where is not None:
            children = [(text, t) for ident, text in chapter.sections if (t := target(ident)) is not None]
            tree.append((preface if chapter.key == "home" else chapter.title, where, children))
    if not tree:
        return None, size
    root = size
    numbers = iter(range(size + 1, size + 1 + len(tree) + sum(len(c) for _, _, c in tree)))
    items = [(next(numbers), text, where, [(next(numbers), t, w) for t, w in children]) for text, where, children in tree]

    def write(level: list[tuple[int, str, bytes]], parent: int) -> None:
        for index, (number, text, where) in enumerate(level):
            links = b""
            if index:
                links += b" /Prev %d 0 R" % level[index - 1][0]
            if index + 1 < len(level):
                links += b" /Next %d 0 R" % level[index + 1][0]
            updates[(number, 0)] = b"<< /Title %s /Parent %d 0 R /Dest %s%s >>" % (title(text), parent, where, links)

    write([(n, t, w) for n, t, w, _ in items], root)
    for number, text, where, children in items:
        if children:
            write(children, number)
            first, last = children[0][0], children[-1][0]
            updates[(number, 0)] = updates[(number, 0)][:-3] + b" /First %d 0 R /Last %d 0 R /Count -%d >>" % (
                first, last, len(children))
    updates[(root, 0)] = b"<< /Type /Outlines /First %d 0 R /Last %d 0 R /Count %d >>" % (
        items[0][0], items[-1][0], len(items))
    return root, size + 1 + len(tree) + sum(len(c) for _, _, c in tree)


def _fonts(pages: Any) -> Iterator[Any]:
    """Every font dictionary the pages use, in their forms and Type3 glyphs too, once."""
    seen: set[int] = set()
    todo = [page.get("/Resources") for page in pages]
    while todo:
        resources = todo.pop()
        resources = resources.get_object() if resources is not None else None
        if not resources or id(resources) in seen:
            continue
        seen.add(id(resources))
        for font in (resources.get("/Font") or {}).values():
            font = font.get_object()
            if id(font) not in seen:
                seen.add(id(font))
                yield font
                todo.append(font.get("/Resources"))
        for xobject in (resources.get("/XObject") or {}).values():
            todo.append(xobject.get_object().get("/Resources"))


# CJK fonts (Noto Sans CJK) draw 大 and the Kangxi radical ⼤ with one glyph, and Chromium's
# PDF maps such a glyph back to the radical: copied or searched text would read "⼤模型".
RADICAL = re.compile("[\u2e80-\u2eff\u2f00-\u2fdf]")
# Kangxi radicals (U+2F00–U+2FD5) go back by NFKC; the CJK Radicals Supplement has no
# decomposition, so its forms that are also characters are listed (Unicode's
# EquivalentUnifiedIdeograph.txt).
SUPPLEMENT = dict(zip(
    "⺠⺩⺰⻄⻅⻆⻈⻉⻋⻐⻑⻓⻔⻗⻘⻙⻚⻛⻜⻝⻠⻢⻣⻤⻥⻦⻧⻨⻩⻪⻬⻮⻰⻳",
    "民王纟西见角讠贝车钅長长门雨青韦页风飞食饣马骨鬼鱼鸟卤麦黄黾齐齿龙龟",
))
HEX = "<([0-9A-Fa-f]+)>"


def fix_cmap(text: str) -> str | None:
    """A ToUnicode CMap whose radicals (U+2E80–U+2FDF) map to the ideographs they stand
    for (NFKC: ⼤ → 大), or None when it has none."""
    mapping: dict[str, str] = {}
    for block in re.finditer(r"beginbfchar(.*?)endbfchar", text, re.S):
        for source, target in re.findall(rf"{HEX}\s*{HEX}", block[1]):
            mapping[source] = target
    for block in re.finditer(r"beginbfrange(.*?)endbfrange", text, re.S):
        for low, high, target in re.findall(rf"{HEX}\s*{HEX}\s*(<[0-9A-Fa-f]+>|\[[^\]]*\])", block[1]):
            count = int(high, 16) - int(low, 16) + 1
            if target.startswith("["):
                targets = re.findall(HEX, target)
            else:
                first = int(target[1:-1], 16)
                targets = [format(first + i, f"0{len(target) - 2}X") for i in range(count)]
            for i, value in enumerate(targets[:count]):
                mapping[format(int(low, 16) + i, f"0{len(low)}X")] = value
    changed = False
    for source, target in mapping.items():
        try:
            chars = bytes.fromhex(target).decode("utf-16-be")
        except (ValueError, UnicodeDecodeError):
            continue
        if RADICAL.search(chars):
            fixed = "".join((SUPPLEMENT.get(c) or unicodedata.normalize("NFKC", c)) if RADICAL.match(c) else c
                            for c in chars)
            mapping[source] = fixed.encode("utf-16-be").hex().upper()
            changed = True
    if not changed:
        return None
    start = re.search(r"\d+\s+beginbf(?:char|range)", text)
    end = text.find("endcmap")
    if start is None or end < 0:
        return None
    items = sorted(mapping.items(), key=lambda item: (len(item[0]), item[0]))
    blocks = []
    for at in range(0, len(items), 100):  # at most 100 entries per block (PDF spec)
        chunk = items[at:at + 100]
        blocks.append(f"{len(chunk)} beginbfchar\n" + "".join(f"<{s}> <{t}>\n" for s, t in chunk) + "endbfchar\n")
    return text[:start.start()] + "".join(blocks) + text[end:]


def cache_key(site: Path, document: str, sheets: list[str]) -> str:
    """Everything a PDF is printed from: the document, its stylesheets, this script."""
    digest = hashlib.sha256(document.encode("utf-8"))
    for sheet in sheets:
        path = site / sheet
        digest.update(path.read_bytes() if path.is_file() else sheet.encode())
    digest.update(Path(__file__).read_bytes())
    return digest.hexdigest()[:20]


def _router(base: str, url: str, document: str) -> Any:
    """Answer the book's URL with its document, pass the site's own files to the local
    server, abort everything else: nothing leaves this host."""

    def route(request_route: Any) -> None:
        request = request_route.request.url
        if request.split("#", 1)[0] == url:
            request_route.fulfill(status=200, content_type="text/html; charset=utf-8", body=document)
        elif request.startswith(base):
            request_route.continue_()
        else:
            request_route.abort()

    return route


def print_book(context: Any, base: str, site: Path, lang: Language, target: Path) -> list[str]:
    """Print one language's book to `target`; returns what is wrong with it (nothing, or an
    element wider than the paper, chapters whose page is unknown)."""
    book_path = f"__book-{lang.locale}.html"
    url = base + book_path
    problems = []
    page = context.new_page()
    page.set_viewport_size({"width": round(CONTENT_WIDTH_MM / 25.4 * 96), "height": 1000})  # the paper's column
    try:
        page.route("**/*", _router(base, url, book_html(site, lang, book_path)))
        page.goto(url, wait_until="load")
        # Chromium shrinks EVERY page when one element is wider than the paper (and the
        # breaks then go wrong): name it.
        page.emulate_media(media="print")
        for chapter, element, excess in page.evaluate(OVERFLOW):
            problems.append(f"{lang.locale}: {chapter}: <{element}> is {excess} px wider than the page")
        print_pdf(page, target)
        pages = chapter_pages(target, lang)
        numbered = len(pages) == len(lang.chapters)
        if numbered:  # again, with the page numbers in the contents (as wide as "000")
            page.evaluate("""pages => { for (const span of document.querySelectorAll('[data-page-of]'))
                                            span.textContent = pages[span.dataset.pageOf]; }""", pages)
            print_pdf(page, target)
            numbered = chapter_pages(target, lang) == pages
        if not numbered:
            problems.append(f"{lang.locale}: the chapters' pages are not known; the contents have none")
    finally:
        page.close()
    finish(target, lang)
    return problems


def make_pdfs(site: Path, out: Path, langs: list[str] | None = None, browser: Any = None,
              cache: Path | None = None, problems: list[str] | None = None) -> dict[str, Path]:
    """Write one PDF per language into `out`; returns {lang: path}. `browser`: a
    Playwright Chromium to reuse (tests), else one is launched here when needed.
    `cache`: a folder of earlier PDFs by content hash. What is wrong with a book is
    printed as a warning and added to `problems`."""
    from serve import start

    site = Path(site).resolve()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    chosen = [lang for lang in languages(site) if not langs or lang.locale in langs]
    todo: list[tuple[Language, Path, Path | None]] = []
    results: dict[str, Path] = {}
    for lang in chosen:
        collect(site, lang)
        target = out / pdf_name(lang.locale)
        results[lang.locale] = target
        cached = None
        if cache is not None:
            book_path = f"__book-{lang.locale}.html"
            key = cache_key(site, book_html(site, lang, book_path), stylesheets(site, lang, book_path))
            cached = Path(cache) / f"{NAME}-{lang.locale}-{key}.pdf"
            if cached.is_file():
                shutil.copyfile(cached, target)
                print(f"pdf: {lang.locale}: unchanged, copied from {cached}")
                continue
        todo.append((lang, target, cached))
    if not todo:
        show_pdf_links(site)
        return results
    server, base = start(site, "/")
    playwright = own = None
    try:
        if browser is None:
            from playwright.sync_api import sync_playwright

            playwright = sync_playwright().start()
            own = browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        context = browser.new_context(color_scheme="light")
        try:
            for lang, target, cached in todo:
                found = print_book(context, base, site, lang, target)
                for problem in found:
                    print(f"pdf: warning: {problem}", file=sys.stderr)
                if problems is not None:
                    problems += found
                if not found and cached is not None:
                    cached.parent.mkdir(parents=True, exist_ok=True)
                    for old in cached.parent.glob(f"{NAME}-{lang.locale}-*.pdf"):
                        old.unlink()
                    shutil.copyfile(target, cached)
        finally:
            context.close()
    finally:
        if own is not None:
            own.close()
        if playwright is not None:
            playwright.stop()
        server.shutdown()
        server.server_close()
    show_pdf_links(site)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", default=str(ROOT / "site"), help="the built site (default: site)")
    parser.add_argument("--out", default=None, help="where the PDFs go (default: SITE/pdf)")
    parser.add_argument("--lang", action="append", help="only this language (repeatable)")
    parser.add_argument("--cache", default=None, help="reuse PDFs of an unchanged book from this folder")
    args = parser.parse_args()
    site = Path(args.site)
    out = Path(args.out) if args.out else site / "pdf"
    started = time.perf_counter()
    from pypdf import PdfReader

    for lang, path in make_pdfs(site, out, args.lang, cache=Path(args.cache) if args.cache else None).items():
        pages = len(PdfReader(str(path)).pages)
        print(f"pdf: {lang}: {path} ({pages} pages, {path.stat().st_size / 1e6:.1f} MB)")
    print(f"pdf: done in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
