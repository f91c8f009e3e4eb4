"""Print and PDF: the print stylesheet makes any chapter print cleanly (light colours,
no screen chrome, each control's value as text), and `tools/pdf.py` prints the whole
book, one PDF per language, linked from each home page."""

from __future__ import annotations

import posixpath
import re
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest
from pypdf.generic import Destination

import pdf
from widgets.framework.core import format_value
from widgets.build.native import locale

ROOT = Path(__file__).resolve().parents[2]
LANGS = ("id", "zh")


@pytest.fixture(scope="module")
def printing(built_site: Path, browser: Any) -> Iterator[tuple[dict[str, Path], list[str]]]:
    """Both books, printed where `make pdf` puts them (site/pdf/), and what the tool found
    wrong with them; removed afterwards, and the home pages (whose PDF link the tool
    shows) put back, so the other site tests see the site exactly as `mkdocs build` wrote it."""
    out = built_site / "pdf"
    problems: list[str] = []
    homes = [built_site / folder / f"index.html{suffix}" for folder in ("", "zh") for suffix in ("", ".br", ".gz")]
    saved = {path: path.read_bytes() for path in homes if path.is_file()}
    try:
        yield pdf.make_pdfs(built_site, out, browser=browser, problems=problems), problems
    finally:
        shutil.rmtree(out, ignore_errors=True)
        for path, data in saved.items():
            path.write_bytes(data)


@pytest.fixture(scope="module")
def books(printing: tuple[dict[str, Path], list[str]]) -> dict[str, Path]:
    return printing[0]


@pytest.fixture(scope="module")
def structure(built_site: Path) -> dict[str, pdf.Language]:
    found = {lang.locale: lang for lang in pdf.languages(built_site)}
    for lang in found.values():
        pdf.collect(built_site, lang)
    return found


class Book:
    """One printed book; a page's text is extracted once, when first asked for (pypdf's
    extraction is slow on CJK Type3 fonts, so the tests read only the pages they need)."""

    def __init__(self, path: Path) -> None:
        from pypdf import PdfReader

        self.path = path
        self.reader = PdfReader(str(path))
        self._text: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self.reader.pages)

    def text(self, number: int) -> str:
        """The text of page `number` (1-based)."""
        if number not in self._text:
            self._text[number] = self.reader.pages[number - 1].extract_text() or ""
        return self._text[number]


@pytest.fixture(scope="module")
def read(books: dict[str, Path]) -> dict[str, Book]:
    return {lang: Book(path) for lang, path in books.items()}


@pytest.fixture(scope="module")
def starts(books: dict[str, Path], structure: dict[str, pdf.Language]) -> dict[str, dict[str, int]]:
    """On which page each chapter starts, from the PDF's named destinations."""
    return {lang: pdf.chapter_pages(path, structure[lang]) for lang, path in books.items()}


def squeeze(text: str) -> str:
    """Text without whitespace: PDF extraction breaks lines and spaces CJK from Latin."""
    return re.sub(r"\s+", "", text)


def test_the_book_has_every_nav_page_but_the_translators_guide(structure: dict[str, pdf.Language]) -> None:
    assert set(structure) == set(LANGS)
    for lang in structure.values():
        keys = [chapter.key for chapter in lang.chapters]
        assert keys[0] == "home" and "translate" not in keys
        assert {"why-distributed-training", "zero", "key-ideas", "faq", "references", "glossary"} <= set(keys)
    assert [c.key for c in structure["id"].chapters] == [c.key for c in structure["zh"].chapters]


def test_both_books_are_printed_with_at_least_a_page_per_chapter(books: dict[str, Path], read: dict[str, Book],
                                                                 structure: dict[str, pdf.Language]) -> None:
    assert set(books) == set(LANGS)
    for lang, path in books.items():
        assert path == path.parent / f"distributed-training-llm-{lang}.pdf" and path.is_file()
        assert len(read[lang]) >= len(structure[lang].chapters) + 2, f"{lang}: {len(read[lang])} pages"
        assert read[lang].reader.metadata.title == structure[lang].site_name


def test_nothing_is_wider_than_the_paper_and_every_chapter_is_found(printing: tuple[dict[str, Path], list[str]]) -> None:
    """One element wider than the column makes Chromium shrink every page (and breaks go
    wrong); the tool names it."""
    assert printing[1] == []


