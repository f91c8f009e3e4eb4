"""HTML escaping for the widgets, without the standard library's `html` module.

`html.escape` is all the widgets need, but `import html` also imports `html.entities`
(two tables of 2,000+ named character references): ~26 ms of the first widget's start in
Pyodide, where the first live widget is waited for. This is the same function; a test compares the two.
"""

from __future__ import annotations

__all__ = ["escape"]


def escape(text: str, quote: bool = True) -> str:
    """`&`, `<`, `>` (and with `quote`, `"` and `'`) as character references, exactly as
    `html.escape` writes them."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if quote:
        text = text.replace('"', "&quot;").replace("'", "&#x27;")
    return text
