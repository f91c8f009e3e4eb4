"""Command line for translators.

    python -m i18n check  [--dir i18n] [--docs DOCS] [--reference id]
    python -m i18n status [--dir i18n] [--docs DOCS] [--reference id]
    python -m i18n stamp  [--docs DOCS] [--reference id] (--all | PAGE ...)
    python -m i18n export [--dir i18n] --out DIR [--reference id]

``check`` compares every catalog with the reference language, every translated page
with its source page (missing pages, a different skeleton, stale translations), checks
the glossary and the chapters' use of its terms; it prints every problem as
``file:line: what: problem`` on stderr and exits 1, or prints a summary and exits 0.
``status`` prints a Markdown table of how complete each language is. ``stamp`` records
the current hash of the source in a translation's front matter once it is up to date.
``export`` checks the catalogs first and writes ``DIR/<lang>.json`` only when there is
nothing to fix. A missing directory or reference catalog exits 2.

``DOCS`` defaults to the ``docs`` folder beside the catalogs' folder (``i18n/../docs``);
when it does not exist, only the catalogs are checked.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .catalog import find_catalogs, load_catalog
from .check import Problem, check, display_path
from .export import export_json
from .glossary import GlossaryError, check_glossary, check_terms, load_glossary, load_usage
from .pages import LANGUAGE_DIR, StampError, check_pages, page_names, stamp, translation_languages
from .status import status_markdown

GLOSSARY = "glossary.yml"
USAGE = "usage.yml"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    args = _parser().parse_args(argv)
    if args.command == "stamp":
        return _stamp(args)
    try:
        problems = check(args.dir, args.reference)
        if args.command == "status":
            return _status(args)
    except FileNotFoundError as error:
        print(f"i18n: {error}", file=sys.stderr)
        return 2
    if args.command == "export":
        if problems:
            _report(problems)
            return 1
        written = export_json(args.dir, args.out, args.reference)
        names = ", ".join(path.name for path in written)
        print(f"i18n: wrote {names} to {display_path(args.out)}")
        return 0
    languages = [path.stem for path in find_catalogs(args.dir, args.reference)]
    docs = _docs(args)
    glossary_path = args.dir / GLOSSARY
    problems += _check_glossary(glossary_path, docs, languages, args.reference)
    problems += _check_pages(docs, languages, args.reference)
    if problems:
        _report(problems)
        return 1
    keys = len(load_catalog(args.dir / f"{args.reference}.yml").entries)
    if docs.is_dir():
        pages = len(page_names(docs, args.reference))
        langs = 1 + len(translation_languages(docs, languages, args.reference))
        summary = f"i18n: {_plural(pages, 'page')} in {_plural(langs, 'language')}, all translated and up to date"
        if glossary_path.is_file():
            summary += f"; glossary: {_plural(len(load_glossary(glossary_path, args.reference)), 'term')}"
        print(summary)
    print(f"i18n: {_plural(len(languages), 'language')}, {_plural(keys, 'key')} each, no problems")
    return 0


def _docs(args: argparse.Namespace) -> Path:
    if args.docs is not None:
        return args.docs
    return args.dir.parent / "docs"


def _check_glossary(path: Path, docs: Path, languages: list[str], reference: str) -> list[Problem]:
    """The glossary's own problems, then every page and catalog string that writes a
    variant the glossary or ``usage.yml`` (beside it) says to avoid."""
    problems = check_glossary(path, languages, reference) if path.is_file() else []
    glossary = None
    if path.is_file():
        try:
            glossary = load_glossary(path, reference)
        except GlossaryError:
            return problems  # already reported
    usage_path = path.parent / USAGE
    try:
        usage = load_usage(usage_path) if usage_path.is_file() else {}
    except GlossaryError as error:
        shown, line, message = str(error).split(":", 2)
        return problems + [Problem(shown, int(line), "usage", message.strip())]
    return problems + check_terms(docs, glossary, languages, catalog_dir=path.parent, usage=usage)


def _check_pages(docs: Path, languages: list[str], reference: str) -> list[Problem]:
    if not docs.is_dir():
        return []
    problems = check_pages(docs, reference, languages)
    if (docs / reference).is_dir():
        for folder in sorted(p for p in docs.iterdir() if p.is_dir()):
            if LANGUAGE_DIR.match(folder.name) and folder.name not in languages:
                problems.append(Problem(display_path(folder) + "/", 1, "pages",
                                        f"no catalog i18n/{folder.name}.yml for this language: copy "
                                        f"i18n/{reference}.yml to it and translate the strings"))
    return problems


def _status(args: argparse.Namespace) -> int:
    print(status_markdown(args.dir, _docs(args), args.reference), end="")
    return 0


def _stamp(args: argparse.Namespace) -> int:
    docs = args.docs if args.docs is not None else Path("docs")
    if args.all == bool(args.pages):
        print("i18n: stamp takes either pages (docs/<lang>/<name>.md) or --all", file=sys.stderr)
        return 2
    pages = [Path(page) for page in args.pages]
    if args.all:
        for lang in translation_languages(docs, (), args.reference):
            sources = set(page_names(docs, args.reference))
            pages += [docs / lang / name for name in page_names(docs, lang) if name in sources]
    status = 0
    for page in pages:
        try:
            digest = stamp(page, docs, args.reference)
        except StampError as error:
            print(f"i18n: {error}", file=sys.stderr)
            status = 2
            continue
        print(f"i18n: stamped {display_path(page)} (source_hash: {digest})")
    return status


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m i18n", description="Check, stamp and export the translations.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="{check,status,stamp,export}")
    check_command = commands.add_parser(
        "check", help="compare every catalog and every page with the reference language; check the glossary")
    status_command = commands.add_parser("status", help="print a Markdown table of how complete each language is")
    stamp_command = commands.add_parser(
        "stamp", help="record the source's current hash in translated pages (after updating them)")
    export_command = commands.add_parser("export", help="check, then write <lang>.json for every catalog")
    for command in (check_command, status_command, export_command):
        command.add_argument("--dir", type=Path, default=Path("i18n"), help="the catalogs' directory (default: i18n)")
    for command in (check_command, status_command, stamp_command):
        command.add_argument("--docs", type=Path, default=None,
                             help="the pages' directory, with a folder per language (default: docs beside --dir)")
    for command in (check_command, status_command, stamp_command, export_command):
        command.add_argument("--reference", default="id", help="the source language (default: id)")
    stamp_command.add_argument("pages", nargs="*", help="translated pages, e.g. docs/zh/zero.md")
    stamp_command.add_argument("--all", action="store_true", help="stamp every translated page of every language")
    export_command.add_argument("--out", type=Path, required=True, help="where to write <lang>.json")
    return parser


def _report(problems: list[Problem]) -> None:
    for problem in problems:
        print(problem, file=sys.stderr)
    files = len({problem.file for problem in problems})
    print(f"i18n: {_plural(len(problems), 'problem')} in {_plural(files, 'file')}", file=sys.stderr)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


if __name__ == "__main__":
    raise SystemExit(main())
