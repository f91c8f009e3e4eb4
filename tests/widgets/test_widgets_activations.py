"""Widget `activations` reproduces Korthikanti et al. 2022's Table 2 through its controls,
answers "does it fit?" with the training state on top, and draws every row."""

from __future__ import annotations

import itertools
import re

import pytest

from calc.activations import activation_bytes, activation_bytes_per_layer, recompute_overhead
from calc.memory import training_state_bytes
from calc.models import MODELS, param_count
from widgets.figures import activations
from widgets.framework.core import evaluate, format_value, handle, render_output
from widgets.build.native import locale

SEQ_LENS = [int(s) for s in activations.SEQ_LENS]
TPS = (1, 2, 4, 8)
MODES = ("none", "selective", "full")


def values(**state: object) -> dict[str, float]:
    return evaluate("activations", state)[1]


def figure_of(html: str) -> str:
    return re.search(r"<figure\b.*?</figure>", html, re.S).group(0)


def sentence_of(html: str) -> str:
    return re.search(r'<p class="w-sentence">(.*?)</p>', html).group(1)


# -- the paper's and the seed's numbers -------------------------------------------------

def test_default_is_one_llama2_7b_sequence_without_recomputation() -> None:
    """CONTEXT `why.act_seq_bytes`: sbh(34 + 5as/h) = 4096²·(34 + 160) = 3.255e9 bytes per
    layer, 104.2 GB over 32 layers; with the 107.8 GB state that is 212 GB: no fit."""
    v = values()
    assert v["per_layer_bytes"] == pytest.approx(3.255e9, rel=1e-3)
    assert v["activation_bytes"] == pytest.approx(104.15e9, rel=1e-3)
    assert v["state_per_gpu_bytes"] == pytest.approx(107.81e9, rel=1e-3)
    assert v["total_per_gpu_bytes"] == pytest.approx(211.97e9, rel=1e-3)
    assert v["fits"] == 0 and v["gpu_memory_bytes"] == 80e9
    assert v["reduction"] == 1 and v["recompute_overhead"] == 0
    assert (v["seq_len"], v["micro_batch"], v["hidden"], v["heads"], v["layers"]) == (4096, 1, 4096, 32, 32)
    assert v["activation_bytes"] == evaluate("why", {})[1]["act_seq_bytes"]


@pytest.mark.parametrize(("model", "t", "s"), list(itertools.product(sorted(MODELS), TPS, (512, 2048, 32768))))
def test_every_row_of_table2_through_the_widget(model: str, t: int, s: int) -> None:
    """Korthikanti et al. 2022, Table 2, written out here (not through calc):
    sbh(34 + 5as/h); sbh(10 + 24/t + 5as/(ht)); sbh/t(34 + 5as/h); sbh(10 + 24/t);
    34sbh/t; 2sbh — per layer, b = 2."""
    m = MODELS[model]
    b, h, a = 2, m.hidden, m.heads
    sbh = s * b * h
    expected = {
        ("none", False): sbh * (10 + 24 / t + 5 * a * s / (h * t)),
        ("none", True): sbh / t * (34 + 5 * a * s / h),
        ("selective", False): sbh * (10 + 24 / t),
        ("selective", True): 34 * sbh / t,
        ("full", False): 2 * sbh,
        ("full", True): 2 * sbh,
    }
    for (mode, sp), bytes_ in expected.items():
        v = values(model=model, tp=t, seq_len=s, micro_batch=b, sp=sp, recompute=mode)
        assert v["per_layer_bytes"] == pytest.approx(bytes_, rel=1e-12), (mode, sp)
        assert v["baseline_per_layer_bytes"] == pytest.approx(sbh * (34 + 5 * a * s / h), rel=1e-12)
        assert v["reduction"] == pytest.approx(v["baseline_per_layer_bytes"] / bytes_)


