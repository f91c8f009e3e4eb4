"""Markdown extension: the abbreviations of a page become focusable hover definitions.

Python-Markdown's ``abbr`` extension reads ``*[term]: definition`` lines (the widgets
plugin appends one per glossary term in the page's language) and wraps every occurrence
of a term in ``<abbr title="definition">``. This extension replaces its tree processor,
keeping the same definitions, so that:

* Chinese terms are found inside running text: ``abbr`` needs a word boundary ``\\b``
  around a term, and Chinese puts no space between words, so ``用数据并行训练`` never
  matched ``数据并行``. Here only an edge in a spaced script (``rank``) needs a boundary
  (see ``glossary.term_pattern``).
* Only the first occurrence of a term in a page is marked, so the text is not underlined
  everywhere (Chinese, without spaces, looked dotted all over when every section marked
  its own). Material's ``content.tooltips`` shows its definition on hover.
* A term is a keyboard stop (``tabindex="0"``, and the tooltip shows on focus) only in
  the chapter about it: the option ``focusable`` lists the definitions that may be
  focused in this page (the widgets plugin passes those this page uses more than any
  other; the default, ``[ALL]``, focuses every marked term). A
  chapter then has a few stops for its new terms instead of dozens (95–167 when every
  section marked its own), and the glossary page holds every definition.
* Nothing is marked in headings, links, ``<summary>``, code or math: no interactive
  element inside another, and code stays exactly as written.

Enable it after ``abbr``: ``markdown_extensions: [abbr, i18n.tooltips]`` (the widgets
plugin adds both when the glossary exists).
"""

from __future__ import annotations

import xml.etree.ElementTree as etree
from typing import Any

from markdown import Markdown
from markdown.extensions import Extension
from markdown.treeprocessors import Treeprocessor
from markdown.util import AtomicString

from .glossary import term_pattern

__all__ = ["TooltipExtension", "TooltipTreeprocessor", "makeExtension"]

#: `focusable` holding this focuses every marked term (the default).
ALL = "*"

#: Elements whose text is never marked.
SKIP = frozenset({"a", "abbr", "code", "pre", "kbd", "samp", "script", "style", "math", "summary", "dfn",
                  "h1", "h2", "h3", "h4", "h5", "h6"})


class TooltipTreeprocessor(Treeprocessor):
    """Wrap the first occurrence of each abbreviation in a page in a focusable
    ``<abbr>``; ``abbrs`` is the ``abbr`` extension's own dictionary."""

    def __init__(self, md: Markdown, abbrs: dict[str, str], focusable: frozenset[str] | None = None) -> None:
        super().__init__(md)
        self.abbrs = abbrs
        self.focusable = focusable  # definitions that get tabindex; None = all

    def run(self, root: etree.Element) -> None:
        if not self.abbrs:
            return
        self.pattern = term_pattern(self.abbrs)
        self.seen: set[str] = set()
        self.made: set[int] = set()  # ids of the <abbr> elements made here
        self._walk(root)

    def _walk(self, element: etree.Element) -> None:
        if element.tag in SKIP:
            return
        if element.text and not isinstance(element.text, AtomicString):
            element.text, new = self._mark(element.text)
            for offset, abbr in enumerate(new):
                element.insert(offset, abbr)
        for child in list(element):
            if id(child) in self.made:
                continue  # made here, from a parent's text or a sibling's tail
            self._walk(child)
            if child.tail and not isinstance(child.tail, AtomicString):
                child.tail, new = self._mark(child.tail)
                index = list(element).index(child) + 1
                for offset, abbr in enumerate(new):
                    element.insert(index + offset, abbr)

    def _mark(self, text: str) -> tuple[str, list[etree.Element]]:
        """Split ``text`` at the terms to mark: the text before the first one, and the
        ``<abbr>`` elements (each carrying the text up to the next as its tail)."""
        pieces: list[etree.Element] = []
        head = text
        last = 0
        for match in self.pattern.finditer(text):
            form = match.group(0)
            title = self.abbrs.get(form)
            if not title or title in self.seen:
                continue
            self.seen.add(title)
            focus = self.focusable is None or title in self.focusable
            abbr = etree.Element("abbr", {"title": title, "tabindex": "0"} if focus else {"title": title})
            self.made.add(id(abbr))
            abbr.text = AtomicString(form)
            if pieces:
                pieces[-1].tail = text[last:match.start()]
            else:
                head = text[:match.start()]
            last = match.end()
            pieces.append(abbr)
        if pieces:
            pieces[-1].tail = text[last:]
        return head, pieces


class TooltipExtension(Extension):
    """Replace ``abbr``'s tree processor with ``TooltipTreeprocessor`` (same priority,
    same definitions). Loads ``abbr`` first if the configuration forgot it."""

    def __init__(self, **kwargs: Any) -> None:
        # A list default: Python-Markdown reads a None or bool default as a yes/no option.
        self.config = {"focusable": [[ALL], "definitions whose terms may be focused here; [ALL]: every one"]}
        super().__init__(**kwargs)

    def extendMarkdown(self, md: Markdown) -> None:
        if "abbr" not in md.treeprocessors:
            from markdown.extensions.abbr import AbbrExtension

            AbbrExtension().extendMarkdown(md)
        abbrs: dict[str, str] = md.treeprocessors["abbr"].abbrs  # type: ignore[attr-defined]
        md.treeprocessors.deregister("abbr")
        focusable = self.getConfig("focusable")
        md.treeprocessors.register(
            TooltipTreeprocessor(md, abbrs, None if ALL in focusable else frozenset(focusable)), "abbr", 7)


def makeExtension(**kwargs: Any) -> TooltipExtension:
    return TooltipExtension(**kwargs)
