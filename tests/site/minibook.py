"""A small copy of the book for tests that build a site with something changed: the real
catalogs, glossary and mkdocs.yml, one short page per language, and, on request, the
project's packages themselves (to show what adding a file to them does)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PAGE = {
    "id": "# Beranda\n\n```widget why\n```\n\nSatu GPU menyimpan {{ why.state_bytes }}.\n",
    "zh": "---\nsource_hash: \"000000000000\"\n---\n# 首页\n\n```widget why\n```\n\n单卡要存 {{ why.state_bytes }}。\n",
}
PACKAGES = ("calc", "widgets", "i18n", "markdown_math")


def mini_book(tmp: Path, pages: dict[str, str] | None = None, with_code: bool = False) -> Path:
    """Write the copy into `tmp`; returns its mkdocs.yml. With `with_code`, the project's
    packages are copied too, and `build` runs the copy's code instead of the project's."""
    ignore = shutil.ignore_patterns("__pycache__")
    if with_code:
        for folder in PACKAGES:
            shutil.copytree(ROOT / folder, tmp / folder, ignore=ignore)
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(ROOT / name, tmp / name)
    else:
        shutil.copytree(ROOT / "i18n", tmp / "i18n", ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    for lang, text in (pages or PAGE).items():
        (tmp / "docs" / lang).mkdir(parents=True)
        (tmp / "docs" / lang / "index.md").write_text(text, encoding="utf-8")
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    config = config[: config.index("\nnav:")] + "\nnav:\n  - Beranda: index.md\n" + config[config.index("\nmarkdown_extensions:"):]
    config = config.replace("  - widgets\n", f"  - widgets:\n      i18n_dir: {tmp / 'i18n'}\n"
                                             f"      pyodide_dir: {ROOT / 'node_modules' / 'pyodide'}\n")
    (tmp / "mkdocs.yml").write_text(config, encoding="utf-8")
    return tmp / "mkdocs.yml"


def build_command(config: Path, with_code: bool = False) -> dict[str, Any]:
    """`mkdocs build --strict` of a mini book (with its own code first on the path), as
    `args`, `env` and `cwd`: what `build` runs, or an early run in the background
    (tests/conftest.py)."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    if with_code:
        env["PYTHONPATH"] = str(config.parent)
    return {"args": [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(config.parent / "site")],
            "env": env, "cwd": config.parent}


def build(config: Path, with_code: bool = False) -> subprocess.CompletedProcess[str]:
    """`mkdocs build --strict` of a mini book, now."""
    return subprocess.run(capture_output=True, text=True, **build_command(config, with_code))


def edit(path: Path, old: str, new: str) -> int:
    """Replace the first `old` in `path`; returns the 1-based line of the change."""
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    at = text.index(old)
    path.write_text(text[:at] + new + text[at + len(old):], encoding="utf-8")
    return text.count("\n", 0, at) + 1
