"""Widget `parallel3d` reproduces the seed explainer's step 6 (WIDGETS.md), keeps
gpus = t·p·d, shows the bubble/DP trade-off, and its preset links carry valid states."""

from __future__ import annotations

import html
import itertools
import math
import re
from typing import Any
from urllib.parse import unquote

import pytest

from calc.hardware import GPUS_PER_NODE
from calc.models import MODELS, param_count
from calc.pipeline import stage_layers
from widgets.figures import parallel3d as p3d
from markup_check import TagBalance, hostile_locale
from widgets.framework.core import evaluate, format_value, render_output
from widgets.build.native import locale
from widgets.framework.spec import canonical, defaults, edge_states, parse_state, random_states

# WIDGETS.md, row `parallel3d`: 8 TP × 4 PP × 8 DP, ZeRO-1, Llama 2 7B, 2T tokens.
SEED = {
    "gpus": 256,
    "nodes": 32,
    "state_per_gpu_bytes": 1.158e9,
    "bubble": 0.0229,
    "train_time": 2.156e6,
}
MODELS_ALL = tuple(MODELS)
RECIPES = p3d.RECIPE.options
SWEEP = [
    {"tp_on": tp, "pp_on": pp, "zero_on": zero, "dp": dp, "model": model, "recipe": RECIPES[i % len(RECIPES)]}
    for i, (tp, pp, zero, dp, model) in enumerate(
        (tp, pp, zero, dp, model)
        for tp, pp, zero in itertools.product((True, False), repeat=3)
        for dp in (1, 2, 3, 5, 8, 13, 16, 31, 32, 63, 64)
        for model in MODELS_ALL)
]


def sample_states() -> list[dict[str, Any]]:
    return [*edge_states(p3d.CONTROLS), *random_states(p3d.CONTROLS, 20, seed=3)]


def parse_fragment(href: str) -> dict[str, str]:
    """The raw state a `#parallel3d.k=v&...` fragment carries (as widgets.js reads it)."""
    assert href.startswith("#")
    raw = {}
    for part in href[1:].split("&"):
        key, value = part.split("=", 1)
        widget, control = unquote(key).split(".", 1)
        assert widget == "parallel3d"
        raw[control] = unquote(value)
    return raw


def preset_links(page: str) -> list[tuple[str, bool, str]]:
    """(href, current, label) of each preset link in rendered HTML."""
    links = re.findall(r'<a class="w-preset" href="([^"]+)"( aria-current="true")?>([^<]*)</a>', page)
    return [(html.unescape(href), bool(current), html.unescape(label)) for href, current, label in links]


# -- the numbers ------------------------------------------------------------------------


@pytest.mark.parametrize("key", SEED)
def test_default_state_reproduces_the_seed_within_a_tenth_of_a_percent(key: str) -> None:
    _, values = evaluate("parallel3d", {})
    assert values[key] == pytest.approx(SEED[key], rel=1e-3)


def test_default_numbers_as_the_page_prints_them() -> None:
    assert format_value("parallel3d", "state_per_gpu_bytes", {}, locale("id")) == "1,16 GB"
    assert format_value("parallel3d", "bubble", {}, locale("id")) == "2,3%"
    assert format_value("parallel3d", "train_time", {}, locale("id")) == "24,9 hari"
    assert format_value("parallel3d", "train_time", {}, locale("zh")) == "24.9 天"


@pytest.mark.parametrize("state", SWEEP, ids=lambda s: "-".join(str(v) for v in s.values()))
def test_gpus_is_the_product_of_the_three_degrees(state: dict[str, Any]) -> None:
    v = p3d.compute(state)
    t = p3d.TP_ON if state["tp_on"] else 1
    p = p3d.PP_ON if state["pp_on"] else 1
    assert (v["tp"], v["pp"]) == (t, p)
    assert v["gpus"] == t * p * state["dp"]
    assert v["nodes"] == math.ceil(v["gpus"] / GPUS_PER_NODE)


