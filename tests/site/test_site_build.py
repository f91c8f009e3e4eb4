"""The built site: both languages, widgets and numbers pre-rendered, nothing external."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = "why-distributed-training/index.html"


def page(site: Path, lang: str, path: str = CHAPTER) -> str:
    return (site / ("" if lang == "id" else "zh") / path).read_text(encoding="utf-8")


def before_scripts(html: str) -> str:
    """The page as a reader without JavaScript gets it: scripts removed."""
    return re.sub(r"<script\b.*?</script>", "", html, flags=re.S)


def test_both_languages_are_built(built_site: Path) -> None:
    for lang in ("id", "zh"):
        assert "<html lang=\"%s\"" % lang in page(built_site, lang, "index.html")
        assert 'data-widget="why"' in page(built_site, lang)


def test_each_language_describes_itself_in_its_own_language(built_site: Path) -> None:
    """Search engines and link previews show the description: Chinese pages carry a
    Chinese one, Indonesian pages an Indonesian one."""
    description = re.compile(r'<meta name="description" content="([^"]+)"')
    for path in ("index.html", CHAPTER):
        zh = description.search(page(built_site, "zh", path)).group(1)
        id_ = description.search(page(built_site, "id", path)).group(1)
        assert re.search(r"[\u4e00-\u9fff]{4}", zh), zh
        assert not re.search(r"[\u4e00-\u9fff]", id_) and "Buku" in id_, id_


def test_indonesian_chapter_has_the_numbers_before_any_script_runs(built_site: Path) -> None:
    html = before_scripts(page(built_site, "id"))
    widget = re.search(r'<div class="w-widget".*?data-region="live"', html, re.S).group(0)
    for text in ("107,8 GB", "8,1 × 10²² FLOP", "17,1 tahun", "97,5 hari"):
        assert text in widget
    assert 'data-status="static"' in widget


def test_chinese_chapter_has_the_numbers_before_any_script_runs(built_site: Path) -> None:
    html = before_scripts(page(built_site, "zh"))
    widget = re.search(r'<div class="w-widget".*?data-region="live"', html, re.S).group(0)
    for text in ("107.8 GB", "8.1 × 10²² FLOP", "17.1 年", "97.5 天"):
        assert text in widget


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_macros_are_replaced_by_computed_numbers(built_site: Path, lang: str) -> None:
    html = page(built_site, lang)
    assert "{{" not in html and "WIDGETSLOT" not in html
    # The Llama 2 70B row of the time table is computed, not typed.
    from widgets.framework.core import format_value
    from widgets.build.native import locale

    assert format_value("why", "time_1024", {"model": "llama2-70b"}, locale(lang)) in html


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_math_is_rendered_to_mathml_at_build_time(built_site: Path, lang: str) -> None:
    html = page(built_site, lang)
    assert "<math" in html
    assert "$$" not in before_scripts(html)


class Resources(HTMLParser):
    """Every URL a page would load: src, href of stylesheets/icons/modules, srcset."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("src"):
            self.urls.append(a["src"])
        if tag == "link" and a.get("href") and a.get("rel") not in ("alternate", "canonical"):
            self.urls.append(a["href"])


def test_no_page_loads_anything_from_another_host(built_site: Path) -> None:
    pages = sorted(built_site.rglob("*.html"))
    assert len(pages) >= 5
    for path in pages:
        parser = Resources()
        parser.feed(path.read_text(encoding="utf-8"))
        external = [u for u in parser.urls if re.match(r"^(https?:)?//", u)]
        assert external == [], f"{path.relative_to(built_site)} loads {external}"
    for path in built_site.rglob("*.css"):
        assert not re.search(r"@import\s+url\(\s*['\"]?https?:", path.read_text(encoding="utf-8", errors="ignore"))


def test_runtime_is_shipped_once_at_the_site_root(built_site: Path) -> None:
    for name in ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib-*.zip", "pyodide-lock.json"):
        assert len(list((built_site / "assets" / "pyodide").glob(f"*/{name}"))) == 1
    assert not list((built_site / "assets" / "pyodide").glob("*/python_stdlib.zip"))  # only the trimmed one
    wheels = list((built_site / "assets" / "wheels").glob("*/dtbook-*-py3-none-any.whl"))
    assert len(wheels) == 1
    assert not (built_site / "zh" / "assets" / "pyodide").exists()
    for lang in ("id", "zh"):
        strings = json.loads((built_site / "assets" / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))
        assert strings["why"]["controls"]["tokens"]["label"]


