"""One search index per language instead of one for the whole site (so a reader downloads the text of one language only).

mkdocs-static-i18n merges the search entries of every language into the site's single
`search/search_index.json`, which Material's search worker fetches on every first visit,
so an Indonesian reader downloads the Chinese text too (half the index). After the last
language is built this module splits it: the default language keeps
`search/search_index.json`, each other language gets `<lang>/search/search_index.json`
with locations relative to its folder, and that language's pages point their Material
`__config.base` at their own folder (Material fetches `search/search_index.json` from
`base` and resolves result locations against it; theme preferences are scoped by the
separate `__md_scope`, which is left alone). The JSON is written as UTF-8, not as
`\\uXXXX` escapes (a third smaller for Chinese).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

__all__ = ["split_search_index"]

CONFIG = re.compile(r'(<script id="__config" type="application/json">\{"annotate": [^,]*, "base": ")([^"]*)(")')


def split_search_index(root: Path, languages: list[str]) -> dict[str, int]:
    """Split `root/search/search_index.json` by the folders `languages` (non-default
    language codes); returns the number of entries per index ("" = default)."""
    index = root / "search" / "search_index.json"
    if not index.is_file():
        return {}
    data = json.loads(index.read_text(encoding="utf-8"))
    parts: dict[str, list[dict]] = {"": []}
    parts.update({lang: [] for lang in languages})
    for doc in data["docs"]:
        lang = next((l for l in languages if doc["location"].startswith(f"{l}/") or doc["location"] == l), "")
        if lang:
            doc = {**doc, "location": doc["location"][len(lang) + 1:]}
        parts[lang].append(doc)
    for lang, docs in parts.items():
        if lang and not docs:
            continue  # this language is not built (yet)
        folder = root / lang if lang else root
        _write(folder / "search" / "search_index.json", {**data, "docs": docs})
        if lang:
            _rebase_pages(folder)
    return {lang: len(docs) for lang, docs in parts.items()}


def _write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")


def _rebase_pages(folder: Path) -> None:
    """Point every page of a language folder at that folder as Material's `base`."""
    for page in folder.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        base = Path(os.path.relpath(folder, page.parent)).as_posix()
        new = CONFIG.sub(lambda m: f"{m[1]}{base}{m[3]}", html, count=1)
        if new != html:
            page.write_text(new, encoding="utf-8")
