"""The book's glossary: one source file, ``i18n/glossary.yml``, one entry per concept.

Each entry is a mapping under a short name (the anchor on the glossary page)::

    pipeline-bubble:
      en: "pipeline bubble"
      id:
        term: "pipeline bubble"
        definition: "Waktu ... (one sentence)"
        also: ["gelembung pipeline"]        # optional: other accepted forms
        avoid: ["gelembung pipa"]           # optional: discouraged variants
      zh:
        term: "流水线气泡"
        definition: "..."

From it the build makes the glossary page of every language and the hover (and focus)
definitions of the terms in the chapters; ``python -m i18n check`` reports entries that
are incomplete for a language and chapters that use a discouraged variant. A language
without its own block in an entry falls back to the reference language's, so a new
language builds before its glossary is translated.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .catalog import CatalogError, load_catalog
from .check import PLACEHOLDER, Problem, display_path

__all__ = [
    "FIELDS",
    "Glossary",
    "GlossaryError",
    "Sense",
    "Term",
    "abbreviation_lines",
    "Avoided",
    "Usage",
    "abbreviations",
    "avoided_forms",
    "check_glossary",
    "check_terms",
    "load_glossary",
    "load_usage",
    "prose_lines",
    "render_glossary",
    "term_pattern",
]

#: The fields of one language's block; ``term`` and ``definition`` are required.
FIELDS = ("term", "definition", "also", "avoid")
#: Scripts written without spaces between words: a term in them needs no word boundary.
_UNSPACED = "\u2e80-\u9fff\u3040-\u30ff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
#: A word character of a spaced script (Latin, ...): one of these must not touch a term.
_SPACED_WORD = rf"[^\W{_UNSPACED}]"
_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


class GlossaryError(ValueError):
    """A glossary file the build cannot use; ``str(error)`` lists ``file:line: problem``."""


@dataclass(frozen=True)
class Sense:
    """One language's words for a concept."""

    term: str
    definition: str
    also: tuple[str, ...] = ()
    avoid: tuple[str, ...] = ()
    line: int = 0
    avoid_line: int = 0

    def forms(self) -> tuple[str, ...]:
        """The accepted ways of writing the term: the term itself and ``also``."""
        return (self.term, *self.also)


@dataclass(frozen=True)
class Term:
    """One glossary entry: its name, English term and a ``Sense`` per language."""

    name: str
    en: str
    line: int
    senses: dict[str, Sense] = field(default_factory=dict)

    def sense(self, lang: str, reference: str = "id") -> tuple[Sense, str]:
        """The sense for ``lang`` and the language it is written in: ``lang`` when the
        entry has it, else the reference language."""
        if lang in self.senses:
            return self.senses[lang], lang
        return self.senses[reference], reference


@dataclass(frozen=True)
class Glossary:
    path: Path
    terms: tuple[Term, ...]
    reference: str = "id"

    def __len__(self) -> int:
        return len(self.terms)

    def languages(self) -> list[str]:
        """Every language that has a block in at least one entry."""
        found: list[str] = []
        for term in self.terms:
            for lang in term.senses:
                if lang not in found:
                    found.append(lang)
        return found

    def complete(self, lang: str) -> int:
        """How many entries have a term and a definition in ``lang``."""
        return sum(1 for term in self.terms if lang in term.senses)

    def sorted_terms(self) -> list[Term]:
        """The entries in the glossary page's order: by English term."""
        return sorted(self.terms, key=lambda term: (term.en.casefold(), term.name))


# --- loading ----------------------------------------------------------------------------------


def load_glossary(path: str | Path, reference: str = "id") -> Glossary:
    """Read ``path``. Raises ``GlossaryError`` listing every problem that stops the build
    (broken YAML, an entry without an English term or without the reference language)."""
    glossary, problems = _read(Path(path), reference)
    if glossary is None or problems:
        raise GlossaryError("\n".join(str(problem) for problem in problems))
    return glossary


