"""i18n/check.py: every problem a translator can make, with its file, line and key.

The reference id.yml is ``ID_YML`` in conftest.py (line 8 is ``tokens:``, line 9 is
``label: "Token training"``, line 10 the sentence with {tokens}, {flops}, {time_1}).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from i18n import Problem, check

WriteCatalogs = Callable[..., Path]


def messages(directory: Path) -> list[str]:
    return [str(problem) for problem in check(directory)]


def test_a_good_pair_has_no_problems(write_catalogs: WriteCatalogs, id_yml: str, zh_yml: str) -> None:
    assert check(write_catalogs(id=id_yml, zh=zh_yml)) == []


def test_a_problem_reads_file_line_key_message() -> None:
    problem = Problem("i18n/zh.yml", 9, "why.tokens.label", "missing key")
    assert str(problem) == "i18n/zh.yml:9: why.tokens.label: missing key"


def test_a_missing_key_points_at_its_parent_and_quotes_the_reference(
    write_catalogs: WriteCatalogs, id_yml: str
) -> None:
    zh = """\
meta:
  name: "中文"
number:
  decimal: "."
  group: ","
  scales: [[1.0e+8, "亿"], [1.0e+4, "万"]]
why:
  sentence: "用 {tokens} 个 token 训练需要 {flops}，单卡约需 {time_1}。"
"""
    # why.tokens is gone entirely: the nearest mapping that exists is why (line 7).
    assert messages(write_catalogs(id=id_yml, zh=zh)) == [
        'i18n/zh.yml:7: why.tokens.label: missing key (id.yml line 9: "Token training")',
    ]


def test_a_section_left_empty_reports_its_missing_keys_on_its_line(
    write_catalogs: WriteCatalogs, id_yml: str
) -> None:
    zh = """\
meta:
  name: "中文"
number:
  decimal: "."
  group: ","
  scales: [[1.0e+8, "亿"], [1.0e+4, "万"]]
why:
  tokens:
  sentence: "用 {tokens} 个 token 训练需要 {flops}，单卡约需 {time_1}。"
"""
    # "tokens:" with nothing under it is null to YAML; to a translator, a section to fill.
    assert messages(write_catalogs(id=id_yml, zh=zh)) == [
        'i18n/zh.yml:8: why.tokens.label: missing key (id.yml line 9: "Token training")',
    ]


def test_a_missing_section_is_reported_on_line_1(write_catalogs: WriteCatalogs, id_yml: str) -> None:
    zh = """\
number:
  decimal: "."
  group: ","
  scales: [[1.0e+8, "亿"], [1.0e+4, "万"]]
why:
  tokens:
    label: "训练 token 数"
  sentence: "用 {tokens} 个 token 训练需要 {flops}，单卡约需 {time_1}。"
"""
    assert messages(write_catalogs(id=id_yml, zh=zh)) == [
        'i18n/zh.yml:1: meta.name: missing key (id.yml line 2: "Bahasa Indonesia")',
    ]


def test_an_extra_key_is_reported_on_its_own_line(write_catalogs: WriteCatalogs, id_yml: str) -> None:
    zh = """\
meta:
  name: "中文"
number:
  decimal: "."
  group: ","
  scales: [[1.0e+8, "亿"], [1.0e+4, "万"]]
why:
  tokens:
    label: "训练 token 数"
    lable: "训练 token 数"
  sentence: "用 {tokens} 个 token 训练需要 {flops}，单卡约需 {time_1}。"
"""
    assert messages(write_catalogs(id=id_yml, zh=zh)) == [
        "i18n/zh.yml:10: why.tokens.lable: extra key: not in id.yml; delete it, or add it to id.yml first",
    ]


def test_a_placeholder_that_differs_lists_both_sets(write_catalogs: WriteCatalogs, id_yml: str) -> None:
    zh = """\
meta:
  name: "中文"
number:
  decimal: "."
  group: ","
  scales: [[1.0e+8, "亿"], [1.0e+4, "万"]]
why:
  tokens:
    label: "训练 token 数"
  sentence: "用 {tokens} 个 token 训练需要 {flop}，单卡约需 {time_1}。"
"""
    assert messages(write_catalogs(id=id_yml, zh=zh)) == [
        "i18n/zh.yml:10: why.sentence: placeholders differ from id.yml: {flop}, {time_1}, {tokens} here, "
        "{flops}, {time_1}, {tokens} in id.yml (missing {flops}; unknown {flop})",
    ]


def test_placeholders_may_move_but_not_go_missing(write_catalogs: WriteCatalogs, id_yml: str) -> None:
    zh = """\
meta:
  name: "中文"
number:
  decimal: "."
  group: ","
  scales: [[1.0e+8, "亿"], [1.0e+4, "万"]]
