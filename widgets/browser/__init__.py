"""What the Web Worker calls inside Pyodide: one Locale per language, JSON in and out.

Speed, between a reader's input and the update: a render allocates a few thousand short-lived strings,
and CPython's cyclic garbage collector, triggered by allocation counts, then walks every
object of the interpreter (all imported modules) — in WebAssembly that costs 5–15 ms,
several times the render itself. So the worker's long-lived objects are frozen out of
the collector's view after each import (`gc.freeze`), automatic collection is off while
rendering, and a collection of what remains runs every `COLLECT_EVERY` requests.
Reference counting still frees everything that is not part of a cycle at once.
"""

from __future__ import annotations

import gc
import json
import sys

from ..framework.core import handle
from ..framework.locale import Locale

_LOCALES: dict[str, Locale] = {}
COLLECT_EVERY = 200
IN_BROWSER = sys.platform == "emscripten"  # native Python (build, tests) keeps its defaults
_state = {"requests": 0, "modules": 0}


def _after_request() -> None:
    """Keep the collector away from the render path (see the module docstring)."""
    if not IN_BROWSER:
        return
    if len(sys.modules) != _state["modules"]:  # a widget was imported: freeze it
        gc.collect()
        gc.freeze()
        _state["modules"] = len(sys.modules)
    _state["requests"] += 1
    if _state["requests"] % COLLECT_EVERY == 0:
        gc.collect()


def set_strings(lang: str, strings_json: str) -> None:
    """Install the catalog of `lang` (the site's `assets/i18n/<lang>.json`)."""
    _LOCALES[lang] = Locale(lang, json.loads(strings_json))
    if IN_BROWSER:
        gc.disable()
    _after_request()


def call(request_json: str) -> str:
    """Render one request `{"widget", "state", "lang"}`; returns the reply as JSON."""
    request = json.loads(request_json)
    loc = _LOCALES[request["lang"]]
    try:
        return json.dumps(handle(request, loc), ensure_ascii=False)
    finally:
        _after_request()


def check(request_json: str) -> str:
    """Check one typed answer `{"spec", "unit", "tolerance", "typed", "lang"}` of an
    exercise; returns `{"status", "html"}` as JSON (widgets.framework.exercise.handle)."""
    from ..framework.exercise import handle as handle_exercise  # imported when a page first checks

    request = json.loads(request_json)
    loc = _LOCALES[request["lang"]]
    try:
        return json.dumps(handle_exercise(request, loc), ensure_ascii=False)
    finally:
        _after_request()
