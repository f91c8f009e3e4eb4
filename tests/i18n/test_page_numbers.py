"""No number typed by hand where a reader checks the book's arithmetic.

* A **lab page** is where a reader compares the book with a run: outside code, math,
  macros and link targets, no standalone number is left.
* A **worked example or solution** (``!!! example`` and ``??? success`` blocks of every
  chapter) is where a reader follows the arithmetic step by step. Its prose follows the
  lab-page rule, and its math may hold only the constants of the page's own formulas
  (a number that a formula outside the worked blocks states, such as the 34 and 5 of
  ``sbh(34 + 5as/h)``) and the givens of the example written as ``$t = 8$``. Every
  intermediate result (``= 23\\,sbh``, ``34 + 160``) is a macro, so a figure the page
  computes cannot be contradicted by a figure typed next to it.

The rule is checked on the source, lines counted in the file as written.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = sorted(DOCS.glob("*/*.md"))
LAB_PAGES = [p for p in PAGES if p.name.startswith("lab-")]
CHAPTERS = [p for p in PAGES if not p.name.startswith("lab-")]

FRONT = re.compile(r"\A---\n.*?\n---\n", re.S)
FENCE = re.compile(r"^([ \t]*)(```|~~~).*?^\1\2[ \t]*$", re.S | re.M)
BLOCK_MATH = re.compile(r"\$\$.*?\$\$", re.S)
INLINE_MATH = re.compile(r"(?<!\$)\$(?!\$)[^$\n]+\$")
INLINE = re.compile(r"`[^`\n]*`|\$[^$\n]+\$|\{\{.*?\}\}|\]\([^)\s]*\)")
MACRO = re.compile(r"\{\{.*?\}\}", re.S)
# "Latihan 1 — …" / "练习 1 — …" / "Contoh 2: …" / "例 2：…": a place, not a figure.
TITLE = re.compile(r'^[ \t]*[!?]{3}\+? (?:question|example) "(?:Latihan|练习|Contoh|例) \d+ ?', re.M)
# Names, not figures: a product's number (ZeRO-3, GPT-2, Llama 2, DeepSeek-V3) and the
# year of a citation ("Korthikanti dkk. 2022", "Shoeybi 等人 2019", "et al. 2021").
NAMES = re.compile(r"\b[A-Za-z][\w]*-[A-Z]?\d+\b|\b(?:Llama|Mixtral|Qwen|Mistral) \d+(?:\.\d+)?\b"
                   r"|(?:dkk\.|et al\.|等人)[ \t]*\(?\d{4}\)?")
NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])")
# Inside math: digits with TeX's decimal comma ("4{,}25") or thin spaces are one number.
MATH_NUMBER = re.compile(r"(?<![A-Za-z_\d])\d+(?:(?:\{,\}|[.,]|\\,)\d+)*")
# A given of the example: one symbol (with an optional subscript) equal to one number.
GIVEN = re.compile(r"^\s*(?:\\[A-Za-z]+|[A-Za-z]{1,2})(?:_\{?[\w\\ ]+\}?)?\s*(?:=|\\le|\\ge)\s*"
                   r"\d+(?:(?:\{,\}|[.,])\d+)*\s*$")
WORKED = re.compile(r"^([ \t]*)(?:\?\?\?|!!!)\+? (?:success|example)\b")


def _keep_lines(match: re.Match[str]) -> str:
    return " " + "\n" * match.group(0).count("\n")


def stray_numbers(text: str) -> list[tuple[int, str]]:
    """(line, number) for each number typed by hand in prose, outside code, math,
    macros, link targets, titles and names."""
    text = FRONT.sub(_keep_lines, text)
    for pattern in (FENCE, BLOCK_MATH, INLINE, TITLE, NAMES):
        text = pattern.sub(_keep_lines, text)
    return [(text.count("\n", 0, m.start()) + 1, m.group(0)) for m in NUMBER.finditer(text)]


def worked_blocks(text: str) -> list[tuple[int, int]]:
    """(first, last) line indexes (0-based, inclusive) of every example and solution
    block: the admonition line and the lines indented deeper than it."""
    lines = text.split("\n")
    blocks, index = [], 0
    while index < len(lines):
        head = WORKED.match(lines[index])
        if head is None:
            index += 1
            continue
        indent, end = len(head.group(1)), index + 1
        while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent):
            end += 1
        while end - 1 > index and not lines[end - 1].strip():
            end -= 1
        blocks.append((index, end - 1))
        index = end
    return blocks


def _math_spans(text: str) -> list[re.Match[str]]:
    text = FENCE.sub(lambda m: "\x00" * len(m.group(0)), text)
    text = MACRO.sub(lambda m: "\x00" * len(m.group(0)), text)
    spans = list(BLOCK_MATH.finditer(text))
    masked = BLOCK_MATH.sub(lambda m: "\x00" * len(m.group(0)), text)
    return spans + list(INLINE_MATH.finditer(masked))


def _normal(number: str) -> str:
    return re.sub(r"\{,\}|[.,]|\\,", "", number)


def _body(span: re.Match[str]) -> str:
    return span.group(0).strip("$")


def formula_constants(text: str) -> set[str]:
    """Numbers the page's formulas state outside its worked blocks (givens aside)."""
    lines = text.split("\n")
    inside = {i for first, last in worked_blocks(text) for i in range(first, last + 1)}
    constants: set[str] = set()
    for span in _math_spans(text):
        if text.count("\n", 0, span.start()) in inside or GIVEN.match(_body(span)):
            continue
        constants.update(_normal(n) for n in MATH_NUMBER.findall(_body(span)))
    del lines
    return constants