why:
  tokens:
    label: "训练 token 数 {tokens}"
  sentence: "单卡约需 {time_1}：{flops}（{tokens} 个 token）。"
"""
    assert messages(write_catalogs(id=id_yml, zh=zh)) == [
        "i18n/zh.yml:9: why.tokens.label: placeholders differ from id.yml: {tokens} here, none in id.yml "
        "(unknown {tokens})",
    ]


def test_an_empty_or_blank_value_is_reported(write_catalogs: WriteCatalogs, id_yml: str) -> None:
    zh = """\
meta:
  name: ""
number:
  decimal: "."
  group: "   "
  scales: [[1.0e+8, "亿"], [1.0e+4, ""]]
why:
  tokens:
    label:
  sentence: "用 {tokens} 个 token 训练需要 {flops}，单卡约需 {time_1}。"
"""
    assert messages(write_catalogs(id=id_yml, zh=zh)) == [
        "i18n/zh.yml:2: meta.name: empty value: write the text between the quotes",
        "i18n/zh.yml:5: number.group: empty value (only spaces): write the text between the quotes",
        "i18n/zh.yml:6: number.scales: empty value in list item 2: write the text between the quotes",
        'i18n/zh.yml:9: why.tokens.label: empty value (read as null): write the text in quotes, e.g. label: "..."',
    ]


def test_an_unquoted_no_or_number_must_be_quoted(write_catalogs: WriteCatalogs, id_yml: str) -> None:
    zh = """\
meta:
  name: no
number:
  decimal: "."
  group: 0
  scales: [[1.0e+8, "亿"], [1.0e+4, "万"]]
why:
  tokens:
    label: ~
  sentence: "用 {tokens} 个 token 训练需要 {flops}，单卡约需 {time_1}。"
"""
    assert messages(write_catalogs(id=id_yml, zh=zh)) == [
        'i18n/zh.yml:2: meta.name: unquoted no is read as a yes/no value (False), not a string: quote it: name: "no"',
        'i18n/zh.yml:5: number.group: unquoted 0 is read as a number, not a string: quote it: group: "0"',
        'i18n/zh.yml:9: why.tokens.label: unquoted ~ is read as null, not a string: quote it: label: "~"',
    ]


def test_broken_yaml_is_one_problem_on_the_parsers_line(write_catalogs: WriteCatalogs, id_yml: str) -> None:
    zh = """\
meta:
  name: "中文"
number:
  decimal: "."
  group: ","
  scales: [[1.0e+8, "亿"], [1.0e+4, "万"]]
why:
  tokens:
    label: {n} 个 token
  sentence: "用 {tokens} 个 token 训练需要 {flops}，单卡约需 {time_1}。"
"""
    assert messages(write_catalogs(id=id_yml, zh=zh)) == [
        "i18n/zh.yml:9: why.tokens.label: broken YAML: while parsing a block mapping, "
        "expected <block end>, but found '<scalar>'; "
        'quote the value: unquoted, "{" starts a mapping and "[" a list, e.g. key: "{n} GPU"',
    ]


def test_an_unclosed_quote_points_where_the_quote_opens(write_catalogs: WriteCatalogs, id_yml: str) -> None:
    zh = """\
meta:
  name: "中文
number:
  decimal: "."
  group: ","
  scales: [[1.0e+8, "亿"], [1.0e+4, "万"]]
why:
  tokens:
    label: "训练 token 数"
  sentence: "用 {tokens} 个 token 训练需要 {flops}，单卡约需 {time_1}。"
"""
    assert messages(write_catalogs(id=id_yml, zh=zh)) == [
        "i18n/zh.yml:2: meta.name: broken YAML: a quoted value starts here and runs on to line 4, "
        "where YAML stops (expected <block end>, but found '<scalar>'): add its closing quote",
    ]


def test_a_duplicate_key_is_reported_on_its_second_line(write_catalogs: WriteCatalogs, id_yml: str) -> None:
    zh = """\
meta:
  name: "中文"
number:
  decimal: "."
  group: ","
  decimal: "."
  scales: [[1.0e+8, "亿"], [1.0e+4, "万"]]
why:
  tokens:
    label: "训练 token 数"
  sentence: "用 {tokens} 个 token 训练需要 {flops}，单卡约需 {time_1}。"
"""
    assert messages(write_catalogs(id=id_yml, zh=zh)) == [
        "i18n/zh.yml:6: number.decimal: duplicate key (first written on line 4)",
    ]


def test_a_string_where_the_reference_has_a_mapping_is_one_problem(
    write_catalogs: WriteCatalogs, id_yml: str
) -> None:
    zh = """\
meta:
  name: "中文"
