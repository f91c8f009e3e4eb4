"""Helpers for the widget tests that render with hostile strings: a catalog whose strings
carry markup, and a parser that reports unbalanced tags (shared by the widget tests)."""

from __future__ import annotations

import copy
from html.parser import HTMLParser
from typing import Any

from widgets.framework.locale import Locale
from widgets.build.native import locale


class TagBalance(HTMLParser):
    """Feed HTML; `errors` lists every end tag that does not close the open element."""

    VOID = {"br", "hr", "img", "input", "meta", "link", "rect", "line", "path", "circle"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: Any) -> None:
        pass

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def hostile_locale(lang: str, widget: str) -> Locale:
    """The catalog with markup appended to every string of `widget` and of the runtime
    (placeholders kept), to prove the widget escapes what translators write."""
    base = locale(lang)
    strings = copy.deepcopy(dict(base.strings))

    def poison(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: poison(v) for k, v in node.items()}
        return node + ' <i x="1">&amp;</i>' if isinstance(node, str) else node

    strings[widget] = poison(strings[widget])
    strings["runtime"] = poison(strings["runtime"])
    return Locale(lang, strings)
