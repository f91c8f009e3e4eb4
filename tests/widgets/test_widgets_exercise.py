"""Typed-answer exercises: reading what a reader types in either language, the units,
the tolerance, the verdict and its message, the pre-rendered form, and the fence in a page.

The same functions run in the browser's worker (widgets.browser.check), so what is
proved here natively is what the reader gets.
"""

from __future__ import annotations

import math
import re

import markdown
import pytest
from mkdocs.exceptions import PluginError

from widgets.framework.core import evaluate
from widgets.framework.exercise import (
    UNITS,
    Exercise,
    ExerciseError,
    check,
    exact_number,
    expected,
    from_attributes,
    handle,
    matches,
    parse,
    render_form,
    validate,
)
from widgets.framework.locale import NumberError
from widgets.build.native import locale
from widgets.build.plugin import SLOT, replace_exercises

ID, ZH = locale("id"), locale("zh")


# --- reading a typed number ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lang", "typed", "value"),
    [
        ("id", "0,47", 0.47),
        ("id", "0.47", 0.47),  # a lone point before two digits: still the decimal mark
        ("id", "1.024", 1024),  # ... before exactly three: Indonesian thousands
        ("id", "1,024", 1.024),
        ("id", "1.234.567", 1234567),
        ("id", "1.234,5", 1234.5),
        ("id", "1,234.5", 1234.5),  # both marks: the last one is the decimal mark
        ("id", "0.470", 0.47),  # "0" never starts a thousands group
        ("id", "1,5e9", 1.5e9),
        ("id", "1,5E-3", 1.5e-3),
        ("id", "1.500e9", 1.5e9),  # before an exponent a lone mark is decimal
        ("id", "1,5 × 10^9", 1.5e9),
        ("id", "1,5×10⁹", 1.5e9),
        ("id", "2,5 x 10**-3", 2.5e-3),
        ("id", "  -2,5 ", -2.5),
        ("id", "+3", 3),
        ("id", "12 345", 12345),
        ("id", "12\u202f345,5", 12345.5),
        ("id", ",5", 0.5),
        ("id", "7.", 7),
        ("id", "０，４７", 0.47),
        ("id", "−1", -1),
        ("zh", "0.47", 0.47),
        ("zh", "0,47", 0.47),
        ("zh", "1,024", 1024),
        ("zh", "1.024", 1.024),
        ("zh", "1,234,567.25", 1234567.25),
        ("zh", "1.234,5", 1234.5),
        ("zh", "1.5e9", 1.5e9),
        ("zh", "1.5×10¹²", 1.5e12),
        ("zh", "１２８", 128),
        ("zh", "０．５", 0.5),
        ("zh", "12，345", 12345),  # a full-width comma from a Chinese input method
    ],
)
def test_a_reader_types_a_number_the_way_the_language_writes_it(lang: str, typed: str, value: float) -> None:
    assert locale(lang).parse_number(typed) == pytest.approx(value, rel=1e-15)


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize(
    "typed",
    ["", "   ", "abc", "nan", "NaN", "inf", "-inf", "Infinity", "1e999", "<script>alert(1)</script>",
     "1..2", "1,2,3", "1.23.456", "1,2.3", "--1", "1e", "e9", ",", ".", "1 e 9 9 9 9 9", "0x10", "1/2",
     "12abc", "½", "1e99999", "١٢", "x" * 100, "1" * 81],
)
def test_anything_else_is_not_a_number(lang: str, typed: str) -> None:
    with pytest.raises(NumberError):
        locale(lang).parse_number(typed)


# --- units and the expected answer -----------------------------------------------------------


def raw(spec: str) -> float:
    name, rest = spec.split(".", 1)
    key, *args = rest.split()
    return evaluate(name, dict(a.split("=", 1) for a in args))[1][key]