def _read(path: Path, reference: str) -> tuple[Glossary | None, list[Problem]]:
    """The glossary and its structural problems (those the build cannot work around)."""
    shown = display_path(path)
    try:
        catalog = load_catalog(path)
    except CatalogError as error:
        return None, [Problem(shown, error.line, error.key, error.problem)]
    problems: list[Problem] = []
    names = [key for key in catalog.sections if "." not in key]
    for key, entry in catalog.entries.items():
        if "." not in key:
            names.append(key)
            problems.append(Problem(shown, entry.line, key,
                                    'an entry must be a mapping: en: "...", then one block per language'))
    terms: list[Term] = []
    for name in sorted(set(names), key=lambda n: catalog.line_of(n) or 0):
        line = catalog.line_of(name) or 1
        if not _SLUG.match(name):
            problems.append(Problem(shown, line, name,
                                    "an entry's name must be lowercase words joined by '-', e.g. pipeline-bubble"))
        leaves = {key[len(name) + 1:]: entry for key, entry in catalog.entries.items() if key.startswith(f"{name}.")}
        en = leaves.pop("en", None)
        if en is None or not isinstance(en.value, str) or not en.value.strip():
            problems.append(Problem(shown, en.line if en else line, f"{name}.en",
                                    'the English term is missing: write en: "..."'))
            continue
        senses: dict[str, Sense] = {}
        by_lang: dict[str, dict[str, object]] = {}
        for key, entry in leaves.items():
            lang, _, field_name = key.partition(".")
            if not field_name or "." in field_name:
                problems.append(Problem(shown, entry.line, f"{name}.{key}",
                                        f"expected a block per language with {', '.join(FIELDS)}"))
                continue
            if field_name not in FIELDS:
                problems.append(Problem(shown, entry.line, f"{name}.{key}",
                                        f"unknown field {field_name!r}: expected one of {', '.join(FIELDS)}"))
                continue
            by_lang.setdefault(lang, {})[field_name] = entry
        for lang, fields in by_lang.items():
            sense, found = _sense(name, lang, fields, catalog.line_of(f"{name}.{lang}") or line, shown)
            problems += found
            if sense is not None:
                senses[lang] = sense
        if reference not in senses:
            if not any(p.key.startswith(f"{name}.{reference}") for p in problems):
                problems.append(Problem(shown, line, f"{name}.{reference}",
                                        f"the source language is missing: write {reference}: with term: and definition:"))
            continue
        terms.append(Term(name=name, en=en.value.strip(), line=line, senses=senses))
    problems.sort(key=lambda p: (p.line, p.key))
    return Glossary(path=path, terms=tuple(terms), reference=reference), problems


def _sense(name: str, lang: str, fields: dict[str, object], line: int, shown: str) -> tuple[Sense | None, list[Problem]]:
    problems: list[Problem] = []
    values: dict[str, object] = {}
    for field_name in ("term", "definition"):
        entry = fields.get(field_name)
        key = f"{name}.{lang}.{field_name}"
        if entry is None:
            problems.append(Problem(shown, line, key, f'missing {field_name}: write {field_name}: "..."'))
            continue
        value = entry.value  # type: ignore[attr-defined]
        if not isinstance(value, str) or not value.strip():
            problems.append(Problem(shown, entry.line, key, f'{field_name} must be quoted text, e.g. {field_name}: "..."'))  # type: ignore[attr-defined]
            continue
        if field_name == "term" and any(char in value for char in "[]\\\n"):
            problems.append(Problem(shown, entry.line, key, "a term must not contain [, ] or \\"))  # type: ignore[attr-defined]
            continue
        values[field_name] = " ".join(value.split())
    for field_name in ("also", "avoid"):
        entry = fields.get(field_name)
        if entry is None:
            values[field_name] = ()
            continue
        value = entry.value  # type: ignore[attr-defined]
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            problems.append(Problem(shown, entry.line, f"{name}.{lang}.{field_name}",  # type: ignore[attr-defined]
                                    f'{field_name} must be a list of quoted texts, e.g. {field_name}: ["...", "..."]'))
            values[field_name] = ()
            continue
        values[field_name] = tuple(" ".join(v.split()) for v in value)
    if "term" not in values or "definition" not in values:
        return None, problems
    avoid_entry = fields.get("avoid")
    sense = Sense(
        term=values["term"],  # type: ignore[arg-type]
        definition=values["definition"],  # type: ignore[arg-type]
        also=values["also"],  # type: ignore[arg-type]
        avoid=values["avoid"],  # type: ignore[arg-type]
        line=line,
        avoid_line=avoid_entry.line if avoid_entry is not None else line,  # type: ignore[attr-defined]
    )
    for variant in sense.avoid:
        if variant in sense.forms():
            problems.append(Problem(shown, sense.avoid_line, f"{name}.{lang}.avoid",
                                    f"{variant!r} is both accepted and avoided: delete it from one list"))
    return sense, problems