def test_gpt3_175b_matches_the_papers_sec5() -> None:
    """Sec. 5: for GPT-3 5as/h = 80, so selective recomputation saves 70% of the
    activations (34 of 114 kept); Eq. 8 prices it at 2.7% (v = 50,257 here; the paper's
    51,200 gives the same 2.7%)."""
    v = values(model="gpt3-175b", seq_len=2048)
    assert v["attention_share"] == pytest.approx(80 / 114)
    assert v["selective_overhead_eq8"] == pytest.approx(0.027, abs=0.0005)
    sel = values(model="gpt3-175b", seq_len=2048, recompute="selective")
    assert 1 - sel["per_layer_bytes"] / v["per_layer_bytes"] == pytest.approx(0.70, abs=0.005)
    assert sel["recompute_overhead"] == pytest.approx(0.009, abs=0.0005)


def test_gpt3_175b_on_the_papers_table3_layout() -> None:
    """Table 3: GPT-3 on t = 8, p = 8. Without sequence parallelism or recomputation the
    first stage holds 96 × sbh(10 + 3 + 10) = 55.6 GB of activations, with both 10.3 GB
    (Eq. 6), next to 16Ψ/64 = 43.7 GB of state: only the second fits in 80 GB (Fig. 1)."""
    base = values(model="gpt3-175b", seq_len=2048, tp=8, pp=8)
    both = values(model="gpt3-175b", seq_len=2048, tp=8, pp=8, sp=1, recompute="selective")
    assert base["activation_bytes"] == pytest.approx(96 * 2048 * 12288 * 23, rel=1e-12)
    assert both["activation_bytes"] == pytest.approx(10.27e9, rel=1e-3)
    assert base["state_per_gpu_bytes"] == pytest.approx(16 * param_count(MODELS["gpt3-175b"]) / 64)
    assert (base["fits"], both["fits"]) == (0, 1)
    assert base["activation_bytes"] / both["activation_bytes"] == pytest.approx(23 / 4.25)


def test_full_recomputation_adds_the_rebuilt_layer() -> None:
    """Full recomputation stores 2sbh per layer and rebuilds one whole layer during the
    backward pass (Chen et al. 2016): 32·2·4096² + 3.255e9 = 4.33 GB for Llama 2 7B."""
    v = values(recompute="full")
    assert v["stored_activation_bytes"] == 32 * 2 * 4096 * 4096
    assert v["rematerialized_bytes"] == pytest.approx(3.255e9, rel=1e-3)
    assert v["activation_bytes"] == v["stored_activation_bytes"] + v["rematerialized_bytes"]
    assert v["recompute_overhead"] == pytest.approx(recompute_overhead(layers=32, hidden=4096, vocab=32000, seq_len=4096, recompute="full"))
    assert 0.32 < v["recompute_overhead"] < 1 / 3


# -- invariants -------------------------------------------------------------------------

GRID = [dict(model=m, seq_len=s, micro_batch=b, pp=p)
        for m, s, b, p in itertools.product(sorted(MODELS), (512, 4096, 32768), (1, 16), (1, 8))]


@pytest.mark.parametrize("base", GRID, ids=lambda s: "-".join(str(x) for x in s.values()))
def test_each_technique_never_adds_activation_memory(base: dict) -> None:
    """Per layer and stored: full ≤ selective ≤ none; with the rebuilt layer full
    recomputation still beats none (see the next test for selective); SP ≤ no SP; more t
    never more activations per GPU; p changes the state, not the activations."""
    grid = {(t, sp, mode): values(**base, tp=t, sp=sp, recompute=mode) for t in TPS for sp in (0, 1) for mode in MODES}
    for t, sp in itertools.product(TPS, (0, 1)):
        none, sel, full = (grid[t, sp, mode] for mode in MODES)
        for key in ("per_layer_bytes", "stored_activation_bytes"):
            assert full[key] <= sel[key] <= none[key], (t, sp, key)
        for key in ("activation_bytes", "total_per_gpu_bytes"):
            assert sel[key] <= none[key] and full[key] <= none[key], (t, sp, key)
        for mode in MODES:
            assert grid[t, 1, mode]["activation_bytes"] <= grid[t, 0, mode]["activation_bytes"]
    for sp, mode in itertools.product((0, 1), MODES):
        by_t = [grid[t, sp, mode]["activation_bytes"] for t in TPS]
        assert by_t == sorted(by_t, reverse=True), (sp, mode)
    model = MODELS[base["model"]]
    assert grid[1, 0, "none"]["activation_bytes"] == activation_bytes(
        layers=model.layers, hidden=model.hidden, heads=model.heads, seq_len=base["seq_len"],
        micro_batch=base["micro_batch"])
    assert grid[1, 0, "none"]["state_per_gpu_bytes"] == pytest.approx(
        training_state_bytes(param_count(model)) / base["pp"])


