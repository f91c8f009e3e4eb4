"""Fixture catalogs for the i18n tests: small files written into tmp_path/i18n.

Test modules take these through fixtures (``id_yml``, ``write_catalogs``) and never
import this file, which pytest may load under another module name.

Tests run with tmp_path as the working directory and pass the relative directory
``i18n``, so every problem reads exactly as a translator sees it: ``i18n/zh.yml:9: ...``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

#: The reference catalog (Indonesian). Line numbers, for the expected messages:
#:  1 meta   2 meta.name   3 number   4 number.decimal   5 number.group
#:  6 number.scales   7 why   8 why.tokens   9 why.tokens.label   10 why.sentence
ID_YML = """\
meta:
  name: "Bahasa Indonesia"
number:
  decimal: ","
  group: "."
  scales: [[1.0e+9, "miliar"], [1.0e+6, "juta"]]
why:
  tokens:
    label: "Token training"
  sentence: "Training dengan {tokens} token butuh {flops}, sekitar {time_1} di satu GPU."
"""

#: A complete, correct Chinese catalog (same keys, same lines as ID_YML).
ZH_YML = """\
meta:
  name: "中文"
number:
  decimal: "."
  group: ","
  scales: [[1.0e+8, "亿"], [1.0e+4, "万"]]
why:
  tokens:
    label: "训练 token 数"
  sentence: "用 {tokens} 个 token 训练需要 {flops}，单卡约需 {time_1}。"
"""



@pytest.fixture
def id_yml() -> str:
    """The reference catalog text, ``ID_YML``."""
    return ID_YML


@pytest.fixture
def zh_yml() -> str:
    """The matching Chinese catalog text, ``ZH_YML``."""
    return ZH_YML


@pytest.fixture
def write_catalogs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Path]:
    """``write_catalogs(id=..., zh=...)`` writes ``i18n/<lang>.yml`` (UTF-8) under
    tmp_path, which becomes the working directory, and returns ``Path("i18n")``."""
    monkeypatch.chdir(tmp_path)

    def write(**files: str) -> Path:
        directory = Path("i18n")
        directory.mkdir(exist_ok=True)
        for lang, text in files.items():
            (directory / f"{lang}.yml").write_text(text, encoding="utf-8")
        return directory

    return write


#: Real pages copied by ``book_copy``: a chapter with a widget, H3 sections and links, the
#: home page, and the Translate page (code blocks in two languages).
BOOK_PAGES = ("index.md", "tensor-parallelism.md", "translate.md")


@pytest.fixture
def book_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of some of the book's real pages in ``tmp_path/docs/{id,zh}/`` (stamped,
    consistent), with tmp_path as the working directory; returns ``Path("docs")``, so
    problems read as a translator sees them: ``docs/zh/index.md:3: ...``."""
    project = Path(__file__).resolve().parents[2]
    for lang in ("id", "zh"):
        (tmp_path / "docs" / lang).mkdir(parents=True)
        for name in BOOK_PAGES:
            (tmp_path / "docs" / lang / name).write_bytes((project / "docs" / lang / name).read_bytes())
    monkeypatch.chdir(tmp_path)
    return Path("docs")