# --- checking -----------------------------------------------------------------------------------


def check_glossary(path: str | Path, languages: Iterable[str], reference: str = "id") -> list[Problem]:
    """Every problem of the glossary: structure, an entry without a term and definition
    in one of ``languages``, a block for an unknown language, a term written the same
    way by two entries."""
    path = Path(path)
    glossary, problems = _read(path, reference)
    if glossary is None:
        return problems
    shown = display_path(path)
    languages = [reference, *(lang for lang in languages if lang != reference)]
    for term in glossary.terms:
        for lang in languages:
            if lang not in term.senses and not any(p.key.startswith(f"{term.name}.{lang}") for p in problems):
                problems.append(Problem(shown, term.line, f"{term.name}.{lang}",
                                        f"no {lang} translation of {term.en!r}: write {lang}: with term: and definition:"))
        for lang, sense in term.senses.items():
            if lang not in languages:
                problems.append(Problem(shown, sense.line, f"{term.name}.{lang}",
                                        f"unknown language {lang!r}: there is no i18n/{lang}.yml"))
    for lang in languages:
        owners: dict[str, Term] = {}
        for term in glossary.terms:
            if lang not in term.senses:
                continue
            for form in term.senses[lang].forms():
                other = owners.setdefault(form, term)
                if other is not term:
                    problems.append(Problem(shown, term.senses[lang].line, f"{term.name}.{lang}",
                                            f"{form!r} is also the {lang} term of {other.name} (line {other.line}): "
                                            "a term must name one concept"))
    problems.sort(key=lambda p: (p.line, p.key, p.message))
    return problems


@dataclass(frozen=True)
class Avoided:
    """A variant the book does not write, what to write instead, and where that is said."""

    variant: str
    write: str
    source: str  # "i18n/glossary.yml line 12: a discouraged variant of 'pipeline bubble'"


def avoided_forms(glossary: Glossary | None, usage: dict[str, list[Usage]] | None, lang: str) -> dict[str, Avoided]:
    """Every discouraged variant for ``lang``, by its case-folded form: the glossary's
    ``avoid`` lists (for concepts) and ``usage.yml`` (for word forms that are no concept)."""
    found: dict[str, Avoided] = {}
    for term in glossary.terms if glossary is not None else ():
        sense = term.senses.get(lang)
        for variant in sense.avoid if sense is not None else ():
            found[variant.casefold()] = Avoided(
                variant, sense.term,
                f"a discouraged variant of {term.en!r} ({display_path(glossary.path)} line {sense.avoid_line})")  # type: ignore[union-attr]
    for rule in (usage or {}).get(lang, []):
        for variant in rule.avoid:
            found[variant.casefold()] = Avoided(
                variant, rule.write, f"a discouraged form ({display_path(rule.path)} line {rule.line})")
    return found


def check_terms(docs_dir: str | Path, glossary: Glossary | None, languages: Iterable[str],
                catalog_dir: str | Path | None = None, usage: dict[str, list[Usage]] | None = None) -> list[Problem]:
    """Pages of ``docs/<lang>/`` (outside code, macros and the front matter) and strings
    of the catalogs ``<catalog_dir>/<lang>.yml`` that write a discouraged variant of a
    glossary term (its ``avoid`` list) or of a word form in ``usage``:
    ``docs/zh/pp.md:12: terms: ...``, ``i18n/zh.yml:80: pp.note: ...``. Matching ignores
    case for spaced scripts."""
    from .pages import page_names  # pages imports check; keep the import graph simple

    docs_dir = Path(docs_dir)
    problems: list[Problem] = []
    for lang in languages:
        variants = avoided_forms(glossary, usage, lang)
        if not variants:
            continue
        pattern = term_pattern(variants, flags=re.IGNORECASE)

        def report(shown: str, line_no: int, key: str, text: str) -> None:
            for match in pattern.finditer(text):
                avoided = variants[match.group(0).casefold()]
                if _beside(text, match, avoided.write):
                    continue
                problems.append(Problem(shown, line_no, key,
                                        f"{match.group(0)!r} is {avoided.source}: write {avoided.write!r}"))

        if (docs_dir / lang).is_dir():
            for name in page_names(docs_dir, lang):
                path = docs_dir / lang / name
                for line_no, text in prose_lines(path.read_text(encoding="utf-8-sig")):
                    report(display_path(path), line_no, "terms", text)
        catalog_path = Path(catalog_dir) / f"{lang}.yml" if catalog_dir is not None else None
        if catalog_path is not None and catalog_path.is_file():
            try:
                catalog = load_catalog(catalog_path)
            except CatalogError:
                continue  # the catalog check reports it
            for key, entry in catalog.entries.items():
                for text in _strings(entry.value):  # a {placeholder} is a name, not prose
                    report(display_path(catalog_path), entry.line, key, PLACEHOLDER.sub(" ", text))
    return problems