number:
  decimal: "."
  group: ","
  scales: [[1.0e+8, "亿"], [1.0e+4, "万"]]
why:
  tokens: "训练 token 数"
  sentence: "用 {tokens} 个 token 训练需要 {flops}，单卡约需 {time_1}。"
"""
    assert messages(write_catalogs(id=id_yml, zh=zh)) == [
        "i18n/zh.yml:8: why.tokens: a single value here, but a mapping in id.yml (line 8) "
        "with the keys label: write those keys instead",
    ]


def test_a_mapping_where_the_reference_has_a_string_is_one_problem(
    write_catalogs: WriteCatalogs, id_yml: str
) -> None:
    zh = """\
meta:
  name:
    short: "中文"
    long: "简体中文"
number:
  decimal: "."
  group: ","
  scales: [[1.0e+8, "亿"], [1.0e+4, "万"]]
why:
  tokens:
    label: "训练 token 数"
  sentence: "用 {tokens} 个 token 训练需要 {flops}，单卡约需 {time_1}。"
"""
    assert messages(write_catalogs(id=id_yml, zh=zh)) == [
        "i18n/zh.yml:2: meta.name: a mapping here, but a string in id.yml (line 2): "
        "write one quoted string instead of the keys under it",
    ]


def test_lists_are_compared_by_key_only(write_catalogs: WriteCatalogs, id_yml: str) -> None:
    zh = """\
meta:
  name: "中文"
number:
  decimal: "."
  group: ","
  scales: [[1.0e+12, "万亿"], [1.0e+8, "亿"], [1.0e+4, "万"]]
why:
  tokens:
    label: "训练 token 数"
  sentence: "用 {tokens} 个 token 训练需要 {flops}，单卡约需 {time_1}。"
"""
    assert check(write_catalogs(id=id_yml, zh=zh)) == []


def test_the_reference_itself_is_checked_and_a_broken_one_is_not_compared(
    write_catalogs: WriteCatalogs, zh_yml: str
) -> None:
    id_broken = """\
meta:
  name: "Bahasa Indonesia"
  name: "Indonesia"
"""
    assert messages(write_catalogs(id=id_broken, zh=zh_yml)) == [
        "i18n/id.yml:3: meta.name: duplicate key (first written on line 2)",
    ]


def test_problems_come_reference_first_then_by_file_and_line(write_catalogs: WriteCatalogs, id_yml: str) -> None:
    zh = """\
meta:
  name: no
number:
  decimal: "."
  group: ","
  scales: [[1.0e+8, "亿"], [1.0e+4, "万"]]
why:
  sentence: "用 {tokens} 个 token 训练需要 {flops}，单卡约需 {time_1}。"
  tokens:
    label: ""
  extra: "多余"
"""
    ms = id_yml.replace('  group: "."\n', "")
    problems = check(write_catalogs(id=id_yml.replace('"juta"', '""'), zh=zh, ms=ms))

    assert [(p.file, p.line, p.key) for p in problems] == [
        ("i18n/id.yml", 6, "number.scales"),
        ("i18n/ms.yml", 3, "number.group"),
        ("i18n/zh.yml", 2, "meta.name"),
        ("i18n/zh.yml", 10, "why.tokens.label"),
        ("i18n/zh.yml", 11, "why.extra"),
    ]


def test_a_third_language_is_checked_with_no_code_change(write_catalogs: WriteCatalogs, id_yml: str, zh_yml: str) -> None:
    ms = id_yml.replace('"Bahasa Indonesia"', '"Bahasa Melayu"')
    assert check(write_catalogs(id=id_yml, zh=zh_yml, ms=ms)) == []

    ms_missing_label = ms.replace('    label: "Token training"\n', "")
    assert messages(write_catalogs(ms=ms_missing_label)) == [
        'i18n/ms.yml:8: why.tokens.label: missing key (id.yml line 9: "Token training")',
    ]


def test_another_reference_language_can_be_chosen(write_catalogs: WriteCatalogs, id_yml: str, zh_yml: str) -> None:
    zh_with_extra = zh_yml + '  extra: "多余"\n'
    directory = write_catalogs(id=id_yml, zh=zh_with_extra)

    assert [str(p) for p in check(directory, reference="zh")] == [
        'i18n/id.yml:7: why.extra: missing key (zh.yml line 11: "多余")',
    ]


def test_files_outside_the_working_directory_are_shown_as_given(tmp_path: Path, id_yml: str) -> None:
    directory = tmp_path / "catalogs"
    directory.mkdir()
    (directory / "id.yml").write_text(id_yml.replace('"Bahasa Indonesia"', "no"), encoding="utf-8")

    assert [p.file for p in check(directory)] == [f"{directory}/id.yml"]