@pytest.mark.parametrize("model", MODELS_ALL)
def test_bubble_grows_with_dp_at_a_fixed_global_batch(model: str) -> None:
    runs = [p3d.compute({**defaults(p3d.CONTROLS), "dp": d, "model": model}) for d in range(1, 65)]
    bubbles = [v["bubble"] for v in runs]
    assert all(a < b for a, b in zip(bubbles, bubbles[1:]))
    micro = [v["microbatches"] for v in runs]
    assert all(a > b for a, b in zip(micro, micro[1:]))
    assert micro[0] * 1 == micro[7] * 8 == micro[63] * 64  # fixed global batch B = m·d


def test_no_pipeline_means_no_bubble() -> None:
    for d in (1, 8, 64):
        assert p3d.compute({**defaults(p3d.CONTROLS), "pp_on": False, "dp": d})["bubble"] == 0


@pytest.mark.parametrize("state", [s for s in SWEEP if s["zero_on"]], ids=lambda s: "-".join(str(v) for v in s.values()))
def test_zero_never_increases_memory(state: dict[str, Any]) -> None:
    with_zero = p3d.compute(state)["state_per_gpu_bytes"]
    without = p3d.compute({**state, "zero_on": False})["state_per_gpu_bytes"]
    assert with_zero <= without
    if state["dp"] == 1:
        assert with_zero == pytest.approx(without)


def test_fits_agrees_with_the_gpu_memory() -> None:
    for state in SWEEP:
        v = p3d.compute(state)
        assert v["fits"] == (1 if v["state_per_gpu_bytes"] <= v["gpu_memory_bytes"] else 0)


# -- presets ----------------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_every_preset_link_carries_a_full_valid_state_that_marks_itself_current(lang: str) -> None:
    loc = locale(lang)
    links = preset_links(render_output("parallel3d", {}, loc).html)
    assert len(links) == len(p3d.PRESETS) >= 4
    names = [c.name for c in p3d.CONTROLS]
    for (href, _, label), (key, _) in zip(links, p3d.PRESETS):
        raw = parse_fragment(href)
        assert list(raw) == names  # all controls listed, in order
        state = parse_state(p3d.CONTROLS, raw)
        assert state == p3d.preset_state(key)
        out = render_output("parallel3d", raw, loc)
        assert out.ok
        marked = [(h, cur) for h, cur, _ in preset_links(out.html) if cur]
        assert marked == [(href, True)], f"{key}: {marked}"
        assert label


def test_presets_are_the_ones_the_brief_names() -> None:
    seed, dp_only, tp_node, large = (p3d.preset_state(k) for k, _ in p3d.PRESETS)
    assert seed == defaults(p3d.CONTROLS)
    assert (dp_only["tp_on"], dp_only["pp_on"], dp_only["zero_on"], dp_only["dp"]) == (False, False, False, 64)
    assert (tp_node["tp_on"], tp_node["pp_on"], tp_node["dp"]) == (True, False, 1)
    assert p3d.compute(tp_node)["nodes"] == 1
    assert (large["model"], large["dp"]) == ("llama2-70b", 16)
    assert p3d.compute(large)["gpus"] == 512


def test_preset_labels_are_built_from_the_numbers() -> None:
    labels = [label for _, _, label in preset_links(render_output("parallel3d", {}, locale("id")).html)]
    assert labels[0].startswith("8 TP × 4 PP × 8 DP")
    assert "64" in labels[1] and "8" in labels[2]
    assert "Llama 2 70B" in labels[3] and "512" in labels[3]


def test_a_state_that_is_no_preset_marks_none() -> None:
    page = render_output("parallel3d", {"dp": "7"}, locale("id")).html
    assert not any(cur for _, cur, _ in preset_links(page))
    assert 'aria-current' not in page


@pytest.mark.parametrize("state", random_states(p3d.CONTROLS, 30, seed=5))
def test_fragment_round_trips_any_state(state: dict[str, Any]) -> None:
    assert parse_state(p3d.CONTROLS, parse_fragment(p3d.fragment(state))) == state


# -- the figure -------------------------------------------------------------------------


def grid_svg(page: str) -> str:
    return re.search(r'<svg class="w-figure"[^>]*aria-labelledby="w-p3d-grid-t[^>]*>.*?</svg>', page).group(0)