def test_at_32k_tokens_rebuilding_one_layer_costs_more_than_selective() -> None:
    """Full recomputation's peak holds one whole layer with its s² scores: Llama 2 13B at
    32,768 tokens, 2·40 + 1314 = 1394 sbh against selective's 34·40 = 1360 sbh. At 4,096
    tokens full recomputation is far below (80 + 194 = 274 sbh)."""
    full, sel = values(model="llama2-13b", seq_len=32768, recompute="full"), values(model="llama2-13b", seq_len=32768, recompute="selective")
    assert full["activation_bytes"] / sel["activation_bytes"] == pytest.approx(1394 / 1360)
    assert full["per_layer_bytes"] < sel["per_layer_bytes"]
    full, sel = values(model="llama2-13b", recompute="full"), values(model="llama2-13b", recompute="selective")
    assert full["activation_bytes"] / sel["activation_bytes"] == pytest.approx((80 + 34 + 5 * 40 * 4096 / 5120) / 1360)


def test_pipeline_stages_cut_the_state_but_not_the_activations() -> None:
    """Sec. 4.2.3: the first stage keeps L layers' worth whatever p is."""
    runs = [values(pp=p, tp=4, sp=1, recompute="selective") for p in TPS]
    assert len({v["activation_bytes"] for v in runs}) == 1
    assert [v["layers_per_stage"] for v in runs] == [32, 16, 8, 4]
    assert [v["state_per_gpu_bytes"] for v in runs] == pytest.approx([runs[0]["state_per_gpu_bytes"] / p for p in TPS])


def test_sequence_parallelism_does_nothing_at_t1() -> None:
    for mode in MODES:
        assert values(sp=1, recompute=mode) == values(sp=0, recompute=mode)


def test_micro_batch_scales_activations_linearly() -> None:
    one, eight = values(tp=2), values(tp=2, micro_batch=8)
    assert eight["activation_bytes"] == pytest.approx(8 * one["activation_bytes"])
    assert eight["state_per_gpu_bytes"] == one["state_per_gpu_bytes"]


def test_attention_share_grows_with_the_sequence() -> None:
    """5as/h against 34: 20/54 at 512 tokens, 1280/1314 at 32,768 (Llama 2 7B)."""
    shares = [values(seq_len=s)["attention_share"] for s in SEQ_LENS]
    assert shares == sorted(shares)
    assert shares[0] == pytest.approx(20 / 54) and shares[-1] == pytest.approx(1280 / 1314)


def test_selective_overhead_stays_below_full_at_every_length() -> None:
    for model, s in itertools.product(sorted(MODELS), SEQ_LENS):
        sel = values(model=model, seq_len=s, recompute="selective")["recompute_overhead"]
        full = values(model=model, seq_len=s, recompute="full")["recompute_overhead"]
        assert 0 < sel < full


@pytest.mark.parametrize(("state", "fits"), [
    ({}, 0),                                                   # 212 GB
    ({"recompute": "selective"}, 0),                           # 107.8 + 18.3
    ({"tp": 2, "recompute": "selective", "sp": 1}, 1),         # 53.9 + 9.1
    ({"tp": 8}, 1),                                            # 13.5 + 17.7
    ({"tp": 8, "seq_len": 32768}, 0),                          # the s² term returns
    ({"tp": 8, "seq_len": 32768, "recompute": "selective", "sp": 1}, 1),
    ({"model": "llama2-70b", "tp": 8, "recompute": "full"}, 0),  # 138 GB of state
    ({"model": "llama2-70b", "tp": 8, "pp": 4, "recompute": "full"}, 1),
])
def test_fits_flips_where_expected(state: dict, fits: int) -> None:
    v = values(**state)
    assert v["fits"] == fits
    assert v["fits"] == (v["total_per_gpu_bytes"] <= 80e9)


