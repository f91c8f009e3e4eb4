"""Compare every translated page with its source page, and track which ones are stale.

The chapters live in ``docs/<lang>/`` with the same file names in every language; the
reference language (``id``) is the source. ``check_pages("docs")`` reads every page of
every language and returns one ``Problem`` per thing a translator must fix, printed as
``docs/zh/zero.md:63: widgets: ...``:

* a page of the source that is missing in a language (or a page with no source);
* a different skeleton: the widgets, their order, the number and level of sections
  (H2/H3), the figures, the link targets (other pages and files) and the code blocks
  (count and languages) must be the same;
* different exercises: the ```` ```exercise ```` fences (answer, unit, tolerance) must
  be the same, in the same order, so readers of every language check the same numbers;
* a stale page: the translation's front matter records the source's content hash,
  ``source_hash: "<sha256, first 12 hex digits>"``; when the source changes, the hash no
  longer matches. ``stamp`` writes the current hash once the translation is updated.

Nothing here names ``zh``: a new language is a new folder.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

import yaml

from .check import Problem, display_path

__all__ = [
    "HASH_CHARS",
    "LANGUAGE_DIR",
    "SOURCE_HASH_KEY",
    "StampError",
    "compare_pages",
    "exercise_spec",
    "Item",
    "Page",
    "PageStatus",
    "check_pages",
    "page_mistakes",
    "page_names",
    "page_slug",
    "page_status",
    "parse_page",
    "source_hash",
    "stamp",
    "translation_languages",
    "wide_macro",
]

#: The front-matter key of a translation that records the hash of its source.
SOURCE_HASH_KEY = "source_hash"
#: How many hex digits of the SHA-256 are kept: plenty to notice a change.
HASH_CHARS = 12

#: A language folder: ``id``, ``zh``, ``ms``, ``pt-BR``, ``zh-Hant``, ``zh_TW`` (the locale
#: codes mkdocs-static-i18n accepts, so both agree on which folders are languages).
LANGUAGE_DIR = re.compile(r"(^[a-z]{2}(-[A-Za-z]{4})?(-[A-Z]{2})?$)|(^[a-z]{2}_[A-Z]{2}$)")

_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*?)[ \t]*$")
_HEADING = re.compile(r"^[ \t]*(?P<hashes>#{1,6})[ \t]+(?P<text>.*?)[ \t]*#*[ \t]*$")
_MARKER = re.compile(r"^[ \t]*<!--[ \t]*(?P<name>[\w-]+)[ \t]*-->[ \t]*$")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_MACRO = re.compile(r"\{\{.*?\}\}")
_LINK = re.compile(
    r"(?P<image>!?)\[(?P<text>(?:[^\[\]]|\[[^\[\]]*\])*)\]"
    r"\(\s*(?P<target><[^>]*>|[^\s()]+(?:\([^\s()]*\)[^\s()]*)*)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)"
)
_REFERENCE = re.compile(r"^[ \t]{0,3}\[(?!\^)(?P<label>[^\]]+)\]:[ \t]*(?P<target><[^>]*>|\S+)")
_HTML_IMAGE = re.compile(r"<img\b[^>]*?\bsrc=[\"'](?P<target>[^\"']+)[\"']", re.I)
_EXTERNAL = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//)")

#: What each kind of item is called in a message.
_NOUNS = {
    "widget": "widget",
    "figure": "figure",
    "link": "link to",
    "code": "code block",
    "marker": "marker",
    "exercise": "exercise",
}


@dataclass(frozen=True)
class Item:
    """One element of a page's skeleton: a section heading (``value`` "H2"/"H3", ``text``
    the heading), a widget (its name), a figure or link (its normalized target), a code
    block (its language, "" for none), a marker comment (``<!-- glossary -->``) or an
    exercise (its answer, unit and tolerance, normalized by ``exercise_spec``)."""

    kind: str
    value: str
    line: int
    text: str = ""


@dataclass(frozen=True)
class Page:
    """The skeleton of one Markdown page, each item with its 1-based line in the file."""

    path: Path
    name: str
    front: dict[str, Any] = field(default_factory=dict)
    front_lines: dict[str, int] = field(default_factory=dict)
    front_problem: str = ""
    sections: tuple[Item, ...] = ()
    widgets: tuple[Item, ...] = ()
    figures: tuple[Item, ...] = ()
    links: tuple[Item, ...] = ()
    code: tuple[Item, ...] = ()
    markers: tuple[Item, ...] = ()
    exercises: tuple[Item, ...] = ()
    #: Every id a link may point at: headings, ``{#id}``, ``id="…"``, widgets, exercises.
    anchors: frozenset[str] = frozenset()
    #: Links with a ``#fragment``: ``value`` is ``page.md#fragment`` (this page's name
    #: for a same-page ``#fragment``), ``text`` the link as written.
    anchor_links: tuple[Item, ...] = ()
    #: Mistakes that would ship broken whatever the other language says: ``(line, what,
    #: message)`` for a fence left open, a macro in full-width braces, a ``<script>``.
    mistakes: tuple[tuple[int, str, str], ...] = ()


@dataclass(frozen=True)
class PageStatus:
    """How far one language is: the source pages present, and which of them are stale
    (the source changed since the stamp) or not stamped at all."""

    lang: str
    total: int
    present: tuple[str, ...]
    missing: tuple[str, ...]
    stale: tuple[str, ...]
    unstamped: tuple[str, ...]


# --- reading pages ---------------------------------------------------------------------------


def source_hash(path: str | Path) -> str:
    """The hash a translation records for its source: SHA-256 of the file's bytes, first
    ``HASH_CHARS`` hex digits."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:HASH_CHARS]


