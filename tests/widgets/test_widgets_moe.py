"""Widget `moe`: Mixtral 8x7B and DeepSeek-V3 with expert parallelism. The defaults
reproduce calc.experts' formulas (capacity ⌈k·T/E × factor⌉, the four all-to-alls
T·k·h·2·(ep − 1)/ep each, the experts' 3 × forward FLOP), the routing is seeded and
deterministic, and every figure draws what calc computed."""

from __future__ import annotations

import math
import re
import time

import pytest

from calc import experts as moe
from calc.hardware import MACHINES
from calc.models import RECENT_MODELS
from widgets.figures import moe as widget
from widgets.framework.core import evaluate, handle, render_output, render_widget
from widgets.build.native import locale

MIXTRAL, DEEPSEEK = RECENT_MODELS["mixtral-8x7b"], RECENT_MODELS["deepseek-v3"]
MIXTRAL_EXPERT = 3 * 4_096 * 14_336  # 176,160,768 (gate, up, down)
DEEPSEEK_EXPERT = 3 * 7_168 * 2_048  # 44,040,192

# Mixtral 8x7B, ep 8, one 32,768-token sequence per GPU, 150 TFLOP/s, NVLink 450 GB/s.
ONE_ALL_TO_ALL = 32_768 * 2 * 4_096 * 2 * 7 / 8  # T·k·h·2 bytes·(ep − 1)/ep = 469,762,048
DEFAULTS = {
    "total_params": 46_702_792_704,  # Mistral AI's "46.7B"
    "active_params": 12_879_925_248,  # "12.9B active"
    "experts_per_gpu": 1,
    "capacity": 10,  # ⌈2·32/8 · 1.25⌉
    "routed_copies": 64,
    "tokens_per_gpu": 32_768,
    "all_to_all_sent_per_gpu_layer_bytes": 4 * ONE_ALL_TO_ALL,  # 1.879 GB
    "all_to_all_time": 4 * ONE_ALL_TO_ALL / 450e9,  # 4.18 ms
    "all_to_all_time_network": 4 * ONE_ALL_TO_ALL / 50e9,  # 37.6 ms
    "expert_compute_time": 3 * 2 * 32_768 * 2 * MIXTRAL_EXPERT / 150e12,  # 0.462 s
    "comm_over_compute": 4 / 9 * 7 / 8 * 150e12 / (14_336 * 450e9),  # 0.00904
    "expert_state_per_gpu_bytes": 32 * 1 * MIXTRAL_EXPERT * 16,  # 90.19e9, calc's docstring
    "rest_state_per_gpu_bytes": (46_702_792_704 - 32 * 8 * MIXTRAL_EXPERT) * 16,  # 25.69e9
    "state_per_gpu_bytes": 115_884_490_752,
    "fits": 0,
}
DEFAULT_LOAD = (6, 9, 12, 5, 8, 6, 11, 7)  # route_tokens(32 tokens, 8 experts, top-2, seed 0)
DS64 = {"model": "deepseek-v3", "ep": "64"}


def svg(html: str, ident: str) -> str:
    return re.search(rf'<svg class="w-figure"[^>]*aria-labelledby="w-moe-{ident}-t.*?</svg>', html).group(0)


def sentence(html: str) -> str:
    return re.search(r'<p class="w-sentence">(.*?)</p>', html).group(1)


def html_of(state: dict, lang: str = "id") -> str:
    out = render_output("moe", state, locale(lang))
    assert out.ok, out.html
    return out.html


@pytest.mark.parametrize("key", DEFAULTS)
def test_default_state_is_calcs_formulas_for_mixtral_on_eight_gpus(key: str) -> None:
    _, v = evaluate("moe", {})
    assert v[key] == pytest.approx(DEFAULTS[key], rel=1e-12)


def test_default_batch_is_seed_0s_routing_three_copies_over_capacity() -> None:
    _, v = evaluate("moe", {})
    routes = moe.route_tokens(tokens=32, experts=8, experts_per_token=2, seed=0)
    assert moe.expert_load(routes, 8) == DEFAULT_LOAD
    assert v["max_load"] == 12 and v["dropped"] == 2 + 1  # E2 holds 12, E6 11, capacity 10
    assert v["dropped_fraction"] == 3 / 64


