"""i18n/export.py: the JSON the browser receives is nested, readable UTF-8 and byte-stable."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from i18n import CatalogError, export_json, load_strings

WriteCatalogs = Callable[..., Path]


def test_each_catalog_becomes_nested_sorted_compact_utf8_json(
    write_catalogs: WriteCatalogs, id_yml: str, zh_yml: str
) -> None:
    written = export_json(write_catalogs(id=id_yml, zh=zh_yml), "out")

    assert written == [Path("out/id.json"), Path("out/zh.json")]
    assert Path("out/zh.json").read_bytes() == (
        '{"meta":{"name":"中文"},"number":{"decimal":".","group":",","scales":[[100000000.0,"亿"],[10000.0,"万"]]},'
        '"why":{"sentence":"用 {tokens} 个 token 训练需要 {flops}，单卡约需 {time_1}。","tokens":{"label":"训练 token 数"}}}\n'
    ).encode()
    assert json.loads(Path("out/id.json").read_text(encoding="utf-8"))["why"]["tokens"] == {"label": "Token training"}


def test_export_is_deterministic_whatever_the_key_order(write_catalogs: WriteCatalogs, zh_yml: str) -> None:
    export_json(write_catalogs(id=zh_yml), "first")
    export_json(write_catalogs(id=zh_yml), "second")
    reordered = """\
why:
  sentence: "用 {tokens} 个 token 训练需要 {flops}，单卡约需 {time_1}。"
  tokens:
    label: "训练 token 数"
number:
  scales: [[1.0e+8, "亿"], [1.0e+4, "万"]]
  group: ","
  decimal: "."
meta:
  name: "中文"
"""
    export_json(write_catalogs(id=reordered), "third")

    first = Path("first/id.json").read_bytes()
    assert first == Path("second/id.json").read_bytes() == Path("third/id.json").read_bytes()


def test_a_broken_catalog_writes_nothing(write_catalogs: WriteCatalogs, id_yml: str) -> None:
    directory = write_catalogs(id=id_yml, zh='meta:\n  name: "中文\n')

    with pytest.raises(CatalogError, match=r"zh\.yml:2: meta\.name: broken YAML"):
        export_json(directory, "out")
    assert not Path("out").exists()


def test_load_strings_gives_one_language_nested(write_catalogs: WriteCatalogs, id_yml: str, zh_yml: str) -> None:
    strings = load_strings(write_catalogs(id=id_yml, zh=zh_yml), "zh")

    assert strings["number"] == {"decimal": ".", "group": ",", "scales": [[1e8, "亿"], [1e4, "万"]]}
    assert strings["why"]["tokens"]["label"] == "训练 token 数"
