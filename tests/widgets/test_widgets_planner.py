"""Widget `planner`: the documented defaults (PLANNER_API.md), Megatron-LM 2021 through
the widget's own controls, every control matters, localized errors, and a figure and
rejection list that stay accessible, escaped and small."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest

from calc.planner import REASONS
from widgets.figures import planner as w
from markup_check import TagBalance, hostile_locale
from widgets.framework.core import evaluate, format_value, handle, render_output, render_widget
from widgets.build.native import locale
from widgets.framework.spec import defaults, edge_states, random_states

DAY = 86_400.0
# Narayanan et al. 2021 on Selene: A100 80 GB, NVLink 3 300 GB/s, HDR InfiniBand 25 GB/s
# per GPU, full recomputation (Sec. 5.1, Eq. 4).
GPT3 = dict(model="gpt3-175b", tokens="3e11", gpus="1024", gpu_memory_gb="80", tflops="140",
            intra_gbps="300", inter_gbps="25", global_batch="1536", recompute="full")
TRILLION = dict(model="megatron-1t", tokens="4.5e11", gpus="3072", gpu_memory_gb="80", tflops="163",
                intra_gbps="300", inter_gbps="25", global_batch="3072", recompute="full")


def out(raw: dict[str, Any] | None = None, lang: str = "id") -> Any:
    result = render_output("planner", raw or {}, locale(lang))
    assert result.ok, result.html
    return result


# -- the numbers ------------------------------------------------------------------------


def test_defaults_give_the_documented_best_layout() -> None:
    """Llama 2 7B, 2T tokens, 256 GPUs of 80 GB, 150 TFLOP/s, B = 1,024, selective
    recomputation: ZeRO-1 data parallelism over all 256 GPUs reaches the ideal time
    (PLANNER_API.md, "Defaults")."""
    _, v = evaluate("planner", {})
    best = tuple(v[f"best_{k}"] for k in ("tp", "pp", "dp", "zero", "microbatches", "micro_batch"))
    assert best == (1, 1, 256, 1, 2, 2)
    assert v["best_time"] == pytest.approx(v["ideal_time"], rel=1e-12)
    # 6Ψ·D/(nX) = 24.37 days, plus the causal attention matmuls (4 passes of 2·s·h per
    # token and layer with selective recomputation): 10.6% more at s = 4,096
    attention = 32 * 4 * 2 * 4096 * 4096 / (6 * 6_738_415_616)
    assert v["best_time"] / DAY == pytest.approx(24.37 * (1 + attention), abs=0.01)
    assert (v["best_cp"], v["best_ep"]) == (1, 1)
    # every (t, p, d) of 256 GPUs (cp = 1: context parallelism is off by default) × 4
    # stages × the m dividing B/d, counted independently in tests/calc/test_planner.py
    assert (v["layouts_count"], v["feasible_count"], v["rejected_count"]) == (1500, 198, 1302)
    assert v["feasible_count"] + v["rejected_count"] == v["layouts_count"]
    assert sum(v[f"rejected_{r}"] for r in REASONS) == v["rejected_count"]
    # the 3D chapter's 8 × 4 × 8, ZeRO-1, b = 1: fits, 14% slower than the best
    assert v["ref_fits"] == 1 and v["ref_rank"] == 71
    assert v["ref_time"] / DAY == pytest.approx(30.83, abs=0.01)
    assert v["ref_over_best"] == pytest.approx(1.143, abs=0.001)
    assert v["ref_bubble"] == pytest.approx(3 / 131, rel=1e-3)


def test_default_numbers_as_the_page_prints_them() -> None:
    assert format_value("planner", "best_time", {}, locale("id")) == "27 hari"
    assert format_value("planner", "best_time", {}, locale("zh")) == "27 天"
    assert format_value("planner", "ref_time", {}, locale("id")) == "30,8 hari"
    assert format_value("planner", "best_memory_bytes", {}, locale("id")) == "65,8 GB"
    assert format_value("planner", "layouts_count", {}, locale("zh")) == "1,500"


def test_gpt3_through_the_widget_takes_about_34_days() -> None:
    _, v = evaluate("planner", GPT3)
    assert v["best_time"] / DAY == pytest.approx(34, rel=0.05)
    assert v["ideal_time"] / DAY == pytest.approx(33.8 * 1.0138, abs=0.1)  # Eq. 4 + attention


def test_the_trillion_parameter_model_takes_about_84_days() -> None:
    _, v = evaluate("planner", TRILLION)
    assert v["best_time"] / DAY == pytest.approx(84, rel=0.05)
    assert v["params"] / 1e9 == pytest.approx(1008.0, abs=0.05)


def test_nothing_fits_reads_as_such() -> None:
    raw = {"model": "megatron-1t", "gpus": "8", "gpu_memory_gb": "16"}
    _, v = evaluate("planner", raw)
    assert v["feasible_count"] == 0 and v["best_time"] == 0 and v["best_tp"] == 0
    for lang in ("id", "zh"):
        loc = locale(lang)
        page = out(raw, lang).html
        assert loc.t("planner.cards.none") in page
        assert '<table class="w-plan-table">' not in page
        assert "<figure" in page


# -- every control matters, bad input is refused --------------------------------------------


ALTERNATIVES = {
    "model": "llama2-70b",
    "seq_len": "8192",
    "tokens": "1e12",
    "gpus": "1024",
    "gpu_memory_gb": "16",
    "tflops": "300",
    "intra_gbps": "20",
    "inter_gbps": "1",
    "global_batch": "256",
    "recompute": "full",
    "sequence_parallel": "1",
    "context_parallel": "1",
    "recipe": "megatron-bf16",
}


@pytest.mark.parametrize("control", [c.name for c in w.CONTROLS])
def test_every_control_changes_the_output(control: str) -> None:
    assert set(ALTERNATIVES) == {c.name for c in w.CONTROLS}
    base = {"model": "llama2-70b", "gpus": "512", "gpu_memory_gb": "40"} if control in ("sequence_parallel", "intra_gbps") else {}
    if control == "model":
        base = {}
    a = out(base)
    b = out({**base, control: ALTERNATIVES[control]})
    assert a.html != b.html
    assert a.values != b.values


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize("raw, key", [
    ({"gpus": "7"}, "errors.choice"),
    ({"gpu_memory_gb": "79"}, "errors.choice"),
    ({"tflops": "5000"}, "errors.range"),
    ({"tflops": "150.5"}, "errors.integer"),
    ({"inter_gbps": "abc"}, "errors.number"),
    ({"recompute": "half"}, "errors.choice"),
    ({"sequence_parallel": "maybe"}, "errors.toggle"),
    ({"model": "gpt5"}, "errors.choice"),
])
def test_bad_input_gives_a_localized_error_naming_the_control(raw: dict[str, str], key: str, lang: str) -> None:
    loc = locale(lang)
    reply = handle({"widget": "planner", "state": raw}, loc)
    assert reply["ok"] is False
    assert f'data-error="{key}"' in reply["html"]
    control = next(c for c in w.CONTROLS if c.name in raw)
    assert html.escape(loc.t(f"planner.controls.{control.name}.label"), quote=False) in reply["html"]


def test_number_choices_accept_any_spelling_of_their_values() -> None:
    assert evaluate("planner", {"gpus": 1024.0})[0]["gpus"] == "1024"
    assert evaluate("planner", {"gpu_memory_gb": "8e1"})[0]["gpu_memory_gb"] == "80"
    assert format_value("planner", "best_dp", {"gpus": "1.024e3"}, locale("id")) == "1.024"


# -- the figure ---------------------------------------------------------------------------


def rows(page: str) -> list[str]:
    body = re.search(r'<table class="w-plan-table">.*?<tbody>(.*?)</tbody>', page, re.S).group(1)
    return re.findall(r"<tr[^>]*>.*?</tr>", body, re.S)


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_the_ten_fastest_layouts_each_with_an_accessible_bar(lang: str) -> None:
    loc = locale(lang)
    result = out({}, lang)
    drawn = rows(result.html)
    assert len(drawn) == w.TOP + 1  # the 3D chapter's layout (rank 71) is appended
    ranks = [int(re.search(r'class="w-plan-rank">([\d.,]+)<', r).group(1).replace(".", "").replace(",", "")) for r in drawn]
    assert ranks == [*range(1, 11), 71]
    assert loc.t("planner.figure.ref_marker") in drawn[-1] and "w-plan-ref-row" in drawn[-1]
    for rank, row in zip(ranks, drawn):
        assert re.search(rf'<svg class="w-figure w-plan-bar" preserveAspectRatio="none" viewBox="[^"]+" role="img" '
                         rf'aria-labelledby="w-plan-bar-{rank}-t w-plan-bar-{rank}-d"', row)
        assert re.search(rf'<title id="w-plan-bar-{rank}-t">[^<]+</title><desc id="w-plan-bar-{rank}-d">[^<]+</desc>', row)
    assert result.html.count('<th scope="col"') >= 4


def test_the_reference_row_is_marked_in_place_when_it_is_among_the_ten() -> None:
    """GPT-3 175B on 512 GPUs over a 25 GB/s network: the 3D chapter's recipe (8 TP × 4
    PP, ZeRO-1) is the fastest layout, so its row is the first, marked, none appended."""
    raw = {"model": "gpt3-175b", "gpus": "512", "inter_gbps": "25"}
    _, v = evaluate("planner", raw)
    assert v["ref_rank"] == 1 and (v["best_tp"], v["best_pp"], v["best_dp"], v["best_zero"]) == (8, 4, 16, 1)
    assert v["ref_over_best"] == 1
    page = out(raw).html
    drawn = rows(page)
    assert len(drawn) == w.TOP and "w-plan-ref-row" in drawn[0] and page.count("w-plan-ref-row") == 1
    loc = locale("id")
    assert html.escape(loc.t("planner.sentence.ref_best", layout="8 × 4 × 16"), quote=False) in page


def test_bar_segments_add_up_to_the_run_time_on_one_scale() -> None:
    p = w.plan_of(evaluate("planner", GPT3)[0])
    page = out(GPT3).html
    widths = []
    for row in rows(page):
        rects = re.findall(r'<rect class="[^"]+" x="[^"]+" y="1" width="([\d.]+)"', row)
        widths.append(sum(float(x) for x in rects))
    runs = [x.run_s for x in p.feasible[:w.TOP]]
    ref, rank = w.reference(p)
    if rank > w.TOP:
        runs.append(ref.run_s)  # the 3D chapter's layout, appended with its rank
    assert len(widths) == len(runs)
    slowest = max(runs)
    for width, run in zip(widths, runs):
        assert width == pytest.approx(w.BAR_W * run / slowest, abs=0.05)


# -- rejected layouts ----------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_rejections_are_grouped_with_counts_and_numbers(lang: str) -> None:
    loc = locale(lang)
    result = out({}, lang)
    v = result.values
    items = re.search(r'<ul class="w-plan-reasons">(.*?)</ul>', result.html, re.S).group(1)
    counts = [int(c.replace(".", "").replace(",", "")) for c in re.findall(r"<li><strong>([\d.,]+)</strong>", items)]
    assert counts == [int(v[f"rejected_{r}"]) for r in REASONS if v[f"rejected_{r}"]]
    # the memory message names the closest layout's need and the GPU's memory
    p = w.plan_of(evaluate("planner", {})[0])
    closest = min(x.memory_bytes for x in p.rejected if x.reason == "memory")
    assert loc.bytes(closest) in html.unescape(items) and loc.bytes(80e9) in html.unescape(items)


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_the_rejected_list_is_capped_and_says_how_many_more(lang: str) -> None:
    loc = locale(lang)
    result = out({}, lang)
    table = re.search(r'<table class="w-plan-rej-table">(.*?)</table>', result.html, re.S).group(1)
    groups = re.findall(r"<tbody>(.*?)</tbody>", table, re.S)
    present = [r for r in w.LIST_ORDER if result.values[f"rejected_{r}"]]
    assert len(groups) == len(present)
    for reason, group in zip(present, groups):
        count = int(result.values[f"rejected_{reason}"])
        listed = group.count("<tr><td><span")
        assert listed == min(count, w.ROWS_PER_REASON)
        if count > w.ROWS_PER_REASON:
            more = loc.t("planner.rejected.more", count=loc.integer(count - w.ROWS_PER_REASON))
            assert html.escape(more, quote=False) in group
    memory = groups[0]
    assert html.escape(loc.t("planner.reason_row.memory", need=loc.bytes(81.8e9), memory="80 GB"), quote=False) in memory
    assert len(result.html.encode()) < 40_000  # the pre-rendered page stays small


def test_every_reason_has_a_message_in_both_languages() -> None:
    for lang in ("id", "zh"):
        loc = locale(lang)
        for reason in REASONS:
            for section in ("reason", "reason_row", "reason_title"):
                assert loc.t(f"planner.{section}.{reason}")


# -- markup ---------------------------------------------------------------------------------


def sample_states() -> list[dict[str, Any]]:
    return [*edge_states(w.CONTROLS), *random_states(w.CONTROLS, 6, seed=11)]


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize("state", sample_states()[:14])
def test_markup_is_escaped_and_balanced(lang: str, state: dict[str, Any]) -> None:
    page = render_output("planner", state, hostile_locale(lang, "planner")).html
    assert "<i " not in page and "</i>" not in page
    checker = TagBalance()
    checker.feed(page)
    assert not checker.errors and not checker.stack


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_every_output_is_in_the_table_and_labelled(lang: str) -> None:
    loc = locale(lang)
    page = out({}, lang).html
    table = re.search(r'<details class="w-details"><summary>[^<]*</summary><table>.*?</table></details>', page, re.S).group(0)
    assert set(re.findall(r'data-out="(\w+)"', table)) == set(w.OUTPUTS)
    for key in w.OUTPUTS:
        assert html.escape(loc.t(f"planner.outputs.{key}"), quote=True) in table


def test_the_pre_rendered_widget_holds_its_defaults() -> None:
    page = render_widget("planner", {}, locale("id"))
    assert 'data-widget="planner"' in page
    assert "model=llama2-7b&amp;seq_len=model&amp;tokens=2000000000000&amp;gpus=256&amp;gpu_memory_gb=80" in page
    assert defaults(w.CONTROLS)["recompute"] == "selective"


@pytest.mark.parametrize("raw, key", [({}, "best_ideal"), (GPT3, "best"),
                                      ({"model": "megatron-1t", "gpus": "8", "gpu_memory_gb": "16"}, "none")])
def test_the_sentence_reads_differently_when_the_meaning_changes(raw: dict[str, str], key: str) -> None:
    for lang in ("id", "zh"):
        loc = locale(lang)
        sentence = html.unescape(re.search(r'<p class="w-sentence">(.*?)</p>', out(raw, lang).html).group(1))
        lead = loc.t(f"planner.sentence.{key}").split("{")[0]
        assert (lead or loc.t(f"planner.sentence.{key}").split("}")[1].split("{")[0]) in sentence
        assert MODEL_NAMES[raw.get("model", "llama2-7b")] in sentence


MODEL_NAMES = {k: m.name for k, m in w.MODEL_TABLE.items()}


def test_precision_recipe_adds_state_and_never_makes_more_layouts_fit() -> None:
    """Megatron-LM's bf16 recipe (4-byte gradients, calc.precision) needs more memory than
    the ZeRO paper's 16 bytes for every layout, so at most as many layouts fit; the times
    of a layout that fits in both do not change."""
    _, base = evaluate("planner", {})
    _, bf16 = evaluate("planner", {"recipe": "megatron-bf16"})
    assert bf16["feasible_count"] <= base["feasible_count"]
    from widgets.framework.spec import parse_state

    p16 = w.plan_of(parse_state(w.CONTROLS, {}))
    p18 = w.plan_of(parse_state(w.CONTROLS, {"recipe": "megatron-bf16"}))
    by_key = {(x.tp, x.cp, x.pp, x.dp, x.ep, x.zero_stage, x.micro_batch): x for x in p16.layouts}
    for x in p18.layouts:
        y = by_key[(x.tp, x.cp, x.pp, x.dp, x.ep, x.zero_stage, x.micro_batch)]
        if x.evaluated and y.evaluated:
            assert x.state_bytes >= y.state_bytes
            if x.fits and y.fits:
                assert x.step_s == y.step_s


def test_the_outputs_a_worked_solution_uses() -> None:
    """The terms the chapter's solutions quote: the 3D layout's parts, the census of
    layouts, the step's FLOP over G·X, and the model's shape."""
    _, v = evaluate("planner", {})
    assert (v["ref_tp"], v["ref_pp"], v["ref_dp"]) == (8, 4, 8)
    assert (v["ref_stage_layers"], v["ref_in_flight"], v["ref_layers_in_flight"]) == (8, 4, 32)
    assert v["ref_state_bytes"] + v["ref_activation_bytes"] + v["allowance_bytes"] == pytest.approx(v["ref_memory_bytes"])
    assert (v["layers"], v["hidden"]) == (32, 4096)
    assert v["batch_tokens"] == 1024 * 4096 and v["cluster_flops"] == 256 * 150e12
    assert v["step_flops"] * v["steps"] == pytest.approx(v["flops"], rel=1e-12)
    assert v["closest_memory_bytes"] > 80e9 > 0  # something is rejected for memory at the defaults
    _, e = evaluate("planner", {"gpus": "8", "global_batch": "64"})
    assert (e["tp_pp_pairs"], e["tp_pp_m_count"], e["pipelined_tp_pp_m_count"]) == (10, 60, 38)
    assert (e["zero_stage_count"], e["zero_pp_stage_count"], e["layouts_count"]) == (4, 2, 240)
