"""Check every catalog in a directory against the reference language.

``check("i18n")`` reads ``i18n/id.yml`` (the source language) and every other
``i18n/*.yml``, and returns one ``Problem`` per thing a translator must fix, each
printed as ``i18n/zh.yml:9: why.tokens.label: missing key (...)``. A new language is a
new file: nothing here names ``zh``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .catalog import Catalog, CatalogError, Entry, find_catalogs, load_catalog

__all__ = ["Problem", "check", "placeholders", "text_problem"]

#: A named placeholder, ``{tokens}``, filled in by the widget that shows the string.
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")

_PREVIEW_CHARS = 60


@dataclass(frozen=True)
class Problem:
    """One thing to fix, at a file, line and dotted key."""

    file: str
    line: int
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.key}: {self.message}"


def check(directory: str | Path, reference: str = "id") -> list[Problem]:
    """All problems of the catalogs in ``directory``, reference file first, then the
    other files by name; within a file, by line.

    Each catalog is checked on its own (broken YAML, duplicate keys, empty values,
    values that are not strings) and every non-reference catalog is compared with the
    reference (missing and extra keys, a mapping against a string, placeholders).
    Raises ``FileNotFoundError`` if the directory or the reference catalog is missing.
    """
    paths = find_catalogs(directory, reference)
    reference_path = paths[0]
    reference_catalog: Catalog | None = None
    problems: list[Problem] = []
    for path in paths:
        shown = display_path(path)
        try:
            catalog = load_catalog(path)
        except CatalogError as error:
            problems.append(Problem(shown, error.line, error.key, error.problem))
            continue
        if path == reference_path:
            reference_catalog = catalog
            found = _check_values(catalog, shown)
        elif reference_catalog is None:
            found = _check_values(catalog, shown)
        else:
            hollow = _hollow_sections(reference_catalog, catalog)
            found = _check_values(catalog, shown, skip=hollow)
            found += _compare(reference_catalog, catalog, shown, hollow)
        problems += sorted(found, key=lambda p: (p.line, p.key, p.message))
    return problems


def placeholders(text: str) -> set[str]:
    """The placeholder names in ``text``: ``"{n} GPU, {t}"`` -> ``{"n", "t"}``."""
    return set(PLACEHOLDER.findall(text))


def display_path(path: Path) -> str:
    """``path`` as a translator should see it: relative to the working directory when
    it lies inside it (``i18n/zh.yml``), otherwise as given."""
    if path.is_absolute():
        try:
            return path.relative_to(Path.cwd()).as_posix()
        except ValueError:
            return path.as_posix()
    return path.as_posix()


# --- one catalog on its own ---------------------------------------------------------------


def _check_values(catalog: Catalog, shown: str, skip: Collection[str] = ()) -> list[Problem]:
    problems = []
    for entry in catalog.entries.values():
        if entry.key in skip:
            continue
        message = _value_problem(entry)
        if message:
            problems.append(Problem(shown, entry.line, entry.key, message))
    return problems + _number_format_problems(catalog, shown)


#: The decimal marks a locale may write numbers with.
DECIMAL_MARKS = (".", ",")


def _number_format_problems(catalog: Catalog, shown: str) -> list[Problem]:
    """``number.decimal`` and ``number.group`` must be marks a reader can tell apart;
    ``number.count_scales`` must be ``[number, "word"]`` pairs, largest first."""
    entries = catalog.entries
    problems = []
    decimal, group = entries.get("number.decimal"), entries.get("number.group")
    if decimal is not None and isinstance(decimal.value, str) and decimal.value.strip():
        if decimal.value not in DECIMAL_MARKS:
            problems.append(Problem(shown, decimal.line, decimal.key,
                                    f'the decimal mark must be "." or ",", not {json.dumps(decimal.value, ensure_ascii=False)}'))
        elif group is not None and group.value == decimal.value:
            problems.append(Problem(shown, group.line, group.key,
                                    f'the thousands mark is the decimal mark too ({json.dumps(decimal.value)}): '
                                    f'1{decimal.value}024 could mean 1024 or 1{decimal.value}024; choose another mark, '
                                    f'e.g. group: "{"," if decimal.value == "." else "."}"'))
    if group is not None and isinstance(group.value, str) and group.value.strip() \
            and (len(group.value) != 1 or group.value.isdigit()):
        problems.append(Problem(shown, group.line, group.key,
                                f'the thousands mark must be one character that is not a digit, e.g. "." or ",", '
                                f'not {json.dumps(group.value, ensure_ascii=False)}'))
    scales = entries.get("number.count_scales")
    if scales is not None and isinstance(scales.value, list) and scales.value:
        message = _scales_problem(scales.value)
        if message:
            problems.append(Problem(shown, scales.line, scales.key, message))
    return problems


def _scales_problem(items: list[Any]) -> str | None:
    example = 'e.g. [[1.0e+9, "miliar"], [1.0e+6, "juta"]]'
    previous = None
    for number, item in enumerate(items, start=1):
        scale = _as_number(item[0]) if isinstance(item, list) and len(item) == 2 else None
        if scale is None or not isinstance(item[1], str):
            return f"item {number} must be a pair [number, \"word\"], {example}"
        if scale <= 0:
            return f"item {number}: the scale must be a positive number, got {item[0]}"
        if previous is not None and scale >= previous:
            return f"item {number}: the scales must go from the largest to the smallest, {example}"
        previous = scale
    return None


def _as_number(value: Any) -> float | None:
    """A scale as the widgets read it (``float(...)``: YAML leaves ``1.0e12`` a string)."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _value_problem(entry: Entry) -> str | None:
    """Why ``entry`` cannot be shown to a reader, or ``None`` if it is fine."""
    value = entry.value
    if isinstance(value, str):
        if not value:
            return "empty value: write the text between the quotes"
        if not value.strip():
            return "empty value (only spaces): write the text between the quotes"
        if value[0] in OPENING_QUOTES and not entry.quoted:
            name = entry.key.rsplit(".", 1)[-1]
            inner = value.strip("".join(OPENING_QUOTES + CLOSING_QUOTES))
            return (f"the value starts with the typographic quote {value[0]}, which YAML does not read as a quote: "
                    f"readers would see it; write straight quotes: {name}: {json.dumps(inner, ensure_ascii=False)}")
        return text_problem(value)
    if isinstance(value, list):
        return _list_problem(value)
    if isinstance(value, dict):
        return "empty value ({}): write the keys under it, or delete it"
    return _not_a_string(entry)


