"""A third language needs no code change: a catalog, a docs folder and one entry in
mkdocs.yml. Proven by building a copy of the site with Malay (``ms``) made from
Indonesian, one page left untranslated (so the "not translated yet" banner shows)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from i18n.catalog import load_catalog
from i18n.export import to_json_bytes

ROOT = Path(__file__).resolve().parents[2]
UNTRANSLATED = "faq.md"
MISSING_MS = "Halaman ini belum diterjemahkan ke bahasa Melayu; yang di bawah ialah teks asalnya dalam {source}."
MS_LANGUAGE = """\
        - locale: ms
          name: Bahasa Melayu
          build: true
          site_name: Latihan Teragih LLM
"""


def prepare_malay(site: Path | None, tmp: Path) -> dict[str, Any]:
    """The copy (mkdocs.yml, docs/, i18n/) with ``ms`` added, in `tmp`; returns its build."""
    shutil.copytree(ROOT / "docs", tmp / "docs")
    shutil.copytree(ROOT / "examples", tmp / "examples")  # the lab pages include their code
    shutil.copytree(ROOT / "i18n", tmp / "i18n", ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    # 1. the catalog: Indonesian strings, Malay name and banner
    ms = (tmp / "i18n" / "id.yml").read_text(encoding="utf-8")
    ms = ms.replace('  name: "Bahasa Indonesia"', '  name: "Bahasa Melayu"', 1)
    ms = re.sub(r'(?m)^  missing: ".*"$', f'  missing: "{MISSING_MS}"', ms, count=1)
    (tmp / "i18n" / "ms.yml").write_text(ms, encoding="utf-8")
    # 2. the pages: the Indonesian ones, but one left untranslated
    shutil.copytree(tmp / "docs" / "id", tmp / "docs" / "ms")
    (tmp / "docs" / "ms" / UNTRANSLATED).unlink()
    # 3. one entry in mkdocs.yml (and the widgets plugin pointed at the copied catalogs)
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert config.count("  - widgets\n") == 1, "the widgets plugin entry changed: update this test"
    config = config.replace("  - widgets\n", f"{MS_LANGUAGE}  - widgets:\n      i18n_dir: {tmp / 'i18n'}\n")
    (tmp / "mkdocs.yml").write_text(config, encoding="utf-8")
    return {"args": [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(tmp / "mkdocs.yml"), "-d", str(tmp / "site")],
            "cwd": tmp}


EARLY = {"third-language": prepare_malay}  # built in the background once the session's site is (tests/conftest.py)


@pytest.fixture(scope="module")
def malay_site(early: Any) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The copy with ``ms`` added, and its build's result."""
    return early.result("third-language")


def html(site: Path, path: str) -> str:
    return (site / "ms" / path / "index.html").read_text(encoding="utf-8")


def test_the_site_builds_with_a_third_language(malay_site: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    tmp, result = malay_site
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    assert '<html lang="ms"' in html(tmp / "site", "why-distributed-training")


def test_its_widgets_are_pre_rendered_and_its_strings_shipped(malay_site: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    tmp, _ = malay_site
    site = tmp / "site"
    page = html(site, "why-distributed-training")
    widget = re.search(r'<div class="w-widget".*?data-region="live"', page, re.S).group(0)
    assert 'data-widget="why"' in widget and 'data-status="static"' in widget
    assert "107,8 GB" in widget  # computed at build time, in the Malay catalog's number format
    settings = json.loads(re.search(r'<script type="application/json" id="widgets-config">(.*?)</script>', page).group(1))
    assert settings["lang"] == "ms"
    # widgets.js fetches new URL(`../i18n/${lang}.json`, its own URL): assets/i18n/ms.json
    assert '<script type="module" src="../../assets/widgets/widgets.js">' in page
    strings = site / "assets" / "i18n" / "ms.json"
    assert strings.read_bytes() == to_json_bytes(load_catalog(tmp / "i18n" / "ms.yml").nested())
    assert (site / "ms" / "why-distributed-training" / settings["wheel"]).resolve().is_file()


def test_an_untranslated_page_says_so_in_the_readers_language(malay_site: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    tmp, _ = malay_site
    page = html(tmp / "site", UNTRANSLATED.removesuffix(".md"))
    banner = MISSING_MS.format(source="Bahasa Indonesia")
    assert (f'<div class="admonition info translation-missing" lang="ms" role="note"><p>{banner} '
            '<a href="../translate/">Bantu menerjemahkannya</a></p></div>') in page
    assert '<div lang="id"><h1' in page  # the text below is Indonesian, and marked so
    assert "translation-missing" not in html(tmp / "site", "zero")


def test_its_glossary_falls_back_to_the_source_language(malay_site: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    tmp, _ = malay_site
    glossary = html(tmp / "site", "glossary")
    assert '<dt id="pipeline-bubble" lang="id"><strong>pipeline bubble</strong></dt><dd lang="id">' in glossary
    assert re.search(r'<abbr (tabindex="0" )?title="[^"]+">pipeline bubble</abbr>', html(tmp / "site", "pipeline-parallelism"))


def run_check(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "i18n", "check"], cwd=cwd, capture_output=True, text=True,
                          encoding="utf-8", env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)


def test_the_checker_finds_the_new_language_by_itself(malay_site: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    tmp, _ = malay_site
    result = run_check(tmp)
    already = set(run_check(ROOT).stderr.splitlines()[:-1])  # whatever the book itself has to fix
    new = [line for line in result.stderr.splitlines()[:-1] if line not in already]

    assert result.returncode == 1
    assert f"docs/ms/{UNTRANSLATED}:1: pages: missing page: translate docs/id/{UNTRANSLATED} into this file " \
           "(readers of ms see the source with a 'not translated yet' banner meanwhile)" in new
    # Everything the new language adds to do is about ms: its pages and its glossary blocks.
    assert all("docs/ms/" in line or ".ms: no ms translation of " in line for line in new), new