def page_names(docs_dir: str | Path, lang: str) -> list[str]:
    """Every page of one language, as POSIX paths relative to ``docs/<lang>/``, sorted."""
    root = Path(docs_dir) / lang
    if not root.is_dir():
        return []
    return sorted(path.relative_to(root).as_posix() for path in root.rglob("*.md") if path.is_file())


def translation_languages(docs_dir: str | Path, languages: Iterable[str], reference: str = "id") -> list[str]:
    """The languages to compare with the reference: ``languages`` (those with a catalog)
    and every folder of ``docs_dir`` that looks like a language, reference excluded."""
    found = {lang for lang in languages if lang != reference}
    docs_dir = Path(docs_dir)
    if docs_dir.is_dir():
        found |= {p.name for p in docs_dir.iterdir() if p.is_dir() and LANGUAGE_DIR.match(p.name) and p.name != reference}
    return sorted(found)


def parse_page(path: str | Path, name: str | None = None) -> Page:
    """Read the skeleton of ``path``. ``name`` is the page's path inside its language
    folder (``zero.md``), used to resolve relative links; defaults to the file name."""
    path = Path(path)
    text = path.read_text(encoding="utf-8-sig")
    name = name or path.name
    lines = text.splitlines()
    front, front_lines, front_problem, start = _front_matter(lines)
    kinds = ("section", "widget", "figure", "link", "code", "marker", "exercise")
    items: dict[str, list[Item]] = {kind: [] for kind in kinds}
    fence: tuple[str, int, int, str] | None = None  # (character, count, line, kind) while inside one
    exercise: tuple[int, list[str]] | None = None  # (line, body lines) inside an exercise fence
    mistakes: list[tuple[int, str, str]] = []
    anchors: set[str] = set()
    anchor_links: list[Item] = []
    headings: list[str] = []
    for index in range(start, len(lines)):
        line_no = index + 1
        line = lines[index]
        if fence is not None:
            char, count, opened, kind = fence
            stripped = line.strip()
            if stripped and set(stripped) == {char} and len(stripped) >= count:
                fence = None
                if exercise is not None:
                    items["exercise"].append(Item("exercise", exercise_spec(exercise[1]), exercise[0]))
                    exercise = None
                continue
            elif kind in ("widget", "exercise") and _FENCE_OPEN.match(line):
                # A widget or exercise fence holds only `key: value` lines: a fence line
                # here means the one above was never closed.
                mistakes.append((opened, "fence", _unclosed(kind)))
                fence = None
                exercise = None
            else:
                if exercise is not None:
                    exercise[1].append(line)
                continue
        opening = _FENCE_OPEN.match(line)
        if opening:
            info = opening["info"].strip()
            words = info.split()
            kind = "code"
            if words[:1] == ["widget"] and len(words) >= 2:
                items["widget"].append(Item("widget", words[1], line_no))
                anchors.add(f"widget-{words[1]}")
                kind = "widget"
            elif words == ["exercise"]:
                exercise = (line_no, [])
                kind = "exercise"
            else:
                items["code"].append(Item("code", _code_language(info), line_no))
            fence = (opening["fence"][0], len(opening["fence"]), line_no, kind)
            continue
        heading = _HEADING.match(line)
        if heading and len(heading["hashes"]) in (2, 3):
            items["section"].append(Item("section", f"H{len(heading['hashes'])}", line_no, heading["text"]))
        if heading and not _HEADING_ID.search(heading["text"]):  # a {#id} is collected below
            headings.append(heading["text"])
        marker = _MARKER.match(line)
        if marker:
            items["marker"].append(Item("marker", marker["name"], line_no))
            continue
        if wide_macro(_CODE_SPAN.sub("", line)):
            mistakes.append((line_no, "macro", "a macro written with full-width braces ｛｛ ｝｝ ships as text: "
                                               "write it with ASCII braces, {{ widget.output }}"))
        prose = _MACRO.sub("", _CODE_SPAN.sub("", line))
        if _SCRIPT.search(prose):
            mistakes.append((line_no, "script", "a <script> in the page: the site's policy runs only the scripts "
                                                "the theme and the book ship; pages are text and figures"))
        anchors.update(_HTML_ID.findall(prose))
        anchors.update(_ATTR_ID.findall(prose))
        for match in _LINK.finditer(prose):
            fragment = _fragment_link(match["target"], name)
            if fragment is not None:
                anchor_links.append(Item("anchor", fragment, line_no, match["target"]))
            target = _internal_target(match["target"], name)
            if target is not None:
                kind = "figure" if match["image"] else "link"
                items[kind].append(Item(kind, target, line_no, match["text"]))
        reference = _REFERENCE.match(prose)
        if reference:
            target = _internal_target(reference["target"], name)
            if target is not None:
                items["link"].append(Item("link", target, line_no, reference["label"]))
        for match in _HTML_IMAGE.finditer(prose):
            target = _internal_target(match["target"], name)
            if target is not None:
                items["figure"].append(Item("figure", target, line_no))
    if fence is not None and fence[3] in ("widget", "exercise"):
        mistakes.append((fence[2], "fence", _unclosed(fence[3])))
    anchors.update(_heading_slugs(headings))
    anchors.update(f"exercise-{page_slug(name)}-{n}" for n in range(1, len(items["exercise"]) + 1))
    return Page(
        path=path,
        name=name,
        anchors=frozenset(anchors),
        anchor_links=tuple(anchor_links),
        mistakes=tuple(mistakes),
        front=front,
        front_lines=front_lines,
        front_problem=front_problem,
        sections=tuple(items["section"]),
        widgets=tuple(items["widget"]),
        figures=tuple(items["figure"]),
        links=tuple(items["link"]),
        code=tuple(items["code"]),
        markers=tuple(items["marker"]),
        exercises=tuple(items["exercise"]),
    )


