"""i18n/check.py refuses the translator's mistakes that used to ship: markup, format
expressions, stray braces, typographic quotes, a list for a string, one mark for both
decimals and thousands, a full-width colon. Each is reported at its own file, line and
key (``ZH_YML`` in conftest.py: line 4 decimal, 5 group, 9 label, 10 sentence).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from i18n import check

WriteCatalogs = Callable[..., Path]
SENTENCE = 'sentence: "用 {tokens} 个 token 训练需要 {flops}，单卡约需 {time_1}。"'


def zh_with(zh_yml: str, old: str, new: str) -> str:
    assert old in zh_yml
    return zh_yml.replace(old, new)


def only_problem(write_catalogs: WriteCatalogs, id_yml: str, zh: str) -> str:
    problems = [str(p) for p in check(write_catalogs(id=id_yml, zh=zh))]
    assert len(problems) == 1, problems
    return problems[0]


@pytest.mark.parametrize("payload", [
    "<script>alert(document.domain)</script>",
    "<!--<script>",
    "<img src=x onerror=alert(1)>",
    "</p>",
    "<b>",
])
def test_markup_in_a_string_is_refused_at_its_key(write_catalogs: WriteCatalogs, id_yml: str, zh_yml: str,
                                                  payload: str) -> None:
    zh = zh_with(zh_yml, "{time_1}。", "{time_1}。" + payload)
    problem = only_problem(write_catalogs, id_yml, zh)
    assert problem.startswith("i18n/zh.yml:10: why.sentence: markup ")
    assert "plain text" in problem


def test_markup_in_a_list_item_is_refused(write_catalogs: WriteCatalogs, id_yml: str, zh_yml: str) -> None:
    zh = zh_with(zh_yml, '"亿"]', '"亿<script>x</script>"]')
    problem = only_problem(write_catalogs, id_yml, zh)
    assert problem.startswith("i18n/zh.yml:6: number.scales: list item 1: markup ")


def test_comparisons_are_text_not_markup(write_catalogs: WriteCatalogs, id_yml: str, zh_yml: str) -> None:
    zh = zh_with(zh_yml, "{time_1}。", "{time_1}。m > p，m < 2p，m<3")
    assert check(write_catalogs(id=id_yml, zh=zh)) == []


def test_an_html_entity_is_refused(write_catalogs: WriteCatalogs, id_yml: str, zh_yml: str) -> None:
    zh = zh_with(zh_yml, "{time_1}。", "{time_1}&lt;。")
    assert only_problem(write_catalogs, id_yml, zh) == (
        "i18n/zh.yml:10: why.sentence: the HTML entity &lt; is not allowed: write the character itself")


@pytest.mark.parametrize("field", ["{time_1.__class__}", "{time_1!r}", "{time_1:>10}", "{time_1[0]}"])
def test_a_format_expression_is_not_a_placeholder(write_catalogs: WriteCatalogs, id_yml: str, zh_yml: str,
                                                  field: str) -> None:
    zh = zh_with(zh_yml, "{time_1}", field)
    problem = only_problem(write_catalogs, id_yml, zh)
    assert problem.startswith(f"i18n/zh.yml:10: why.sentence: the placeholder {field} is not a plain name")
    assert "write {time_1}" in problem


@pytest.mark.parametrize("text", ["约需 { {time_1}", "约需 {time_1}}", "约需 {{time_1}}", "{ 约需 {time_1}"])
def test_a_stray_brace_is_reported_at_the_catalog_key(write_catalogs: WriteCatalogs, id_yml: str, zh_yml: str,
                                                      text: str) -> None:
    zh = zh_with(zh_yml, "约需 {time_1}", text)
    problems = [str(p) for p in check(write_catalogs(id=id_yml, zh=zh))]
    assert problems and all(p.startswith("i18n/zh.yml:10: why.sentence: ") for p in problems), problems
    assert any("stray" in p or "not a plain name" in p for p in problems)


def test_typographic_quotes_instead_of_straight_ones_are_refused(write_catalogs: WriteCatalogs, id_yml: str,
                                                                 zh_yml: str) -> None:
    zh = zh_with(zh_yml, 'label: "训练 token 数"', "label: “训练 token 数”")
    assert only_problem(write_catalogs, id_yml, zh) == (
        "i18n/zh.yml:9: why.tokens.label: the value starts with the typographic quote “, which YAML does not "
        'read as a quote: readers would see it; write straight quotes: label: "训练 token 数"')


def test_typographic_quotes_inside_a_quoted_value_are_text(write_catalogs: WriteCatalogs, id_yml: str,
                                                           zh_yml: str) -> None:
    zh = zh_with(zh_yml, 'label: "训练 token 数"', 'label: "“训练”token 数"')
    assert check(write_catalogs(id=id_yml, zh=zh)) == []


def test_the_same_mark_for_decimals_and_thousands_is_refused(write_catalogs: WriteCatalogs, id_yml: str,
                                                             zh_yml: str) -> None:
    zh = zh_with(zh_yml, 'group: ","', 'group: "."')
    problem = only_problem(write_catalogs, id_yml, zh)
    assert problem.startswith('i18n/zh.yml:5: number.group: the thousands mark is the decimal mark too (".")')


def test_a_decimal_mark_must_be_a_point_or_a_comma(write_catalogs: WriteCatalogs, id_yml: str, zh_yml: str) -> None:
    zh = zh_with(zh_yml, 'decimal: "."', 'decimal: "。"')
    assert only_problem(write_catalogs, id_yml, zh) == (
        'i18n/zh.yml:4: number.decimal: the decimal mark must be "." or ",", not "。"')


def test_a_list_where_the_reference_has_a_string_is_refused(write_catalogs: WriteCatalogs, id_yml: str,
                                                            zh_yml: str) -> None:
    zh = zh_with(zh_yml, 'label: "训练 token 数"', 'label: ["训练", "token 数"]')
    assert only_problem(write_catalogs, id_yml, zh) == (
        "i18n/zh.yml:9: why.tokens.label: a list here, but a string in id.yml (line 9): write one quoted string")


def test_a_string_where_the_reference_has_a_list_is_refused(write_catalogs: WriteCatalogs, id_yml: str,
                                                            zh_yml: str) -> None:
    zh = zh_with(zh_yml, 'scales: [[1.0e+8, "亿"], [1.0e+4, "万"]]', 'scales: "亿"')
    assert only_problem(write_catalogs, id_yml, zh).startswith(
        "i18n/zh.yml:6: number.scales: a string here, but a list in id.yml (line 6)")


def test_scales_must_be_pairs_from_largest_to_smallest(write_catalogs: WriteCatalogs, id_yml: str,
                                                       zh_yml: str) -> None:
    zh = zh_with(zh_yml, "[[1.0e+8, \"亿\"], [1.0e+4, \"万\"]]", "[[1.0e+4, \"万\"], [1.0e+8, \"亿\"]]")
    id_ = id_yml.replace("scales:", "count_scales:")
    zh = zh.replace("scales:", "count_scales:")
    problem = only_problem(write_catalogs, id_, zh)
    assert problem.startswith("i18n/zh.yml:6: number.count_scales: item 2: the scales must go from the largest")


@pytest.mark.parametrize("colon", ["：", " ："])
def test_a_full_width_colon_is_reported_on_its_own_line(write_catalogs: WriteCatalogs, id_yml: str, zh_yml: str,
                                                        colon: str) -> None:
    zh = zh_with(zh_yml, 'label: "训练 token 数"', f'label{colon} "训练 token 数"')
    problem = only_problem(write_catalogs, id_yml, zh)
    assert problem.startswith("i18n/zh.yml:9: why.tokens.label: broken YAML: a full-width colon")


def test_a_full_width_colon_on_the_last_key_is_reported_on_its_own_line(write_catalogs: WriteCatalogs, id_yml: str,
                                                                        zh_yml: str) -> None:
    zh = zh_with(zh_yml, SENTENCE, SENTENCE.replace("sentence:", "sentence："))
    problem = only_problem(write_catalogs, id_yml, zh)
    assert problem.startswith("i18n/zh.yml:10: why.sentence: broken YAML: a full-width colon")


def test_the_real_catalogs_hold_only_text(write_catalogs: WriteCatalogs) -> None:
    project = Path(__file__).resolve().parents[2] / "i18n"
    assert check(project) == []
