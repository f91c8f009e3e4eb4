"""What the plugin writes into a page from a translation is text, never markup: macro
values (units, number words) are escaped for Markdown and HTML, and the runtime's
settings are JSON that no string can close or comment out of its <script> block."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from typing import Any

import markdown
import pytest

from widgets.framework.locale import Locale, fill
from widgets.build.native import locale
from widgets.build.plugin import json_for_script, markdown_text

HOSTILE = [
    "<script>alert(document.domain)</script>",
    "</script><script>alert(1)</script>",
    "<!--<script>",
    "<img src=x onerror=alert(1)>",
    "**bold** _em_ `code` [link](javascript:alert(1)) | cell \\\\",
    "&lt; &amp;",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_macro_value_renders_as_exactly_its_text(text: str) -> None:
    html = markdown.markdown(f"Nilai: {markdown_text(text)}.", extensions=["tables"])
    parsed = _Text()
    parsed.feed(html)
    assert parsed.tags == ["p"], html  # no element but the paragraph
    assert "".join(parsed.text) == f"Nilai: {text}."


def test_a_macro_value_in_a_table_cell_stays_in_its_cell() -> None:
    html = markdown.markdown(f"| a | b |\n| - | - |\n| {markdown_text('1 | 2')} | x |", extensions=["tables"])
    assert html.count("<td>") == 2 and "1 &#124; 2" in html


def test_a_macro_with_a_hostile_unit_is_escaped_in_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """Even if a string with markup got past the catalog check, a macro could not carry it
    into the page as a tag."""
    from widgets.build import plugin

    real = locale("zh")
    strings = json.loads(json.dumps(real.strings))
    strings["units"]["year"] = "{value} 年<script>alert(document.domain)</script>"
    monkeypatch.setattr(plugin, "locale", lambda lang, directory: Locale("zh", strings))
    text = plugin.format_value("why", "time_1", {}, Locale("zh", strings))
    assert "<script>" in text  # the raw value, as the Locale formats it
    assert "<script" not in markdown.markdown(markdown_text(text))


@pytest.mark.parametrize("text", HOSTILE + ["\u2028", "\u2029", "'\"\\"])
def test_the_settings_block_cannot_be_closed_or_commented_out(text: str) -> None:
    settings = {"strings": {"loading": text, "reasons": {"other": text}}, "lang": "zh"}
    page = (f'<body><script type="application/json" id="widgets-config">{json_for_script(settings)}</script>'
            f'<script type="module" src="widgets.js"></script></body>')
    scripts = _Scripts()
    scripts.feed(page)
    assert scripts.found == [("application/json", None), ("module", "widgets.js")]
    assert json.loads(scripts.data[0]) == settings
    assert not set("<>&\u2028\u2029") & set(json_for_script(settings))


def test_a_translation_cannot_read_attributes_of_a_value() -> None:
    assert fill("{value} 秒", {"value": "3"}) == "3 秒"
    assert fill("{value.__class__} {value!r} {value:>9} {{value}}", {"value": "3"}) == "{value.__class__} {value!r} {value:>9} {3}"
    with pytest.raises(KeyError):
        fill("{missing}", {"value": "3"})


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


class _Scripts(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str | None, str | None]] = []
        self.data: list[str] = []

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag == "script":
            values = dict(attrs)
            self.found.append((values.get("type"), values.get("src")))

    def handle_data(self, data: str) -> None:
        if self.found and len(self.data) < len(self.found):
            self.data.append(data)