_HEADING_ID = re.compile(r"\{[^}]*#[\w-]+[^}]*\}\s*$")
_HTML_ID = re.compile(r"<[A-Za-z][^>]*\bid=[\"']([^\"']+)[\"']")
_ATTR_ID = re.compile(r"\{:?[^}]*#([\w-]+)[^}]*\}")
_WIDE_MACRO = re.compile(r"[{\uff5b][ \t]*[{\uff5b]|[}\uff5d][ \t]*[}\uff5d]")
_SCRIPT = re.compile(r"<script\b", re.I)
_INLINE_MARKUP = re.compile(r"<[^>]+>|[*_`]")


def _unclosed(kind: str) -> str:
    return (f"the ```{kind} fence opened here is never closed: end it with a line ``` at the same "
            f"indentation (until then the page would show its options as text)")


def _heading_slugs(texts: Sequence[str]) -> list[str]:
    """The ids Markdown's toc gives these headings, in order (as mkdocs.yml configures it:
    pymdownx.slugs.slugify, lower case; a repeated slug gets _1, _2, …)."""
    from pymdownx.slugs import slugify

    slug = slugify(case="lower")
    seen: set[str] = set()
    out = []
    for text in texts:
        plain = _MACRO.sub("", _LINK_TEXT.sub(r"\g<text>", text))
        base = slug(_INLINE_MARKUP.sub("", plain).strip(), "-")
        unique, n = base, 0
        while unique in seen:
            n += 1
            unique = f"{base}_{n}"
        seen.add(unique)
        out.append(unique)
    return out


