"""What the Web Worker calls inside Pyodide: one Locale per language, JSON in and out."""

from __future__ import annotations

import json

from .core import handle
from .locale import Locale

_LOCALES: dict[str, Locale] = {}


def set_strings(lang: str, strings_json: str) -> None:
    """Install the catalog of `lang` (the site's `assets/i18n/<lang>.json`)."""
    _LOCALES[lang] = Locale(lang, json.loads(strings_json))


def call(request_json: str) -> str:
    """Render one request `{"widget", "state", "lang"}`; returns the reply as JSON."""
    request = json.loads(request_json)
    loc = _LOCALES[request["lang"]]
    return json.dumps(handle(request, loc), ensure_ascii=False)