def _list_problem(items: list[Any]) -> str | None:
    """A list leaf: every string in it (at any depth) must have text; numbers may appear
    (``[[1.0e+9, "miliar"], ...]``), but not null or yes/no."""
    if not items:
        return "empty list: write its items, or delete the key"
    for number, item in enumerate(items, start=1):
        for element in item if isinstance(item, list) else [item]:
            if element is None or (isinstance(element, str) and not element.strip()):
                return f"empty value in list item {number}: write the text between the quotes"
            if isinstance(element, bool):
                return f"list item {number} holds {element}, not a string: quote it"
            if isinstance(element, str):
                message = text_problem(element)
                if message:
                    return f"list item {number}: {message}"
    return None


#: Quotes from a word processor or an input method, which YAML reads as text.
OPENING_QUOTES = ("\u201c", "\u201d", "\u201e", "\u2018", "\u2019", "\u201a", "\u00ab", "\u00bb", "\uff02")
CLOSING_QUOTES = ("\u201d", "\u2019", "\u00bb", "\uff02")
_MARKUP = re.compile(r"<[A-Za-z!/?]")
_ENTITY = re.compile(r"&(?:#[0-9]+|#[xX][0-9A-Fa-f]+|[A-Za-z][A-Za-z0-9]*);")
_FIELD = re.compile(r"\{[^{}]*\}")


def text_problem(text: str) -> str | None:
    """Why a catalog string is not plain text with ``{name}`` placeholders, or ``None``.

    Catalog strings are text, never markup: every place that shows one escapes it, and
    this check refuses what only markup or a format expression would need, so a
    translation cannot smuggle a tag into a page or read an attribute of a value.
    """
    tag = _MARKUP.search(text)
    if tag:
        snippet = text[tag.start(): tag.start() + 12]
        return (f"markup {json.dumps(snippet, ensure_ascii=False)} is not allowed: catalog strings are plain text "
                f"(a < may stand before a space or a digit, as in m < p)")
    entity = _ENTITY.search(text)
    if entity:
        return f"the HTML entity {entity.group()} is not allowed: write the character itself"
    for field in _FIELD.finditer(text):
        if not PLACEHOLDER.fullmatch(field.group()):
            inner = field.group()[1:-1]
            name = re.match(r"[A-Za-z_][A-Za-z0-9_]*", inner)
            hint = f"write {{{name.group()}}}" if name else "a placeholder is a name in braces, e.g. {value}"
            return f"the placeholder {field.group()} is not a plain name: {hint}"
    rest = _FIELD.sub("", text)
    for brace in "{}":
        if brace in rest:
            at = text.index(brace) if brace == "{" else text.rindex(brace)
            snippet = text[max(0, at - 10): at + 10]
            return (f'a stray "{brace}" (…{snippet}…): placeholders are written {{name}} with both braces; '
                    f"delete the stray one")
    return None


def _not_a_string(entry: Entry) -> str:
    """The message for a value YAML read as something else than text."""
    name = entry.key.rsplit(".", 1)[-1]
    if entry.value is None and not entry.source:
        return f'empty value (read as null): write the text in quotes, e.g. {name}: "..."'
    if isinstance(entry.value, bool):
        kind = f"a yes/no value ({entry.value})"
    elif isinstance(entry.value, (int, float)):
        kind = "a number"
    elif entry.value is None:
        kind = "null"
    else:
        kind = f"a {type(entry.value).__name__}"
    quoted = json.dumps(entry.source, ensure_ascii=False)
    return f"unquoted {entry.source} is read as {kind}, not a string: quote it: {name}: {quoted}"