@pytest.mark.parametrize("state", sample_states())
def test_grid_draws_the_replicas_stages_and_gpus(state: dict[str, Any]) -> None:
    out = render_output("parallel3d", state, locale("id"))
    v, svg = out.values, grid_svg(out.html)
    assert 'viewBox="0 0 400 ' in svg
    t, p, d = int(v["tp"]), int(v["pp"]), state["dp"]
    shown = min(d, p3d.SHOWN_REPLICAS)
    assert len(re.findall(r">DP \d+</text>", svg)) == shown
    assert svg.count('<rect class="w-c') == t * p * shown
    more = re.findall(r">\+(\d+)</text>", svg)
    assert more == ([str(d - shown)] if d > shown else [])
    for s, (first, last) in enumerate(stage_layers(MODELS[state["model"]].layers, p)):
        assert f">stage {s}</text>" in svg and f">L{first}–{last}</text>" in svg


@pytest.mark.parametrize("t, p, d", [(8, 4, 8), (8, 1, 3), (1, 4, 5), (1, 1, 8), (1, 4, 3), (1, 1, 1), (8, 4, 1)])
def test_node_outlines_cover_exactly_the_nodes_calc_counts(t: int, p: int, d: int) -> None:
    segments = p3d.node_segments(t, p, d, min(d, p3d.SHOWN_REPLICAS))
    state = {**defaults(p3d.CONTROLS), "tp_on": t > 1, "pp_on": p > 1, "dp": d}
    assert len({s.node for s in segments}) == p3d.compute(state)["nodes"]
    cells = sorted((s.stage, c) for seg in [segments] for s in seg for c in range(s.first, s.last + 1))
    assert cells == [(s, c) for s in range(p) for c in range(d)]  # every cell in one outline
    if t == GPUS_PER_NODE:  # TP on: every cell is one node, closed on both sides
        assert all(s.first == s.last and not s.open_left and not s.open_right for s in segments)
    for a, b in zip(segments, segments[1:]):  # a node that continues is open on both ends
        assert a.open_right == (a.node == b.node) == b.open_left


def test_node_outline_is_open_where_hidden_replicas_continue_it() -> None:
    segments = p3d.node_segments(1, 1, 12, 8)
    assert [(s.first, s.last, s.open_left, s.open_right) for s in segments] == [(0, 7, False, False)]
    segments = p3d.node_segments(1, 1, 12, 5)
    assert segments[-1].open_right


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_figures_are_accessible_svgs_with_a_caption_from_the_numbers(lang: str) -> None:
    page = render_output("parallel3d", {}, locale(lang)).html
    assert page.count('role="img"') == 3
    for ident in ("w-p3d-grid", "w-p3d-memory", "w-p3d-bubble"):
        assert re.search(rf'<title id="{ident}-t">[^<]+</title><desc id="{ident}-d">[^<]+</desc>', page)
    caption = re.search(r'<figcaption class="w-fig-heading">([^<]+)</figcaption>', page).group(1)
    assert "8 TP × 4 PP × 8 DP = 256" in caption and "32" in caption


def test_the_memory_bar_shows_zero_shrinking_the_adam_state() -> None:
    on = render_output("parallel3d", {}, locale("id"))
    off = render_output("parallel3d", {"zero_on": "0"}, locale("id"))
    assert on.values["optimizer_per_gpu_bytes"] * 8 == pytest.approx(off.values["optimizer_per_gpu_bytes"])
    assert on.values["weights_per_gpu_bytes"] == off.values["weights_per_gpu_bytes"]
    total = sum(on.values[k] for k in ("weights_per_gpu_bytes", "grads_per_gpu_bytes", "optimizer_per_gpu_bytes"))
    assert total == pytest.approx(on.values["state_per_gpu_bytes"])
    assert "state Adam 315,9 MB" in on.html and "state Adam 2,53 GB" in off.html


def test_the_bubble_bar_shows_the_bubble_and_turns_red_when_large() -> None:
    default = render_output("parallel3d", {}, locale("id")).html
    assert ">bubble 2,3%</text>" in default and "w-p3d-large" not in default
    assert "w-p3d-large" in render_output("parallel3d", {"dp": "64"}, locale("id")).html
    flat = render_output("parallel3d", {"pp_on": "0"}, locale("id")).html
    assert "w-p3d-idle" not in flat


