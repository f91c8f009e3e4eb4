"""Widget `why` reproduces the seed explainer's step 1 (WIDGETS.md) and renders it in
both languages."""

from __future__ import annotations

import re

import pytest

from widgets import REGISTRY
from widgets.figures import why
from widgets.framework.core import evaluate, format_value, render_output
from widgets.build.native import locale
from widgets.framework.spec import edge_states, random_states

# WIDGETS.md, row `why`: the seed's figures at the default state (2T tokens, Llama 2 7B).
SEED = {
    "state_bytes": 107.84e9,
    "state_over_gpu": 1.348,
    "flops": 8.088e22,
    "time_1": 5.392e8,
    "time_64": 8.425e6,
    "time_1024": 5.266e5,
}


@pytest.mark.parametrize("key", SEED)
def test_default_state_reproduces_the_seed_within_a_tenth_of_a_percent(key: str) -> None:
    _, values = evaluate("why", {})
    assert values[key] == pytest.approx(SEED[key], rel=1e-3)


def test_llama2_7b_has_its_published_parameter_count() -> None:
    _, values = evaluate("why", {})
    assert values["params"] == 6_738_415_616


def test_sixteen_bytes_per_parameter_split_2_2_12() -> None:
    _, v = evaluate("why", {"model": "llama2-70b"})
    assert (v["weights_bytes"], v["grads_bytes"], v["optimizer_bytes"]) == (
        2 * v["params"], 2 * v["params"], 12 * v["params"])
    assert v["state_bytes"] == 16 * v["params"]


def test_time_scales_inversely_with_gpus_and_linearly_with_tokens() -> None:
    _, full = evaluate("why", {"tokens": "2e12"})
    _, half = evaluate("why", {"tokens": "1e12"})
    assert half["time_64"] == pytest.approx(full["time_64"] / 2)
    assert full["time_1"] == pytest.approx(64 * full["time_64"]) == pytest.approx(1024 * full["time_1024"])


def test_state_does_not_depend_on_tokens() -> None:
    assert evaluate("why", {"tokens": "5e10"})[1]["state_bytes"] == evaluate("why", {})[1]["state_bytes"]


def test_default_page_numbers_in_indonesian() -> None:
    loc = locale("id")
    assert format_value("why", "state_bytes", {}, loc) == "107,8 GB"
    assert format_value("why", "flops", {}, loc) == "8,1 × 10²² FLOP"
    assert format_value("why", "time_1", {}, loc) == "17,1 tahun"
    assert format_value("why", "time_64", {}, loc) == "97,5 hari"


def test_default_page_numbers_in_chinese() -> None:
    loc = locale("zh")
    assert format_value("why", "state_bytes", {}, loc) == "107.8 GB"
    assert format_value("why", "flops", {}, loc) == "8.1 × 10²² FLOP"
    assert format_value("why", "time_1", {}, loc) == "17.1 年"


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_output_is_in_the_html_with_its_exact_value(name: str, lang: str) -> None:
    module = REGISTRY[name]
    for state in [*edge_states(module.CONTROLS), *random_states(module.CONTROLS, 10, seed=1)]:
        out = render_output(name, state, locale(lang))
        assert out.ok
        found = dict(re.findall(r'data-out="(\w+)" data-value="([^"]+)"', out.html))
        assert set(found) == set(module.OUTPUTS), f"{name} {state}: outputs in HTML differ from OUTPUTS"
        for key, text in found.items():
            assert float(text) == out.values[key]


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_sentence_states_the_current_numbers(lang: str) -> None:
    loc = locale(lang)
    out = render_output("why", {"tokens": "1e12", "model": "llama2-13b"}, loc)
    sentence = re.search(r'<p class="w-sentence">(.*?)</p>', out.html).group(1)
    for key in ("flops", "time_1", "time_64", "time_1024", "state_bytes", "state_over_gpu"):
        assert loc.format(why.OUTPUTS[key], out.values[key]) in sentence
    assert "Llama 2 13B" in sentence


def test_figure_is_an_accessible_svg_with_a_text_alternative() -> None:
    html = render_output("why", {}, locale("id")).html
    assert '<svg class="w-figure"' in html and 'role="img"' in html
    assert re.search(r"<title id=\"w-why-mem-t\">[^<]+</title><desc id=\"w-why-mem-d\">[^<]*107,8 GB.*<desc id=\"w-why-time-d\">[^<]*17,1 tahun", html)


@pytest.mark.parametrize(("recipe", "per_param"), [("zero-paper", 16), ("megatron-bf16", 18),
                                                   ("fp8-deepseek", 14), ("fp32", 16)])
def test_precision_recipe_sets_the_bytes_per_parameter(recipe: str, per_param: float) -> None:
    """ZeRO Sec. 3.1's 16, Megatron-LM's bf16 with fp32 gradients 18 (Megatron-Core's
    distributed-optimizer table), DeepSeek-V3's BF16 Adam moments 14 (Sec. 3.3.3), fp32 16;
    the parts follow calc.precision and only the state changes, not the compute."""
    from calc.precision import recipe_bytes

    _, v = evaluate("why", {"recipe": recipe})
    _, default = evaluate("why", {})
    parts = recipe_bytes(recipe)
    assert v["bytes_per_param"] == per_param
    assert v["state_bytes"] == pytest.approx(per_param * v["params"])
    assert (v["weights_bytes"], v["grads_bytes"]) == (parts.weights * v["params"], parts.grads * v["params"])
    assert v["flops"] == default["flops"] and v["time_1024"] == default["time_1024"]


def test_realistic_companion_counts_attention_at_the_chosen_mfu() -> None:
    """The lighter bars: PaLM's model FLOP (calc.utilization) at peak × MFU; halving the
    MFU doubles the time, an H100 (989 TFLOP/s) beats an A100 (312) by their ratio."""
    from calc.utilization import model_flops_per_token

    _, v = evaluate("why", {})
    assert v["model_flops"] == pytest.approx(model_flops_per_token(why.MODELS["llama2-7b"]) * 2e12)
    assert v["flops_over_6n"] == pytest.approx(1.140, abs=5e-4)
    assert v["mfu_time_1024"] == pytest.approx(v["model_flops"] / (1024 * 312e12 * 0.40))
    _, half = evaluate("why", {"mfu": "0.2"})
    assert half["mfu_time_64"] == pytest.approx(2 * v["mfu_time_64"])
    _, h100 = evaluate("why", {"gpu": "h100-sxm"})
    assert v["mfu_time_1"] / h100["mfu_time_1"] == pytest.approx(989 / 312)


def test_the_chapter_compares_the_reported_gpu_hours_in_gpu_years() -> None:
    """docs/{id,zh}/why-distributed-training.md: Touvron et al. 2023 (Table 2) report
    184,320 A100 hours for Llama 2 7B; in one GPU's time that is hours / (24 · 365.25)
    years, longer than the chapter's own estimate (time_1), as the page says."""
    _, v = evaluate("why", {})
    assert v["llama2_7b_gpu_hours"] == 184_320
    assert v["llama2_7b_gpu_time"] / (365.25 * 86400) == pytest.approx(184_320 / (24 * 365.25))
    assert v["llama2_7b_gpu_time"] > v["time_1"]
    assert format_value("why", "llama2_7b_gpu_time", {}, locale("id")).endswith("tahun")
    assert format_value("why", "llama2_7b_gpu_time", {}, locale("zh")).endswith("年")
