"""i18n/catalog.py: a catalog keeps every key's line, and refuses what it cannot read."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from i18n import CatalogError, Entry, load_catalog

WriteCatalogs = Callable[..., Path]


def test_every_dotted_key_keeps_its_value_and_line(write_catalogs: WriteCatalogs, id_yml: str) -> None:
    catalog = load_catalog(write_catalogs(id=id_yml) / "id.yml")

    assert catalog.lang == "id"
    assert catalog.entries["why.tokens.label"] == Entry("why.tokens.label", "Token training", 9, "Token training")
    assert {key: entry.line for key, entry in catalog.entries.items()} == {
        "meta.name": 2,
        "number.decimal": 4,
        "number.group": 5,
        "number.scales": 6,
        "why.tokens.label": 9,
        "why.sentence": 10,
    }
    assert catalog.sections == {"meta": 1, "number": 3, "why": 7, "why.tokens": 8}


def test_flat_is_in_file_order_and_keeps_list_leaves(write_catalogs: WriteCatalogs, id_yml: str) -> None:
    flat = load_catalog(write_catalogs(id=id_yml) / "id.yml").flat()

    assert list(flat) == [
        "meta.name",
        "number.decimal",
        "number.group",
        "number.scales",
        "why.tokens.label",
        "why.sentence",
    ]
    assert flat["number.decimal"] == ","
    assert flat["number.scales"] == [[1e9, "miliar"], [1e6, "juta"]]


def test_nested_is_a_plain_dict_for_json(write_catalogs: WriteCatalogs, id_yml: str) -> None:
    catalog = load_catalog(write_catalogs(id=id_yml) / "id.yml")

    assert catalog.nested() == {
        "meta": {"name": "Bahasa Indonesia"},
        "number": {"decimal": ",", "group": ".", "scales": [[1e9, "miliar"], [1e6, "juta"]]},
        "why": {
            "tokens": {"label": "Token training"},
            "sentence": "Training dengan {tokens} token butuh {flops}, sekitar {time_1} di satu GPU.",
        },
    }
    catalog.nested()["number"]["scales"].append("changed")
    assert catalog.flat()["number.scales"] == [[1e9, "miliar"], [1e6, "juta"]]


def test_an_unquoted_no_is_loaded_as_false_and_its_source_kept(write_catalogs: WriteCatalogs) -> None:
    text = 'answer:\n  no: no\n  empty:\n'
    catalog = load_catalog(write_catalogs(id=text) / "id.yml")

    assert catalog.entries["answer.no"] == Entry("answer.no", False, 2, "no")
    assert catalog.entries["answer.empty"] == Entry("answer.empty", None, 3, "")


def test_a_duplicate_key_names_both_lines(write_catalogs: WriteCatalogs) -> None:
    text = """\
why:
  tokens:
    label: "Token training"
    label: "Token"