def test_the_contents_give_the_page_each_chapter_starts_on(read: dict[str, Book], starts: dict[str, dict[str, int]],
                                                          structure: dict[str, pdf.Language]) -> None:
    for lang, book in read.items():
        assert len(starts[lang]) == len(structure[lang].chapters), f"{lang}: chapters missing from the PDF"
        # the contents run from page 2 to the page before the preface (two pages once the nav grew)
        contents = squeeze("".join(book.text(page) for page in range(2, starts[lang]["home"])))
        assert squeeze(locale(lang).t("print.contents")) in contents
        for chapter in structure[lang].chapters:
            page = starts[lang][chapter.key]
            name = locale(lang).t("print.preface") if chapter.key == "home" else chapter.title
            assert f"{squeeze(name)}{page}" in contents, f"{lang}: the contents lack {name!r} … {page}"
            assert squeeze(chapter.title) in squeeze(book.text(page)), f"{lang}: {chapter.title!r} not on page {page}"
        assert list(starts[lang].values()) == sorted(starts[lang].values()), f"{lang}: chapters out of nav order"


def test_the_bookmarks_list_every_chapter_and_its_sections(read: dict[str, Book], starts: dict[str, dict[str, int]],
                                                         structure: dict[str, pdf.Language]) -> None:
    for lang, book in read.items():
        reader = book.reader
        outline = list(reader.outline)
        chapters = [item for item in outline if not isinstance(item, list)]
        preface = locale(lang).t("print.preface")
        assert [c.title for c in chapters] == [preface if c.key == "home" else c.title for c in structure[lang].chapters]
        assert [reader.get_destination_page_number(c) + 1 for c in chapters] == list(starts[lang].values())
        sections = [item for item in outline if isinstance(item, list)]
        assert len(sections) >= len(chapters) - 1, f"{lang}: chapters without sections"
        why = outline[outline.index(chapters[1]) + 1]
        assert len(why) >= 5 and all(isinstance(item, Destination) for item in why)
        assert reader.trailer["/Root"]["/Lang"] == lang


def test_each_book_holds_numbers_prerendered_in_its_language(read: dict[str, Book], starts: dict[str, dict[str, int]]) -> None:
    """Chapter 1 states the training state in the prose, the stat cards and the figure;
    the data-parallelism chapter shows the state per GPU of its widget."""
    for lang, book in read.items():
        loc = locale(lang)
        for chapter, name, key in (("why-distributed-training", "why", "state_bytes"),
                                   ("data-parallelism", "dp", "state_per_gpu_bytes")):
            first = starts[lang][chapter]
            text = squeeze("".join(book.text(n) for n in range(first, min(first + 4, len(book) + 1))))
            number = format_value(name, key, {}, loc)
            assert squeeze(number) in text, f"{lang}: {name}.{key} = {number!r} not in the chapter's first pages"
    assert squeeze(format_value("why", "state_bytes", {}, locale("id"))) == "107,8GB"
    assert squeeze(format_value("why", "state_bytes", {}, locale("zh"))) == "107.8GB"


def test_the_chinese_book_embeds_a_cjk_font_and_copies_as_written(read: dict[str, Book], starts: dict[str, dict[str, int]]) -> None:
    book = read["zh"]
    families = set()
    for font in pdf._fonts(book.reader.pages[:6]):
        descriptor = font.get("/FontDescriptor")
        if descriptor is not None:
            descriptor = descriptor.get_object()
            families.add(str(descriptor.get("/FontFamily") or descriptor.get("/FontName")))
        families.add(str(font.get("/BaseFont")))
    assert any("CJK" in f or "Hei" in f or "Song" in f for f in families), (
        f"no Chinese font in the zh PDF ({sorted(families)}): install one (fonts-noto-cjk)")
    text = "".join(book.text(n) for n in range(1, starts["zh"]["why-distributed-training"] + 2))
    assert "大模型分布式训练" in text and "数据并行" in text
    assert not re.search("[\u2e80-\u2fdf]", text), "radical code points instead of the characters"


def test_cjk_radicals_map_back_to_their_characters() -> None:
    cmap = ("begincmap\n1 begincodespacerange\n<00> <FF>\nendcodespacerange\n"
            "2 beginbfchar\n<01> <2F24>\n<02> <6A21>\nendbfchar\n1 beginbfrange\n<03> <04> <2EC5>\nendbfrange\n"
            "endcmap\n")
    fixed = pdf.fix_cmap(cmap)
    assert "<01> <5927>" in fixed and "<02> <6A21>" in fixed  # ⼤ → 大, 模 stays
    assert "<03> <89C1>" in fixed and "<04> <2EC6>" not in fixed  # ⻅ → 见, ⻆ → 角
    assert pdf.fix_cmap(cmap.replace("2F24", "5927").replace("2EC5", "0041")) is None


