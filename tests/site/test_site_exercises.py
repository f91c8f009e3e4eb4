"""The exercises of the built site: every stored answer is what calc computes, every
chapter ends with at least three, and both languages ask the same questions."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from widgets.framework.core import evaluate
from widgets.labs import figures

LANGS = {"id": "", "zh": "zh/"}
#: The reader's unit -> SI base units per one of it, written out again here (not taken
#: from widgets.framework.exercise) so that a wrong scale there cannot pass unnoticed.
SCALE = {
    "": 1, "x": 1, "%": 0.01, "B": 1, "KB": 1e3, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
    "s": 1, "ms": 1e-3, "min": 60, "h": 3600, "days": 86400,
    "FLOP": 1, "PFLOP": 1e15, "EFLOP": 1e18, "ZFLOP": 1e21, "TFLOP/s": 1e12, "GB/s": 1e9,
}
MIN_EXERCISES = 3


class Forms(HTMLParser):
    """The attributes of every `form.w-exercise` and whether a page has a widget."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, str | None]] = []
        self.widget = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "form" and "w-exercise" in (a.get("class") or "").split():
            self.forms.append(a)
        if a.get("data-widget"):
            self.widget = True


def read(path: Path) -> Forms:
    parser = Forms()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def pages(site: Path, lang: str) -> dict[str, Path]:
    """Page name (`zero`, `` for the home page) -> its index.html, in one language."""
    root = site / LANGS[lang]
    found = {"": root / "index.html"}
    for path in sorted(root.glob("*/index.html")):
        if lang == "id" and path.parent.name in (p.rstrip("/") for p in LANGS.values() if p):
            continue
        found[path.parent.name] = path
    return found


def calc_answer(spec: str, unit: str) -> float:
    name, rest = spec.split(".", 1)
    output, *args = rest.split()
    overrides = dict(arg.split("=", 1) for arg in args)
    if name.startswith("lab-"):  # a lab's figure (widgets/labs/), not a widget's output
        return figures(name[len("lab-"):], overrides)[output] / SCALE[unit]
    _, values = evaluate(name, overrides)
    return values[output] / SCALE[unit]


@pytest.mark.parametrize("lang", sorted(LANGS))
def test_every_stored_answer_is_what_calc_computes(built_site: Path, lang: str) -> None:
    checked = 0
    for name, path in pages(built_site, lang).items():
        forms = read(path).forms
        idents = [form["data-exercise"] for form in forms]
        assert len(idents) == len(set(idents)), f"{lang}/{name}: two exercises share an id: {idents}"
        for form in forms:
            where = f"{lang}/{name} {form['data-exercise']} ({form['data-spec']})"
            assert form["data-unit"] in SCALE, where
            assert float(form["data-answer"]) == calc_answer(form["data-spec"], form["data-unit"]), where
            tolerance = float(form["data-tolerance"])
            assert 0 <= tolerance <= 0.25, where
            assert form["data-status"] == "static" and "hidden" in form, where
            checked += 1
    if checked == 0:
        pytest.skip(f"no exercise in the {lang} pages yet")


@pytest.mark.parametrize("lang", sorted(LANGS))
def test_every_exercise_is_followed_by_its_worked_solution(built_site: Path, lang: str) -> None:
    for name, path in pages(built_site, lang).items():
        html = path.read_text(encoding="utf-8")
        for match in re.finditer(r'<form class="w-exercise"[^>]*data-exercise="([^"]+)".*?</form>(\s*<details)?', html, re.S):
            assert match.group(2), f"{lang}/{name}: {match.group(1)} has no <details> solution right after it"


@pytest.mark.parametrize("lang", sorted(LANGS))
def test_pages_with_exercises_carry_the_runtime_strings(built_site: Path, lang: str) -> None:
    for name, path in pages(built_site, lang).items():
        html = path.read_text(encoding="utf-8")
        if 'class="w-exercise"' not in html:
            continue
        blob = re.search(r'<script type="application/json" id="widgets-config">(.*?)</script>', html)
        assert blob, f"{lang}/{name}: exercises but no runtime settings"
        settings = json.loads(blob.group(1))
        assert settings["lang"] == lang and settings["exercise"]["checking"] and "{reason}" in settings["exercise"]["unavailable"]
        assert "assets/widgets/widgets.js" in html


def test_every_chapter_ends_with_at_least_three_exercises_in_both_languages(built_site: Path) -> None:
    """A chapter is a page with a live widget (not the home page, key ideas, FAQ,
    references, glossary or the Translate page)."""
    short = []
    for lang in LANGS:
        for name, path in pages(built_site, lang).items():
            page = read(path)
            if page.widget and len(page.forms) < MIN_EXERCISES:
                short.append(f"{lang}/{name}: {len(page.forms)}")
    assert short == [], f"chapters with fewer than {MIN_EXERCISES} typed-answer exercises: {', '.join(short)}"


def test_both_languages_ask_the_same_exercises_in_the_same_order(built_site: Path) -> None:
    source = pages(built_site, "id")
    for name, path in pages(built_site, "zh").items():
        if name not in source:
            continue
        ours = [(f["data-spec"], f["data-unit"], f["data-tolerance"]) for f in read(path).forms]
        theirs = [(f["data-spec"], f["data-unit"], f["data-tolerance"]) for f in read(source[name]).forms]
        assert ours == theirs, f"zh/{name}: the exercises differ from the Indonesian page"
