"""Widget `saved`: one bar per term of Korthikanti et al. 2022, Sec. 4.1, the total stored
equal to calc's activation_bytes_per_layer in every recomputation mode, and the terms each
mode drops faded."""

from __future__ import annotations

import itertools
import math
import re

import pytest
from markup_check import TagBalance, hostile_locale

from calc.activations import RECOMPUTE_MODES, activation_bytes_per_layer
from widgets.build.native import locale
from widgets.figures import saved
from widgets.framework.core import evaluate, render_output

SCORES = {"softmax_output", "softmax_dropout_mask", "softmax_dropout_output"}


def values(**state: object) -> dict[str, float]:
    return evaluate("saved", state)[1]


def terms_svg(html: str) -> str:
    return re.search(r'<svg[^>]*aria-labelledby="w-saved-terms-t.*?</svg>', html, re.S).group(0)


def test_default_is_one_llama2_7b_sequence_without_recomputation() -> None:
    """h 4,096, a 32, s 4,096, b 1: sbh(34 + 5as/h) = 4096²·194 = 3.255e9 bytes, of which the
    attention scores 5as²b = 2.684e9 (82.5%); the softmax output alone is 1.074e9."""
    v = values()
    assert v["stored_bytes"] == v["baseline_bytes"] == 4096**2 * 194
    assert v["attention_score_bytes"] == 5 * 32 * 4096**2 and v["score_share"] == pytest.approx(160 / 194)
    assert v["softmax_output_bytes"] == pytest.approx(1.074e9, rel=1e-3)
    assert (v["stored_terms"], v["dropped_terms"], v["dropped_bytes"], v["reduction"]) == (14, 0, 0, 1)


@pytest.mark.parametrize(("mode", "s", "b", "h", "a"),
                         list(itertools.product(RECOMPUTE_MODES, (512, 4096, 8192), (1, 16), (1024, 12288), (8, 96))))
def test_the_stored_total_is_calcs_and_the_sum_of_the_stored_terms(mode: str, s: int, b: int, h: int, a: int) -> None:
    v = values(recompute=mode, seq_len=s, micro_batch=b, hidden=h, heads=a)
    assert v["stored_bytes"] == activation_bytes_per_layer(hidden=h, heads=a, seq_len=s, micro_batch=b, recompute=mode)
    sbh, as2b = s * b * h, a * s * s * b
    assert v["stored_bytes"] == {"none": 34 * sbh + 5 * as2b, "selective": 34 * sbh, "full": 2 * sbh}[mode]
    every = [v[f"{key}_bytes"] for key in saved.TERMS]
    assert math.fsum(every) == v["baseline_bytes"] == v["stored_bytes"] + v["dropped_bytes"]
    assert (v["attention_bytes"], v["mlp_bytes"], v["layernorm_bytes"]) == (11 * sbh + 5 * as2b, 19 * sbh, 4 * sbh)
    assert v["stored_terms"] + v["dropped_terms"] == len(saved.TERMS) == 14
    assert v["stored_terms"] == {"none": 14, "selective": 11, "full": 1}[mode]


@pytest.mark.parametrize("mode", RECOMPUTE_MODES)
def test_every_term_is_a_bar_and_the_dropped_ones_are_faded(mode: str) -> None:
    html = render_output("saved", {"recompute": mode}, locale("id")).html
    bars = re.findall(r'<rect class="(w-c\d)( w-act-dim)?"', terms_svg(html))
    assert len(bars) == 14
    faded = [i for i, (_, dim) in enumerate(bars) if dim]
    order = list(saved.TERMS)
    dropped = {"none": set(), "selective": SCORES, "full": set(order) - {"attention_layernorm_input"}}[mode]
    assert {order[i] for i in faded} == dropped
    # Blocks keep their colours: attention, MLP, LayerNorm.
    assert [c for c, _ in bars] == ["w-c1"] * 8 + ["w-c2"] * 4 + ["w-c3"] * 2
    assert html.count("↻") == len(dropped) + (1 if dropped else 0)  # each faded value and the legend


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize("mode", RECOMPUTE_MODES)
def test_sentence_and_description_state_the_current_numbers(lang: str, mode: str) -> None:
    loc = locale(lang)
    out = render_output("saved", {"recompute": mode, "seq_len": "2048", "micro_batch": 4}, loc)
    sentence = re.search(r'<p class="w-sentence">(.*?)</p>', out.html).group(1)
    assert loc.bytes(out.values["stored_bytes"]) in sentence
    assert loc.bytes(out.values["baseline_bytes" if mode == "none" else "dropped_bytes"]) in sentence
    desc = re.search(r'<desc id="w-saved-terms-d">([^<]*)</desc>', out.html).group(1)
    for key in saved.TERMS:
        assert loc.bytes(out.values[f"{key}_bytes"]) in desc


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize("mode", RECOMPUTE_MODES)
def test_markup_is_escaped_and_balanced(lang: str, mode: str) -> None:
    page = render_output("saved", {"recompute": mode}, hostile_locale(lang, "saved")).html
    assert "<i " not in page and "</i>" not in page
    checker = TagBalance()
    checker.feed(page)
    assert not checker.errors and not checker.stack


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_every_output_is_in_the_table(lang: str) -> None:
    html = render_output("saved", {}, locale(lang)).html
    table = re.search(r'<details class="w-details">.*</details>', html).group(0)
    assert set(re.findall(r'data-out="(\w+)"', table)) == set(saved.OUTPUTS)
