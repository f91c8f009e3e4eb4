"""Markdown extension: `$...$` and `$$...$$` LaTeX rendered to MathML at build time.

Browsers render MathML Core natively, so math needs no script, no font download and no
CDN (PITFALLS.md: "Math: ... render math at build time; never a CDN").
Use `\\$` for a literal dollar sign.
"""

from __future__ import annotations

import re

from latex2mathml.converter import convert
from markdown import Extension, Markdown
from markdown.inlinepatterns import InlineProcessor
from markdown.preprocessors import Preprocessor

INLINE = r"(?<![\\$\w])\$(?![\s$])(?P<tex>[^$\n]+?)(?<![\s\\])\$(?![\w$])"
BLOCK_START = re.compile(r"^(?P<indent>[ \t]*)\$\$(?P<rest>.*)$")


def to_mathml(tex: str, display: bool) -> str:
    """MathML for `tex`; a LaTeX error names the formula."""
    try:
        return convert(tex.strip(), display="block" if display else "inline")
    except Exception as error:  # latex2mathml raises several exception types
        raise ValueError(f"cannot render math {tex!r}: {error}") from None


class DisplayMath(Preprocessor):
    """`$$` ... `$$` on their own lines (or `$$ x $$` on one line), at any indent."""

    def run(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        i = 0
        while i < len(lines):
            start = BLOCK_START.match(lines[i])
            if not start:
                out.append(lines[i])
                i += 1
                continue
            indent, rest = start["indent"], start["rest"]
            if rest.rstrip().endswith("$$") and rest.strip() != "":
                tex, i = rest.rstrip()[:-2], i + 1
            else:
                body = [rest]
                i += 1
                while i < len(lines) and not lines[i].rstrip().endswith("$$"):
                    body.append(lines[i])
                    i += 1
                if i == len(lines):
                    raise ValueError(f"unclosed $$ block: {' '.join(body)[:60]!r}")
                body.append(lines[i].rstrip()[:-2])
                tex, i = "\n".join(body), i + 1
            placeholder = self.md.htmlStash.store(f'<div class="math-display">{to_mathml(tex, True)}</div>')
            out.extend(["", f"{indent}{placeholder}", ""])
        return out


class InlineMath(InlineProcessor):
    def handleMatch(self, m: re.Match[str], data: str) -> tuple[str, int, int]:  # type: ignore[override]
        return self.md.htmlStash.store(to_mathml(m["tex"], False)), m.start(0), m.end(0)


class MathExtension(Extension):
    def extendMarkdown(self, md: Markdown) -> None:
        md.preprocessors.register(DisplayMath(md), "mathml_display", 24)
        md.inlinePatterns.register(InlineMath(INLINE, md), "mathml_inline", 185)


def makeExtension(**kwargs: object) -> MathExtension:
    return MathExtension(**kwargs)


__all__ = ["MathExtension", "makeExtension", "to_mathml"]