_LINK_TEXT = re.compile(r"!?\[(?P<text>[^\]]*)\]\([^)]*\)")


def page_slug(name: str) -> str:
    """The page part of an exercise's id (`exercise-<slug>-<n>`): `data-parallelism` for
    `data-parallelism.md`, `guide` for `guide/index.md`; `name` is relative to the
    language folder. The widgets plugin names its exercise forms with it."""
    parts = [p for p in re.sub(r"\.md$", "", name).split("/") if p]
    if len(parts) > 1 and parts[-1] == "index":
        parts = parts[:-1]
    return re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower()).strip("-") or "page"


def _fragment_link(raw: str, name: str) -> str | None:
    """``page.md#fragment`` for a link into this site with a fragment, else ``None``."""
    target = raw.strip().strip("<>")
    if "#" not in target or _EXTERNAL.match(target) or target.startswith("/"):
        return None
    path, fragment = target.split("#", 1)
    if not fragment or "=" in fragment:  # a widget state, not an anchor
        return None
    path = path.split("?", 1)[0]
    if not path:
        return f"{name}#{fragment}"
    if not path.endswith(".md"):
        return None
    return posixpath.normpath(posixpath.join(posixpath.dirname(name), path)) + f"#{fragment}"


def exercise_spec(body: Sequence[str]) -> str:
    """An exercise fence's ``answer``, ``unit`` and ``tolerance`` as one comparable text:
    ``answer: dp.comm_time gpus=64, unit: s, tolerance: 2%``. The answer's overrides are
    sorted and the defaults filled in (no unit, 1%), so only a real difference shows."""
    fields = {"answer": "", "unit": "", "tolerance": "1%"}
    other = []
    for text in body:
        key, colon, value = text.strip().partition(":")
        if not colon or key.strip().startswith("#"):
            continue
        key, value = key.strip(), value.strip().strip("\"'")
        if key in fields:
            fields[key] = value
        else:
            other.append(f"{key}: {value}")
    words = fields["answer"].replace("{{", " ").replace("}}", " ").split()
    fields["answer"] = " ".join(words[:1] + sorted(words[1:]))
    fields["tolerance"] = fields["tolerance"].replace(" ", "")
    shown = [f"answer: {fields['answer']}", f"unit: {fields['unit'] or 'none'}", f"tolerance: {fields['tolerance']}"]
    return ", ".join(shown + other)


def _front_matter(lines: Sequence[str]) -> tuple[dict[str, Any], dict[str, int], str, int]:
    """``(front matter, line of each key, problem, first body line index)``."""
    if not lines or lines[0].rstrip() != "---":
        return {}, {}, "", 0
    for end in range(1, len(lines)):
        if lines[end].rstrip() in ("---", "..."):
            break
    else:
        return {}, {}, "the front matter opened on line 1 is never closed: add a line ---", 0
    block = "\n".join(lines[1:end])
    key_lines = {}
    for offset, text in enumerate(lines[1:end], start=2):
        key = re.match(r"^([A-Za-z_][\w-]*)[ \t]*:", text)
        if key:
            key_lines.setdefault(key.group(1), offset)
    try:
        data = yaml.safe_load(block) if block.strip() else {}
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 2 if mark else 1
        return {}, key_lines, f"broken YAML in the front matter (line {line}): {getattr(error, 'problem', error)}", end + 1
    if not isinstance(data, dict):
        return {}, key_lines, "the front matter must be a mapping (key: value)", end + 1
    return data, key_lines, "", end + 1


