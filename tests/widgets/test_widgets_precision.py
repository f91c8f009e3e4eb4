"""Widget `precision`: bit fields, ranges, loss scaling and recipe bytes, all from calc."""

from __future__ import annotations

import re
import struct

import pytest

from calc import precision as prec
from widgets.build.native import locale
from widgets.figures import precision as widget
from widgets.framework.core import evaluate, format_value, render_output
from widgets.framework.spec import random_states

from markup_check import TagBalance, hostile_locale


def sentence_of(html: str) -> str:
    return re.search(r'<p class="w-sentence">(.*?)</p>', html, re.S).group(1)


def test_default_is_0_1_in_fp16_and_the_zero_paper_recipe() -> None:
    _, v = evaluate("precision", {})
    assert v["rounded_value"] == struct.unpack("e", struct.pack("e", 0.1))[0] == 0.0999755859375
    assert (v["sign_bit"], v["exponent_field"], v["mantissa_field"]) == (0, 11, 614)  # 0x2E66
    assert v["recipe_total"] == 16 and v["recipe_optimizer"] == 12
    assert v["recipe_state_bytes"] == pytest.approx(107.8e9, rel=1e-3)  # WIDGETS.md: 16Ψ for Llama 2 7B


def test_published_ranges_are_outputs() -> None:
    _, v = evaluate("precision", {})
    assert (v["fp16_max"], v["e4m3_max"], v["e5m2_max"]) == (65504, 448, 57344)
    assert v["fp16_min_subnormal"] == 2.0**-24 and v["e4m3_min_subnormal"] == 2.0**-9
    assert v["bf16_min_normal"] == v["fp32_min_normal"] == 2.0**-126


def test_loss_scaling_rescues_a_gradient_below_fp16s_subnormals() -> None:
    _, plain = evaluate("precision", {"value": "1e-8", "loss_scale": "1"})
    _, scaled = evaluate("precision", {"value": "1e-8", "loss_scale": "1024"})
    assert plain["fp16_recovered"] == 0 and plain["fp16_recovered_error"] == 1
    assert scaled["fp16_recovered"] == pytest.approx(1e-8, rel=2e-3)
    assert scaled["bf16_gradient"] == pytest.approx(1e-8, rel=prec.epsilon("bf16"))


def test_too_large_a_scale_overflows_and_skips_the_step() -> None:
    _, v = evaluate("precision", {"value": "3e4", "loss_scale": "65536"})
    assert v["fp16_overflow"] == 1 and v["fp16_recovered"] == 0
    html = render_output("precision", {"value": "3e4", "loss_scale": "65536"}, locale("id")).html
    assert "inf" in sentence_of(html)


def test_e4m3_saturates_instead_of_overflowing() -> None:
    _, v = evaluate("precision", {"fmt": "e4m3", "value": "3e4"})
    assert v["saturated"] == 1 and v["rounded_value"] == 448


@pytest.mark.parametrize("d", [1, 8, 64])
def test_distributed_optimizer_is_6_plus_12_over_d(d: int) -> None:
    _, v = evaluate("precision", {"recipe": "megatron-distopt", "dp": d})
    assert v["recipe_total"] == pytest.approx(6 + 12 / d) == v["megatron_distopt_bytes"]
    assert v["megatron_bf16_bytes"] == 18 and v["zero_paper_bytes"] == 16


@pytest.mark.parametrize("fmt", prec.FORMAT_NAMES)
def test_the_bit_boxes_are_the_formats_width(fmt: str) -> None:
    html = render_output("precision", {"fmt": fmt}, locale("id")).html
    bits = re.search(r'<svg[^>]*aria-labelledby="w-precision-bits-t.*?</svg>', html, re.S).group(0)
    assert bits.count("<rect ") == prec.FORMATS[fmt].bits
    ones = bits.count('fill-opacity="1"')
    assert ones == prec.encode(0.1, fmt).bits(fmt).count("1")


def test_every_recipe_has_a_bar_and_the_chosen_one_is_outlined() -> None:
    html = render_output("precision", {"recipe": "fp8-deepseek"}, locale("zh")).html
    recipes = re.search(r'<svg[^>]*aria-labelledby="w-precision-recipes-t.*?</svg>', html, re.S).group(0)
    assert recipes.count('class="w-over"') == 1
    for recipe in prec.RECIPE_NAMES:
        assert locale("zh").t(f"precision.figure.short.{recipe}") in recipes


def test_numbers_in_both_languages() -> None:
    assert format_value("precision", "fp16_max", {}, locale("id")) == "65.504"
    assert format_value("precision", "fp16_max", {}, locale("zh")) == "65,504"
    assert format_value("precision", "recipe_total", {"recipe": "megatron-distopt"}, locale("id")) == "7,5"
    assert format_value("precision", "rounded_value", {}, locale("id")) == "0,099975586"
    assert format_value("precision", "fp16_min_subnormal", {}, locale("zh")) == "5.9604645 × 10⁻⁸"
    assert format_value("precision", "max_value", {"fmt": "e5m2"}, locale("id")) == "57.344"
    # 1e-8 × 1024 rounds to 172 subnormal steps of 2⁻²⁴; divided by 1024 again:
    assert 172 * 2.0**-24 / 1024 == pytest.approx(1.00117177e-8, rel=1e-8)
    assert format_value("precision", "fp16_recovered", {"value": "1e-8"}, locale("id")) == "1,0011718 × 10⁻⁸"
    assert format_value("precision", "fp16_unscaled", {"value": "1e-6"}, locale("id")) == "1,013279 × 10⁻⁶"  # 17 · 2⁻²⁴


