"""Load one translation catalog (``i18n/<lang>.yml``), keeping the line of every key.

A catalog is a YAML mapping nested to any depth. Its leaves are quoted strings, or lists
(of strings, or of ``[number, string]`` pairs such as unit scales). Keys are flattened
to dotted names, ``why.tokens.label``, each remembered with the 1-based line where it
is written, so every message to a translator can say ``i18n/zh.yml:9: why.tokens.label``.

The file is parsed with ``yaml.compose`` (the safe loader's node graph, which carries
line marks) rather than ``yaml.safe_load``, which would silently keep the last of two
duplicate keys and forget where anything was written.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode

__all__ = [
    "FILE_KEY",
    "Catalog",
    "CatalogError",
    "Entry",
    "find_catalogs",
    "load_catalog",
    "parse_catalog",
]

#: The key shown when a problem concerns the whole file rather than one key.
FILE_KEY = "(file)"
#: Files of the i18n directory that are not a language's catalog.
NOT_CATALOGS = frozenset({"glossary.yml", "usage.yml"})


class CatalogError(Exception):
    """A catalog that cannot be read: broken YAML, a duplicate key, a top level that
    is not a mapping. ``str(error)`` is ``"{path}:{line}: {key}: {problem}"``."""

    def __init__(self, path: str | Path, line: int, key: str, problem: str) -> None:
        self.path = Path(path)
        self.line = line
        self.key = key
        self.problem = problem
        super().__init__(f"{self.path}:{line}: {key}: {problem}")


@dataclass(frozen=True)
class Entry:
    """One leaf of a catalog.

    ``value`` is what YAML made of the text: a ``str`` when quoted, but ``False`` for an
    unquoted ``no``, a number for ``42``, ``None`` for nothing at all. ``line`` is the
    1-based line of the key. ``source`` is the scalar exactly as written, without
    quotes ("" for lists and mappings), so a message can show what to quote.
    """

    key: str
    value: Any
    line: int
    source: str = ""
    quoted: bool = field(default=True, compare=False)  # False for a plain (unquoted) scalar


@dataclass(frozen=True)
class Catalog:
    """A parsed catalog: its leaves by dotted key, in file order, and the line of every
    mapping that has keys under it (``sections``)."""

    path: Path
    entries: dict[str, Entry]
    sections: dict[str, int]

    @property
    def lang(self) -> str:
        """The language code, taken from the file name: ``i18n/zh.yml`` -> ``zh``."""
        return self.path.stem

    def flat(self) -> dict[str, Any]:
        """``{"why.tokens.label": "Token training", ...}`` in file order."""
        return {key: entry.value for key, entry in self.entries.items()}

    def nested(self) -> dict[str, Any]:
        """The catalog as plain nested dicts (a fresh copy, ready for ``json.dumps``)."""
        tree: dict[str, Any] = {}
        for key, entry in self.entries.items():
            *parents, leaf = key.split(".")
            node = tree
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = copy.deepcopy(entry.value)
        return tree

    def line_of(self, key: str) -> int | None:
        """The line of a leaf or a section, or ``None`` if the key is not here."""
        if key in self.entries:
            return self.entries[key].line
        return self.sections.get(key)

    def is_mapping(self, key: str) -> bool:
        """Whether ``key`` is a mapping here (with keys under it, or an empty ``{}``)."""
        if key in self.sections:
            return True
        entry = self.entries.get(key)
        return entry is not None and isinstance(entry.value, dict)


def find_catalogs(directory: str | Path, reference: str = "id") -> list[Path]:
    """Every ``*.yml`` in ``directory`` (``glossary.yml`` aside), the reference language
    first, then by name.

    Raises ``FileNotFoundError`` when the directory or the reference catalog is absent.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory}: no such directory")
    reference_path = directory / f"{reference}.yml"
    if not reference_path.is_file():
        raise FileNotFoundError(f"{reference_path}: the reference catalog is missing")
    others = sorted(p for p in directory.glob("*.yml") if p.name != reference_path.name and p.name not in NOT_CATALOGS)
    return [reference_path, *others]


def load_catalog(path: str | Path) -> Catalog:
    """Read and parse ``path`` (UTF-8). Raises ``CatalogError`` naming line and key."""
    path = Path(path)
    data = path.read_bytes()
    key = str(path.resolve())
    cached = _LOADED.get(key)
    if cached is not None and cached[0] == data:  # the build reads each catalog often
        return cached[1]
    catalog = _load(path, data)
    _LOADED[key] = (data, catalog)
    return catalog


