"""Number formats: Indonesian writes 107,8 GB and 1.024; Chinese 107.8 GB and 1,024."""

from __future__ import annotations

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


def test_plain_number_is_the_canonical_text_of_data_value() -> None:
    assert plain_number(2e12) == "2000000000000"
    assert plain_number(1.3476831232) == "1.3476831232"
    assert plain_number(6738415616) == "6738415616"
    assert plain_number(True) == "1"
    assert plain_number(1e25) == "1e+25"


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown output kind"):
        locale("id").format("furlongs", 1.0)
