"""`mkdocs build --strict` refuses a translator's mistake that would ship, naming file,
line and key: markup or a format expression in a catalog string, typographic quotes,
one mark for decimals and thousands, a list for a string, a full-width colon; in a page,
a <script>, a macro in full-width braces, a widget fence left open, a broken anchor.

Each case builds a small copy of the book (the real catalogs and glossary, one short
page per language) with one mistake in it; the build stops before rendering, so a case
costs about one MkDocs start. The builds run in the background once the session's site
is built (`EARLY`, tests/conftest.py); each test reads its build's result.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import pytest

from minibook import ROOT, build_command, edit, mini_book


def catalog_line(key: str) -> str:
    """The line of `key` (its last part) in the real i18n/zh.yml."""
    *parents, leaf = key.split(".")
    text = (ROOT / "i18n" / "zh.yml").read_text(encoding="utf-8")
    section = text.index(f"\n{parents[0]}:\n") if parents else 0
    return re.search(rf"^ +{leaf}: .*$", text[section:], re.M).group()


def test_the_mini_book_builds(early: Any) -> None:
    tmp, result = early.result("refuses-none")
    assert result.returncode == 0, result.stderr
    assert "单卡要存 107.8 GB" in (tmp / "site" / "zh" / "index.html").read_text(encoding="utf-8")


CATALOG_MISTAKES = {
    "script in a unit": ("units.year", lambda line: line.replace("年\"", "年<script>alert(document.domain)</script>\""),
                         "units.year: markup"),
    "comment in a runtime string": ("runtime.loading", lambda line: line.replace("…\"", "…<!--<script>\""),
                                    "runtime.loading: markup"),
    "typographic quotes": ("units.second", lambda line: line.replace('"{value} 秒"', "“{value} 秒”"),
                           "units.second: the value starts with the typographic quote"),
    "attribute of a value": ("units.second", lambda line: line.replace("{value}", "{value.__class__}"),
                             "units.second: the placeholder {value.__class__} is not a plain name"),
    "stray brace": ("units.second", lambda line: line.replace("{value}", "{value} {"), "units.second: a stray"),
    "list for a string": ("units.second", lambda line: line.replace('"{value} 秒"', '["{value}", "秒"]'),
                          "units.second: a list here, but a string in id.yml"),
    "full-width colon": ("units.second", lambda line: line.replace("second:", "second："),
                         "units.second: broken YAML: a full-width colon"),
    "one mark for both": ("number.group", lambda line: line.replace('","', '"."'),
                          "number.group: the thousands mark is the decimal mark too"),
}


@pytest.mark.parametrize("case", CATALOG_MISTAKES)
def test_the_build_refuses_a_catalog_mistake_at_its_line(early: Any, case: str) -> None:
    _, _, message = CATALOG_MISTAKES[case]
    tmp, result = early.result(f"refuses-catalog-{case}")
    number = (tmp / "line").read_text(encoding="utf-8")
    assert result.returncode != 0
    assert f"i18n/zh.yml:{number}: {message}" in result.stderr, result.stderr[-2000:]


PAGE_MISTAKES = {
    "script": ("单卡要存", "<script>alert(document.domain)</script>\n\n单卡要存", "a <script> in the page"),
    "full-width braces": ("{{ why.state_bytes }}", "｛｛ why.state_bytes ｝｝", "full-width braces"),
    "fence left open": ("```widget why\n```\n", "```widget why\n\n", "the ```widget fence opened here is never closed"),
    "broken anchor": ("单卡要存", "见[上文](#没有这一节)。单卡要存", "links: broken anchor #没有这一节"),
}


def the_mini_book(site: Path | None, tmp: Path) -> dict[str, Any]:
    return build_command(mini_book(tmp))


def catalog_mistake(case: str) -> Callable[[Path | None, Path], dict[str, Any]]:
    def prepare(site: Path | None, tmp: Path) -> dict[str, Any]:
        key, change, _ = CATALOG_MISTAKES[case]
        config = mini_book(tmp)
        line = catalog_line(key)
        (tmp / "line").write_text(str(edit(tmp / "i18n" / "zh.yml", line, change(line))), encoding="utf-8")
        return build_command(config)
    return prepare


def page_mistake(case: str) -> Callable[[Path | None, Path], dict[str, Any]]:
    def prepare(site: Path | None, tmp: Path) -> dict[str, Any]:
        old, new, _ = PAGE_MISTAKES[case]
        config = mini_book(tmp)
        (tmp / "line").write_text(str(edit(tmp / "docs" / "zh" / "index.md", old, new)), encoding="utf-8")
        return build_command(config)
    return prepare


# Each case's mini book, written and built in the background (its test reads the result).
EARLY = {
    "refuses-none": the_mini_book,
    **{f"refuses-catalog-{case}": catalog_mistake(case) for case in CATALOG_MISTAKES},
    **{f"refuses-page-{case}": page_mistake(case) for case in PAGE_MISTAKES},
}


@pytest.mark.parametrize("case", PAGE_MISTAKES)
def test_the_build_refuses_a_page_mistake_at_its_line(early: Any, case: str) -> None:
    _, _, message = PAGE_MISTAKES[case]
    tmp, result = early.result(f"refuses-page-{case}")
    number = (tmp / "line").read_text(encoding="utf-8")
    assert result.returncode != 0
    assert re.search(rf"docs/zh/index\.md:{number}: .*{re.escape(message)}", result.stderr), result.stderr[-2000:]


def test_a_script_that_reaches_the_html_stops_the_policy(tmp_path: Path) -> None:
    """The last guard: whatever path a script took into the HTML, the policy hashes only
    the theme's own inline scripts and refuses any other, naming the file and line."""
    from widgets.build.headers import UnknownScript, inline_script_hashes

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "index.html").write_text("<p>x</p>\n<script>alert(1)</script>\n", encoding="utf-8")
    with pytest.raises(UnknownScript, match=r"^a/index\.html:2: an inline script that neither the theme nor the book ships"):
        inline_script_hashes(tmp_path)