def test_each_home_page_links_to_the_pdf_of_its_language(books: dict[str, Path], built_site: Path) -> None:
    """Shown once the PDF is there (`mkdocs build` alone ships the link hidden), in the
    page and in the compressed copies a host sends."""
    import brotli
    import gzip

    for lang, folder in (("id", ""), ("zh", "zh/")):
        page = built_site / folder / "index.html"
        html = page.read_text(encoding="utf-8")
        links = re.findall(r'<a href="([^"]*\.pdf)"', html)
        assert len(links) == 1, f"{lang}: {links}"
        target = posixpath.normpath(posixpath.join(folder or ".", links[0]))
        assert (built_site / target) == books[lang], f"{lang}: the home page links {target}"
        paragraph = re.search(r"<p\b([^>]*)>(?:(?!</p>).)*\.pdf", html, re.S)
        assert paragraph and "hidden" not in paragraph[1], f"{lang}: the PDF link is still hidden"
        assert gzip.decompress(page.with_name("index.html.gz").read_bytes()).decode("utf-8") == html
        assert brotli.decompress(page.with_name("index.html.br").read_bytes()).decode("utf-8") == html


def test_a_hidden_pdf_link_is_shown_only_when_its_file_is_there(tmp_path: Path) -> None:
    (tmp_path / "zh").mkdir()
    (tmp_path / "pdf").mkdir()
    (tmp_path / "pdf" / "book-id.pdf").write_bytes(b"%PDF-1.7\n")
    (tmp_path / "pdf" / "book-zh.pdf").write_bytes(b"")  # a failed print: no link to it
    filler = "<p>" + "Lorem ipsum dolor sit amet. " * 80 + "</p>"  # large enough for .br/.gz copies
    home = (f'{filler}<p class="w-print-hide" hidden>Unduh <a href="pdf/book-id.pdf">PDF</a>.</p>'
            '<p hidden>Tidak ada <a href="pdf/none.pdf">PDF</a>.</p>'
            '<p class="hidden-note" hidden="">Satu <a href="/pdf/book-id.pdf">PDF</a>.</p>')
    (tmp_path / "index.html").write_text(home, encoding="utf-8")
    (tmp_path / "index.html.gz").write_bytes(b"stale")
    zh = '<p class="w-print-hide" hidden>下载 <a href="../pdf/book-zh.pdf">PDF</a>。</p>'
    (tmp_path / "zh" / "index.html").write_text(zh, encoding="utf-8")
    assert pdf.show_pdf_links(tmp_path) == [(tmp_path / "index.html").resolve()]
    shown = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert shown == home.replace('"w-print-hide" hidden>', '"w-print-hide">').replace('"hidden-note" hidden="">', '"hidden-note">')
    assert (tmp_path / "zh" / "index.html").read_text(encoding="utf-8") == zh
    import gzip

    assert gzip.decompress((tmp_path / "index.html.gz").read_bytes()).decode("utf-8") == shown
    assert pdf.show_pdf_links(tmp_path) == []  # nothing left to show
    # The book leaves the paragraph out, shown or hidden: the same document, the same cache key.
    books = []
    for body in (home, shown):
        chapter = pdf.Chapter("home", "", "Home", None, None, body.split('<p hidden>')[0])
        books.append(pdf.rewrite(chapter, {"": chapter}, "__book-id.html"))
    assert books[0] == books[1] and "Lorem" in books[0] and "Unduh" not in books[0]


def test_nothing_leaves_the_host_while_printing() -> None:
    calls: list[tuple[str, str]] = []

    class Route:
        def __init__(self, url: str) -> None:
            self.request = type("Request", (), {"url": url})()

        def fulfill(self, **kwargs: Any) -> None:
            calls.append(("fulfill", self.request.url))

        def continue_(self) -> None:
            calls.append(("continue", self.request.url))

        def abort(self) -> None:
            calls.append(("abort", self.request.url))

    route = pdf._router("http://127.0.0.1:9/", "http://127.0.0.1:9/__book-id.html", "<p>")
    for url in ("http://127.0.0.1:9/__book-id.html", "http://127.0.0.1:9/assets/widgets/print.css",
                "https://example.org/font.woff2", "http://127.0.0.2:9/x", "data:,x"):
        route(Route(url))
    assert [kind for kind, _ in calls] == ["fulfill", "continue", "abort", "abort", "abort"]


# --- the print stylesheet, on a live chapter -----------------------------------------------------


def luminance(css: str) -> float:
    """Relative luminance of an rgb()/rgba() colour laid over white paper."""
    parts = [float(x) for x in re.findall(r"[\d.]+", css)]
    alpha = parts[3] if len(parts) > 3 else 1.0
    r, g, b = (alpha * c / 255 + (1 - alpha) for c in parts[:3])
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


