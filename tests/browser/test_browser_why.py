"""Chapter 1 in Chromium: links, tampered URLs, failures and search around the `why` widget
(the control-by-control parity of every widget is in test_browser_widgets.py).

Every wait is on the DOM contract (`data-status`, `data-revision`), never on a sleep.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

import pytest

from live import BOOT_MS, assert_matches_native, root, set_control, wait_revision_above
from widgets.figures import why
from widgets.build.native import locale
from widgets.framework.spec import canonical

CHAPTER = {"id": "why-distributed-training/", "zh": "zh/why-distributed-training/"}
ROOT = root("why")
CONTROLS = {c.name: c for c in why.CONTROLS}


def open_live(page: Any, url: str) -> None:
    page.goto(url)
    page.locator(ROOT).scroll_into_view_if_needed()
    page.wait_for_selector(f'{ROOT}[data-status="ready"]', timeout=BOOT_MS)
    wait_revision_above(page, "why", 0, BOOT_MS)


def set_why(page: Any, name: str, value: str) -> None:
    set_control(page, "why", CONTROLS[name], value)


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_a_link_reproduces_the_widget_state(warm_page: Any, site_url: str, lang: str) -> None:
    page = warm_page
    open_live(page, site_url + CHAPTER[lang])
    set_why(page, "model", "llama2-13b")
    set_why(page, "tokens", "1000000000000")
    # The URL follows once the widget is left alone for a moment (off the update path).
    page.wait_for_function("() => decodeURIComponent(location.hash).includes('why.tokens=1000000000000')", timeout=5_000)
    fragment = unquote(page.evaluate("location.hash"))
    assert "why.model=llama2-13b" in fragment and "why.tokens=1000000000000" in fragment
    switch = page.locator("a.md-select__link[hreflang]").evaluate_all("links => links.map(a => a.href)")
    assert all("why.model=llama2-13b" in unquote(href) for href in switch)
    second = page.context.new_page()
    open_live(second, site_url + CHAPTER[lang] + fragment)
    assert second.locator(f'{ROOT} [name="model"]').input_value() == "llama2-13b"
    assert second.locator(f'{ROOT} [name="tokens"]').input_value() == "1000000000000"
    assert_matches_native(second, "why", {"tokens": "1000000000000", "model": "llama2-13b"}, lang)


def test_switching_language_right_after_a_change_keeps_the_state(warm_page: Any, site_url: str) -> None:
    page = warm_page
    # The URL is written after a pause; clicking the language switcher before that pause
    # is over must still carry the newest state (the write is flushed on pointerdown).
    open_live(page, site_url + CHAPTER["id"])
    before = int(page.get_attribute(ROOT, "data-revision"))
    page.evaluate("""(sel) => { const s = document.querySelector(sel + ' [name=tokens]');
        s.value = '600000000000'; s.dispatchEvent(new Event('input', { bubbles: true })); }""", ROOT)
    wait_revision_above(page, "why", before)
    link = page.locator('a.md-select__link[hreflang="zh"]')
    link.dispatch_event("pointerdown")
    link.dispatch_event("click")
    page.wait_for_url("**/zh/**")
    page.locator(ROOT).scroll_into_view_if_needed()
    page.wait_for_selector(f'{ROOT}[data-status="ready"]', timeout=BOOT_MS)
    wait_revision_above(page, "why", 0, BOOT_MS)
    assert page.locator(f'{ROOT} [name="tokens"]').input_value() == "600000000000"


@pytest.mark.parametrize(
    ("lang", "fragment", "messages"),
    [
        ("id", "#why.tokens=abc", ["Token training harus berupa angka, bukan “abc”."]),
        ("zh", "#why.tokens=1", ["训练 token 数 必须在 500 亿 到 15 万亿 之间，而不是 1。"]),
        ("id", "#why.model=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E", ["Model harus salah satu dari"]),
        # every bad parameter is named, not only the first; a value between the slider's
        # steps is refused (the slider could not hold it); the valid one is kept
        ("id", "#why.tokens=123456789012&why.mfu=2&why.bogus=1&why.model=llama2-13b",
         ["Token training bergerak per 10 miliar mulai dari 50 miliar; 123456789012 ada di antara",
          "MFU (utilisasi FLOP model) harus antara", "Tidak ada kontrol bernama “bogus”"]),
    ],
)
def test_a_tampered_url_names_what_it_left_out_keeps_the_figure_and_cleans_the_url(
    warm_page: Any, site_url: str, lang: str, fragment: str, messages: list[str]
) -> None:
    page = warm_page
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    open_live(page, site_url + CHAPTER[lang] + fragment)
    problem = page.locator(f'{ROOT} [data-region="problem"] .w-error').inner_text()
    assert all(m in problem for m in messages), problem
    assert page.locator(f'{ROOT} [data-region="problem"] li').count() == len(messages)
    assert page.locator(f'{ROOT} [data-region="problem"] img').count() == 0
    assert page.get_attribute(ROOT, "data-status") == "ready"
    # The figure shows what the controls hold: the defaults, except what was valid.
    kept = {"model": "llama2-13b"} if "llama2-13b" in fragment else {}
    state = canonical(why.CONTROLS, {**{c.name: c.default for c in why.CONTROLS}, **kept})
    assert_matches_native(page, "why", state, lang)
    assert page.locator(f'{ROOT} [name="tokens"]').input_value() == state["tokens"]
    # The bad values leave the URL, so a reload shows the page without the message.
    if kept:
        page.wait_for_function("() => location.hash === '#why.model=llama2-13b'", timeout=5_000)
    else:
        page.wait_for_function("() => location.hash === ''", timeout=5_000)
    set_why(page, "model", "llama2-70b")
    assert page.locator(f'{ROOT} [data-region="problem"]').inner_text() == ""
    assert_matches_native(page, "why", {**state, "model": "llama2-70b"}, lang)
    assert dialogs == []


def test_when_pyodide_cannot_load_the_prerendered_page_stays_readable(page: Any, site_url: str, recorder: Any) -> None:
    # A failed wasm fetch used to leave loadPyodide() pending forever (PITFALLS.md): the
    # runtime now reports the failed download at once, with the file, in the page language.
    recorder.expect_errors = True  # the blocked wasm request is logged as an error
    page.route("**/pyodide.asm.wasm", lambda route: route.abort())
    page.goto(site_url + CHAPTER["id"])
    page.locator(ROOT).scroll_into_view_if_needed()
    page.wait_for_selector(f'{ROOT}[data-status="error"]', timeout=BOOT_MS)
    status = page.inner_text(f'{ROOT} [data-region="status"]')
    assert status.startswith("Mode interaktif tidak bisa dimuat (pyodide.asm.wasm tidak dapat diunduh: "
                             "koneksi terputus atau diblokir)")
    assert "107,8 GB" in page.inner_text(f'{ROOT} [data-region="output"]')
    # Nothing would answer the controls any more: they are disabled, as without JavaScript.
    assert page.locator(f'{ROOT} [name="tokens"]').is_disabled()


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_without_javascript_the_chapter_is_complete(browser: Any, site_url: str, lang: str) -> None:
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(site_url + CHAPTER[lang])
        text = page.inner_text(ROOT)
        values = {"id": ("107,8 GB", "8,1 × 10²² FLOP", "17,1 tahun"), "zh": ("107.8 GB", "8.1 × 10²² FLOP", "17.1 年")}
        for value in values[lang]:
            assert value in text
        assert page.get_attribute(ROOT, "data-status") == "static"
        # Honest about what it is: the controls do not move, and a note says why.
        controls = page.locator(f"{ROOT} input[name], {ROOT} select[name]")
        assert controls.count() == len(why.CONTROLS) and all(c.is_disabled() for c in controls.all())
        note = page.locator(f"{ROOT} .w-noscript")
        assert note.is_visible()
        assert note.inner_text() == locale(lang).t("runtime.noscript")
    finally:
        context.close()


def test_with_javascript_the_controls_answer_before_python_is_there(page: Any, site_url: str) -> None:
    page.route("**/pyodide.asm.wasm", lambda route: None)  # never answered: Python never starts
    page.goto(site_url + CHAPTER["id"])
    controls = page.locator(f"{ROOT} input[name], {ROOT} select[name]")
    assert all(c.is_enabled() for c in controls.all())
    assert not page.locator(f"{ROOT} .w-noscript").is_visible()


def test_a_first_view_fetches_no_search_index_and_a_search_result_still_highlights(page: Any, site_url: str) -> None:
    # widgets/build/lazysearch.py: the index (0.2–0.3 MB) waits for the search box, or for a
    # page opened from a search result, whose terms (?h=) are then marked.
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url) if "search_index" in r.url else None)
    page.goto(site_url + CHAPTER["id"])
    page.wait_for_load_state("networkidle")
    assert fetched == []
    page.goto(site_url + CHAPTER["id"].split("#")[0] + "?h=optimizer")
    page.wait_for_selector("article mark", timeout=30_000)
    assert "optimizer" in page.locator("article mark").first.inner_text().lower()
    assert any(url.endswith("search/search_index.json") for url in fetched)


def test_a_shared_search_link_opens_the_search_with_its_results(page: Any, site_url: str) -> None:
    # `?q=`: Material opens the search box with the query; the deferred index must load.
    page.goto(site_url + CHAPTER["id"] + "?q=pipeline")
    page.wait_for_selector(".md-search-result__item", timeout=30_000)
    assert page.locator(".md-search-result__item").count() > 0


def test_chinese_search_finds_chinese_pages(page: Any, site_url: str) -> None:
    # Material's lunr index is built when the search box is first used, not with every page
    # (widgets/build/lazysearch.py); searching must still work and use the page language's index.
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url) if "search_index" in r.url else None)
    page.goto(site_url + CHAPTER["zh"])
    box = page.locator("input.md-search__input")
    box.click()
    box.fill("显存")
    box.press("End")
    page.wait_for_selector(".md-search-result__item", timeout=30_000)
    hrefs = page.locator(".md-search-result__item a").evaluate_all("links => links.map(a => a.href)")
    assert any("/zh/" in href for href in hrefs)
    assert {url.removeprefix(site_url) for url in fetched} == {"zh/search/search_index.json"}