# -- sentence and markup ----------------------------------------------------------------


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize("state", sample_states())
def test_sentence_states_the_current_numbers(lang: str, state: dict[str, Any]) -> None:
    loc = locale(lang)
    out = render_output("parallel3d", state, loc)
    sentence = html.unescape(re.search(r'<p class="w-sentence">(.*?)</p>', out.html).group(1))
    for key in ("gpus", "state_per_gpu_bytes", "gpu_memory_bytes", "train_time", "tokens"):
        assert loc.format(p3d.OUTPUTS[key], out.values[key]) in sentence, key
    if out.values["pp"] > 1:
        for key in ("bubble", "microbatches"):
            assert loc.format(p3d.OUTPUTS[key], out.values[key]) in sentence, key
    assert MODELS[state["model"]].name in sentence


@pytest.mark.parametrize("raw, keys", [
    ({}, ("memory_fits", "pipeline_small", "time_fits")),
    ({"dp": "64"}, ("memory_fits", "pipeline_large", "time_fits")),
    ({"tp_on": "0", "pp_on": "0", "zero_on": "0", "dp": "64"}, ("memory_plain_over", "pipeline_none", "time_over")),
    ({"tp_on": "0", "pp_on": "0", "zero_on": "1", "dp": "64"}, ("memory_plain_fits", "pipeline_none", "time_fits")),
    ({"pp_on": "0", "dp": "1"}, ("memory_fits", "pipeline_none", "time_fits")),
    ({"model": "gpt3-175b", "zero_on": "0", "dp": "1"}, ("memory_over", "pipeline_small", "time_over")),
])
def test_sentence_reads_differently_when_the_meaning_changes(raw: dict[str, str], keys: tuple[str, ...]) -> None:
    _, v = evaluate("parallel3d", raw)
    assert p3d.sentence_keys(v) == keys
    loc = locale("id")
    out = render_output("parallel3d", raw, loc).html
    sentence = html.unescape(re.search(r'<p class="w-sentence">(.*?)</p>', out).group(1))
    lead = loc.t(f"parallel3d.sentence.{keys[0]}").split("{")[0]
    assert lead in sentence


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize("state", sample_states()[:12])
def test_markup_is_escaped_and_balanced(lang: str, state: dict[str, Any]) -> None:
    page = render_output("parallel3d", state, hostile_locale(lang, "parallel3d")).html
    assert "<i " not in page and "</i>" not in page
    assert "&lt;i x=&quot;1&quot;&gt;&amp;amp;&lt;/i&gt;" in page or "&lt;i x=\"1\"&gt;&amp;amp;&lt;/i&gt;" in page
    checker = TagBalance()
    checker.feed(page)
    assert not checker.errors and not checker.stack


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_every_output_is_in_the_table_and_labelled(lang: str) -> None:
    loc = locale(lang)
    out = render_output("parallel3d", {}, loc)
    table = re.search(r'<details class="w-details">.*</details>', out.html).group(0)
    assert set(re.findall(r'data-out="(\w+)"', table)) == set(p3d.OUTPUTS)
    for key in p3d.OUTPUTS:
        assert html.escape(loc.t(f"parallel3d.outputs.{key}"), quote=True) in table


def test_canonical_state_of_the_default_is_the_seed_preset() -> None:
    assert canonical(p3d.CONTROLS, defaults(p3d.CONTROLS)) == {
        "tp_on": "1", "pp_on": "1", "zero_on": "1", "dp": "8", "model": "llama2-7b", "recipe": "zero-paper"}