# -- the rendering ----------------------------------------------------------------------

@pytest.mark.parametrize("lang", ["id", "zh"])
def test_figure_draws_every_row_frames_the_current_one_and_shows_h_a_l(lang: str) -> None:
    loc = locale(lang)
    for state, row in [({}, "plain"), ({"tp": 4}, "tp"), ({"tp": 4, "sp": 1}, "tp_sp"),
                       ({"recompute": "selective"}, "selective"), ({"tp": 8, "sp": 1, "recompute": "selective"}, "selective_sp"),
                       ({"recompute": "full", "tp": 2}, "full")]:
        html = render_output("activations", state, loc).html
        fig = figure_of(html)
        rows_svg = re.search(r'<svg[^>]*aria-labelledby="w-act-rows-t.*?</svg>', fig).group(0)
        for key in ("plain", "tp", "tp_sp", "selective", "selective_sp", "full"):
            assert f'>{loc.t(f"activations.rows.{key}")}</text>' in rows_svg
        assert rows_svg.count('class="w-act-frame"') == 1
        assert f'class="w-fig-note w-act-cur" x="114" y="{26.5 + 20 * [k for k, *_ in activations.ROWS].index(row):g}"' in rows_svg
        assert activations.current_row(evaluate("activations", state)[0]) == row
        assert 'class="w-limit"' in rows_svg and '<title id="w-act-rows-t">' in rows_svg
        model = MODELS[evaluate("activations", state)[0]["model"]]
        config = re.search(r'<figcaption[^>]*>(.*?)</figcaption>', fig).group(1)
        for number in (model.hidden, model.heads, model.layers):
            assert loc.integer(number) in config


def test_figure_rows_match_calc_and_the_current_row_matches_the_output() -> None:
    loc = locale("id")
    for state in [{}, {"tp": 4, "sp": 1}, {"tp": 8, "recompute": "selective", "seq_len": 32768, "micro_batch": 16}]:
        st, v = evaluate("activations", state)
        rows = activations.row_bytes(st)
        assert rows[activations.current_row(st)] == v["activation_bytes"]
        desc = re.search(r'<desc id="w-act-rows-d">(.*?)</desc>', render_output("activations", state, loc).html).group(1)
        for value in rows.values():
            assert loc.bytes(value) in desc
    model = MODELS["llama2-7b"]
    assert activations.row_bytes(evaluate("activations", {"tp": 4})[0])["plain"] == activation_bytes(
        layers=model.layers, hidden=model.hidden, heads=model.heads, seq_len=4096, micro_batch=1)


def test_memory_bar_says_whether_it_fits() -> None:
    loc = locale("id")
    over = render_output("activations", {}, loc).html
    assert "212 GB: tidak muat" in over and 'class="w-over"' in over
    ok = render_output("activations", {"tp": 8}, loc).html
    assert "31,2 GB: muat" in ok and 'class="w-over"' not in ok
    assert re.search(r'<desc id="w-act-mem-d">[^<]*13,5 GB[^<]*17,7 GB[^<]*31,2 GB[^<]*80 GB', ok)
    full = render_output("activations", {"recompute": "full"}, loc).html
    assert full.count('<rect class="w-c4"') == 1 and over.count('<rect class="w-c4"') == 0


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_sentence_states_the_current_numbers(lang: str) -> None:
    loc = locale(lang)
    for state in [{}, {"tp": 4}, {"tp": 4, "sp": 1, "recompute": "selective"}, {"recompute": "full", "pp": 4},
                  {"sp": 1}, {"model": "gpt3-175b", "seq_len": 2048, "tp": 8, "pp": 8}]:
        out = render_output("activations", state, loc)
        sentence = sentence_of(out.html)
        for key in ("per_layer_bytes", "activation_bytes", "state_per_gpu_bytes", "total_per_gpu_bytes"):
            assert loc.format(activations.OUTPUTS[key], out.values[key]) in sentence, (state, key)
        mode = out.state["recompute"]
        key = {"none": "attention_share", "selective": "recompute_overhead", "full": "rematerialized_bytes"}[mode]
        assert loc.format(activations.OUTPUTS[key], out.values[key]) in sentence
        assert (loc.t("activations.sp_no_effect") in sentence) == (state == {"sp": 1})