@pytest.mark.parametrize(
    ("spec", "unit", "scale"),
    [
        ("dp.comm_time gpus=64", "s", 1),
        ("dp.comm_time gpus=64", "ms", 1e-3),
        ("dp.compute_time", "min", 60),
        ("why.time_64", "h", 3600),
        ("why.time_64", "days", 86400),
        ("why.state_bytes", "GB", 1e9),
        ("why.state_bytes", "TB", 1e12),
        ("tp.sent_per_gpu_layer_bytes", "MB", 1e6),
        ("why.optimizer_bytes", "B", 1),
        ("why.optimizer_bytes", "KB", 1e3),
        ("pp.bubble microbatches=32", "%", 0.01),
        ("zero.reduction", "x", 1),
        ("zero.reduction", "", 1),
        ("dp.seqs_per_gpu", "", 1),
        ("why.flops", "ZFLOP", 1e21),
        ("why.flops", "EFLOP", 1e18),
        ("why.flops", "PFLOP", 1e15),
        ("why.flops", "FLOP", 1),
        ("why.gpu_flops", "TFLOP/s", 1e12),
        ("dp.link_bytes_per_s", "GB/s", 1e9),
    ],
)
def test_the_expected_answer_is_calc_in_the_exercise_unit(spec: str, unit: str, scale: float) -> None:
    ex = parse(f"answer: {spec}\nunit: {unit}\n")
    assert expected(ex) == raw(spec) / scale


def test_the_seed_figures_as_answers() -> None:
    assert expected(parse("answer: dp.comm_time\nunit: s")) == pytest.approx(0.4718, rel=1e-3)
    assert expected(parse("answer: why.time_64\nunit: days")) == pytest.approx(97.5, rel=1e-3)
    assert expected(parse("answer: pp.bubble\nunit: %")) == pytest.approx(42.86, rel=1e-3)
    assert expected(parse("answer: dp.seqs_per_gpu\ntolerance: 0")) == 128


def test_a_fence_reads_like_the_macro_it_names() -> None:
    ex = parse("answer: dp.comm_time gpus=64\nunit: s\ntolerance: 2%\n")
    assert ex == Exercise("dp", "comm_time", (("gpus", "64"),), "s", 0.02)
    assert ex.spec == "dp.comm_time gpus=64"
    assert parse("answer: {{ dp.comm_time gpus=64 }}\nunit: s\ntolerance: 2%") == ex
    assert parse("# a comment\nanswer: why.params\n").tolerance == 0.01  # default 1%
    assert parse("answer: why.params\ntolerance: 0").tolerance == 0
    assert parse("answer: why.params\ntolerance: 0.5 %").tolerance == 0.005
    assert parse("answer: why.params").unit == ""
    # The overrides are sorted: the same exercise has one `data-spec` in every language.
    assert parse("answer: dp.comm_time model=llama2-13b gpus=64").spec == "dp.comm_time gpus=64 model=llama2-13b"


@pytest.mark.parametrize(
    ("body", "message", "offset"),
    [
        ("unit: s", "no `answer:` line", 0),
        ("answer: dp.comm_time\nunit: sec", "unknown unit 'sec'", 2),
        ("answer: dp.comm_time\nunits: s", "unknown key 'units'", 2),
        ("answer: dp.comm_time\nanswer: dp.comm_time", "'answer' is given twice", 2),
        ("answer dp.comm_time", "expected `key: value`", 1),
        ("answer: dp.comm_time + 1", "not a macro expression", 1),
        ("answer: dp.comm_time gpus=8 gpus=16", "sets 'gpus' twice", 1),
        ("answer: dp.comm_time\ntolerance: 0.02", "write a percentage", 2),
        ("answer: dp.comm_time\ntolerance: 50%", "more than 25%", 2),
        ("answer: dp.comm_time\ntolerance: -1%", "write a percentage", 2),
    ],
)
def test_a_bad_fence_is_refused_with_the_line_to_fix(body: str, message: str, offset: int) -> None:
    with pytest.raises(ExerciseError, match=re.escape(message)) as info:
        parse(body)
    assert info.value.offset == offset


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("answer: nope.comm_time", "unknown widget 'nope'"),
        ("answer: dp.nothing", "widget dp has no output 'nothing'"),
        ("answer: dp.comm_time gpus=1000\nunit: s", "errors.range"),
        ("answer: dp.comm_time\nunit: GB", "dp.comm_time is a seconds value; unit 'GB' does not measure it"),
        ("answer: why.state_bytes\nunit: s", "use `B`, `KB`, `kB`, `MB`, `GB`, `TB`"),
        ("answer: dp.fits", "unit 'none' does not measure it"),
        ("answer: dp.comm_time\nunit: s\ntolerance: 0", "tolerance 0 (exact) but the answer is"),
    ],
)
def test_an_answer_calc_cannot_give_stops_the_build(body: str, message: str) -> None:
    with pytest.raises(ExerciseError, match=re.escape(message)):
        validate(parse(body))


