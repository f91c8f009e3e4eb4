"""Material's search index is built when the reader first opens the search box, not on
every page load, which would compete with the first live widget.

Material for MkDocs sends the search index to its lunr worker, which builds the index,
as soon as a page loads (over `file://` it already waits until the search box is
opened). On a 2-core machine that build competes with Pyodide's start for the CPU: the
first live widget came ~0.1 s later with it (bench/run.py, `first live widget / bare
boot`). The built bundle is patched so that the `http(s)` case behaves like `file://`:
the index is sent to the worker when the search toggle is first switched on (focusing
the search box does that), or at once on a page opened with a query (`?q=`), and the
first query waits for it. The JSON itself is fetched
then too: the `search.highlight` feature, which read it on every page, now reads it only
on a page opened from a search result (`?h=` in the URL).

The first patch replaces one expression of the minified bundle with one of the same
length (the source map stays aligned); the second adds a guard in front of one return. It is pinned to the Material version in
requirements.txt: if the expression is not found, the build fails and says so.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["defer_search_index"]

# In Material 9.x, `setupSearchWorker`: merge(of(location.protocol !== "file:"),
# watchToggle("search")) → the first true value sends the index to the worker.
# A page opened with `?q=` (a shared search link: Material opens the search box with the
# query) still needs the index at once, or the search it opens never answers.
EAGER = '$(location.protocol!=="file:")'
LAZY = "$(/q=/.test(location.search)" + " " * (len(EAGER) - len("$(/q=/.test(location.search))")) + ")"
assert len(LAZY) == len(EAGER)


# `search.highlight` (Ai): combineLatest([index$, location with ?h=…]) subscribes to the
# index at once, so the 0.2–0.3 MB JSON was fetched by every first view. Only a page opened
# from a search result (its URL carries ?h=) needs it: elsewhere the highlighter is empty
# (`y`, the bundle's EMPTY) and the index is fetched when the search box is first used.
HIGHLIGHT_EAGER = 'return z([t,r.pipe(Q(we()),g(o=>!!o.searchParams.get("h")))])'
HIGHLIGHT_LAZY = 'return new URL(location.href).searchParams.get("h")===null?y:z([t,r.pipe(Q(we()),g(o=>!!o.searchParams.get("h")))])'


def defer_search_index(root: Path) -> int:
    """Patch Material's bundle(s) under `root/assets/javascripts`; returns how many were
    patched now (0 when they already were). Raises ValueError when a bundle has neither
    form of the expression (another Material version)."""
    patched = 0
    for bundle in sorted((root / "assets" / "javascripts").glob("bundle.*.min.js")):
        text = bundle.read_text(encoding="utf-8")
        for eager, lazy, what in ((EAGER, LAZY, "search setup"), (HIGHLIGHT_EAGER, HIGHLIGHT_LAZY, "search highlighter")):
            if text.count(eager) == 1:
                text = text.replace(eager, lazy)
                patched += 1
            elif lazy not in text:
                raise ValueError(
                    f"{bundle}: Material's {what} changed (no `{eager}`); "
                    "update widgets/build/lazysearch.py for this Material version")
        bundle.write_text(text, encoding="utf-8")
    return patched