def test_deepseek_v3_on_64_gpus_holds_4_experts_a_gpu_across_8_nodes() -> None:
    """The report's EP 64 (Sec. 3.2): 256 experts, 4 per GPU, 8 nodes of 8 GPUs."""
    _, v = evaluate("moe", DS64)
    assert (v["ep_used"], v["experts_per_gpu"], v["nodes"]) == (64, 4, 8)
    assert v["total_params"] == 671_026_404_352 and v["active_params"] == 37_552_282_624
    assert v["capacity"] == math.ceil(8 * 32 / 256 * 1.25) == 2
    assert v["expert_state_per_gpu_bytes"] == 58 * 4 * DEEPSEEK_EXPERT * 16  # 163.5 GB
    assert v["rest_state_per_gpu_bytes"] == (671_026_404_352 - 58 * 256 * DEEPSEEK_EXPERT) * 16  # 273.8 GB
    # narrow experts (f = 2,048): the all-to-all is 64% of the experts' compute on the network
    _, net = evaluate("moe", {**DS64, "link": "network"})
    assert net["comm_over_compute"] == pytest.approx(4 / 9 * 63 / 64 * 150e12 / (2_048 * 50e9), rel=1e-12)
    assert net["comm_over_compute"] == pytest.approx(0.641, abs=1e-3)


@pytest.mark.parametrize("model", ["mixtral-8x7b", "deepseek-v3"])
def test_expert_memory_scales_as_one_over_ep_and_the_rest_does_not(model: str) -> None:
    experts = RECENT_MODELS[model].experts
    base = evaluate("moe", {"model": model, "ep": "1"})[1]
    for ep in (2, 4, 8, 16, 32, 64):
        if ep > experts:
            continue
        v = evaluate("moe", {"model": model, "ep": str(ep)})[1]
        assert v["expert_state_per_gpu_bytes"] * ep == base["expert_state_per_gpu_bytes"]
        assert v["rest_state_per_gpu_bytes"] == base["rest_state_per_gpu_bytes"]
        assert not v["fits"]  # ep alone never fits either model in 80 GB


def test_mixtral_beyond_eight_gpus_is_computed_as_ep_8_and_says_so() -> None:
    eight = evaluate("moe", {})[1]
    for ep in ("16", "32", "64"):
        v = evaluate("moe", {"ep": ep})[1]
        assert v == eight
        html = html_of({"ep": ep})
        assert f"Mixtral 8x7B hanya punya 8 expert, jadi paling banyak 8 GPU bisa membaginya: ep = {ep}" in html
        assert "ep = 8" in sentence(html)
        assert "只有 8 个专家" in html_of({"ep": ep}, "zh")
    assert "w-moe-warn" not in html_of({})


def test_the_seed_changes_the_routing_and_the_same_seed_draws_the_same_picture() -> None:
    drawn = {svg(html_of({"seed": s}), "route") for s in range(6)}
    assert len(drawn) == 6
    assert html_of({"seed": 4, "skew": 0.5}) == html_of({"seed": 4, "skew": 0.5})
    assert evaluate("moe", {"seed": 4})[1] == evaluate("moe", {"seed": 4})[1]


@pytest.mark.parametrize("model", ["mixtral-8x7b", "deepseek-v3"])
def test_raising_the_capacity_factor_never_drops_more(model: str) -> None:
    for seed in (0, 1, 7, 42, 99):
        for skew in (0, 0.5, 2):
            for tokens in (8, 32, 64):
                drops = [evaluate("moe", {"model": model, "seed": seed, "skew": skew, "tokens": tokens,
                                          "capacity_factor": cf})[1]["dropped"] for cf in (1, 1.25, 1.5, 1.75, 2)]
                assert drops == sorted(drops, reverse=True), (seed, skew, tokens, drops)


def test_skew_makes_the_low_numbered_experts_popular() -> None:
    flat = moe.expert_load(moe.route_tokens(tokens=64, experts=8, experts_per_token=2, seed=0), 8)
    skewed = moe.expert_load(moe.route_tokens(tokens=64, experts=8, experts_per_token=2, seed=0, skew=2), 8)
    assert sum(skewed[:2]) > sum(flat[:2])
    assert evaluate("moe", {"tokens": 64, "skew": 2})[1]["dropped"] > evaluate("moe", {"tokens": 64})[1]["dropped"]


