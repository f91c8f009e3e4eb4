"""Command line for translators.

    python -m i18n check [--dir i18n] [--reference id]
    python -m i18n export [--dir i18n] --out DIR [--reference id]

``check`` prints every problem as ``file:line: key: problem`` on stderr and exits 1, or
prints a one-line summary and exits 0. ``export`` checks first and writes
``DIR/<lang>.json`` only when there is nothing to fix. A missing directory or reference
catalog exits 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .catalog import find_catalogs, load_catalog
from .check import Problem, check, display_path
from .export import export_json


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    args = _parser().parse_args(argv)
    try:
        problems = check(args.dir, args.reference)
    except FileNotFoundError as error:
        print(f"i18n: {error}", file=sys.stderr)
        return 2
    if problems:
        _report(problems)
        return 1
    if args.command == "export":
        written = export_json(args.dir, args.out, args.reference)
        names = ", ".join(path.name for path in written)
        print(f"i18n: wrote {names} to {display_path(args.out)}")
        return 0
    languages = len(find_catalogs(args.dir, args.reference))
    keys = len(load_catalog(args.dir / f"{args.reference}.yml").entries)
    print(f"i18n: {_plural(languages, 'language')}, {_plural(keys, 'key')} each, no problems")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m i18n", description="Check and export the translation catalogs.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="{check,export}")
    check_command = commands.add_parser("check", help="compare every catalog with the reference language")
    export_command = commands.add_parser("export", help="check, then write <lang>.json for every catalog")
    for command in (check_command, export_command):
        command.add_argument("--dir", type=Path, default=Path("i18n"), help="the catalogs' directory (default: i18n)")
        command.add_argument("--reference", default="id", help="the source language (default: id)")
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
