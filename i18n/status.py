"""How complete each language is, as a Markdown table to paste into an issue.

``python -m i18n status`` prints, for every language, the widget strings (keys of the
reference catalog that are present and correct), the pages (source pages that exist in
the language), the stale pages (translated before the last change of their source, or
never stamped) and the glossary entries, followed by a to-do list naming the pages.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .catalog import CatalogError, find_catalogs, load_catalog
from .check import check
from .glossary import GlossaryError, load_glossary
from .pages import PageStatus, page_status, translation_languages

__all__ = ["LanguageStatus", "language_status", "status_markdown"]


@dataclass(frozen=True)
class LanguageStatus:
    lang: str
    keys: int
    total_keys: int
    pages: PageStatus
    glossary: int | None
    total_glossary: int | None


def language_status(i18n_dir: str | Path, docs_dir: str | Path, reference: str = "id") -> list[LanguageStatus]:
    """One ``LanguageStatus`` per language, the reference first. Raises
    ``FileNotFoundError`` without the reference catalog, ``CatalogError`` when it is broken."""
    i18n_dir, docs_dir = Path(i18n_dir), Path(docs_dir)
    catalogs = find_catalogs(i18n_dir, reference)
    reference_keys = set(load_catalog(catalogs[0]).entries)
    problems = check(i18n_dir, reference)
    glossary_path = i18n_dir / "glossary.yml"
    glossary = None
    if glossary_path.is_file():
        try:
            glossary = load_glossary(glossary_path, reference)
        except GlossaryError:
            glossary = None
    languages = [reference, *translation_languages(docs_dir, [path.stem for path in catalogs], reference)]
    result = []
    for lang in languages:
        path = i18n_dir / f"{lang}.yml"
        keys = 0
        if path.is_file():
            try:
                present = set(load_catalog(path).entries)
            except CatalogError:
                present = set()
            wrong = {p.key for p in problems if Path(p.file).name == path.name}
            keys = len({key for key in reference_keys & present if key not in wrong})
        result.append(
            LanguageStatus(
                lang=lang,
                keys=keys,
                total_keys=len(reference_keys),
                pages=page_status(docs_dir, lang, reference),
                glossary=glossary.complete(lang) if glossary is not None else None,
                total_glossary=len(glossary) if glossary is not None else None,
            )
        )
    return result


def status_markdown(i18n_dir: str | Path, docs_dir: str | Path, reference: str = "id") -> str:
    """The status as Markdown: a table, then the pages left to translate or update."""
    rows = language_status(i18n_dir, docs_dir, reference)
    with_glossary = rows[0].total_glossary is not None
    header = ["Language", "Keys", "Pages", "Stale pages"] + (["Glossary terms"] if with_glossary else [])
    lines = [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join(["---"] + ["---:"] * (len(header) - 1)) + " |",
    ]
    todo = []
    for row in rows:
        source = row.lang == reference
        pages = row.pages
        cells = [
            f"{row.lang} (source)" if source else row.lang,
            _fraction(row.keys, row.total_keys, source),
            _fraction(len(pages.present), pages.total, source),
            "–" if source else str(len(pages.stale) + len(pages.unstamped)),
        ]
        if with_glossary:
            cells.append(_fraction(row.glossary or 0, row.total_glossary or 0, source))
        lines.append("| " + " | ".join(cells) + " |")
        items = (
            [f"missing `{name}`" for name in pages.missing]
            + [f"stale `{name}` (its source changed)" for name in pages.stale]
            + [f"not stamped `{name}`" for name in pages.unstamped]
        )
        if not source and row.keys < row.total_keys:
            items.insert(0, f"{row.total_keys - row.keys} widget strings to add or fix (`python -m i18n check`)")
        if items:
            todo.append(f"- **{row.lang}**: " + "; ".join(items))
    lines.append("")
    if todo:
        lines += ["To do:", "", *todo]
    else:
        lines.append("Every language is complete and up to date.")
    return "\n".join(lines) + "\n"


def _fraction(count: int, total: int, source: bool) -> str:
    if source or total == 0:
        return f"{count}/{total}"
    percent = 100 * count // total
    return f"{count}/{total} ({percent}%)"
