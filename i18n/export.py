"""Export the catalogs as JSON, the form in which the strings travel to the browser.

Each ``i18n/<lang>.yml`` becomes ``<lang>.json``: nested, UTF-8 (Chinese stays Chinese,
not ``\\u`` escapes), keys sorted, compact separators, one final newline, so the same
catalogs always give the same bytes (and the same file hashes in the built site).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .catalog import find_catalogs, load_catalog

__all__ = ["export_json", "load_strings", "to_json_bytes"]


def export_json(directory: str | Path, out_dir: str | Path, reference: str = "id") -> list[Path]:
    """Write ``<out_dir>/<lang>.json`` for every ``<directory>/<lang>.yml``; return the
    written paths, reference language first. Raises ``CatalogError`` on a broken
    catalog; run ``check`` first to catch the rest."""
    catalogs = [load_catalog(path) for path in find_catalogs(directory, reference)]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for catalog in catalogs:  # all parsed before the first write: no half export
        target = out_dir / f"{catalog.lang}.json"
        target.write_bytes(to_json_bytes(catalog.nested()))
        written.append(target)
    return written


def load_strings(directory: str | Path, lang: str) -> dict[str, Any]:
    """The nested strings of ``<directory>/<lang>.yml``, as plain dicts."""
    return load_catalog(Path(directory) / f"{lang}.yml").nested()


def to_json_bytes(strings: dict[str, Any]) -> bytes:
    """The deterministic JSON encoding used for every exported catalog."""
    text = json.dumps(strings, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return (text + "\n").encode("utf-8")