"""
    with pytest.raises(CatalogError) as raised:
        load_catalog(write_catalogs(id=text) / "id.yml")

    assert (raised.value.line, raised.value.key) == (4, "why.tokens.label")
    assert str(raised.value) == "i18n/id.yml:4: why.tokens.label: duplicate key (first written on line 3)"


def test_the_same_name_under_two_parents_is_not_a_duplicate(write_catalogs: WriteCatalogs) -> None:
    text = 'a:\n  label: "A"\nb:\n  label: "B"\n'
    assert load_catalog(write_catalogs(id=text) / "id.yml").flat() == {"a.label": "A", "b.label": "B"}


@pytest.mark.parametrize(
    ("text", "line", "key", "problem"),
    [
        pytest.param(
            'meta:\n  name: "Bahasa\n',
            2,
            "meta.name",
            "broken YAML: a quoted value starts here and is never closed: add its closing quote",
            id="quote-never-closed",
        ),
        pytest.param(
            'meta:\n  name: "Bahasa\nnumber:\n  decimal: ","\n',
            2,
            "meta.name",
            "broken YAML: a quoted value starts here and runs on to line 4, where YAML stops "
            "(expected <block end>, but found ','): add its closing quote",
            id="quote-runs-on",
        ),
        pytest.param(
            'why:\n  label: "GPU"\n  gpus: {n} GPU\n',
            3,
            "why.gpus",
            "broken YAML: while parsing a block mapping (line 2), expected <block end>, but found '<scalar>'; "
            'quote the value: unquoted, "{" starts a mapping and "[" a list, e.g. key: "{n} GPU"',
            id="flow-mapping",
        ),
        pytest.param(
            "why:\n  note: Catatan: penting\n",
            2,
            "why.note",
            'broken YAML: mapping values are not allowed here; quote the value: an unquoted ": " ends it, e.g. key: "a: b"',
            id="inner-colon",
        ),
        pytest.param(
            'why:\n\tlabel: "GPU"\n',
            2,
            "(file)",
            "broken YAML: while scanning for the next token, found character '\\t' that cannot start any token; "
            "indent with spaces, not tabs",
            id="tab",
        ),
        pytest.param(
            'why:\n  path: "C:\\dir"\n',
            2,
            "why.path",
            "broken YAML: while scanning a double-quoted scalar, found unknown escape character 'd'; "
            'in "double quotes" a backslash starts an escape: write \\\\ for one backslash',
            id="backslash",
        ),
        pytest.param(
            'a: "x"\n---\nb: "y"\n',
            2,
            "(file)",
            "broken YAML: expected a single document in the stream (line 1), but found another document",
            id="two-documents",
        ),
        pytest.param(
            'a: "bell \x07"\n',
            1,
            "a",
            "broken YAML: character #x0007 is not allowed: delete it",
            id="control-character",
        ),
    ],
)
def test_broken_yaml_is_reported_on_the_parsers_line(
    write_catalogs: WriteCatalogs, text: str, line: int, key: str, problem: str
) -> None:
    with pytest.raises(CatalogError) as raised:
        load_catalog(write_catalogs(id=text) / "id.yml")

    assert (raised.value.line, raised.value.key, raised.value.problem) == (line, key, problem)


@pytest.mark.parametrize(
    ("text", "line", "key", "problem"),
    [
        pytest.param("", 1, "(file)", "the file is empty: expected a mapping of keys", id="empty"),
        pytest.param(
            '- "Token"\n',
            1,
            "(file)",
            'the top level must be a mapping of keys (key: "text"), found a list',
            id="top-level-list",
        ),
        pytest.param(
            '"Token"\n',
            1,
            "(file)",
            'the top level must be a mapping of keys (key: "text"), found the text "Token"',
            id="top-level-string",
        ),
        pytest.param(
            'why:\n  tokens.label: "Token"\n',
            2,
            "why.tokens.label",
            'a key must not contain ".": nest it as a mapping instead',
            id="dotted-key",
        ),
        pytest.param(
            'why:\n  [a, b]: "Token"\n',
            2,
            "why",
            "a key must be a plain name, found a list",
            id="list-as-key",
        ),
        pytest.param(
            'why:\n  label: !upper "token"\n',
            2,
            "why.label",
            "cannot read the value: could not determine a constructor for the tag '!upper'",
            id="unknown-tag",
        ),
        pytest.param(
            'a: "x"\n<<: {b: "y"}\n',
            2,
            "(file)",
            "merge keys (<<) are not supported: write the keys out",
            id="merge-key",
        ),
    ],
)
def test_a_file_that_is_not_a_catalog_is_refused(
    write_catalogs: WriteCatalogs, text: str, line: int, key: str, problem: str
) -> None:
    with pytest.raises(CatalogError) as raised:
        load_catalog(write_catalogs(id=text) / "id.yml")

    assert (raised.value.line, raised.value.key, raised.value.problem) == (line, key, problem)


def test_a_file_that_is_not_utf8_names_the_line(write_catalogs: WriteCatalogs) -> None:
    directory = write_catalogs()
    (directory / "id.yml").write_bytes('a: "x"\nb: "caf\u00e9"\n'.encode("latin-1"))

    with pytest.raises(CatalogError) as raised:
        load_catalog(directory / "id.yml")

    assert str(raised.value) == "i18n/id.yml:2: (file): not valid UTF-8: save the file as UTF-8"


def test_a_utf8_byte_order_mark_is_accepted(write_catalogs: WriteCatalogs) -> None:
    directory = write_catalogs()
    (directory / "zh.yml").write_bytes('\ufeffmeta:\n  name: "中文"\n'.encode())

    catalog = load_catalog(directory / "zh.yml")

    assert catalog.entries["meta.name"] == Entry("meta.name", "中文", 2, "中文")


def test_catalog_error_reads_like_a_compiler_message() -> None:
    error = CatalogError(Path("i18n/zh.yml"), 7, "why.sentence", "duplicate key (first written on line 5)")
    assert str(error) == "i18n/zh.yml:7: why.sentence: duplicate key (first written on line 5)"