# Colour transitions (Material animates code backgrounds) have finished.
SETTLED = "() => document.getAnimations().every(a => a.playState !== 'running')"
# Every element holding text (outside SVG and math) with its colour and the colour of the
# first ancestor whose background is not transparent.
COLOURS = """() => {
  const opaque = bg => { const a = bg.match(/[\\d.]+/g).map(Number); return a.length < 4 || a[3] > 0.5; };
  const behind = el => { for (let e = el; e; e = e.parentElement) { const bg = getComputedStyle(e).backgroundColor;
      if (opaque(bg)) return bg; } return 'rgb(255, 255, 255)'; };
  const out = [];
  for (const el of document.querySelectorAll('article *')) {
    if (el.closest('svg, math') || !el.checkVisibility()) continue;
    if (![...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
    if (el.matches('a.w-preset[aria-current="true"]')) continue;  // white on the series colour, by design
    out.push([el.tagName + '.' + el.className, getComputedStyle(el).color, behind(el)]);
  }
  return out;
}"""


@pytest.mark.parametrize("scheme", ["default", "slate"])
def test_a_chapter_prints_light_without_screen_chrome(site_url: str, browser: Any, scheme: str) -> None:
    page = browser.new_page()
    try:
        page.goto(site_url + "why-distributed-training/")
        page.evaluate(f"document.body.setAttribute('data-md-color-scheme', '{scheme}')")
        page.wait_for_function(SETTLED)
        on_screen = page.evaluate(COLOURS)
        dark = [background for _, _, background in on_screen if luminance(background) < 0.1]
        assert bool(dark) == (scheme == "slate"), "the scheme did not apply on screen"
        page.emulate_media(media="print")
        page.wait_for_function(SETTLED)
        for chrome in (".md-header", ".md-sidebar--primary", ".md-sidebar--secondary", ".md-footer", ".md-search"):
            assert not page.locator(chrome).first.is_visible(), f"{chrome} prints"
        colours = page.evaluate(COLOURS)
        assert len(colours) > 50
        for element, colour, background in colours:
            assert luminance(background) > 0.5, f"{scheme}: dark background on paper: {element} {background}"
            assert luminance(colour) < 0.25, f"{scheme}: light text on paper: {element} {colour}"
        # The figure stays; each control shows its value as text instead of a slider.
        widget = page.locator("[data-widget=why]")
        assert widget.locator("svg.w-figure").first.is_visible()
        assert widget.locator("[data-out=state_bytes]").first.is_visible()
        for slider in widget.locator("input[type=range]").all():
            assert not slider.is_visible()
            value = widget.locator(f"output[for='{slider.get_attribute('id')}']")
            assert value.is_visible() and value.inner_text().strip()
        for select in widget.locator("select").all():
            assert select.is_visible()
    finally:
        page.close()


def test_a_radio_control_prints_the_choice_the_reader_made(site_url: str, browser: Any) -> None:
    page = browser.new_page()
    try:
        page.goto(site_url + "zero/")
        stage = page.locator("[data-widget=zero] fieldset.w-radio").filter(has=page.locator("input[name=stage]"))
        stage.locator("input[value='3']").check()  # what the reader picked last
        page.emulate_media(media="print")
        shown = [label.inner_text().strip() for label in stage.locator("label").all() if label.is_visible()]
        assert shown == ["3"] or (len(shown) == 1 and shown[0].endswith("3")), shown
        assert not any(radio.is_visible() for radio in stage.locator("input[type=radio]").all())
        assert stage.locator("legend").is_visible()
    finally:
        page.close()


def test_exercise_forms_and_runtime_status_do_not_print(site_url: str, browser: Any) -> None:
    page = browser.new_page()
    try:
        page.goto(site_url + "zh/why-distributed-training/")
        # As the runtime leaves them: exercise forms shown, a status line written.
        page.evaluate("""() => {
          for (const form of document.querySelectorAll('form.w-exercise')) form.hidden = false;
          for (const status of document.querySelectorAll('.w-status')) status.textContent = 'ready';
        }""")
        forms = page.locator("form.w-exercise")
        shown = [form.is_visible() for form in forms.all()]
        page.emulate_media(media="print")
        assert all(not form.is_visible() for form in forms.all()), "an exercise form prints"
        assert all(not s.is_visible() for s in page.locator(".w-status").all())
        page.emulate_media(media="screen")
        assert [form.is_visible() for form in forms.all()] == shown
    finally:
        page.close()