def test_the_all_to_all_over_compute_ratio_depends_only_on_f_and_the_link() -> None:
    """moe_layer_times: 4/9 · (ep − 1)/ep · X/(f·β), whatever T, k and h."""
    for key, model in (("mixtral-8x7b", MIXTRAL), ("deepseek-v3", DEEPSEEK)):
        for ep in ("2", "8"):
            for link, beta in (("nvlink", 450e9), ("network", 50e9)):
                v = evaluate("moe", {"model": key, "ep": ep, "link": link})[1]
                d = int(ep)
                assert v["comm_over_compute"] == pytest.approx(4 / 9 * (d - 1) / d * 150e12 / (model.moe_ffn * beta))
                assert v["all_to_all_time_network"] == pytest.approx(9 * v["all_to_all_time_nvlink"])
    single = evaluate("moe", {"ep": "1"})[1]
    assert single["all_to_all_sent_per_gpu_layer_bytes"] == 0 and single["comm_over_compute"] == 0


@pytest.mark.parametrize(("state", "gpus", "cells", "hot"), [
    ({}, 8, 8, 2), ({"ep": "1"}, 1, 8, 2), ({"ep": "2", "seed": 3}, 2, 8, 0),
    ({"model": "deepseek-v3", "ep": "8"}, 8, 256, None), (DS64, 64, 256, None),
])
def test_placement_draws_ep_gpus_and_one_cell_per_expert(state: dict, gpus: int, cells: int, hot: int | None) -> None:
    html = html_of(state)
    place = svg(html, "place")
    assert place.count('<rect class="w-moe-gpu"') == gpus
    assert len(re.findall(r'<rect class="w-tp-g\d( w-moe-hot)?"', place)) == cells
    st, v = evaluate("moe", state)
    model = RECENT_MODELS[st["model"]]
    _, load, cap = widget.routing(model, st)
    assert place.count("w-moe-hot") == sum(1 for n in load if n > cap) == (hot if hot is not None else place.count("w-moe-hot"))
    assert place.count('class="w-p3d-node"') == (gpus // 8 if gpus > 8 else 0)  # one outline per node


@pytest.mark.parametrize("state", [{}, {"ep": "1", "tokens": 64}, {"ep": "4", "tokens": 8, "seed": 9}])
def test_routed_batch_has_each_tokens_k_experts_in_the_holders_colour(state: dict) -> None:
    """Mixtral: one row per expert, so every token column has exactly k = 2 cells."""
    st, v = evaluate("moe", state)
    routes, _, _ = widget.routing(MIXTRAL, st)
    route = svg(html_of(state), "route")
    cells = re.findall(r'<rect class="w-tp-g(\d)" x="([\d.]+)" y="([\d.]+)"', route)
    cells = [c for c in cells if float(c[1]) >= widget.MX_X]  # the holder strips sit left of the matrix
    assert len(cells) == st["tokens"] * 2
    per_gpu = 8 // int(st["ep"])
    col_w = widget.MX_W / st["tokens"]
    drawn = sorted((round((float(x) - 0.4 - widget.MX_X) / col_w), round((float(y) - 1 - widget.MX_TOP) / widget.ROW_H), int(g))
                   for g, x, y in cells)
    expected = sorted((t, e, e // per_gpu) for t, chosen in enumerate(routes) for e in chosen)
    assert drawn == expected


@pytest.mark.parametrize(("state", "n", "kind"), [({}, 8, "gpu"), ({"ep": "2"}, 2, "gpu"), (DS64, 8, "node"),
                                                  ({"model": "deepseek-v3", "ep": "16", "tokens": 8}, 2, "node")])
def test_dispatch_matrix_is_calcs_dispatch_counts(state: dict, n: int, kind: str) -> None:
    st, v = evaluate("moe", state)
    model = RECENT_MODELS[st["model"]]
    routes, _, _ = widget.routing(model, st)
    counts = moe.dispatch_counts(routes, experts=model.experts, ep=n)
    drawn = re.findall(r'<text class="w-fig-(?:value|tick)" x="[\d.]+" y="[\d.]+" text-anchor="middle">(\d+)</text>',
                       svg(html_of(state), "dispatch"))
    assert [int(x) for x in drawn[n:]] == [c for row in counts for c in row]  # after the n column labels
    assert sum(map(sum, counts)) == v["routed_copies"]
    assert v["batch_remote_copies"] == v["routed_copies"] - sum(counts[i][i] for i in range(n))
    html = html_of(state)
    assert ("menyeberang ke node lain lewat jaringan" in html) == (kind == "node")


def test_balanced_routing_would_send_seven_eighths_of_the_copies() -> None:
    html = html_of({})
    _, v = evaluate("moe", {})
    assert f"54 dari 64 salinan (84,4%) harus dikirim ke GPU lain, dibanding 87,5% bila routing seimbang" in html
    assert v["batch_remote_copies"] == 54


@pytest.mark.parametrize("state", [{}, {"seed": 3}, {"capacity_factor": 2}, DS64, {**DS64, "skew": 1}])
def test_load_bars_are_the_load_per_expert_over_capacity_in_red(state: dict) -> None:
    st, v = evaluate("moe", state)
    model = RECENT_MODELS[st["model"]]
    _, load, cap = widget.routing(model, st)
    load_svg = svg(html_of(state), "load")
    assert len(re.findall(r'<rect class="w-tp-g\d"', load_svg)) == sum(1 for n in load if n)
    assert load_svg.count('class="w-moe-drop"') == sum(1 for n in load if n > cap)
    assert f">C_exp = {cap}</text>" in load_svg
    if model.experts <= 16:  # Mixtral: every bar carries its load
        values = re.findall(r'<text class="w-fig-value w-bw-halo"[^>]*>(\d+)</text>', load_svg)
        assert [int(x) for x in values] == list(load)
    assert v["dropped"] == moe.dropped_tokens(load, cap)


def test_time_bars_show_the_chosen_link_and_fade_the_other() -> None:
    for link, faded in (("nvlink", "jaringan"), ("network", "NVLink")):
        bars = svg(html_of({"link": link}), "time")
        assert bars.count(' w-tp-other"') == 1  # one faded bar, its labels muted but readable
        assert re.search(rf'<g><text class="w-fig-note w-moe-muted"[^>]*>{faded}</text>', bars)
    _, v = evaluate("moe", {"link": "network"})
    widths = [float(w) for w in re.findall(r'<rect class="w-c\d(?: w-tp-other)?" x="[\d.]+" y="\d+" width="([\d.]+)"',
                                           svg(html_of({"link": "network"}), "time"))]
    assert widths[2] / widths[0] == pytest.approx(v["all_to_all_time_network"] / v["expert_compute_time"], rel=0.01)
    assert "tanpa all-to-all" in svg(html_of({"ep": "1"}), "time")
    assert "mencakup 8 node berisi 8 GPU" in html_of(DS64)


def test_memory_rows_are_every_ep_on_a_log_scale_with_the_current_one_highlighted() -> None:
    mem = svg(html_of({"model": "deepseek-v3", "ep": "32"}), "mem")
    assert mem.count('<text class="w-fig-note w-moe-muted"') == 6  # the other rows' ep labels
    assert re.search(r'<g><text class="w-fig-value"[^>]*>ep = 32</text>', mem)
    assert mem.count('<rect class="w-c1"') == 1 and mem.count('<rect class="w-c1 w-tp-other"') == 6
    for ep in (1, 2, 4, 8, 16, 32, 64):  # the totals of the rows, from calc
        experts, rest = widget.state_by_ep(DEEPSEEK, ep)
        assert f">{locale('id').format('bytes', experts + rest)}</text>" in mem
    x = [float(w) for w in re.findall(r'<rect class="w-c1(?: w-tp-other)?" x="[\d.]+" y="[\d.]+" width="([\d.]+)"', mem)]
    assert len(x) == 7
    assert x == sorted(x, reverse=True)  # more GPUs, less state each
    mixtral = svg(html_of({}), "mem")
    assert mixtral.count("tidak bisa: hanya 8 expert") == 3 and mixtral.count('<rect class="w-c1') == 4


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize("state", [{}, {"seed": 3}, {"ep": "1"}, {"ep": "64"}, DS64, {**DS64, "link": "network"},
                                   {"model": "deepseek-v3", "ep": "2", "tokens": 8}])
def test_sentence_states_the_current_numbers(lang: str, state: dict) -> None:
    loc = locale(lang)
    out = render_output("moe", state, loc)
    text = sentence(out.html)
    keys = ["total_params", "active_params", "active_fraction", "routed_copies", "capacity", "max_load",
            "state_per_gpu_bytes", "expert_state_per_gpu_bytes", "rest_state_per_gpu_bytes"]
    keys += ["dropped", "dropped_fraction"] if out.values["dropped"] else []
    keys += ["expert_compute_time"] + ([] if out.values["ep_used"] == 1 else
                                       ["all_to_all_sent_per_gpu_layer_bytes", "all_to_all_time",
                                        "all_to_all_time_nvlink", "all_to_all_time_network", "comm_over_compute"])
    for key in keys:
        assert loc.format(widget.OUTPUTS[key], out.values[key]) in text, (key, text)
    assert "<" not in text and "&lt;" not in text


def test_sentence_changes_with_the_meaning() -> None:
    def s(state: dict, lang: str = "id") -> str:
        return sentence(html_of(state, lang))

    assert "sehingga 3 salinan (4,7%) dibuang" in s({})
    assert "tidak melebihi kapasitas C_exp = 10" in s({"seed": 3}) and "dibuang dan" not in s({"seed": 3})
    assert "tidak ada all-to-all" in s({"ep": "1"})
    assert "kecil dibanding 461,8 ms komputasi expert (0,00904×)" in s({})
    assert "bagian yang besar" in s({**DS64, "link": "network"}) and "DualPipe" in s({**DS64, "link": "network"})
    assert "ditambah 1 shared expert" in s(DS64) and "shared expert" not in s({})
    assert "jadi ep = 64 dihitung sebagai ep = 8" in s({"ep": "64"})
    assert "ep perlu digabung dengan ZeRO atau pipeline parallelism" in s({})  # Mixtral: the experts
    assert "Bagian lain itu saja sudah melebihi GPU 80 GB" in s(DS64)  # DeepSeek: the rest alone
    assert "占比很大" in s({**DS64, "link": "network"}, "zh") and "没有 all-to-all" in s({"ep": "1"}, "zh")
    assert "。 " not in s(DS64, "zh")  # Chinese sentences follow each other without a space


def test_every_output_is_in_the_values_table() -> None:
    html = html_of(DS64)
    for key in widget.OUTPUTS:
        assert f'data-out="{key}"' in html


def test_render_of_the_largest_batch_stays_fast() -> None:
    """DeepSeek-V3, 64 tokens, ep 64: 256 experts, 2,048 copies; routing runs once per state."""
    loc = locale("id")
    start = time.perf_counter()
    for seed in range(5):
        render_output("moe", {**DS64, "tokens": 64, "seed": seed}, loc)
    assert (time.perf_counter() - start) / 5 < 0.15


# -- the machine ------------------------------------------------------------------------
# The conclusions depend on X, β and M_GPU of one server generation; the book's machine
# (the default) mixes half an A100's compute with an H100's links.
MACHINE_STATES = [{}, {"link": "network"}, {"ep": "2"}, DS64, {**DS64, "link": "network"},
                  {"model": "deepseek-v3", "ep": "8", "link": "network"}]


@pytest.mark.parametrize("machine", list(MACHINES))
@pytest.mark.parametrize("state", MACHINE_STATES)
def test_the_machine_sets_x_both_links_and_the_gpu_memory(state: dict, machine: str) -> None:
    st, v = evaluate("moe", {**state, "machine": machine})
    spec, model = MACHINES[machine], RECENT_MODELS[st["model"]]
    beta = {"nvlink": spec.nvlink_bytes_per_s, "network": spec.network_bytes_per_s}
    d = int(v["ep_used"])
    times = {key: moe.moe_layer_times(tokens=model.seq_len, hidden=model.hidden, moe_ffn=model.moe_ffn,
                                      experts_per_token=model.experts_per_token, ep=d,
                                      flops_per_gpu=spec.gpu.flops_per_s, bytes_per_s=b) for key, b in beta.items()}
    chosen = times[st["link"]]
    assert v["gpu_flops"] == spec.gpu.flops_per_s and v["gpu_memory_bytes"] == spec.gpu.memory_bytes
    assert v["link_bytes_per_s"] == beta[st["link"]]
    assert v["all_to_all_time_nvlink"] == pytest.approx(times["nvlink"].all_to_all, rel=1e-12)
    assert v["all_to_all_time_network"] == pytest.approx(times["network"].all_to_all, rel=1e-12)
    assert v["expert_compute_time"] == pytest.approx(chosen.compute, rel=1e-12)
    assert v["comm_over_compute"] == pytest.approx(chosen.comm_over_compute, rel=1e-12)
    assert v["comm_over_compute"] == pytest.approx(
        4 / 9 * (d - 1) / d * spec.gpu.flops_per_s / (model.moe_ffn * beta[st["link"]]), rel=1e-12)
    assert v["fits"] == (1 if v["state_per_gpu_bytes"] <= spec.gpu.memory_bytes else 0)
    # the routing, the bytes and the state do not depend on the machine
    _, book = evaluate("moe", state)
    for key in ("routed_copies", "dropped", "all_to_all_sent_per_gpu_layer_bytes", "state_per_gpu_bytes"):
        assert v[key] == book[key]


@pytest.mark.parametrize("link", ["nvlink", "network"])
@pytest.mark.parametrize("state", [{}, {"ep": "2"}, {"model": "deepseek-v3"}, DS64])
def test_with_the_same_link_a_faster_gpu_raises_comm_over_compute(state: dict, link: str) -> None:
    """comm_over_compute ∝ X/β: between two machines with the same β on the link, the one
    with the larger X waits longer relative to its compute (the expert FLOP get cheaper,
    the bytes do not)."""
    field = {"nvlink": "nvlink_bytes_per_s", "network": "network_bytes_per_s"}[link]
    values = {m: evaluate("moe", {**state, "link": link, "machine": m})[1] for m in MACHINES}
    pairs = 0
    for a, sa in MACHINES.items():
        for b, sb in MACHINES.items():
            if getattr(sa, field) == getattr(sb, field) and sa.gpu.flops_per_s < sb.gpu.flops_per_s:
                assert values[a]["comm_over_compute"] < values[b]["comm_over_compute"], (a, b)
                assert values[a]["all_to_all_time"] == pytest.approx(values[b]["all_to_all_time"])
                pairs += 1
    assert pairs >= 2  # book < DGX H100 and DGX H200 on both links; on the network also < DGX B200
    book = values["book"]
    for m, spec in MACHINES.items():
        scale = spec.gpu.flops_per_s / MACHINES["book"].gpu.flops_per_s * getattr(MACHINES["book"], field) / getattr(spec, field)
        assert values[m]["comm_over_compute"] == pytest.approx(book["comm_over_compute"] * scale, rel=1e-12)


def test_on_every_real_dgx_deepseeks_all_to_all_over_the_network_outlasts_its_compute() -> None:
    """The chapter's conclusion: only the book's mixed machine keeps DeepSeek-V3's
    all-to-all over the network below its expert compute; and the sentence says so."""
    for machine, spec in MACHINES.items():
        state = {"model": "deepseek-v3", "link": "network", "machine": machine}
        _, v = evaluate("moe", state)
        assert (v["comm_over_compute"] < 1) == (machine == "book"), (machine, v["comm_over_compute"])
        for lang, slower in (("id", "lebih lama daripada"), ("zh", "还久")):
            assert (slower in sentence(html_of(state, lang))) == (machine != "book")
    # Mixtral's wide experts: the network share stays below the compute until DGX B200
    for machine in MACHINES:
        _, v = evaluate("moe", {"link": "network", "machine": machine})
        spec = MACHINES[machine]
        assert (v["comm_over_compute"] >= 1) == (spec.gpu.flops_per_s / spec.network_bytes_per_s
                                               >= 9 / 4 * 8 / 7 * MIXTRAL.moe_ffn)


def test_mixtral_on_eight_gpus_fits_only_where_the_gpu_holds_its_state() -> None:
    _, book = evaluate("moe", {})
    for machine, spec in MACHINES.items():
        _, v = evaluate("moe", {"machine": machine})
        assert v["state_per_gpu_bytes"] == book["state_per_gpu_bytes"]
        assert v["fits"] == (book["state_per_gpu_bytes"] <= spec.gpu.memory_bytes)
        key = "sentence_mem_fits" if v["fits"] else "sentence_mem_experts"
        loc = locale("id")
        expected = loc.h(f"moe.{key}", experts=loc.format("bytes", v["expert_state_per_gpu_bytes"]),
                         rest=loc.format("bytes", v["rest_state_per_gpu_bytes"]),
                         state=loc.format("bytes", v["state_per_gpu_bytes"]),
                         gpu=loc.format("bytes", spec.gpu.memory_bytes), ep=loc.integer(8))
        assert expected in sentence(html_of({"machine": machine}))
    assert evaluate("moe", {"machine": "dgx-h200"})[1]["fits"] == 1  # 141 GB holds the 115.9 GB
    assert evaluate("moe", {"machine": "dgx-h100"})[1]["fits"] == 0


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_the_sentence_names_the_machines_link_bandwidths(lang: str) -> None:
    loc = locale(lang)
    for machine, spec in MACHINES.items():
        text = sentence(html_of({"machine": machine}, lang))
        for key, beta in (("nvlink", spec.nvlink_bytes_per_s), ("network", spec.network_bytes_per_s)):
            assert loc.t(f"moe.figure.link_{key}", bandwidth=loc.format("bytes_per_s", beta)) in text


def test_the_machine_control_renders_with_its_labels_in_both_languages() -> None:
    for lang, label, book in (("id", "Mesin", "Mesin ilustratif buku"), ("zh", "机器", "本书的示意机器")):
        html = render_widget("moe", {}, locale(lang))
        assert 'name="machine"' in html and label in html and book in html
        assert '<option value="book" selected>' in html
        assert all(f'<option value="{key}"' in html for key in MACHINES)
        links = re.search(r'name="link".*?</fieldset>', html, re.S).group(0)
        assert "GB/s" not in links  # the bandwidths belong to the machine, not to the link's label


@pytest.mark.parametrize(("lang", "expected"), [
    ("id", "Mesin harus salah satu dari book, dgx-a100, dgx-h100, dgx-h200, dgx-b200, bukan “tpu”."),
    ("zh", "机器 必须是 book, dgx-a100, dgx-h100, dgx-h200, dgx-b200 之一，而不是“tpu”。"),
])
def test_a_bad_machine_gives_a_localized_error(lang: str, expected: str) -> None:
    reply = handle({"widget": "moe", "state": {"machine": "tpu"}}, locale(lang))
    assert reply["ok"] is False and 'role="alert"' in reply["html"]
    assert expected in reply["html"]


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize("ident", ["time", "mem"])
def test_only_the_books_own_machine_is_called_illustrative(lang: str, ident: str) -> None:
    mark = {"id": "ilustratif", "zh": "示意"}[lang]
    heading = re.compile(rf'<title id="w-moe-{ident}-t">([^<]*)</title>')
    book = heading.search(html_of({}, lang)).group(1)
    assert mark in book
    for machine in MACHINES:
        if machine == "book":
            continue
        name = locale(lang).t(f"moe.controls.machine.options.{machine}")
        title = heading.search(html_of({"machine": machine}, lang)).group(1)
        assert mark not in title and name in title
    h100 = heading.search(html_of({"machine": "dgx-h100"}, lang)).group(1)
    assert ("989 TFLOP/s" in h100) == (ident == "time") and ("80 GB" in h100) == (ident == "mem")


def test_the_chapter_says_in_words_what_the_fits_flag_computes() -> None:
    """docs/{id,zh}/mixture-of-experts.md says "tidak muat" / "放不下" in words next to the
    byte macros (Contoh 1 at ep = 8, Latihan 4 at ep = 4) and "muat" on a DGX H200."""
    for state in ({"ep": "8"}, {"ep": "4"}):
        v = evaluate("moe", state)[1]
        assert v["fits"] == 0 and v["state_per_gpu_bytes"] > v["gpu_memory_bytes"], state
    h200 = evaluate("moe", {"machine": "dgx-h200"})[1]
    assert h200["fits"] == 1
    # DeepSeek-V3: the rest of the model alone is beyond one GPU whatever ep is
    for ep in ("8", "64"):
        v = evaluate("moe", {"model": "deepseek-v3", "ep": ep})[1]
        assert v["rest_state_per_gpu_bytes"] > v["gpu_memory_bytes"] and v["fits"] == 0, ep