# --- the tolerance ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "answer", "tolerance", "ok"),
    [
        (101, 100, 0.01, True),
        (99, 100, 0.01, True),
        (101.0001, 100, 0.01, False),
        (98.999, 100, 0.01, False),
        (0.4718 * 1.02, 0.4718, 0.02, True),
        (0.4718 * 1.0201, 0.4718, 0.02, False),
        (-101, -100, 0.01, True),
        (-102, -100, 0.01, False),
        (128, 128, 0, True),
        (128.0000000001, 128, 0, True),  # exact forgives floating point, nothing more
        (128.001, 128, 0, False),
        (127, 128, 0, False),
        (0.1 + 0.2, 0.3, 0, True),
        (0, 0, 0.01, True),
        (1e-9, 0, 0.01, False),
    ],
)
def test_the_tolerance_is_relative_and_zero_is_exact(value: float, answer: float, tolerance: float, ok: bool) -> None:
    assert matches(value, answer, tolerance) is ok


# --- the verdict and its message ---------------------------------------------------------------


COMM = parse("answer: dp.comm_time gpus=64\nunit: s\ntolerance: 2%")  # 0.5307 s


def text(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


@pytest.mark.parametrize(
    ("loc", "typed", "shown"),
    [
        (ID, "0,5307", "Benar! Menurut rumus buku ini, nilainya 0,5307 detik."),
        (ID, "0.53", "Benar! Menurut rumus buku ini, nilainya 0,5307 detik."),
        (ID, "0,53 detik", "Benar!"),
        (ID, "530,7e-3", "Benar!"),
        (ZH, "0.5307", "正确！按本书的公式，结果是 0.5307 秒。"),
        (ZH, "0,53", "正确！"),
        (ZH, "0.53秒", "正确！"),
    ],
)
def test_a_right_answer_is_praised_with_calc_value_in_the_page_locale(loc, typed: str, shown: str) -> None:
    result = check(COMM, typed, loc)
    assert result.status == "correct"
    assert shown in text(result.html)


@pytest.mark.parametrize(
    ("loc", "typed", "shown"),
    [
        (ID, "0,55", "Belum tepat: jawaban Anda terlalu besar."),
        (ID, "0,5", "Belum tepat: jawaban Anda terlalu kecil."),
        (ID, "530,7", "terlalu besar"),  # milliseconds typed where seconds are asked
        (ZH, "0.55", "不对：你的答案偏大。"),
        (ZH, "0.5", "不对：你的答案偏小。"),
    ],
)
def test_a_wrong_answer_says_which_way_without_giving_the_answer_away(loc, typed: str, shown: str) -> None:
    result = check(COMM, typed, loc)
    assert result.status == "incorrect"
    assert shown in text(result.html)
    assert not re.search(r"0[.,]53", text(result.html))


@pytest.mark.parametrize(
    ("loc", "typed", "shown"),
    [
        (ID, "abc", "“abc” tidak terbaca sebagai angka. Tulis angkanya saja, misalnya 0,47 atau 1,5e9."),
        (ID, "", "Tulis dulu jawaban Anda sebagai angka."),
        (ID, "0,53 GB", "“0,53 GB” tidak terbaca"),  # another unit than the one asked for
        (ID, "nan", "“nan” tidak terbaca"),
        (ZH, "abc", "无法把“abc”读作数字。请只填写数字，例如 0.47 或 1.5e9。"),
        (ZH, "  ", "请先填写一个数字。"),
        (ZH, "inf", "无法把“inf”读作数字"),
    ],
)
def test_an_unreadable_answer_is_invalid_with_a_localized_message(loc, typed: str, shown: str) -> None:
    result = check(COMM, typed, loc)
    assert result.status == "invalid"
    assert shown in text(result.html)


def test_the_praise_names_the_books_formulas_not_a_package() -> None:
    for loc in (ID, ZH):
        praise = text(check(COMM, "0,5307" if loc is ID else "0.5307", loc).html)
        assert "calc" not in praise and ("rumus buku ini" in praise or "本书的公式" in praise)


# --- text that reads two ways: 80.860 in Indonesian, 80,860 in Chinese -------------------------


DAYS = parse("answer: why.time_64\nunit: days")  # 97.49 days
GPUS = parse("answer: why.gpus_1024\ntolerance: 0")  # 1024


@pytest.mark.parametrize(
    ("lang", "typed", "readings"),
    [
        ("id", "80.860", [(80860, "80860"), (80.86, "80,860")]),
        ("id", "1.024", [(1024, "1024"), (1.024, "1,024")]),
        ("id", "-97.490", [(-97490, "-97490"), (-97.49, "-97,490")]),
        ("id", "１２．３４５", [(12345, "12345"), (12.345, "12,345")]),  # full-width, as typed
        ("zh", "80,860", [(80860, "80860"), (80.86, "80.860")]),
        ("zh", "12，345", [(12345, "12345"), (12.345, "12.345")]),
    ],
)
def test_a_lone_group_mark_before_three_digits_reads_two_ways(lang: str, typed: str, readings: list) -> None:
    found = locale(lang).readings(typed)
    assert [(r.value, r.text) for r in found] == [(pytest.approx(v, rel=1e-15), t) for v, t in readings]
    assert locale(lang).parse_number(typed) == found[0].value  # parse_number keeps the thousands rule


@pytest.mark.parametrize(
    ("lang", "typed"),
    [("id", "80,860"), ("id", "0.860"), ("id", "1.234.567"), ("id", "80.86"), ("id", "1.500e9"), ("id", "1234.567"),
     ("id", "1.234,5"), ("zh", "80.860"), ("zh", "1,234,567"), ("zh", "0,860"), ("zh", "80,86")],
)
def test_anything_else_reads_one_way(lang: str, typed: str) -> None:
    (reading,) = locale(lang).readings(typed)
    assert reading.value == locale(lang).parse_number(typed)


@pytest.mark.parametrize(
    ("ex", "loc", "typed", "shown"),
    [
        (DAYS, ID, "97.490", "Benar! Menurut rumus buku ini, nilainya 97,49 hari. Jawaban Anda “97.490” dibaca sebagai 97,490."),
        (DAYS, ID, "97.500 hari", "Jawaban Anda “97.500 hari” dibaca sebagai 97,500."),
        (DAYS, ZH, "97,490", "正确！按本书的公式，结果是 97.49 天。你填的“97,490”按 97.490 理解。"),
        (GPUS, ID, "1.024", "Benar! Menurut rumus buku ini, nilainya 1.024. Jawaban Anda “1.024” dibaca sebagai 1024."),
        (GPUS, ZH, "1,024", "你填的“1,024”按 1024 理解。"),
    ],
)
def test_text_read_two_ways_is_right_if_exactly_one_reading_is_and_says_which(ex, loc, typed: str, shown: str) -> None:
    result = check(ex, typed, loc)
    assert result.status == "correct"
    assert shown in text(result.html)


@pytest.mark.parametrize(
    ("loc", "typed", "shown"),
    [
        (ID, "12.345", "“12.345” bisa dibaca dua cara: 12345 (titik sebagai pemisah ribuan) atau 12,345 (titik "
                       "sebagai tanda desimal). Tulis ulang tanpa titik, misalnya 12345 atau 12,345, sesuai yang Anda maksud."),
        (ID, "80.860", "80860 (titik sebagai pemisah ribuan) atau 80,860"),
        (ZH, "12,345", "“12,345”有两种读法：12345（逗号是千位分隔符）或 12.345（逗号是小数点）。请去掉逗号，"
                       "写成你想表达的那个数，例如 12345 或 12.345。"),
    ],
)
def test_text_read_two_ways_and_right_neither_way_is_invalid_naming_both(loc, typed: str, shown: str) -> None:
    result = check(DAYS, typed, loc)
    assert result.status == "invalid"
    assert shown in text(result.html)
    assert "97" not in text(result.html)  # the answer is not given away


def test_one_reading_checks_as_before() -> None:
    assert check(DAYS, "97,49", ID).status == "correct" and "dibaca" not in check(DAYS, "97,49", ID).html
    assert check(DAYS, "97.49", ID).status == "correct"  # a lone point before two digits is decimal
    assert check(DAYS, "97.490", ZH).status == "correct"  # a point is the Chinese decimal mark
    assert check(DAYS, "80,860", ID).status == "incorrect"
    assert check(GPUS, "1024", ID).status == "correct"
    assert handle({"spec": "why.time_64", "unit": "days", "tolerance": "0.01", "typed": "97.490"}, ID)["status"] == "correct"


def test_markup_typed_by_a_reader_comes_back_escaped_and_shortened() -> None:
    result = check(COMM, '<script>alert("x")</script>', ID)
    assert result.status == "invalid"
    assert "<script>" not in result.html and "&lt;script&gt;" in result.html
    long = check(COMM, "<b>" + "a" * 200, ZH)
    assert "<b>" not in long.html and len(long.html) < 300 and "…" in long.html


def test_units_the_reader_may_add_and_the_right_ones_for_each_kind() -> None:
    percent = parse("answer: pp.bubble microbatches=32\nunit: %")
    answer = expected(percent)
    assert check(percent, ID.fixed(answer, 2) + "%", ID).status == "correct"
    assert check(percent, ID.fixed(answer, 2) + " %", ID).status == "correct"
    assert check(percent, "42.86", ID).status == "incorrect"  # the default bubble, not this one
    ratio = parse("answer: zero.reduction\nunit: x")
    assert check(ratio, "2,91×", ID).status == "correct"
    assert check(ratio, "2.91x", ZH).status == "correct"
    days = parse("answer: why.time_64\nunit: days")
    assert check(days, "97,5 hari", ID).status == "correct"
    assert check(days, "97.5天", ZH).status == "correct"
    count = parse("answer: dp.tokens_per_step\ntolerance: 0")
    assert check(count, "4.194.304", ID).status == "correct"
    assert check(count, "4,194,304", ZH).status == "correct"
    assert check(count, "4.194.303", ID).status == "incorrect"
    assert "4.194.304" in text(check(count, "4194304", ID).html)


def test_every_unit_has_a_label_in_both_languages() -> None:
    from widgets.framework.exercise import unit_label

    for code, unit in UNITS.items():
        for loc in (ID, ZH):
            label = unit_label(code, loc)
            assert bool(label) == bool(code)
            if unit.word:
                assert label == loc.t(f"exercise.units.{code}")
    assert unit_label("days", ID) == "hari" and unit_label("days", ZH) == "天"
    assert unit_label("min", ID) == "menit" and unit_label("h", ZH) == "小时"


@pytest.mark.parametrize(
    ("value", "id_text", "zh_text"),
    [
        (0.53065022976, "0,5307", "0.5307"),
        (128.0, "128", "128"),
        (4194304.0, "4.194.304", "4,194,304"),
        (13.476831232, "13,48", "13.48"),
        (1234.5678, "1.235", "1,235"),
        (8.088e22, "8,088 × 10²²", "8.088 × 10²²"),
        (4.474e-5, "4,474 × 10⁻⁵", "4.474 × 10⁻⁵"),
        (0.0, "0", "0"),
    ],
)
def test_calc_value_after_a_right_answer(value: float, id_text: str, zh_text: str) -> None:
    assert exact_number(value, ID) == id_text
    assert exact_number(value, ZH) == zh_text


# --- the worker's entry point ---------------------------------------------------------------------


def test_the_worker_checks_what_the_form_carries() -> None:
    request = {"spec": "dp.comm_time gpus=64", "unit": "s", "tolerance": "0.02", "typed": "0,5307", "lang": "id"}
    assert handle(request, ID)["status"] == "correct"
    assert handle({**request, "typed": "1"}, ID)["status"] == "incorrect"
    assert handle({**request, "typed": "x"}, ID)["status"] == "invalid"


@pytest.mark.parametrize(
    "tampered",
    [
        {"spec": "dp.nothing"}, {"spec": "__import__('os')"}, {"spec": "dp.comm_time gpus=9999"},
        {"unit": "parsec"}, {"tolerance": "nan"}, {"tolerance": "2"}, {"tolerance": "-0.1"}, {"tolerance": "abc"},
        {"spec": "dp.fits"},
    ],
)
def test_a_tampered_form_cannot_be_checked_and_says_so(tampered: dict) -> None:
    request = {"spec": "dp.comm_time gpus=64", "unit": "s", "tolerance": "0.02", "typed": "0,53", **tampered}
    reply = handle(request, ID)
    assert reply["status"] in ("error", "invalid")
    if reply["status"] == "error":
        assert "Latihan ini tidak bisa diperiksa" in reply["html"]


def test_the_browser_module_answers_json() -> None:
    import json

    from widgets import browser
    from widgets.build.native import I18N_DIR

    browser.set_strings("zh", json.dumps(__import__("yaml").safe_load((I18N_DIR / "zh.yml").read_text(encoding="utf-8"))))
    reply = json.loads(browser.check(json.dumps(
        {"spec": "dp.seqs_per_gpu", "unit": "", "tolerance": "0", "typed": "128", "lang": "zh"})))
    assert reply["status"] == "correct" and "128" in reply["html"]


def test_from_attributes_reads_back_what_the_form_writes() -> None:
    assert from_attributes(COMM.spec, COMM.unit, "0.02") == COMM


# --- the pre-rendered form ---------------------------------------------------------------------------


def test_the_form_is_hidden_labelled_and_carries_the_contract() -> None:
    html = render_form(COMM, expected(COMM), "data-parallelism-1", ID)
    root = re.match(r"<form([^>]*)>", html).group(1)
    for attr in ('class="w-exercise"', 'id="exercise-data-parallelism-1"', 'data-exercise="data-parallelism-1"',
                 'data-status="static"', 'data-revision="0"', 'data-lang="id"', 'data-spec="dp.comm_time gpus=64"',
                 'data-unit="s"', 'data-tolerance="0.02"', " hidden", " novalidate", " data-search-exclude"):
        assert attr in root
    assert float(re.search(r'data-answer="([^"]+)"', root).group(1)) == expected(COMM)
    assert '<label class="w-exercise-label" for="exercise-data-parallelism-1-answer">Jawaban Anda</label>' in html
    field = re.search(r"<input([^>]*)>", html).group(1)
    for attr in ('id="exercise-data-parallelism-1-answer"', 'name="answer"', 'inputmode="decimal"', 'autocomplete="off"',
                 'aria-describedby="exercise-data-parallelism-1-unit exercise-data-parallelism-1-tolerance"'):
        assert attr in field
    assert '<span class="w-exercise-unit" id="exercise-data-parallelism-1-unit">detik</span>' in html
    assert '<button type="submit" class="w-exercise-check">Periksa</button>' in html
    assert 'data-action="solution">Lihat pembahasan</button>' in html
    assert ">Toleransi ±2%</p>" in html
    assert '<p class="w-exercise-feedback" data-region="feedback" role="status" aria-live="polite"></p>' in html
    assert "0,53" not in html  # the answer is not printed in the page's text


def test_the_chinese_form_and_the_exact_and_unitless_cases() -> None:
    ex = parse("answer: dp.seqs_per_gpu\ntolerance: 0")
    html = render_form(ex, expected(ex), "x-2", ZH)
    assert "你的答案" in html and "检查" in html and "查看解答" in html and "须填写精确值。" in html
    assert "w-exercise-unit" not in html and 'aria-describedby="exercise-x-2-tolerance"' in html
    assert ">允许误差 ±0.5%</p>" in render_form(parse("answer: why.params\ntolerance: 0.5%"), 1.0, "y-1", ZH)
    assert ">Toleransi ±0,5%</p>" in render_form(parse("answer: why.params\ntolerance: 0.5%"), 1.0, "y-1", ID)


# --- the fence in a page (the plugin's part, through Python-Markdown as MkDocs runs it) ----------


PAGE = """# Bab

## Latihan

!!! question "Latihan 1 — komunikasi"
    Berapa detik? Jawab dalam detik.

    ```exercise
    answer: dp.comm_time gpus=64
    unit: s
    tolerance: 2%
    ```

    ??? success "Pembahasan"
        Jawabannya ada di sini.

!!! question "Latihan 2 — sequence"
    Berapa sequence?

    ```exercise
    answer: dp.seqs_per_gpu
    tolerance: 0
    ```

    ??? success "Pembahasan"
        128.
"""


def render_page(source: str, loc=ID, offset: int = 0) -> str:
    slots: dict[str, str] = {}
    text = replace_exercises(source, "docs/id/bab.md", "bab", loc, slots, offset)
    html = markdown.markdown(text, extensions=["admonition", "pymdownx.details", "pymdownx.superfences", "md_in_html"])
    for token, form in slots.items():
        assert f"<p>{token}</p>" in html
        html = html.replace(f"<p>{token}</p>", form)
    return html


def test_each_exercise_becomes_a_form_inside_its_question_before_its_solution() -> None:
    html = render_page(PAGE)
    boxes = re.findall(r'<div class="admonition question">(.*?)</details>', html, re.S)
    assert len(boxes) == 2
    for number, box in enumerate(boxes, start=1):
        assert re.search(rf'<form class="w-exercise" id="exercise-bab-{number}"[^>]*>.*?</form>\s*<details class="success">',
                         box, re.S)
    assert "```" not in html and "WIDGETSLOT" not in html and "answer:" not in html


def test_the_slot_token_is_the_widget_slot() -> None:
    slots: dict[str, str] = {"WIDGETSLOT0000X": "<div>widget</div>"}
    out = replace_exercises(PAGE, "p.md", "p", ID, slots)
    assert SLOT.format(1) in out and SLOT.format(2) in out and len(slots) == 3


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("unit: s\n", "unit: seconds\n", "docs/id/bab.md:13: exercise: unknown unit 'seconds'"),
        ("answer: dp.comm_time gpus=64", "answer: dp.comm_tme gpus=64", "docs/id/bab.md:11: exercise: widget dp has no output 'comm_tme'"),
        ("answer: dp.comm_time gpus=64", "answer: dp.comm_time gpus=640", "docs/id/bab.md:11: exercise: widget dp: errors.range"),
        ('    ??? success "Pembahasan"\n        Jawabannya', '    !!! success "Pembahasan"\n        Jawabannya',
         "docs/id/bab.md:11: exercise: the fence must be followed by its worked solution"),
        ("answer: dp.seqs_per_gpu\n", "answer: dp.seqs_per_gpu\n    unit: GB\n", "docs/id/bab.md:23: exercise: dp.seqs_per_gpu is a count value"),
    ],
)
def test_a_broken_exercise_stops_the_build_naming_file_and_line(old: str, new: str, message: str) -> None:
    assert old in PAGE
    with pytest.raises(PluginError, match=re.escape(message)):
        render_page(PAGE.replace(old, new, 1), offset=3)


def test_the_page_keeps_its_line_count_so_later_errors_name_the_right_line() -> None:
    assert replace_exercises(PAGE, "p.md", "p", ID, {}).count("\n") == PAGE.count("\n")


def test_front_matter_lines_are_counted_from_the_source_file(tmp_path) -> None:
    from types import SimpleNamespace

    from widgets.build.plugin import _front_lines

    source = tmp_path / "zero.md"
    source.write_text('---\nsource_hash: "0a1b2c3d4e5f"\n---\n' + PAGE, encoding="utf-8")
    assert _front_lines(SimpleNamespace(file=SimpleNamespace(abs_src_path=str(source)))) == 3
    source.write_text(PAGE, encoding="utf-8")
    assert _front_lines(SimpleNamespace(file=SimpleNamespace(abs_src_path=str(source)))) == 0
    assert _front_lines(SimpleNamespace(file=SimpleNamespace(abs_src_path=str(tmp_path / "none.md")))) == 0


def test_every_unit_code_is_safe_in_an_attribute_and_a_css_selector() -> None:
    for code in UNITS:
        assert re.fullmatch(r"[A-Za-z/%]*", code)
    assert math.isclose(UNITS["days"].scale, 86400)