# --- one catalog against the reference ------------------------------------------------------


def _hollow_sections(reference: Catalog, catalog: Catalog) -> dict[str, int]:
    """Keys written with nothing after the colon (``tokens:``, read as null) where the
    reference has a mapping: a section whose keys are all missing, not a wrong value."""
    return {
        key: entry.line
        for key, entry in catalog.entries.items()
        if entry.value is None and not entry.source and key in reference.sections
    }


def _compare(reference: Catalog, catalog: Catalog, shown: str, hollow: dict[str, int]) -> list[Problem]:
    ref_name = reference.path.name
    sections = {**catalog.sections, **hollow}
    problems: list[Problem] = []

    # A key that is a mapping in one file and a single value in the other: one problem,
    # and nothing reported again for the keys below it.
    conflicts: list[str] = []
    for key in [*catalog.sections, *catalog.entries]:
        ref_line = reference.line_of(key)
        if ref_line is None or key in hollow or catalog.is_mapping(key) == reference.is_mapping(key):
            continue
        conflicts.append(key)
        here_line = catalog.line_of(key) or 1
        if catalog.is_mapping(key):
            message = (
                f"a mapping here, but {_describe(reference, key)} in {ref_name} (line {ref_line}): "
                "write one quoted string instead of the keys under it"
            )
        else:
            under = _children(reference, key)
            message = (
                f"a single value here, but a mapping in {ref_name} (line {ref_line}) "
                f"with the keys {', '.join(under)}: write those keys instead"
            )
        problems.append(Problem(shown, here_line, key, message))

    def under_conflict(key: str) -> bool:
        return any(key.startswith(f"{conflict}.") for conflict in conflicts)

    for key, entry in reference.entries.items():
        if catalog.line_of(key) is not None or under_conflict(key):
            continue
        message = f"missing key ({ref_name} line {entry.line}: {_preview(entry.value)})"
        problems.append(Problem(shown, _parent_line(sections, key), key, message))

    for key, entry in catalog.entries.items():
        if reference.line_of(key) is not None or under_conflict(key):
            continue
        message = f"extra key: not in {ref_name}; delete it, or add it to {ref_name} first"
        problems.append(Problem(shown, entry.line, key, message))

    for key, entry in catalog.entries.items():
        ref_entry = reference.entries.get(key)
        if ref_entry is None or entry.value is None:
            continue
        if isinstance(ref_entry.value, (str, list)) and isinstance(entry.value, (str, list)) \
                and type(entry.value) is not type(ref_entry.value):
            here_kind, there_kind = ("a list", "a string") if isinstance(entry.value, list) else ("a string", "a list")
            fix = "write one quoted string" if there_kind == "a string" else f"write a list like the one in {ref_name}"
            problems.append(Problem(shown, entry.line, key,
                                    f"{here_kind} here, but {there_kind} in {ref_name} (line {ref_entry.line}): {fix}"))
            continue
        if not isinstance(entry.value, str) or not isinstance(ref_entry.value, str) or text_problem(entry.value):
            continue  # a string that is not plain text is reported on its own
        here, there = placeholders(entry.value), placeholders(ref_entry.value)
        if here != there:
            message = f"placeholders differ from {ref_name}: {_names(here)} here, {_names(there)} in {ref_name}"
            details = []
            if there - here:
                details.append(f"missing {_names(there - here)}")
            if here - there:
                details.append(f"unknown {_names(here - there)}")
            message += f" ({'; '.join(details)})"
            problems.append(Problem(shown, entry.line, key, message))
    return problems


def _parent_line(sections: dict[str, int], key: str) -> int:
    """The line of the nearest mapping above ``key`` that exists here, or 1."""
    parts = key.split(".")
    for depth in range(len(parts) - 1, 0, -1):
        line = sections.get(".".join(parts[:depth]))
        if line is not None:
            return line
    return 1


def _children(catalog: Catalog, key: str) -> list[str]:
    """The names directly under mapping ``key``, in file order."""
    prefix = f"{key}."
    names: list[str] = []
    for child in [*catalog.sections, *catalog.entries]:
        if child.startswith(prefix):
            name = child[len(prefix) :].split(".", 1)[0]
            if name not in names:
                names.append(name)
    return names


def _describe(catalog: Catalog, key: str) -> str:
    value = catalog.entries[key].value
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "a single value"


def _preview(value: Any) -> str:
    """A short rendering of a reference value, so the translator sees what to translate."""
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, str) else repr(value)
    if len(text) > _PREVIEW_CHARS:
        text = text[: _PREVIEW_CHARS - 2] + '…"'
    return text


def _names(names: set[str]) -> str:
    return ", ".join(f"{{{name}}}" for name in sorted(names)) or "none"