def _code_language(info: str) -> str:
    """The language of a fence's info string: ``python``, ``{.python .numberlines}``,
    ``py title="x.py"``; "" when there is none."""
    if not info:
        return ""
    first = info.split()[0].strip("{}")
    return first.lstrip(".").lower()


def _internal_target(raw: str, name: str) -> str | None:
    """The target of a link inside the site, relative to the language folder
    (``zero.md``, ``img/ring.svg``), or ``None`` for an external URL or a same-page anchor."""
    target = raw.strip().strip("<>")
    if not target or target.startswith("#") or _EXTERNAL.match(target) or target.startswith("/"):
        return None
    target = target.split("#", 1)[0].split("?", 1)[0]
    if not target:
        return None
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
    if target.endswith("/"):
        resolved += "/"
    return resolved


# --- comparing pages ---------------------------------------------------------------------------


def check_pages(
    docs_dir: str | Path,
    reference: str = "id",
    languages: Iterable[str] = (),
) -> list[Problem]:
    """All problems of the pages in ``docs_dir``: for every translation language (those
    given and every language folder found), missing and extra pages, skeletons that
    differ from the source, and stale or unstamped translations. Problems are ordered
    by language, then page, then line. An absent ``docs_dir`` has no problems."""
    docs_dir = Path(docs_dir)
    if not docs_dir.is_dir():
        return []
    sources = page_names(docs_dir, reference)
    problems: list[Problem] = []
    parsed_sources: dict[str, Page] = {}
    for name in sources:
        page = parse_page(docs_dir / reference / name, name)
        parsed_sources[name] = page
        if page.front_problem:
            problems.append(Problem(display_path(page.path), 1, "front matter", page.front_problem))
    problems += _own_problems(parsed_sources)
    for lang in translation_languages(docs_dir, languages, reference):
        problems += _check_language(docs_dir, reference, lang, sources, parsed_sources)
    return problems


def page_mistakes(docs_dir: str | Path) -> list[Problem]:
    """The mistakes of every page of every language folder that would ship broken
    whatever the other languages say (a fence left open, a macro in full-width braces,
    a <script>, a broken anchor); the site build runs this before it renders a page."""
    docs_dir = Path(docs_dir)
    if not docs_dir.is_dir():
        return []
    problems = []
    for folder in sorted(p for p in docs_dir.iterdir() if p.is_dir() and LANGUAGE_DIR.match(p.name)):
        pages = {name: parse_page(folder / name, name) for name in page_names(docs_dir, folder.name)}
        problems += _own_problems(pages)
    return problems


def wide_macro(line: str) -> bool:
    """Whether `line` holds a macro brace pair typed with a full-width brace (｛｛ ｝｝)."""
    return any("\uff5b" in m.group() or "\uff5d" in m.group() for m in _WIDE_MACRO.finditer(line))


def _own_problems(pages: dict[str, Page]) -> list[Problem]:
    """What is wrong in the pages of one language by themselves: the mistakes found
    while reading them, and links to an anchor that the target page does not have."""
    problems = []
    for name, page in pages.items():
        shown = display_path(page.path)
        found = [Problem(shown, line, what, message) for line, what, message in page.mistakes]
        for link in page.anchor_links:
            target, fragment = link.value.split("#", 1)
            other = pages.get(target)
            if other is None or fragment in other.anchors:
                continue  # a missing page is the link check's business
            where = "this page" if target == name else target
            near = sorted(a for a in other.anchors if not a.startswith(("widget-", "exercise-")))[:8]
            found.append(Problem(shown, link.line, "links",
                                 f"broken anchor {link.text}: {where} has no heading or element with the id "
                                 f"{fragment!r} (its headings' ids: {', '.join(near) or 'none'})"))
        problems += sorted(found, key=lambda p: (p.line, p.key, p.message))
    return problems


