"""``python -m i18n status``: a Markdown table of how complete each language is."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from i18n.catalog import load_catalog
from i18n.glossary import load_glossary
from i18n.status import status_markdown

PROJECT = Path(__file__).resolve().parents[2]
I18N = PROJECT / "i18n"


def test_status_counts_keys_pages_stale_pages_and_glossary_terms(book_copy: Path) -> None:
    (book_copy / "zh" / "translate.md").unlink()
    with (book_copy / "id" / "index.md").open("a", encoding="utf-8") as file:
        file.write("\nKalimat baru.\n")
    keys = len(load_catalog(I18N / "id.yml").entries)
    terms = len(load_glossary(I18N / "glossary.yml"))

    assert status_markdown(I18N, book_copy).splitlines() == [
        "| Language | Keys | Pages | Stale pages | Glossary terms |",
        "| --- | ---: | ---: | ---: | ---: |",
        f"| id (source) | {keys}/{keys} | 3/3 | – | {terms}/{terms} |",
        f"| zh | {keys}/{keys} (100%) | 2/3 (66%) | 1 | {terms}/{terms} (100%) |",
        "",
        "To do:",
        "",
        "- **zh**: missing `translate.md`; stale `index.md` (its source changed)",
    ]


def test_a_new_language_shows_up_with_what_is_left_to_do(book_copy: Path, tmp_path: Path) -> None:
    i18n = tmp_path / "i18n"
    i18n.mkdir()
    for name in ("id.yml", "zh.yml", "glossary.yml"):
        (i18n / name).write_bytes((I18N / name).read_bytes())
    ms = (I18N / "id.yml").read_text(encoding="utf-8").replace('name: "Bahasa Indonesia"', 'name: "Bahasa Melayu"', 1)
    ms = ms.replace('  help: "Bantu menerjemahkannya"\n', "")
    (i18n / "ms.yml").write_text(ms, encoding="utf-8")
    (book_copy / "ms").mkdir()
    (book_copy / "ms" / "index.md").write_bytes((book_copy / "id" / "index.md").read_bytes())
    keys = len(load_catalog(I18N / "id.yml").entries)
    terms = len(load_glossary(I18N / "glossary.yml"))

    lines = status_markdown(i18n, book_copy).splitlines()

    assert lines[2:5] == [
        f"| id (source) | {keys}/{keys} | 3/3 | – | {terms}/{terms} |",
        f"| ms | {keys - 1}/{keys} ({100 * (keys - 1) // keys}%) | 1/3 (33%) | 1 | 0/{terms} (0%) |",
        f"| zh | {keys}/{keys} (100%) | 3/3 (100%) | 0 | {terms}/{terms} (100%) |",
    ]
    assert "- **ms**: 1 widget strings to add or fix (`python -m i18n check`); missing `tensor-parallelism.md`; " \
           "missing `translate.md`; not stamped `index.md`" in lines


def test_status_on_the_command_line_prints_the_books_table() -> None:
    result = subprocess.run([sys.executable, "-m", "i18n", "status"], cwd=PROJECT, capture_output=True, text=True,
                            encoding="utf-8", check=False, timeout=60, env={**os.environ, "PYTHONPATH": str(PROJECT)})

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "| Language | Keys | Pages | Stale pages | Glossary terms |"
    assert lines[2].startswith("| id (source) | ") and lines[3].startswith("| zh | ")