def test_numbers_in_both_languages() -> None:
    assert format_value("activations", "per_layer_bytes", {}, locale("id")) == "3,25 GB"
    assert format_value("activations", "activation_bytes", {}, locale("zh")) == "104.2 GB"
    assert format_value("activations", "per_layer_bytes", {"tp": "8", "sp": "1", "recompute": "selective"}, locale("id")) == "71,3 MB"
    assert format_value("activations", "attention_share", {}, locale("id")) == "82,5%"
    assert format_value("activations", "seq_len", {"seq_len": "32768"}, locale("zh")) == "32,768"
    assert format_value("activations", "seq_len", {"seq_len": 3.2768e4}, locale("id")) == "32.768"


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize(("control", "bad"), [
    ("seq_len", "4000"), ("seq_len", "65536"), ("micro_batch", "0"), ("micro_batch", "2.5"),
    ("tp", "3"), ("pp", "16"), ("sp", "maybe"), ("recompute", "half"), ("model", "gpt4"),
])
def test_bad_values_name_the_control_in_the_readers_language(lang: str, control: str, bad: str) -> None:
    loc = locale(lang)
    reply = handle({"widget": "activations", "state": {control: bad}}, loc)
    assert reply["ok"] is False
    label = loc.t(f"activations.controls.{control}.label")
    assert label in reply["html"] and loc.t("errors.heading") in reply["html"]


def test_per_layer_bytes_agree_with_calc_for_random_states() -> None:
    from widgets.framework.spec import random_states

    for state in random_states(activations.CONTROLS, 200, seed=7):
        st, v = evaluate("activations", state)
        model = MODELS[st["model"]]
        assert v["per_layer_bytes"] == activation_bytes_per_layer(
            hidden=model.hidden, heads=model.heads, seq_len=int(st["seq_len"]), micro_batch=st["micro_batch"],
            tp=int(st["tp"]), sequence_parallel=st["sp"], recompute=st["recompute"])
        assert v["total_per_gpu_bytes"] == v["state_per_gpu_bytes"] + v["activation_bytes"]


def test_the_chapter_says_which_configurations_fit() -> None:
    """docs/{id,zh}/activation-memory.md say in words whether a configuration fits
    ("tidak muat" / "放不下"); these are the states the sentences describe. A failure
    names the sentence to reword."""
    failures: list[str] = []

    def claim(text: str, state: dict[str, str], fits: bool) -> None:
        if bool(values(**state)["fits"]) != fits:
            failures.append(text)

    claim("Contoh 1: Llama 2 7B, no parallelism, does not fit", {}, False)
    claim("Contoh 1: with t = 8 it fits", {"tp": "8"}, True)
    gpt3 = {"model": "gpt3-175b", "seq_len": "2048", "tp": "8", "pp": "8"}
    claim("Contoh 2: GPT-3 175B, t = p = 8, TP only, does not fit", gpt3, False)
    claim("Contoh 2: with SP and selective recomputation it fits", {**gpt3, "sp": "1", "recompute": "selective"}, True)
    claim("Latihan 4: Llama 2 70B, t = 8, p = 4, full recomputation, fits",
          {"model": "llama2-70b", "tp": "8", "pp": "4", "recompute": "full"}, True)
    assert failures == [], failures

    # Contoh 3: "Recomputation penuh memberi ... activation, lebih besar" than SP + selective.
    long = {"seq_len": "32768", "tp": "8", "sp": "1"}
    selective = values(**long, recompute="selective")
    full = values(**long, recompute="full")
    assert full["activation_bytes"] > selective["activation_bytes"]
    assert full["total_per_gpu_bytes"] > selective["total_per_gpu_bytes"]
    # Contoh 1: the total without parallelism is "jauh" (here: over twice) the GPU's memory.
    assert values()["total_per_gpu_bytes"] > 2 * values()["gpu_memory_bytes"]