def _beside(text: str, match: re.Match[str], write: str) -> bool:
    """A variant given in brackets right beside the book's term, once, so a reader can
    match the two: "微批次（micro-batch）" or "micro-batch（微批次）"."""
    before, after = text[:match.start()].rstrip(), text[match.end():].lstrip()
    opened = before[-1:] in ("(", "（") and before[:-1].rstrip().casefold().endswith(write.casefold())
    closes = after[:1] in ("(", "（") and after[1:].lstrip().casefold().startswith(write.casefold())
    return opened or closes


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    return []


# --- word forms that are no glossary concept -----------------------------------------------------


@dataclass(frozen=True)
class Usage:
    """One word form the book writes one way in a language: ``write``, never ``avoid``."""

    write: str
    avoid: tuple[str, ...]
    path: Path
    line: int


def load_usage(path: str | Path) -> dict[str, list[Usage]]:
    """Read ``usage.yml``: per language, the form to write and the forms to avoid::

        id:
          "algoritme": ["algoritma"]

    Raises ``GlossaryError`` naming file and line for anything else."""
    import yaml
    from yaml.nodes import MappingNode, ScalarNode, SequenceNode

    path = Path(path)
    shown = display_path(path)
    try:
        root = yaml.compose(path.read_text(encoding="utf-8-sig"), Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        raise GlossaryError(f"{shown}:{mark.line + 1 if mark else 1}: broken YAML: {error}") from None
    rules: dict[str, list[Usage]] = {}
    if root is None:
        return rules
    if not isinstance(root, MappingNode):
        raise GlossaryError(f"{shown}:1: expected a mapping of languages (id:, zh:)")
    for lang_node, forms in root.value:
        if not isinstance(forms, MappingNode):
            raise GlossaryError(f"{shown}:{lang_node.start_mark.line + 1}: {lang_node.value}: "
                                'expected forms, e.g. "algoritme": ["algoritma"]')
        for write, avoid in forms.value:
            line = write.start_mark.line + 1
            if (not isinstance(write, ScalarNode) or not isinstance(avoid, SequenceNode)
                    or not avoid.value or not all(isinstance(v, ScalarNode) and v.value.strip() for v in avoid.value)):
                raise GlossaryError(f"{shown}:{line}: {lang_node.value}: expected a form and a list of "
                                    'quoted variants, e.g. "algoritme": ["algoritma"]')
            variants = tuple(" ".join(v.value.split()) for v in avoid.value)
            if write.value in variants:
                raise GlossaryError(f"{shown}:{line}: {write.value!r} is both written and avoided")
            rules.setdefault(lang_node.value, []).append(Usage(write.value, variants, path, line))
    return rules


_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_MACRO = re.compile(r"\{\{.*?\}\}")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")


def prose_lines(text: str) -> list[tuple[int, str]]:
    """``(line number, text)`` of every line a reader reads as prose: front matter,
    fenced code, inline code, macros and link targets removed."""
    lines = text.splitlines()
    start = 0
    if lines and lines[0].rstrip() == "---":
        for end in range(1, len(lines)):
            if lines[end].rstrip() in ("---", "..."):
                start = end + 1
                break
    result = []
    fence: str | None = None
    for index in range(start, len(lines)):
        line = lines[index]
        if fence is not None:
            stripped = line.strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                fence = None
            continue
        opening = _FENCE.match(line)
        if opening:
            fence = opening.group(1)
            continue
        result.append((index + 1, _LINK_TARGET.sub("]()", _MACRO.sub(" ", _CODE_SPAN.sub(" ", line)))))
    return result


def term_pattern(terms: Iterable[str], flags: int = 0) -> re.Pattern[str]:
    """A regex finding any of ``terms`` as whole words. An edge of a term written in a
    spaced script (``rank``) must not touch another letter of a spaced script; an edge
    in Chinese or Japanese (``流水线气泡``) may touch anything, since those scripts put no
    space between words. A hyphen before a term joins it to the word in front (``rank``
    is not found in ``low-rank``); one after it does not (``ZeRO`` is found in ``ZeRO-3``).
    The longest term wins where several start at one place. Compiled once per set of
    terms (the build asks again for every page, and compiling is the slow part)."""
    key = (frozenset(terms), flags)
    pattern = _PATTERNS.get(key)
    if pattern is None:
        pattern = _PATTERNS[key] = _compile_terms(key[0], flags)
    return pattern


_PATTERNS: dict[tuple[frozenset[str], int], re.Pattern[str]] = {}


def _compile_terms(terms: frozenset[str], flags: int) -> re.Pattern[str]:
    # Spaced-script terms share one left-boundary test and all alternatives sit behind a
    # look-ahead on their first characters, so most positions of a text fail at once
    # (equivalent to one alternative per term with its own boundaries, much faster).
    spaced, unspaced = [], []
    for term in sorted(terms, key=lambda t: (-len(t), t)):
        right = rf"(?!{_SPACED_WORD})" if re.match(_SPACED_WORD, term[-1]) else ""
        (spaced if re.match(_SPACED_WORD, term[0]) else unspaced).append(f"{re.escape(term)}{right}")
    if not spaced and not unspaced:
        return re.compile(r"(?!)", flags)
    groups = []
    if spaced:
        groups.append(rf"(?<!{_SPACED_WORD})(?<!-)(?:{'|'.join(spaced)})")
    if unspaced:
        groups.append(f"(?:{'|'.join(unspaced)})")
    first = "".join(sorted({re.escape(t[0]) for t in terms}))
    return re.compile(f"(?=[{first}])(?:{'|'.join(groups)})", flags)


# --- the site ------------------------------------------------------------------------------------


def abbreviations(glossary: Glossary, lang: str) -> dict[str, str]:
    """``{written form: definition}`` for the hover definitions of a page in ``lang``:
    the language's term and accepted forms, the English term, and for spaced scripts
    the same with a capital first letter (a sentence may start with the term). Entries
    not yet translated into ``lang`` use the reference language."""
    result: dict[str, str] = {}
    for term in glossary.terms:
        sense, _ = term.sense(lang, glossary.reference)
        for form in (*sense.forms(), term.en):
            for variant in (form, form[:1].upper() + form[1:]):
                result.setdefault(variant, sense.definition)
    return result


def abbreviation_lines(glossary: Glossary, lang: str) -> str:
    """The Markdown abbreviation definitions (``*[term]: definition``) for ``lang``."""
    # One definition per block: a single block of hundreds of lines makes every Markdown
    # block processor re-test the rest of it after each line (quadratic; slow builds).
    return "\n\n".join(f"*[{form}]: {definition}" for form, definition in abbreviations(glossary, lang).items())


def render_glossary(glossary: Glossary, lang: str) -> str:
    """The glossary as an HTML definition list for a page in ``lang``: every entry with
    an anchor (its name), the term in ``lang`` (with the English term beside it when
    they differ) and the definition. An entry not yet translated into ``lang`` is shown
    in the reference language and marked with its ``lang`` attribute."""
    rows = ['<dl class="glossary">']
    for term in glossary.sorted_terms():
        sense, written = term.sense(lang, glossary.reference)
        mark = f' lang="{written}"' if written != lang else ""
        english = ""
        if term.en.casefold() != sense.term.casefold():
            english = f' <span class="glossary-en" lang="en">({html.escape(term.en)})</span>'
        rows.append(
            f'<dt id="{term.name}"{mark}><strong>{html.escape(sense.term)}</strong>{english}</dt>'
            f"<dd{mark}>{html.escape(sense.definition)}</dd>"
        )
    rows.append("</dl>")
    return "\n".join(rows)