def _check_language(
    docs_dir: Path, reference: str, lang: str, sources: list[str], parsed: dict[str, Page]
) -> list[Problem]:
    folder = docs_dir / lang
    present = set(page_names(docs_dir, lang))
    problems: list[Problem] = []
    translations: dict[str, Page] = {}
    if not folder.is_dir():
        shown = display_path(folder) + "/"
        message = (
            f"no translated pages yet ({len(sources)} pages in {display_path(docs_dir / reference)}/): "
            f"create the folder and translate them, see the Translate page"
        )
        return [Problem(shown, 1, "pages", message)]
    for name in sources:
        target = folder / name
        if name not in present:
            problems.append(
                Problem(
                    display_path(target),
                    1,
                    "pages",
                    f"missing page: translate {display_path(docs_dir / reference / name)} into this file "
                    f"(readers of {lang} see the source with a 'not translated yet' banner meanwhile)",
                )
            )
            continue
        translation = parse_page(target, name)
        translations[name] = translation
        if any(what == "fence" for _, what, _ in translation.mistakes):
            continue  # a fence left open garbles the skeleton: fix it first, then compare
        found = compare_pages(parsed[name], translation)
        found += _staleness(docs_dir / reference / name, translation, display_path(target))
        problems += sorted(found, key=lambda p: (p.line, p.key, p.message))
    own = _own_problems(translations)
    problems = sorted(problems + own, key=lambda p: (p.file, p.line, p.key, p.message))
    for name in sorted(present - set(sources)):
        problems.append(
            Problem(
                display_path(folder / name),
                1,
                "pages",
                f"extra page: there is no {display_path(docs_dir / reference / name)} to translate it from; "
                f"write the source first, or delete or rename this page",
            )
        )
    return problems


def compare_pages(source: Page, translation: Page) -> list[Problem]:
    """The differences between the skeletons of a source page and its translation,
    reported on the translation's lines."""
    shown = display_path(translation.path)
    src = display_path(source.path)
    problems: list[Problem] = []
    if translation.front_problem:
        problems.append(Problem(shown, 1, "front matter", translation.front_problem))
    problems += _compare_sections(source, translation, shown, src)
    for kind, attribute, ordered in _COMPARED:
        problems += _compare_items(kind, getattr(source, attribute), getattr(translation, attribute), ordered,
                                   source, translation, shown, src)
    return problems


#: What is compared besides the sections: (kind, ``Page`` attribute, whether order matters).
#: Links may be reordered by a translation's sentences; widgets, code and figures may not.
_COMPARED = (
    ("widget", "widgets", True),
    ("marker", "markers", True),
    ("code", "code", True),
    ("exercise", "exercises", True),
    ("figure", "figures", True),
    ("link", "links", False),
)


def _compare_sections(source: Page, translation: Page, shown: str, src: str) -> list[Problem]:
    """The H2/H3 outline must match. With the same number of H2 sections, each H2 is
    paired with its counterpart and the H3 under them compared; otherwise the source's
    H2 headings are listed, so the translator can see which one is missing or extra."""
    here = [item.value for item in translation.sections]
    there = [item.value for item in source.sections]
    if here == there:
        return []
    counts = f"{_outline(here)} here, {_outline(there)} in {src}"
    mine, theirs = _groups(translation.sections), _groups(source.sections)
    if len(mine) != len(theirs):
        headings = "; ".join(f"line {item.line} {_heading(item)}" for item, _ in theirs if item is not None)
        line = translation.sections[0].line if translation.sections else 1
        return [Problem(shown, line, "sections",
                        f"the outline differs: {counts}; the H2 sections of {src}: {headings}")]
    problems = []
    for (h2, subsections), (their_h2, their_subsections) in zip(mine, theirs):
        if len(subsections) == len(their_subsections):
            continue
        where = _heading(h2) if h2 is not None else "the text before the first H2"
        counterpart = f"{_heading(their_h2)} ({src} line {their_h2.line})" if their_h2 is not None else f"{src}"
        listing = ", ".join(_heading(item) for item in their_subsections) or "none"
        line = h2.line if h2 is not None else (subsections[0].line if subsections else 1)
        problems.append(Problem(
            shown, line, "sections",
            f"the outline differs: {counts}; {where} has {len(subsections)} H3 here, but its counterpart "
            f"{counterpart} has {len(their_subsections)}: {listing}",
        ))
    return problems


