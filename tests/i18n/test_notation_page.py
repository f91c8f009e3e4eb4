"""The Notation page: one symbol table, in every language, reachable from the nav.

The style guide (CONTRIBUTING.md, "Notation") makes ``docs/<lang>/notation.md`` the
place where every symbol of the book is listed once. These tests hold that page to it:

* every language of mkdocs.yml has the page, and the nav lists it (under Penutup);
* both languages list the same symbols, row for row, in the same order, and each row
  links to the same first chapter;
* every symbol of the book's notation (the editorial brief, issue #17, rule 2) has a row.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGE = "notation.md"

#: The symbols the book's notation fixes (as they are written in the page's math).
REQUIRED = (
    r"\Psi", "D", "C", "L", "h", "a", "h_{kv}", r"d_{\text{ff}}", "V", "s", "b", "B", "m",
    "t", "p", "d", "cp", "ep", "G", "n", "i", "d_s", "d_r", "f", "g", "X", r"\beta", r"\alpha",
    "S", "T", r"k_\alpha", r"c_\beta", r"\mathrm{F}", r"\mathrm{B}", r"\mathrm{W}", "T_F", "T_B",
    "T_W", r"\lambda", r"\text{CF}", r"N_{\text{tok}}", "r", r"M_{\text{GPU}}",
)
#: Other papers' letters the page must map to the book's (searched in the page's text).
MAPPED = ("N_d", "Kaplan", r"\bar g", "Korthikanti", "FSDP", "DeepSeek-V3")

ROW = re.compile(r"^\|(.+)\|\s*$")
MATH = re.compile(r"\$([^$]+)\$")
LINK = re.compile(r"\]\(([^)#\s]+)")


class _Loader(yaml.SafeLoader):
    """mkdocs.yml with its !relative and !!python tags read as plain values."""


_Loader.add_multi_constructor("", lambda loader, suffix, node: None)
_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


def mkdocs() -> dict[str, Any]:
    return yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_Loader)


def languages() -> list[str]:
    plugins = mkdocs()["plugins"]
    i18n = next(p["i18n"] for p in plugins if isinstance(p, dict) and "i18n" in p)
    return [lang["locale"] for lang in i18n["languages"]]


def nav_entries(items: Any, trail: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str]]:
    """(titles leading to it, file) for every page of the nav."""
    found: list[tuple[tuple[str, ...], str]] = []
    for item in items if isinstance(items, list) else [items]:
        if isinstance(item, str):
            found.append((trail, item))
            continue
        for title, value in item.items():
            if isinstance(value, str):
                found.append((trail + (title,), value))
            else:
                found += nav_entries(value, trail + (title,))
    return found


def symbol_rows(text: str) -> list[tuple[tuple[str, ...], str]]:
    """(symbols, first-chapter link) for each row of the page's first table (the book's
    own letters): the symbols are the math of the first cell, the link the last cell's."""
    rows: list[tuple[tuple[str, ...], str]] = []
    in_table = False
    for line in text.split("\n"):
        row = ROW.match(line)
        if row is None:
            if in_table:
                break
            continue
        cells = [cell.strip() for cell in row.group(1).split("|")]
        if not in_table:  # the header, then the --- line
            in_table = True
            continue
        if set(cells[0]) <= set("-: "):
            continue
        link = LINK.search(cells[-1])
        rows.append((tuple(m.strip() for m in MATH.findall(cells[0])), link.group(1) if link else ""))
    return rows


def page_text(lang: str) -> str:
    return (DOCS / lang / PAGE).read_text(encoding="utf-8")


@pytest.mark.parametrize("lang", languages())
def test_every_language_has_the_page(lang: str) -> None:
    assert (DOCS / lang / PAGE).is_file(), f"docs/{lang}/{PAGE} is missing"


def test_the_nav_lists_the_page_under_the_closing_section() -> None:
    entries = nav_entries(mkdocs()["nav"])
    where = [trail for trail, page in entries if page == PAGE]
    assert where, f"{PAGE} is not in the nav of mkdocs.yml"
    assert where[0][0] == "Penutup", f"{PAGE} is under {where[0]!r}, not under Penutup"
    title = where[0][-1]
    plugins = mkdocs()["plugins"]
    i18n = next(p["i18n"] for p in plugins if isinstance(p, dict) and "i18n" in p)
    for lang in i18n["languages"]:
        if not lang.get("default"):
            assert title in (lang.get("nav_translations") or {}), (
                f"nav title {title!r} has no nav_translations entry for {lang['locale']}")


def test_the_page_has_a_row_per_symbol() -> None:
    rows = symbol_rows(page_text("id"))
    assert len(rows) >= len(REQUIRED) - 4  # the pipeline passes and their times share rows
    for symbols, link in rows:
        assert symbols, f"a row without a symbol in $...$: {link}"
        assert link.endswith(".md") and (DOCS / "id" / link).is_file(), f"{symbols}: first chapter {link!r}"


@pytest.mark.parametrize("lang", languages())
def test_every_symbol_of_the_notation_is_listed(lang: str) -> None:
    listed = {symbol for symbols, _ in symbol_rows(page_text(lang)) for symbol in symbols}
    missing = [symbol for symbol in REQUIRED if symbol not in listed]
    assert not missing, f"docs/{lang}/{PAGE} does not list {missing}"
    text = page_text(lang)
    unmapped = [letter for letter in MAPPED if letter not in text]
    assert not unmapped, f"docs/{lang}/{PAGE} does not map {unmapped}"


@pytest.mark.parametrize("lang", [lang for lang in languages() if lang != "id"])
def test_the_languages_list_the_same_symbols_in_the_same_order(lang: str) -> None:
    source, translation = symbol_rows(page_text("id")), symbol_rows(page_text(lang))
    assert [s for s, _ in translation] == [s for s, _ in source], (
        f"docs/{lang}/{PAGE} lists other symbols, or in another order, than docs/id/{PAGE}")
    assert [c for _, c in translation] == [c for _, c in source], (
        f"docs/{lang}/{PAGE} gives other first chapters than docs/id/{PAGE}")


def test_the_rules_catch_a_broken_page() -> None:
    good = "| S | M | U | C |\n| --- | --- | --- | --- |\n| $\\Psi$ | p | x | [a](why-distributed-training.md) |\n"
    assert symbol_rows(good) == [(("\\Psi",), "why-distributed-training.md")]
    assert symbol_rows(good.replace("$\\Psi$", "Psi")) == [((), "why-distributed-training.md")]
    assert nav_entries([{"A": "a.md"}, {"Penutup": [{"N": PAGE}]}]) == [(("A",), "a.md"), (("Penutup", "N"), PAGE)]