def test_page_settings_point_at_the_shared_runtime_with_relative_urls(built_site: Path) -> None:
    for lang, prefix in (("id", "../"), ("zh", "../../")):
        html = page(built_site, lang)
        settings = json.loads(re.search(r'<script type="application/json" id="widgets-config">(.*?)</script>', html).group(1))
        assert settings["lang"] == lang
        assert settings["wheel"].startswith(prefix + "assets/wheels/")
        assert (built_site / ("zh" if lang == "zh" else "") / "why-distributed-training" / settings["wheel"]).resolve().is_file()
        assert f'<script type="module" src="{prefix}assets/widgets/widgets.js">' in html


def test_language_switcher_links_the_same_chapter(built_site: Path) -> None:
    assert 'href="../zh/why-distributed-training/" hreflang="zh"' in page(built_site, "id")
    assert re.search(r'href="\.\./\.\./why-distributed-training/" hreflang="id"', page(built_site, "zh"))


def test_each_language_has_its_own_segmented_search_index(built_site: Path) -> None:
    # mkdocs-static-i18n merges every language into one index; the build splits it again
    # (widgets/build/searchindex.py), so a reader downloads the text of one language only.
    root = json.loads((built_site / "search" / "search_index.json").read_text(encoding="utf-8"))
    chinese = json.loads((built_site / "zh" / "search" / "search_index.json").read_text(encoding="utf-8"))
    assert root["docs"] and chinese["docs"]
    assert not any(doc["location"].startswith("zh/") for doc in root["docs"])
    assert any(doc["location"] == "why-distributed-training/" for doc in chinese["docs"])
    assert all("\u200b" in doc["text"] for doc in chinese["docs"] if doc["text"]), "jieba did not segment the Chinese pages"
    assert "\\u200b" in chinese["config"]["separator"] or "\u200b" in chinese["config"]["separator"]
    # Chinese pages look for their index in their own folder.
    config = json.loads(re.search(r'<script id="__config" type="application/json">(.*?)</script>', page(built_site, "zh")).group(1))
    assert config["base"] == ".."
    # Widget figures and exercise forms stay out of the index.
    assert not any("data-out" in doc["text"] or "Toleransi ±" in doc["text"] for doc in root["docs"])


def test_material_builds_its_search_index_only_when_search_is_opened(built_site: Path) -> None:
    # widgets/build/lazysearch.py: the eager index setup and the eager highlighter of
    # Material's bundle are patched, nothing else; the theme's file is untouched.
    from material import __file__ as material_init
    from widgets.build.lazysearch import EAGER, HIGHLIGHT_EAGER, HIGHLIGHT_LAZY, LAZY

    (bundle,) = (built_site / "assets" / "javascripts").glob("bundle.*.min.js")
    original = Path(material_init).parent / "templates" / "assets" / "javascripts" / bundle.name
    text, theirs = bundle.read_text(encoding="utf-8"), original.read_text(encoding="utf-8")
    assert theirs.count(EAGER) == 1 and EAGER not in text
    assert theirs.count(HIGHLIGHT_EAGER) == 1 and text.count(HIGHLIGHT_LAZY) == 1
    assert text == theirs.replace(EAGER, LAZY).replace(HIGHLIGHT_EAGER, HIGHLIGHT_LAZY)


def test_a_broken_translation_file_fails_the_build_naming_file_key_and_line(tmp_path: Path) -> None:
    i18n = tmp_path / "i18n"
    i18n.mkdir()
    (i18n / "id.yml").write_text((ROOT / "i18n" / "id.yml").read_text(encoding="utf-8"), encoding="utf-8")
    zh = (ROOT / "i18n" / "zh.yml").read_text(encoding="utf-8").replace('label: "模型"', 'label: ""')
    (i18n / "zh.yml").write_text(zh, encoding="utf-8")
    line = zh.splitlines().index('      label: ""') + 1
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    config = config.replace("docs_dir: docs", f"docs_dir: {ROOT / 'docs'}")
    config = config.replace("  - widgets\n", f"  - widgets:\n      i18n_dir: {i18n}\n")
    (tmp_path / "mkdocs.yml").write_text(config, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(tmp_path / "mkdocs.yml"), "-d", str(tmp_path / "out")],
        cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode != 0
    assert f"zh.yml:{line}: why.controls.model.label:" in result.stdout + result.stderr