def hand_arithmetic(text: str) -> list[tuple[int, str]]:
    """(line, number) for each number typed by hand in a worked block: in its prose, and
    in its math unless the page's formulas state it or it is a given (``$t = 8$``)."""
    found: list[tuple[int, str]] = []
    lines = text.split("\n")
    blocks = worked_blocks(text)
    constants = formula_constants(text)
    for first, last in blocks:
        body = "\n" * (first + 1) + "\n".join(lines[first + 1:last + 1])
        found += stray_numbers(body)
    inside = {i for first, last in blocks for i in range(first, last + 1)}
    for span in _math_spans(text):
        line = text.count("\n", 0, span.start())
        if line not in inside or GIVEN.match(_body(span)):
            continue
        for number in MATH_NUMBER.finditer(_body(span)):
            if _normal(number.group(0)) not in constants:
                found.append((line + 1 + span.group(0).count("\n", 0, number.start() + 1), number.group(0)))
    return sorted(found)


def test_the_rule_catches_a_typed_number() -> None:
    assert stray_numbers("Bucket 16 KiB memberi {{ lab-x.y }} bucket.") == [(1, "16")]
    assert stray_numbers("`--bucket-kb 16`, $2(N-1)/N$, fp32, [a](b2.md)") == []
    assert stray_numbers('!!! question "Latihan 2 — dua proses"\n    7 byte') == [(2, "7")]
    assert stray_numbers("ZeRO-3, GPT-2, DeepSeek-V3, Llama 2 7B, Korthikanti dkk. 2022, Shoeybi 等人 2019") == []
    assert stray_numbers("ZeRO-3 memakai 3 kali") == [(1, "3")]


PAGE = """# Bab

$$
A = sbh\\,(34 + 5as/h)
$$

!!! example "Contoh 1: Llama 2 7B"
    Dengan $t = 8$ dan $5as/h$ = {{ a.score }}:

    $$
    sbh\\,(34 + 160) = 194\\,sbh
    $$

    jadi 194 kali lebih besar, dan $34/8$ = {{ a.x }}.

Teks biasa boleh menyebut 80 GB dan $t = 4$.
"""


def test_the_rule_catches_hand_arithmetic_in_a_worked_block() -> None:
    assert formula_constants(PAGE) == {"34", "5"}
    assert hand_arithmetic(PAGE) == [(11, "160"), (11, "194"), (14, "194"), (14, "8")]
    fixed = PAGE.replace("sbh\\,(34 + 160) = 194\\,sbh", "sbh\\,(34 + 5as/h)").replace(
        "jadi 194 kali lebih besar, dan $34/8$", "jadi {{ a.ratio }} kali lebih besar, dan $34/t$")
    assert hand_arithmetic(fixed) == []


def test_a_solution_block_ends_where_its_indentation_ends() -> None:
    text = '!!! question "Latihan 1 — x"\n    Soal 3 GPU.\n\n    ??? success "Pembahasan"\n        Jawab 7.\n\n    Lanjut 9.\n'
    assert worked_blocks(text) == [(3, 4)]
    assert hand_arithmetic(text) == [(5, "7")]


def test_there_are_pages_of_both_kinds_in_both_languages() -> None:
    names = {(p.parent.name, p.name) for p in PAGES}
    for lang in ("id", "zh"):
        assert (lang, "lab-data-parallel.md") in names and (lang, "activation-memory.md") in names


@pytest.mark.parametrize("page", LAB_PAGES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_number_on_a_lab_page_is_a_macro(page: Path) -> None:
    found = stray_numbers(page.read_text(encoding="utf-8"))
    assert found == [], f"{page.relative_to(DOCS)}: numbers typed by hand (line, number): {found}"


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_worked_example_or_solution_states_a_number_by_hand(page: Path) -> None:
    found = hand_arithmetic(page.read_text(encoding="utf-8"))
    assert found == [], (f"{page.relative_to(DOCS)}: numbers typed by hand in a worked example or "
                         f"solution (line, number); use a macro: {found}")