_LOADED: dict[str, tuple[bytes, Catalog]] = {}


def _load(path: Path, data: bytes) -> Catalog:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise CatalogError(path, line, FILE_KEY, "not valid UTF-8: save the file as UTF-8") from None
    return parse_catalog(text, path)


def parse_catalog(text: str, path: str | Path) -> Catalog:
    """Parse catalog ``text``; ``path`` is used for the language and in messages."""
    path = Path(path)
    _full_width_colon(text, path)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        raise _broken_yaml(error, text, path) from None
    if root is None:
        raise CatalogError(path, 1, FILE_KEY, "the file is empty: expected a mapping of keys")
    if not isinstance(root, MappingNode):
        raise CatalogError(
            path,
            _line(root),
            FILE_KEY,
            f"the top level must be a mapping of keys (key: \"text\"), found {_node_kind(root)}",
        )
    entries: dict[str, Entry] = {}
    sections: dict[str, int] = {}
    _walk(root, "", path, SafeConstructor(), entries, sections)
    return Catalog(path=path, entries=entries, sections=sections)


def _walk(
    mapping: MappingNode,
    prefix: str,
    path: Path,
    constructor: SafeConstructor,
    entries: dict[str, Entry],
    sections: dict[str, int],
) -> None:
    """Flatten ``mapping`` into ``entries`` and ``sections``, refusing duplicate keys."""
    seen: dict[str, int] = {}
    for key_node, value_node in mapping.value:
        line = _line(key_node)
        where = prefix or FILE_KEY
        if not isinstance(key_node, ScalarNode):
            raise CatalogError(path, line, where, f"a key must be a plain name, found {_node_kind(key_node)}")
        name = key_node.value
        if key_node.tag == "tag:yaml.org,2002:merge":
            raise CatalogError(path, line, where, "merge keys (<<) are not supported: write the keys out")
        if not name.strip():
            raise CatalogError(path, line, where, "empty key: write a name before the colon")
        key = f"{prefix}.{name}" if prefix else name
        if "." in name:
            raise CatalogError(path, line, key, 'a key must not contain ".": nest it as a mapping instead')
        if name in seen:
            raise CatalogError(path, line, key, f"duplicate key (first written on line {seen[name]})")
        seen[name] = line
        if isinstance(value_node, MappingNode) and value_node.value:
            sections[key] = line
            _walk(value_node, key, path, constructor, entries, sections)
            continue
        try:
            value = constructor.construct_object(value_node, deep=True)
        except yaml.MarkedYAMLError as error:  # an unknown !tag, an unhashable key in a list
            problem = ", ".join(part for part in (error.context, error.problem) if part)
            raise CatalogError(path, _line(value_node), key, f"cannot read the value: {problem}") from None
        source = value_node.value if isinstance(value_node, ScalarNode) else ""
        quoted = not isinstance(value_node, ScalarNode) or value_node.style in ('"', "'")
        entries[key] = Entry(key=key, value=value, line=line, source=source, quoted=quoted)


def _line(node: Node) -> int:
    return node.start_mark.line + 1


def _node_kind(node: Node) -> str:
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, ScalarNode):
        return f"the text {json.dumps(node.value, ensure_ascii=False)}"
    return "a list"


# --- broken YAML -------------------------------------------------------------------------

_KEY_LINE = re.compile(r"^(?P<indent> *)(?P<name>[^\s#:'\"{}\[\],&*!|>%@`-][^:#]*?|-[^\s:#][^:#]*?)\s*:(?:\s|$)")


