"""Build errors name the line of the file as written, front matter included (a zh page
carries `source_hash` front matter), also below a widget fence that the build replaced."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from mkdocs.exceptions import PluginError

from widgets.build.plugin import WidgetsPlugin

FRONT = "---\nsource_hash: 0123456789ab\n---\n"
BODY = "# Judul\n\n```widget why\nmodel: llama2-13b\n```\n\nTeks {{ why.params }}.\n\n"


def render(tmp_path: Path, text: str) -> str:
    source = tmp_path / "page.md"
    source.write_text(text, encoding="utf-8")
    plugin = WidgetsPlugin()
    errors, warnings = plugin.load_config({})
    assert not errors, errors
    plugin._slots, plugin._fallback, plugin._glossary = {}, {}, None
    page = SimpleNamespace(file=SimpleNamespace(src_uri="zh/page.md", abs_src_path=str(source), locale="id"))
    config = SimpleNamespace(plugins={}, theme={"language": "id"})
    body = text.split("---\n", 2)[2] if text.startswith("---\n") else text
    return plugin.on_page_markdown(body, page, config, None)


@pytest.mark.parametrize("front", ["", FRONT])
def test_a_bad_macro_below_a_widget_names_its_own_line(tmp_path: Path, front: str) -> None:
    text = front + BODY + "Salah {{ why.nope }}.\n"
    line = text.splitlines().index("Salah {{ why.nope }}.") + 1
    with pytest.raises(PluginError, match=rf"zh/page\.md:{line}: .*why\.nope"):
        render(tmp_path, text)


@pytest.mark.parametrize("front", ["", FRONT])
def test_a_bad_widget_fence_names_its_own_line(tmp_path: Path, front: str) -> None:
    text = front + BODY + "```widget why\n```\n"
    line = len(text.splitlines()) - 1
    with pytest.raises(PluginError, match=rf"zh/page\.md:{line}: widget 'why' appears twice"):
        render(tmp_path, text)


def test_a_good_page_renders_and_keeps_its_lines(tmp_path: Path) -> None:
    out = render(tmp_path, FRONT + BODY)
    assert "{{" not in out and out.count("\n") >= BODY.count("\n")
