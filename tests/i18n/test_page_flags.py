"""A yes/no output is for the widget's table, not for a sentence: pasted into prose it
reads "d = 8 sudah muat: Ya" / "（放得进：否）". A chapter says the fact in words, and a
chapter-claim test (tests/widgets/test_widgets_*_chapter.py or the widget's tests) holds
the words to calc's value."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from widgets import REGISTRY

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = sorted(DOCS.glob("*/*.md"))
MACRO = re.compile(r"\{\{\s*([a-z0-9_-]+)\.([a-z0-9_]+)")


def flags_in(text: str) -> list[tuple[int, str]]:
    found = []
    for match in MACRO.finditer(text):
        widget, output = match.groups()
        module = REGISTRY.get(widget) if widget in REGISTRY else None
        if module is not None and getattr(module, "OUTPUTS", {}).get(output) == "yesno":
            found.append((text.count("\n", 0, match.start()) + 1, f"{widget}.{output}"))
    return found


def test_the_rule_finds_a_flag_macro() -> None:
    assert flags_in("Muat? {{ zero.fits stage=3 }}, {{ zero.state_per_gpu_bytes }}") == [(1, "zero.fits")]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_page_pastes_a_yes_no_output_into_prose(page: Path) -> None:
    found = flags_in(page.read_text(encoding="utf-8"))
    assert found == [], f"{page.relative_to(DOCS)}: yes/no outputs in prose (line, output); say it in words: {found}"