def test_the_stored_value_shows_its_rounding_in_cards_table_and_sentence() -> None:
    html = render_output("precision", {}, locale("id")).html
    shown = re.findall(r'data-out="rounded_value"[^>]*>([^<]*)<', html)
    assert shown and set(shown) == {"0,099975586"}
    assert "0,099975586" in sentence_of(html)
    assert 'data-value="0.0999755859375"' in html


@pytest.mark.parametrize("column", ["max", "min_normal", "min_subnormal"])
def test_each_column_of_the_format_table_reads_one_way(column: str) -> None:
    loc = locale("id")
    texts = [format_value("precision", f"{fmt}_{column}", {}, loc) for fmt in prec.FORMAT_NAMES]
    if column == "max":  # exact; fp32 and bf16 as powers of ten (IEEE 754, OCP OFP8 Table 1)
        assert texts == ["3,4028235 × 10³⁸", "65.504", "3,3895314 × 10³⁸", "448", "57.344"]
    else:
        assert all(" × 10" in t for t in texts), texts
    epsilons = [format_value("precision", "epsilon", {"fmt": fmt}, loc) for fmt in prec.FORMAT_NAMES]
    assert all(" × 10" in t for t in epsilons) and epsilons[2] == "7,8125 × 10⁻³"


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize("state", random_states(widget.CONTROLS, 12, seed=5))
def test_sentence_and_figure_follow_the_state(lang: str, state: dict) -> None:
    loc = locale(lang)
    out = render_output("precision", state, loc)
    assert out.ok
    sentence = sentence_of(out.html)
    assert loc.format(widget.OUTPUTS["recipe_total"], out.values["recipe_total"]) in sentence
    assert loc.format("bytes", out.values["recipe_state_bytes"]) in sentence
    for key in widget.OUTPUTS:
        assert f'data-out="{key}"' in out.html, key
    parser = TagBalance()
    parser.feed(out.html)
    assert not parser.errors and not parser.stack


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_translators_markup_is_escaped(lang: str) -> None:
    html = render_output("precision", {"value": "1e-8"}, hostile_locale(lang, "precision")).html
    assert "<i " not in html


def test_spacing_and_the_unsharded_floor() -> None:
    """E4M3 near 300: spacing 2^(8−3) = 32; the distributed optimizer keeps 2 + 4 = 6
    bytes per parameter whole on every GPU."""
    _, v = evaluate("precision", {"fmt": "e4m3", "value": "3e2"})
    assert v["spacing"] == 32.0
    _, v = evaluate("precision", {"fmt": "e5m2", "value": "3e2"})
    assert v["spacing"] == 64.0
    _, v = evaluate("precision", {"recipe": "megatron-distopt", "dp": 64})
    assert v["recipe_unsharded"] == 6.0
    assert v["recipe_unsharded_state_bytes"] == pytest.approx(6 * v["params"])


def test_distributed_optimizer_parts_add_up_as_printed() -> None:
    """Latihan 2: at d = 64 the sharded master and moments read 0,0625 + 0,125 = 0,1875 and
    the total 6,1875, not 0,06 + 0,12 and 6,19 (two decimals)."""
    loc = locale("id")
    state = {"recipe": "megatron-distopt", "dp": "64"}
    shown = [format_value("precision", key, state, loc) for key in
             ("recipe_master", "recipe_moments", "recipe_optimizer", "recipe_total")]
    assert shown == ["0,0625", "0,125", "0,1875", "6,1875"]


def test_error_in_percent_keeps_its_digits() -> None:
    """0,1 in fp16 is off by 2,4 × 10⁻⁴, i.e. 0,0244 percent, not 0,0%."""
    assert format_value("precision", "fp16_unscaled_error_percent", {}, locale("id")) == "0,0244"
    assert format_value("precision", "fp16_unscaled_error_percent", {"value": "1e-6"}, locale("zh")) == "1.33"


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_equal_errors_with_and_without_scaling_are_said_once(lang: str) -> None:
    """A power-of-two λ leaves a normal fp16 value as it was: one sentence says the error is
    the same, instead of printing it twice."""
    loc = locale(lang)
    out = render_output("precision", {}, loc)
    _, v = evaluate("precision", {})
    assert v["fp16_unscaled_error"] == v["fp16_recovered_error"]
    error = loc.format(widget.OUTPUTS["fp16_unscaled_error"], v["fp16_unscaled_error"])
    expected = loc.t("precision.scaling_same", scale=loc.format("integer", v["loss_scale"]), error=error,
                     bf16=loc.format(widget.OUTPUTS["bf16_gradient_error"], v["bf16_gradient_error"]))
    assert expected in sentence_of(out.html).replace("&quot;", '"')
    both = loc.t("precision.scaling", scale=loc.format("integer", v["loss_scale"]), unscaled=error, scaled=error,
                 bf16=loc.format(widget.OUTPUTS["bf16_gradient_error"], v["bf16_gradient_error"]))
    assert both not in sentence_of(out.html).replace("&quot;", '"')


def test_exact_parameter_count() -> None:
    assert format_value("precision", "params_exact", {"model": "llama2-70b"}, locale("id")) == "68.976.648.192"
