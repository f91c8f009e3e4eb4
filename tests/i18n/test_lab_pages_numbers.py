"""Every number on a lab page comes from a macro: the lab pages are where a reader
compares the book with a run, so a figure typed by hand (and left behind when the lab
changes) would be the worst kind of mistake. The rule is checked on the source: outside
code, math, macros and link targets, no standalone number is left."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
LAB_PAGES = sorted(DOCS.glob("*/lab-*.md"))

FRONT = re.compile(r"\A---\n.*?\n---\n", re.S)
FENCE = re.compile(r"^([ \t]*)(```|~~~).*?^\1\2[ \t]*$", re.S | re.M)
BLOCK_MATH = re.compile(r"\$\$.*?\$\$", re.S)
INLINE = re.compile(r"`[^`\n]*`|\$[^$\n]+\$|\{\{.*?\}\}|\]\([^)\s]*\)")
# "Latihan 1 — …" / "练习 1 — …": an exercise's number is its place, not a figure.
EXERCISE_TITLE = re.compile(r'^[ \t]*[!?]{3} question "(?:Latihan|练习) \d+ ', re.M)
# Names, not figures: a product's number (ZeRO-3, GPT-2, Llama 2, DeepSeek-V3) and the
# year of a citation ("Korthikanti dkk. 2022", "Shoeybi 等人 2019", "et al. 2021").
NAMES = re.compile(r"\b[A-Za-z][\w]*-[A-Z]?\d+\b|\b(?:Llama|Mixtral|Qwen|Mistral) \d+(?:\.\d+)?\b"
                   r"|(?:dkk\.|et al\.|等人)[ \t]*\(?\d{4}\)?")
NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])")


def stray_numbers(text: str) -> list[tuple[int, str]]:
    """(line, number) for each number typed by hand, lines counted in the file as written."""
    keep_lines = lambda m: "\n" * m.group(0).count("\n")  # noqa: E731
    text = FRONT.sub(keep_lines, text)
    for pattern in (FENCE, BLOCK_MATH, INLINE, EXERCISE_TITLE, NAMES):
        text = pattern.sub(lambda m: " " + keep_lines(m), text)
    return [(text.count("\n", 0, m.start()) + 1, m.group(0)) for m in NUMBER.finditer(text)]


def test_the_rule_catches_a_typed_number() -> None:
    assert stray_numbers("Bucket 16 KiB memberi {{ lab-x.y }} bucket.") == [(1, "16")]
    assert stray_numbers("`--bucket-kb 16`, $2(N-1)/N$, fp32, [a](b2.md)") == []
    assert stray_numbers('!!! question "Latihan 2 — dua proses"\n    7 byte') == [(2, "7")]
    assert stray_numbers("ZeRO-3, GPT-2, DeepSeek-V3, Llama 2 7B, Korthikanti dkk. 2022, Shoeybi 等人 2019") == []
    assert stray_numbers("ZeRO-3 memakai 3 kali") == [(1, "3")]


def test_there_are_lab_pages_in_both_languages() -> None:
    names = {(p.parent.name, p.name) for p in LAB_PAGES}
    assert ("id", "lab-data-parallel.md") in names and ("zh", "lab-data-parallel.md") in names


@pytest.mark.parametrize("page", LAB_PAGES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_number_on_a_lab_page_is_a_macro(page: Path) -> None:
    found = stray_numbers(page.read_text(encoding="utf-8"))
    assert found == [], f"{page.relative_to(DOCS)}: numbers typed by hand (line, number): {found}"