def test_precision_recipe_changes_the_state_and_nothing_else() -> None:
    """Megatron-LM's bf16 recipe keeps 4-byte gradients: at the default 8 × 4 × 8 with
    ZeRO-1 each GPU holds (2 + 4 + 12/8)Ψ/32 instead of (2 + 2 + 12/8)Ψ/32; FP8 with BF16
    moments (2 + 4 + 8/8); times and the bubble do not change."""
    from widgets.figures._common import SHARDED_RECIPES
    from calc.precision import recipe_bytes

    _, base = evaluate("parallel3d", {})
    psi = base["state_per_gpu_bytes"] / ((2 + 2 + 12 / 8) / 32)
    for recipe, per_param in (("megatron-bf16", 2 + 4 + 12 / 8), ("fp8-deepseek", 2 + 4 + 8 / 8)):
        _, v = evaluate("parallel3d", {"recipe": recipe})
        assert v["state_per_gpu_bytes"] == pytest.approx(per_param * psi / 32)
        assert (v["train_time"], v["bubble"]) == (base["train_time"], base["bubble"])
    assert all(recipe_bytes(r).weights == 2 for r in SHARDED_RECIPES)


@pytest.mark.parametrize("state", SWEEP[::7])
def test_the_worked_solutions_steps_multiply_back(state: dict[str, Any]) -> None:
    """The outputs the chapter's solutions quote step by step agree with each other:
    t·p·d = G, m = B/(d·b), and the ideal time stretched by 1/(1 − bubble) is the time."""
    _, v = evaluate("parallel3d", state)
    assert v["model_parallel"] * v["dp"] == v["gpus"] and v["dp"] == state["dp"]
    assert v["microbatches"] == pytest.approx(v["global_batch"] / (v["dp"] * v["micro_batch"]))
    assert v["ideal_train_time"] * v["bubble_stretch"] == pytest.approx(v["train_time"], rel=1e-12)
    params = param_count(MODELS[state["model"]])
    assert v["bytes_per_param"] * params / v["model_parallel"] == pytest.approx(v["state_per_gpu_bytes"], rel=1e-12)


def test_the_chapter_says_what_fits_and_what_is_equal() -> None:
    """docs/{id,zh}/3d-parallelism.md (and key-ideas.md section 9) state in words facts
    the widgets compute: which layouts do not fit, that the two Llama 3 phases hold the
    same activations, and why the planner's time for the 8 × 4 × 8 layout exceeds this
    widget's. A failure names the sentence to reword."""
    failures: list[str] = []

    def claim(text: str, ok: bool) -> None:
        if not ok:
            failures.append(text)

    p = lambda **kw: evaluate("parallel3d", {k: str(x) for k, x in kw.items()})[1]  # noqa: E731
    runs = lambda run: evaluate("runs", {"run": run})[1]  # noqa: E731
    claim("Contoh 2: Llama 2 70B with TP only, no PP, no ZeRO, does not fit on one GPU",
          p(model="llama2-70b", pp_on=0, zero_on=0)["fits"] == 0)
    claim("Contoh 2: Llama 2 70B at 8 x 4 x 8 fits with room for activations",
          p(model="llama2-70b")["fits"] == 1)
    claim("Latihan 3: GPT-3 175B, d = 16, without ZeRO, does not fit",
          p(model="gpt3-175b", dp=16, zero_on=0)["fits"] == 0)
    short, long = runs("llama3-405b-8k"), runs("llama3-405b-128k")
    claim("Latihan 7: both Llama 3 phases hold the same activations per GPU ('sama-sama', '都是')",
          short["activation_bytes"] == long["activation_bytes"])
    claim("Lima dimensi, 1: same training state at 8K and 128K, activations raise the 128K total",
          short["state_after_dp"] == long["state_after_dp"]
          and long["memory_after_dp"] > short["memory_after_dp"] > long["gpu_memory_bytes"])
    claim("Lima dimensi: the widget's default run is the 128K one",
          evaluate("runs", {})[1]["seq_len"] == long["seq_len"] == 131072 and short["seq_len"] == 8192)
    plan = evaluate("planner", {})[1]
    claim("key-ideas 9: the planner's time for 8 x 4 x 8 is longer than this widget's (attention FLOPs, comm)",
          (plan["ref_tp"], plan["ref_pp"], plan["ref_dp"]) == (8, 4, 8)
          and plan["ref_time"] > p()["train_time"] and plan["ideal_time"] > p()["ideal_train_time"])
    assert failures == [], failures
