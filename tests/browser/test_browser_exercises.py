"""Typed-answer exercises in Chromium: the reader types a number, Python in the worker
checks it with calc, says right or wrong in the page language, and opens the worked
solution. The live message must be exactly what native Python says for the same input.

The tests use the first page of the built site that has an exercise. Every wait is on the
form's `data-status` and `data-revision`, never on a sleep.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest

from live import BOOT_MS, with_stall_timeout
from widgets.framework.exercise import check, from_attributes
from widgets.build.native import locale

PREFIX = {"id": "", "zh": "zh/"}


def exercise_pages(site: Path) -> list[str]:
    """Pages (`data-parallelism/`) with an exercise in both languages, in file order."""
    found = []
    for path in sorted(site.glob("*/index.html")):
        name = path.parent.name
        zh = site / "zh" / name / "index.html"
        if 'class="w-exercise"' in path.read_text(encoding="utf-8") and zh.is_file() \
                and 'class="w-exercise"' in zh.read_text(encoding="utf-8"):
            found.append(f"{name}/")
    return found


@pytest.fixture(scope="module")
def chapter(built_site: Path) -> str:
    pages = exercise_pages(built_site)
    if not pages:
        pytest.skip("no page of the built site has an exercise yet (```exercise fences in docs/id and docs/zh)")
    return pages[0]


def pick(page: Any) -> str:
    """The selector of the page's first exercise with a fractional answer (so the decimal
    mark matters), or of its first exercise."""
    forms = page.locator("form.w-exercise").evaluate_all(
        "forms => forms.map(f => [f.dataset.exercise, f.dataset.answer])")
    chosen = next((ident for ident, answer in forms if not float(answer).is_integer()), forms[0][0])
    return f'form.w-exercise[data-exercise="{chosen}"]'


def typed_answer(answer: float, lang: str) -> str:
    """The answer as a reader of `lang` writes it: 0,5307 (id) or 0.5307 (zh), grouped."""
    loc = locale(lang)
    if answer == 0:
        return "0"
    decimals = max(0, 7 - math.floor(math.log10(abs(answer))))
    text = loc.fixed(answer, decimals)
    return text.rstrip("0").rstrip(loc.decimal) if loc.decimal in text else text


def open_chapter(page: Any, site_url: str, lang: str, chapter: str, stall_timeout_ms: int = BOOT_MS) -> str:
    """Open the chapter in `lang`; returns the selector of the exercise under test."""
    with_stall_timeout(page, chapter, stall_timeout_ms)
    page.goto(site_url + PREFIX[lang] + chapter)
    form = pick(page)
    page.wait_for_selector(f'{form}[data-status="idle"]')  # the runtime unhid it
    return form


def submit(page: Any, form: str, text: str, press_enter: bool = False) -> str:
    """Type `text`, press Check (or Enter), wait for the verdict; returns data-status."""
    before = int(page.get_attribute(form, "data-revision"))
    field = page.locator(f"{form} input[name=answer]")
    field.fill(text)
    if press_enter:
        field.press("Enter")
    else:
        page.locator(f"{form} button[type=submit]").click()
    page.wait_for_function(
        "([sel, r]) => Number(document.querySelector(sel).dataset.revision) > r",
        arg=[form, before], timeout=BOOT_MS,
    )
    return page.get_attribute(form, "data-status")


def native(page: Any, form: str, text: str, lang: str) -> Any:
    data = page.locator(form).evaluate("f => ({...f.dataset})")
    return check(from_attributes(data["spec"], data["unit"], data["tolerance"]), text, locale(lang))


def assert_native_message(page: Any, form: str, text: str, lang: str) -> str:
    """The live message is native Python's HTML for the same typed text; returns its text."""
    expected = native(page, form, text, lang)
    live = page.inner_html(f'{form} [data-region="feedback"]')
    shown = page.evaluate("(h) => { const t = document.createElement('template'); t.innerHTML = h; return t.innerHTML; }",
                          expected.html)
    assert live == shown
    assert page.get_attribute(form, "data-status") == expected.status
    return page.inner_text(f'{form} [data-region="feedback"]')


def solution_open(page: Any, form: str) -> bool:
    return page.locator(form).evaluate(
        "f => { let e = f.nextElementSibling; while (e && e.tagName !== 'DETAILS') e = e.nextElementSibling; return !!(e && e.open); }")


@pytest.mark.parametrize(("lang", "word"), [("id", "Benar"), ("zh", "正确")])
def test_the_right_answer_in_the_page_locale_opens_the_solution(
    warm_page: Any, site_url: str, chapter: str, lang: str, word: str
) -> None:
    page = warm_page
    form = open_chapter(page, site_url, lang, chapter)
    assert not solution_open(page, form)
    answer = float(page.get_attribute(form, "data-answer"))
    text = typed_answer(answer, lang)
    if lang == "id" and not answer.is_integer():
        assert "," in text  # the decimal comma
    assert submit(page, form, text, press_enter=(lang == "zh")) == "correct"
    assert word in assert_native_message(page, form, text, lang)
    assert solution_open(page, form)


