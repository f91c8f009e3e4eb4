"""Number formats: Indonesian writes 107,8 GB and 1.024; Chinese 107.8 GB and 1,024."""

from __future__ import annotations

import math

import pytest

from widgets.framework.locale import plain_number
from widgets.build.native import locale


@pytest.mark.parametrize(
    ("lang", "kind", "value", "text"),
    [
        ("id", "bytes", 107.84e9, "107,8 GB"),
        ("zh", "bytes", 107.84e9, "107.8 GB"),
        ("id", "bytes", 80e9, "80 GB"),
        ("id", "bytes", 1.158e9, "1,16 GB"),
        ("id", "bytes", 201.3e6, "201,3 MB"),
        ("id", "integer", 1024, "1.024"),
        ("zh", "integer", 1024, "1,024"),
        ("id", "flops", 8.088e22, "8,1 × 10²² FLOP"),
        ("zh", "flops", 8.088e22, "8.1 × 10²² FLOP"),
        ("id", "flops", 9.96e22, "1,0 × 10²³ FLOP"),
        ("id", "seconds", 5.392e8, "17,1 tahun"),
        ("zh", "seconds", 5.392e8, "17.1 年"),
        ("id", "seconds", 8.425e6, "97,5 hari"),
        ("id", "seconds", 141.3, "2,35 menit"),
        ("zh", "seconds", 0.4718, "471.8 毫秒"),
        ("id", "count", 6_738_415_616, "6,74 miliar"),
        ("zh", "count", 6_738_415_616, "67.4 亿"),
        ("id", "count", 2e12, "2 triliun"),
        ("zh", "count", 2e12, "2 万亿"),
        ("id", "ratio", 1.3476, "1,35×"),
        ("id", "fraction", 0.42857, "42,9%"),
        # a share never rounds to a false 0 or 100; zero is 0%
        ("id", "fraction", 2.16e-6, "<\u00a00,1%"),
        ("zh", "fraction", 2.16e-6, "<\u00a00.1%"),
        ("id", "fraction", -3e-4, ">\u00a0-0,1%"),
        ("id", "fraction", 0.0005, "0,1%"),
        ("id", "fraction", 0.0, "0%"),
        ("zh", "fraction", 0.99996, ">\u00a099.9%"),
        ("id", "fraction", 0.9994, "99,9%"),
        ("id", "fraction", 1.0, "100,0%"),
        ("id", "flops_per_s", 150e12, "150 TFLOP/s"),
        ("id", "number", 16.5, "16,5"),
        ("zh", "number", 21.0, "21"),
        ("id", "scientific", 1e-5, "1,0 × 10⁻⁵"),
        ("zh", "scientific", 2.5e-7, "2.5 × 10⁻⁷"),
        # fp16's 0.1, its maximum and smallest subnormal 2⁻²⁴, bf16's epsilon 2⁻⁷
        ("id", "exact", 0.0999755859375, "0,099975586"),
        ("zh", "exact", 65504.0, "65,504"),
        ("id", "exact", 2.0**-24, "5,9604645 × 10⁻⁸"),
        ("id", "exact", 2.0**-7, "0,0078125"),
        ("id", "exact_scientific", 2.0**-7, "7,8125 × 10⁻³"),
        ("zh", "exact_scientific", 448.0, "4.48 × 10²"),
        ("id", "yesno", 1, "Ya"),
        ("zh", "yesno", 0, "否"),
    ],
)
def test_format(lang: str, kind: str, value: float, text: str) -> None:
    assert locale(lang).format(kind, value) == text


@pytest.mark.parametrize(
    ("value", "id_text", "zh_text"),
    [
        # three significant digits in every scale; the scaled number is never grouped
        (50_596_000, "50,6 juta", "5060 万"),
        (16_777_216, "16,8 juta", "1680 万"),
        (4.53e8, "453 juta", "4.53 亿"),
        (202_400_000, "202 juta", "2.02 亿"),
        (174.6e9, "175 miliar", "1750 亿"),
        (671.03e9, "671 miliar", "6710 亿"),
        (68.98e9, "69 miliar", "690 亿"),
        (12.88e9, "12,9 miliar", "129 亿"),
        (1.012e12, "1,01 triliun", "1.01 万亿"),
        (4_194_304, "4,19 juta", "419 万"),
        (12_345, "12.345", "1.23 万"),
        # rounding up to the next scale takes it
        (999_600_000, "1 miliar", "10 亿"),
        (99_960_000, "100 juta", "1 亿"),
        (999_999.6, "1 juta", "100 万"),
        (9_999.6, "10.000", "1 万"),
        # below the smallest scale: exact, as `integer` writes it
        (524_288, "524.288", "52.4 万"),
        (8_192, "8.192", "8,192"),
        (128, "128", "128"),
        (-5e7, "-50 juta", "-5000 万"),
    ],
)
def test_a_count_has_three_significant_digits_in_every_scale(value: float, id_text: str, zh_text: str) -> None:
    assert locale("id").count(value) == id_text
    assert locale("zh").count(value) == zh_text


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_a_scaled_count_never_shows_more_than_three_significant_digits(lang: str) -> None:
    loc = locale(lang)
    smallest = loc.count_scales[-1][0]
    for exponent in range(int(round(math.log10(smallest))), 16):
        for mantissa in (1.0, 1.004, 1.2345, 4.5678, 9.994, 9.996):
            text = loc.count(mantissa * 10**exponent)
            number, word = text.split(" ")
            digits = number.replace(loc.decimal, "").lstrip("0").rstrip("0")
            assert len(digits) <= 3 and loc.group not in number, text
            assert word in {w for _, w in loc.count_scales}, text


def test_plain_number_is_the_canonical_text_of_data_value() -> None:
    assert plain_number(2e12) == "2000000000000"
    assert plain_number(1.3476831232) == "1.3476831232"
    assert plain_number(6738415616) == "6738415616"
    assert plain_number(True) == "1"
    assert plain_number(1e25) == "1e+25"


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown output kind"):
        locale("id").format("furlongs", 1.0)