def _groups(sections: Sequence[Item]) -> list[tuple[Item | None, list[Item]]]:
    """The outline as ``(H2, [H3 under it])``, starting with ``(None, [...])`` when H3
    headings come before the first H2."""
    groups: list[tuple[Item | None, list[Item]]] = []
    for item in sections:
        if item.value == "H2":
            groups.append((item, []))
        else:
            if not groups:
                groups.append((None, []))
            groups[-1][1].append(item)
    return groups


def _compare_items(
    kind: str,
    there: Sequence[Item],
    here: Sequence[Item],
    ordered: bool,
    source: Page,
    translation: Page,
    shown: str,
    src: str,
) -> list[Problem]:
    noun = _NOUNS[kind]
    if not ordered:  # links: the same set of targets, in any order and any number of times
        problems = []
        here_targets = {item.value for item in here}
        reported: set[str] = set()
        for item in there:
            if item.value not in here_targets and item.value not in reported:
                reported.add(item.value)
                line = _counterpart_line(source, translation, item.line)
                problems.append(Problem(shown, line, "links",
                                        f"missing link to {item.value} ({src} line {item.line} links it)"))
        there_targets = {item.value for item in there}
        for item in here:
            if item.value not in there_targets and item.value not in reported:
                reported.add(item.value)
                problems.append(Problem(shown, item.line, "links",
                                        f"extra link to {item.value}: {src} does not link it; "
                                        f"check the target, or add the link to the source first"))
        return problems
    here_values = [item.value for item in here]
    there_values = [item.value for item in there]
    if here_values == there_values:
        return []
    key = f"{kind}s" if kind != "code" else "code blocks"
    if Counter(here_values) == Counter(there_values):
        first = next(i for i, (a, b) in enumerate(zip(here_values, there_values)) if a != b)
        message = (f"{key} in a different order: {_listing(kind, here_values)} here, "
                   f"{_listing(kind, there_values)} in {src}")
        return [Problem(shown, here[first].line, key, message)]
    problems = []
    counts = f"{len(here_values)} here, {len(there_values)} in {src}"
    matcher = SequenceMatcher(a=there_values, b=here_values, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if tag == "replace" and i2 - i1 == j2 - j1:
            for theirs, mine in zip(there[i1:i2], here[j1:j2]):
                problems.append(Problem(shown, mine.line, key,
                                        f"{noun} {_show(kind, mine.value)} here, where {src} line {theirs.line} "
                                        f"has {'an' if noun[0] in 'aeiou' else 'a'} {noun} {_show(kind, theirs.value)}"))
            continue
        for theirs in there[i1:i2]:
            line = _counterpart_line(source, translation, theirs.line)
            problems.append(Problem(shown, line, key,
                                    f"missing {noun} {_show(kind, theirs.value)} ({src} line {theirs.line}; {counts})"))
        for mine in here[j1:j2]:
            problems.append(Problem(shown, mine.line, key,
                                    f"extra {noun} {_show(kind, mine.value)}: not in {src} ({counts})"))
    return problems


def _counterpart_line(source: Page, translation: Page, line: int) -> int:
    """Where in the translation an item written on ``line`` of the source belongs: the
    line of the corresponding section heading (same position in the outline), or 1."""
    index = sum(1 for item in source.sections if item.line <= line) - 1
    if index < 0 or not translation.sections:
        return 1
    return translation.sections[min(index, len(translation.sections) - 1)].line


def _line_at(items: Sequence[Item], index: int) -> int:
    if not items:
        return 1
    return items[min(index, len(items) - 1)].line


def _outline(levels: Sequence[str]) -> str:
    counts = Counter(levels)
    return f"{counts['H2']} H2 + {counts['H3']} H3"


def _heading(item: Item) -> str:
    hashes = "#" * int(item.value[1])
    text = item.text if len(item.text) <= 50 else item.text[:49] + "…"
    return f'"{hashes} {text}"'


def _show(kind: str, value: str) -> str:
    if kind == "code":
        return f"({value})" if value else "(no language)"
    if kind == "widget":
        return f"'{value}'"
    if kind == "marker":
        return f"<!-- {value} -->"
    if kind == "exercise":
        return f"({value})"
    return value


def _listing(kind: str, values: Sequence[str]) -> str:
    return ", ".join(_show(kind, value) for value in values)


# --- staleness -----------------------------------------------------------------------------------


def _staleness(source_path: Path, translation: Page, shown: str) -> list[Problem]:
    command = f"python -m i18n stamp {shown}"
    recorded = translation.front.get(SOURCE_HASH_KEY)
    line = translation.front_lines.get(SOURCE_HASH_KEY, 1)
    if recorded is None:
        return [Problem(shown, 1, "not stamped",
                        f"the front matter has no {SOURCE_HASH_KEY}, so a later change of "
                        f"{display_path(source_path)} would go unnoticed; when this page matches it, run `{command}`")]
    if not isinstance(recorded, str):
        return [Problem(shown, line, "not stamped",
                        f"{SOURCE_HASH_KEY} must be a quoted string, e.g. {SOURCE_HASH_KEY}: \"0a1b2c3d4e5f\"; "
                        f"run `{command}` to write it")]
    current = source_hash(source_path)
    if recorded != current:
        return [Problem(shown, line, "stale",
                        f"{display_path(source_path)} changed after this translation "
                        f"({SOURCE_HASH_KEY} {recorded} recorded, the source is now {current}); "
                        f"bring the translation up to date, then run `{command}`")]
    return []


def page_status(docs_dir: str | Path, lang: str, reference: str = "id") -> PageStatus:
    """The pages of ``lang`` against the reference language's pages."""
    docs_dir = Path(docs_dir)
    sources = page_names(docs_dir, reference)
    present = set(page_names(docs_dir, lang))
    stale, unstamped = [], []
    if lang != reference:
        for name in sources:
            if name not in present:
                continue
            recorded = parse_page(docs_dir / lang / name, name).front.get(SOURCE_HASH_KEY)
            if recorded is None:
                unstamped.append(name)
            elif recorded != source_hash(docs_dir / reference / name):
                stale.append(name)
    return PageStatus(
        lang=lang,
        total=len(sources),
        present=tuple(name for name in sources if name in present),
        missing=tuple(name for name in sources if name not in present),
        stale=tuple(stale),
        unstamped=tuple(unstamped),
    )


# --- stamping -------------------------------------------------------------------------------------


class StampError(ValueError):
    """A page that cannot be stamped: not a translation, or without a source."""


def stamp(path: str | Path, docs_dir: str | Path, reference: str = "id") -> str:
    """Record the current hash of the source of translation ``path`` (``docs/zh/X.md``)
    in its front matter, as ``source_hash: "…"``; return the hash. Other front-matter
    keys and the page's text are kept as they are."""
    path, docs_dir = Path(path), Path(docs_dir)
    try:
        relative = path.resolve().relative_to(docs_dir.resolve())
    except ValueError:
        raise StampError(f"{display_path(path)}: not inside {display_path(docs_dir)}/") from None
    if len(relative.parts) < 2 or relative.suffix != ".md":
        raise StampError(f"{display_path(path)}: expected a page docs/<lang>/<name>.md")
    lang, name = relative.parts[0], Path(*relative.parts[1:]).as_posix()
    if lang == reference:
        raise StampError(f"{display_path(path)}: this is a source page ({reference}); stamp its translations instead")
    if not path.is_file():
        raise StampError(f"{display_path(path)}: no such page")
    source = docs_dir / reference / name
    if not source.is_file():
        raise StampError(f"{display_path(path)}: its source {display_path(source)} does not exist")
    digest = source_hash(source)
    text = path.read_text(encoding="utf-8")
    path.write_text(_with_hash(text, digest), encoding="utf-8")
    return digest


def _with_hash(text: str, digest: str) -> str:
    entry = f'{SOURCE_HASH_KEY}: "{digest}"'
    lines = text.split("\n")
    if lines and lines[0].rstrip() == "---":
        for end in range(1, len(lines)):
            if lines[end].rstrip() in ("---", "..."):
                for index in range(1, end):
                    if re.match(rf"^{SOURCE_HASH_KEY}[ \t]*:", lines[index]):
                        lines[index] = entry
                        return "\n".join(lines)
                lines.insert(end, entry)
                return "\n".join(lines)
    return f"---\n{entry}\n---\n{text}"