@pytest.mark.parametrize(
    ("lang", "too_high", "unreadable"),
    [("id", "terlalu besar", "tidak terbaca sebagai angka"), ("zh", "偏大", "无法把")],
)
def test_a_wrong_or_unreadable_answer_keeps_the_solution_closed(
    warm_page: Any, site_url: str, chapter: str, lang: str, too_high: str, unreadable: str
) -> None:
    page = warm_page
    form = open_chapter(page, site_url, lang, chapter)
    answer = float(page.get_attribute(form, "data-answer"))
    wrong = typed_answer(answer * 3 + 1, lang)
    status = submit(page, form, wrong)
    assert status == "incorrect", page.inner_text(f'{form} [data-region="feedback"]')
    message = assert_native_message(page, form, wrong, lang)
    assert too_high in message
    assert typed_answer(answer, lang) not in message  # the answer is not given away
    assert not solution_open(page, form)
    assert submit(page, form, "abc") == "invalid"
    assert unreadable in assert_native_message(page, form, "abc", lang)
    assert not solution_open(page, form)


def test_markup_typed_as_an_answer_is_shown_as_text(warm_page: Any, site_url: str, chapter: str) -> None:
    page = warm_page
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    form = open_chapter(page, site_url, "id", chapter)
    typed = '<img src=x onerror="alert(1)">'
    assert submit(page, form, typed) == "invalid"
    assert page.locator(f'{form} [data-region="feedback"] img').count() == 0
    assert typed in page.inner_text(f'{form} [data-region="feedback"]')
    assert dialogs == []


def test_the_show_solution_button_opens_the_solution(warm_page: Any, site_url: str, chapter: str) -> None:
    page = warm_page
    form = open_chapter(page, site_url, "zh", chapter)
    page.locator(f'{form} [data-action="solution"]').click()
    page.wait_for_function("(sel) => { let e = document.querySelector(sel).nextElementSibling; "
                           "while (e && e.tagName !== 'DETAILS') e = e.nextElementSibling; return e && e.open; }",
                           arg=form)
    assert page.get_attribute(form, "data-status") == "idle"


def test_when_pyodide_cannot_load_the_check_says_so_and_the_solution_stays(
    page: Any, site_url: str, chapter: str, recorder: Any
) -> None:
    recorder.expect_errors = True  # the blocked wasm request is logged as an error
    page.route("**/pyodide.asm.wasm", lambda route: route.abort())
    form = open_chapter(page, site_url, "id", chapter, stall_timeout_ms=3000)
    assert submit(page, form, "1") == "error"
    message = page.inner_text(f'{form} [data-region="feedback"]')
    assert message.startswith("Pemeriksaan otomatis tidak tersedia (pyodide.asm.wasm tidak dapat diunduh: "
                              "koneksi terputus atau diblokir)")
    page.locator(f'{form} [data-action="solution"]').click()
    page.wait_for_function("(sel) => { let e = document.querySelector(sel).nextElementSibling; "
                           "while (e && e.tagName !== 'DETAILS') e = e.nextElementSibling; return e && e.open; }",
                           arg=form)


def test_without_javascript_the_question_and_its_solution_remain(browser: Any, site_url: str, chapter: str) -> None:
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(site_url + PREFIX["zh"] + chapter)
        forms = page.locator("form.w-exercise")
        assert forms.count() >= 1
        for index in range(forms.count()):
            assert forms.nth(index).is_hidden()
            assert forms.nth(index).get_attribute("data-status") == "static"
        solution = page.locator("form.w-exercise + details").first
        assert solution.count() == 1 and solution.locator("summary").is_visible()
        assert re.search(r"\S", solution.locator("summary").inner_text())
    finally:
        context.close()


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_a_lab_pages_answers_are_checked_by_the_labs_figures_in_the_worker(
    warm_page: Any, site_url: str, built_site: Path, lang: str
) -> None:
    """A lab page's exercises name a lab's figures (`lab-data_parallel.buckets bucket_kb=16`):
    the worker computes them with widgets.labs and calc, as the build did."""
    page = warm_page
    labs = sorted(p.parent.name for p in built_site.glob("lab-*/index.html"))
    assert "lab-data-parallel" in labs
    with_stall_timeout(page, "lab-data-parallel/", BOOT_MS)
    page.goto(site_url + PREFIX[lang] + "lab-data-parallel/")
    forms = page.locator("form.w-exercise").evaluate_all("fs => fs.map(f => [f.dataset.exercise, f.dataset.answer, f.dataset.spec])")
    assert len(forms) >= 3 and all(spec.startswith("lab-") for _, _, spec in forms)
    for ident, answer, _ in forms:
        form = f'form.w-exercise[data-exercise="{ident}"]'
        page.wait_for_selector(f'{form}[data-status="idle"]')
        text = typed_answer(float(answer), lang)
        assert submit(page, form, text) == "correct", page.inner_text(f'{form} [data-region="feedback"]')
        assert_native_message(page, form, text, lang)
        assert solution_open(page, form)