def _broken_yaml(error: yaml.YAMLError, text: str, path: Path) -> CatalogError:
    """Turn a PyYAML error into a ``CatalogError`` on the line where the parser stopped,
    with a hint for the usual translator mistakes (see PITFALLS, "YAML for translators").

    One exception: a quote left open. YAML then reads on over the next lines and stops
    somewhere after them, or at the end of the file; the error is put on the line where
    the quote opens, since that is where the fix goes, and names the line YAML stopped at.
    """
    if isinstance(error, yaml.reader.ReaderError):
        line = text[: error.position].count("\n") + 1 if text else 1
        problem = "special characters are not allowed"
        if isinstance(error.character, int):
            problem = f"character #x{error.character:04x} is not allowed: delete it"
        return CatalogError(path, line, _key_at(text, line), f"broken YAML: {problem}")
    if not isinstance(error, yaml.MarkedYAMLError):  # pragma: no cover - every other error is marked
        return CatalogError(path, 1, FILE_KEY, f"broken YAML: {error}")
    mark = error.problem_mark or error.context_mark
    stop = mark.line + 1 if mark else 1
    if error.context == "while scanning a quoted scalar" and error.context_mark is not None:
        line = error.context_mark.line + 1
        message = "broken YAML: a quoted value starts here and is never closed: add its closing quote"
        return CatalogError(path, line, _key_at(text, line), message)
    opened = _runaway_quote(text, stop)
    if opened is not None:
        message = (
            f"broken YAML: a quoted value starts here and runs on to line {stop}, where YAML stops "
            f"({error.problem}): add its closing quote"
        )
        return CatalogError(path, opened, _key_at(text, opened), message)
    message = f"broken YAML: {_yaml_says(error, stop)}"
    hint = _hint(error.problem or "", _text_line(text, stop))
    if hint:
        message += f"; {hint}"
    return CatalogError(path, stop, _key_at(text, stop), message)


_WIDE_COLON_KEY = re.compile(r"^ *[A-Za-z0-9_-]+[ \t]*\uff1a")


def _full_width_colon(text: str, path: Path) -> None:
    """Refuse a key followed by a full-width colon (an input method's "：" for ":"): YAML
    reads the line as text, then stops a line or two later, or, when the key is alone in
    its mapping, silently makes the whole line the parent's value."""
    for number, line in enumerate(text.splitlines(), start=1):
        if _WIDE_COLON_KEY.match(line):
            key = _key_at(text.replace("\uff1a", ":"), number)
            message = 'broken YAML: a full-width colon "：" follows the key: write an ASCII colon ":" instead'
            raise CatalogError(path, number, key, message)


def _yaml_says(error: yaml.MarkedYAMLError, line: int) -> str:
    """PyYAML's own words, without its file excerpt: ``while parsing a block mapping
    (line 2), expected <block end>, but found '<scalar>'``."""
    parts = []
    if error.context:
        context_line = error.context_mark.line + 1 if error.context_mark else line
        parts.append(error.context + (f" (line {context_line})" if context_line != line else ""))
    if error.problem:
        parts.append(error.problem)
    return ", ".join(parts)


def _hint(problem: str, text_line: str) -> str:
    """What to change, when the mistake is a known one; "" otherwise."""
    if problem.startswith("found unknown escape character"):
        return 'in "double quotes" a backslash starts an escape: write \\\\ for one backslash'
    if "'\\t'" in problem:
        return "indent with spaces, not tabs"
    if problem == "mapping values are not allowed here":
        return 'quote the value: an unquoted ": " ends it, e.g. key: "a: b"'
    if re.match(r"^\s*[^:#]+:\s+[{\[]", text_line):
        return 'quote the value: unquoted, "{" starts a mapping and "[" a list, e.g. key: "{n} GPU"'
    if "expected <block end>" in problem or "found character" in problem:
        return 'check the indentation and quote the value, e.g. key: "text"'
    return ""


def _runaway_quote(text: str, line: int) -> int | None:
    """The line where a quoted value starts that spans lines and ends on ``line`` (the
    typical result of a missing closing quote), or ``None``."""
    last: int | None = None
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if (
                isinstance(token, yaml.ScalarToken)
                and token.style in ('"', "'")
                and token.start_mark.line != token.end_mark.line
                and token.end_mark.line + 1 == line
            ):
                last = token.start_mark.line + 1
    except yaml.YAMLError:
        pass
    return last


def _text_line(text: str, line: int) -> str:
    lines = text.splitlines()
    return lines[line - 1] if 1 <= line <= len(lines) else ""


def _key_at(text: str, line: int) -> str:
    """Best guess of the dotted key written on ``line`` of a file too broken to parse,
    from indentation alone; ``FILE_KEY`` when there is no key to name."""
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return FILE_KEY
    match = _KEY_LINE.match(lines[line - 1])
    if match is None:
        return FILE_KEY
    names = [match["name"]]
    indent = len(match["indent"])
    for above in reversed(lines[: line - 1]):
        if indent == 0:
            break
        parent = _KEY_LINE.match(above)
        rest = above[parent.end() :].strip() if parent else ""
        if parent and len(parent["indent"]) < indent and (not rest or rest.startswith("#")):
            names.insert(0, parent["name"])
            indent = len(parent["indent"])
    if indent != 0:
        return FILE_KEY
    return ".".join(names)
