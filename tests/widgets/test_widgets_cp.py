"""Widget `cp`: context parallelism. The default state (Llama 3.1 8B, a 128K sequence on
cp = 8, Llama 3's balanced split, NVLink) worked out by hand from the formulas of
calc/context.py; the ring's grid is ring_holders × ring_step_work; Ulysses stops at the
K/V heads; a contiguous split leaves the last GPU (2·cp − 1)/cp of the average work."""

from __future__ import annotations

import math
import re
import time

import pytest

from calc import context
from calc.hardware import LINKS, MACHINES
from widgets.figures import cp
from widgets.framework.core import evaluate, handle, render_output, render_widget
from widgets.build.native import locale
from widgets.framework.spec import random_states

H, A, KV, LAYERS = 4_096, 32, 8, 32  # Llama 3.1 8B (Dubey et al. 2024, Table 3)
S, CP = 131_072, 8
LOCAL = S // CP  # 16,384 tokens per GPU
H_KV = KV * H // A  # 1,024: the keys' width with grouped-query attention
X, NVLINK = 150e12, 450e9

BLOCK = 2 * LOCAL * H_KV * 2  # K and V, 16-bit: 67,108,864 bytes
STEP_FLOP = 0.5 * 4 * LOCAL**2 * H  # balanced: half a block of QKᵀ and scores × V per step
BY_HAND = {
    "tokens_per_gpu": LOCAL,
    "chunk_tokens": S // (2 * CP),
    "kv_block_bytes": BLOCK,
    "ring_step_compute_time": STEP_FLOP / X,  # 14.66 ms
    "ring_step_transfer_time": BLOCK / NVLINK,  # 149.1 µs
    "ring_step_backward_compute_time": 2 * STEP_FLOP / X,
    "ring_step_backward_transfer_time": 2 * BLOCK / NVLINK,  # K/V again and dK, dV
    "ring_transfer_over_compute": (BLOCK / NVLINK) / (STEP_FLOP / X),
    "transfer_hidden": 1,
    "min_block_tokens": (H_KV / H) * X / (0.5 * NVLINK),  # Liu et al.'s c ≥ F/B with GQA: 166.7
    "ring_sent_per_gpu_layer_bytes": 3 * (CP - 1) * BLOCK,  # 1.409 GB
    "ring_transfer_time_layer": 3 * (CP - 1) * BLOCK / NVLINK,
    "ring_exposed_time_layer": 0,
    "attention_time_layer": 3 * 4 * S**2 * H / (2 * CP) / X,  # forward + backward, 351.8 ms
    "attention_imbalance": 1,
    "ulysses_max_cp": 8,
    "ulysses_possible": 1,
    "ulysses_cp": 8,
    # Q, K, V and O through all-to-alls that keep 1/cp: forward and backward
    "ulysses_sent_per_gpu_layer_bytes": 2 * (CP - 1) / CP * LOCAL * (2 * H + 2 * H_KV) * 2,  # 587.2 MB
    "ulysses_transfer_time_layer": 2 * (CP - 1) / CP * LOCAL * (2 * H + 2 * H_KV) * 2 / NVLINK,
    "activation_per_gpu_bytes": 34 * LOCAL * H * LAYERS,  # selective recomputation: 73.01 GB
    "kv_buffer_bytes": 2 * BLOCK,
    "memory_per_gpu_bytes": 34 * LOCAL * H * LAYERS + 2 * BLOCK,  # 73.15 GB
    "activation_single_gpu_bytes": 34 * S * H * LAYERS,  # 584.1 GB on one GPU
    "gpu_memory_bytes": 80e9,
    "fits": 1,
    "cp_needed": 8,  # cp = 4 would need 146 GB
    "link_bytes_per_s": NVLINK,
    "gpu_flops": X,
    "seq_len": S,
    "hidden": H,
    "layers": LAYERS,
    "heads": A,
    "kv_heads": KV,
    "kv_hidden": H_KV,
    "kv_width_ratio": 0.25,
    "ring_forward_blocks": CP - 1,
    "ring_blocks_per_layer": 3 * (CP - 1),
    "ring_step_exposed_time": 0,
    "ulysses_over_ring": 2 / (3 * CP) * (H / H_KV + 1),  # 5/12: Ulysses sends less here
    "activation_tp_bytes": 34 * S * H / 8 * LAYERS,  # tensor + sequence parallel over a node: 73 GB
    "activation_tp_cp_bytes": 34 * LOCAL * H / 8 * LAYERS,
    "full_recompute_checkpoint_bytes": 2 * S * H * LAYERS,  # only each layer's input: 34.4 GB
    # (2 + 2 + 12) bytes for each of Llama 3.1 8B's 8.03e9 parameters (ZeRO Sec. 3.1): 128 GB
    "state_bytes": 16 * 8_030_261_248,
}
CPS = (2, 4, 8, 16, 32)


def state(**kw: object) -> dict:
    return {key: str(value) for key, value in kw.items()}


def sentence(html: str) -> str:
    return re.search(r'<p class="w-sentence">(.*?)</p>', html).group(1)


def svg_of(html: str, ident: str) -> str:
    return re.search(rf'<svg class="w-figure"[^>]*aria-labelledby="{ident}-t.*?</svg>', html, re.S).group(0)


def test_outputs_are_the_default_state_worked_by_hand() -> None:
    _, values = evaluate("cp", {})
    assert set(values) == set(cp.OUTPUTS) == set(BY_HAND)
    for key, expected in BY_HAND.items():
        assert values[key] == pytest.approx(expected, rel=1e-12), key
    assert values["memory_per_gpu_bytes"] == pytest.approx(73.15e9, rel=1e-3)
    assert values["activation_single_gpu_bytes"] == pytest.approx(584.1e9, rel=1e-3)
    assert values["ring_step_compute_time"] == pytest.approx(14.66e-3, rel=1e-3)
    assert values["ring_step_transfer_time"] == pytest.approx(149.1e-6, rel=1e-3)


def test_a_128k_context_needs_eight_gpus_for_llama_3_1_8b() -> None:
    """One GPU would hold 584 GB of activations; each doubling of cp halves them."""
    needs = {c: evaluate("cp", state(cp=c))[1] for c in CPS}
    assert [needs[c]["fits"] for c in CPS] == [0, 0, 1, 1, 1]
    assert all(needs[c]["cp_needed"] == 8 for c in CPS)
    for c in CPS:
        assert needs[c]["activation_per_gpu_bytes"] == pytest.approx(BY_HAND["activation_single_gpu_bytes"] / c)


@pytest.mark.parametrize("model", list(cp.CP_MODELS))
@pytest.mark.parametrize("seq_len", ["8192", "131072", "1048576"])
def test_cp_needed_is_the_smallest_power_of_two_that_fits(model: str, seq_len: str) -> None:
    _, v = evaluate("cp", state(model=model, seq_len=seq_len))
    m, s = cp.CP_MODELS[model], int(seq_len)
    need = v["cp_needed"]
    assert need >= 1 and need & (need - 1) == 0
    assert math.fsum(cp.memory_parts(m, s, need)) <= 80e9
    if need > 1:
        assert math.fsum(cp.memory_parts(m, s, need // 2)) > 80e9


@pytest.mark.parametrize("c", CPS)
def test_balanced_split_evens_the_work_and_contiguous_leaves_the_last_gpu_2cp_minus_1_over_cp(c: int) -> None:
    balanced = evaluate("cp", state(cp=c))[1]
    contiguous = evaluate("cp", state(cp=c, split="contiguous"))[1]
    assert balanced["attention_imbalance"] == 1
    assert contiguous["attention_imbalance"] == pytest.approx((2 * c - 1) / c)
    # the layer's attention takes as long as its busiest GPU: ½ block per step balanced,
    # ½ then whole blocks contiguous (cp − ½ blocks against cp/2)
    ratio = contiguous["attention_time_layer"] / balanced["attention_time_layer"]
    assert ratio == pytest.approx((2 * c - 1) / c)
    assert balanced["chunk_tokens"] * 2 == contiguous["chunk_tokens"] == S // c


def test_ulysses_stops_at_the_kv_heads_and_its_bytes_are_stated_at_that_cp() -> None:
    """Llama 3.1 has 8 K/V heads at every size; Llama 2 7B has 32 (no GQA)."""
    for model in ("llama3.1-8b", "llama3.1-70b", "llama3.1-405b", "llama2-70b"):
        at8 = evaluate("cp", state(model=model, cp=8))[1]
        assert at8["ulysses_max_cp"] == 8 and at8["ulysses_possible"] == 1 and at8["ulysses_cp"] == 8
        for c in (16, 32):
            v = evaluate("cp", state(model=model, cp=c))[1]
            assert v["ulysses_possible"] == 0 and v["ulysses_cp"] == 8
            assert v["ulysses_sent_per_gpu_layer_bytes"] == at8["ulysses_sent_per_gpu_layer_bytes"]
    for c in CPS:
        v = evaluate("cp", state(model="llama2-7b", cp=c))[1]
        assert v["ulysses_max_cp"] == 32 and v["ulysses_possible"] == 1 and v["ulysses_cp"] == c


@pytest.mark.parametrize("model", list(cp.CP_MODELS))
def test_ulysses_over_ring_is_two_over_3cp_times_h_over_hkv_plus_one(model: str) -> None:
    """(cp − 1)/cp · (s/cp) · (2h + 2h_kv) · 2 · 2 against 3 · (cp − 1) · 2 · (s/cp) · h_kv · 2."""
    m = cp.CP_MODELS[model]
    for c in CPS:
        v = evaluate("cp", state(model=model, cp=c))[1]
        if v["ulysses_possible"]:
            assert v["ulysses_over_ring"] == pytest.approx(2 / (3 * c) * (m.heads / m.kv_heads + 1))
    big = evaluate("cp", state(model="llama3.1-405b"))[1]  # h_kv/h = 1/16: the ring sends less
    assert big["kv_width_ratio"] == 1 / 16 and big["ulysses_over_ring"] == pytest.approx(17 / 12)


def test_ulysses_sends_less_as_cp_grows_the_ring_about_the_same() -> None:
    ring = [evaluate("cp", state(model="llama2-7b", cp=c))[1]["ring_sent_per_gpu_layer_bytes"] for c in CPS]
    ulysses = [evaluate("cp", state(model="llama2-7b", cp=c))[1]["ulysses_sent_per_gpu_layer_bytes"] for c in CPS]
    assert ring == pytest.approx([3 * (c - 1) / c * 2 * S * 4096 * 2 for c in CPS])  # (cp − 1)/cp of 3 · K/V
    assert all(a > b for a, b in zip(ulysses, ulysses[1:]))


@pytest.mark.parametrize("split", ["balanced", "contiguous"])
@pytest.mark.parametrize("link", ["nvlink", "network"])
def test_the_transfer_hides_exactly_when_a_gpu_holds_at_least_min_block_tokens(split: str, link: str) -> None:
    for model in cp.CP_MODELS:
        m = cp.CP_MODELS[model]
        # calc's threshold: causal balanced (w = ½); a contiguous step's busiest GPU does a
        # whole block, as unmasked attention does (w = 1)
        expected = context.min_block_tokens(hidden=m.hidden, heads=m.heads, kv_heads=m.kv_heads, flops_per_gpu=X,
                                            bytes_per_s=LINKS[link].bytes_per_s, causal=split == "balanced")
        for seq_len in cp.SEQ_LENS:
            for c in CPS:
                v = evaluate("cp", state(model=model, seq_len=seq_len, cp=c, split=split, link=link))[1]
                assert v["min_block_tokens"] == pytest.approx(expected)
                assert v["transfer_hidden"] == (v["tokens_per_gpu"] >= v["min_block_tokens"] * (1 - 1e-12))
                assert (v["ring_exposed_time_layer"] == 0) == bool(v["transfer_hidden"])


def test_a_short_sequence_over_the_network_waits_for_its_blocks() -> None:
    """Llama 2 7B (h_kv = h), 8K on 32 GPUs over 50 GB/s: 256 tokens per GPU, the
    threshold X/(w·β) = 150e12/(½ · 50e9) = 6,000 tokens (Liu et al.'s F/B, causal)."""
    v = evaluate("cp", state(model="llama2-7b", seq_len=8192, cp=32, link="network"))[1]
    assert v["tokens_per_gpu"] == 256 and v["min_block_tokens"] == pytest.approx(6000)
    assert v["transfer_hidden"] == 0
    wait = (v["ring_step_transfer_time"] - v["ring_step_compute_time"]
            + v["ring_step_backward_transfer_time"] - v["ring_step_backward_compute_time"])
    assert v["ring_exposed_time_layer"] == pytest.approx(31 * wait)


# -- the figure ----------------------------------------------------------------------------

@pytest.mark.parametrize("c", CPS)
@pytest.mark.parametrize("split", ["balanced", "contiguous"])
def test_sequence_bar_has_one_chunk_per_piece_in_its_gpus_colour(c: int, split: str) -> None:
    html = render_output("cp", state(cp=c, split=split), locale("id")).html
    bar = svg_of(html, "w-cp-seq")
    colours = re.findall(r'<rect class="w-cp-g(\d) w-cp-chunk"', bar)
    owners = context.chunk_ranks(c, split)
    assert len(colours) == (2 * c if split == "balanced" else c) == len(owners)
    assert [int(g) for g in colours] == [r * 8 // max(c, 8) for r in owners]
    if split == "balanced":  # Llama 3: rank i holds chunks i and 2·cp − 1 − i
        assert colours == colours[::-1]
    if c <= 8:  # the GPU's number under its chunk
        numbers = re.findall(r'text-anchor="middle">(\d+)</text>', bar)
        assert [int(n) for n in numbers] == list(owners)


def test_sequence_bar_of_the_default_state() -> None:
    bar = svg_of(render_output("cp", {}, locale("id")).html, "w-cp-seq")
    assert re.findall(r'w-cp-g(\d) w-cp-chunk', bar) == list("0123456776543210")
    assert ">token 0<" in bar and ">token 131.071<" in bar


@pytest.mark.parametrize("c", CPS)
@pytest.mark.parametrize("split", ["balanced", "contiguous"])
def test_ring_grid_is_steps_by_gpus_shaded_by_causal_work(c: int, split: str) -> None:
    ring = svg_of(render_output("cp", state(cp=c, split=split), locale("id")).html, "w-cp-ring")
    cells = re.findall(r'<rect class="w-cp-cell (w-cp-\w+)" x="([\d.]+)" y="([\d.]+)"', ring)
    assert len(cells) == c * c + c  # the grid, then the busiest GPU of each step
    work = context.ring_step_work(c, split)
    names = {1.0: "w-cp-full", 0.5: "w-cp-half", 0.0: "w-cp-none"}
    expected = []
    for row in work:
        expected += [names[w] for w in row] + [names[max(row)]]
    assert [cls for cls, _, _ in cells] == expected
    assert len({y for _, _, y in cells}) == c  # one row per step
    assert len({x for _, x, _ in cells}) == c + 1  # one column per GPU, and the busiest
    if split == "balanced":
        assert {cls for cls, _, _ in cells} == {"w-cp-half"}
    else:
        grid = [cls for i, (cls, _, _) in enumerate(cells) if i % (c + 1) < c]
        assert grid.count("w-cp-half") == c and grid.count("w-cp-full") == grid.count("w-cp-none") == c * (c - 1) // 2
    assert len(re.findall(r'<rect class="w-cp-total"', ring)) == c


@pytest.mark.parametrize("c", CPS)
def test_ring_cells_name_the_block_held_up_to_eight_gpus_and_then_only_shade(c: int) -> None:
    html = render_output("cp", state(cp=c, split="contiguous"), locale("id")).html
    ring = svg_of(html, "w-cp-ring")
    numbers = re.findall(r'<text class="w-cp-num w-cp-\w+-text"[^>]*>([^<]+)</text>', ring)
    if c <= 8:
        holders = context.ring_holders(c)
        work = context.ring_step_work(c, "contiguous")
        expected = []
        for k in range(c):
            expected += [str(r) for r in holders[k]] + ["½" if max(work[k]) == 0.5 else "1"]
        assert numbers == expected
        totals = re.findall(r'<text class="w-fig-value"[^>]*>([\d,]+)</text>', ring)
        assert totals == [locale("id").number(r + 0.5) for r in range(c)]  # ½, 1½, … cp − ½ blocks
        assert "sel terlalu kecil" not in html
    else:
        assert numbers == []
        assert f"Dengan {c} GPU sel terlalu kecil untuk angka" in html


def test_default_ring_grid_step_one_is_the_papers_shift() -> None:
    """At step 1 GPU r holds GPU r − 1's block (Liu et al. 2023, Fig. 2)."""
    ring = svg_of(render_output("cp", {}, locale("zh")).html, "w-cp-ring")
    numbers = re.findall(r'<text class="w-cp-num w-cp-half-text"[^>]*>([^<]+)</text>', ring)
    assert numbers[9:18] == ["7", "0", "1", "2", "3", "4", "5", "6", "½"]
    assert ">步骤 ↓<" in ring and ">GPU →<" in ring


def test_step_bars_mark_the_wait_only_when_the_transfer_is_longer() -> None:
    hidden = svg_of(render_output("cp", {}, locale("id")).html, "w-cp-step")
    assert 'class="w-over"' not in hidden and hidden.count("transfer tertutupi komputasi") == 2
    exposed = svg_of(render_output("cp", state(model="llama2-7b", seq_len=8192, cp=32, link="network"),
                                   locale("id")).html, "w-cp-step")
    assert exposed.count('class="w-over"') == 2 and exposed.count("GPU menunggu transfer") == 2
    assert 'class="w-c2"' in exposed and 'class="w-c1"' not in exposed  # the network's colour


def test_threshold_axis_places_the_zone_and_the_tokens_per_gpu() -> None:
    html = render_output("cp", {}, locale("id")).html
    axis = svg_of(html, "w-cp-threshold")
    assert ">batas 167<" in axis and ">s/cp = 16.384<" in axis
    assert "transfer tersembunyi: s/cp ≥ 167 token" in html
    zone = float(re.search(r'<rect class="w-cp-zone w-cp-zone-nvlink" x="([\d.]+)"', axis).group(1))
    assert zone == pytest.approx(cp.AXIS_LEFT + (cp.AXIS_RIGHT - cp.AXIS_LEFT) * (math.log10(500 / 3) - 1) / 5, abs=0.01)


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_ulysses_beyond_its_kv_heads_is_a_message_in_the_figure(lang: str) -> None:
    loc = locale(lang)
    fine = render_output("cp", {}, loc).html
    assert 'class="w-cp-warn"' not in fine and 'class="w-cp-na"' not in svg_of(fine, "w-cp-comm")
    html = render_output("cp", state(cp=16), loc).html
    warning = re.search(r'<p class="w-cp-warn">(.*?)</p>', html).group(1)
    assert warning == loc.t("cp.figure.ulysses_impossible", cp="16", kv="8", max="8")
    assert '<rect class="w-cp-na"' in svg_of(html, "w-cp-comm")
    assert loc.t("cp.figure.ulysses_label_at", cp="8") in svg_of(html, "w-cp-comm")
    assert 'role="alert"' not in html  # a state of the figure, not an error


def test_memory_figure_has_a_row_per_cp_the_chosen_framed_and_the_gpu_line() -> None:
    html = render_output("cp", {}, locale("id")).html
    mem = svg_of(html, "w-cp-mem")
    bars = re.findall(r'<rect class="(w-cp-(?:fits|over)[^"]*)"', mem)
    assert bars == ["w-cp-over w-cp-dim", "w-cp-over w-cp-dim", "w-cp-over w-cp-dim", "w-cp-fits",
                    "w-cp-fits w-cp-dim", "w-cp-fits w-cp-dim"]  # cp = 1, 2, 4, 8, 16, 32
    assert mem.count('class="w-cp-current"') == 1 and '<line class="w-limit"' in mem
    for text in ("584,1 GB", "292,6 GB", "146,3 GB", "73,1 GB", "36,6 GB", "18,3 GB", "GPU 80 GB"):
        assert f">{text}<" in mem


def test_every_figure_text_uses_a_class_of_at_least_11_px() -> None:
    """Figure text is styled by classes (11 px or more; 14 px on a phone), never by attributes."""
    for st in ({}, state(cp=32, split="contiguous"), state(cp=2, link="network", seq_len=8192)):
        html = render_output("cp", st, locale("zh")).html
        for svg in re.findall(r"<svg.*?</svg>", html, re.S):
            assert "font-size" not in svg and "style=" not in svg
            for cls in re.findall(r'<text class="([^"]+)"', svg):
                assert cls.split()[0] in {"w-fig-note", "w-fig-tick", "w-fig-value", "w-cp-num"}, cls


def test_every_output_is_in_the_html_with_its_si_value() -> None:
    out = render_output("cp", {}, locale("id"))
    for key in cp.OUTPUTS:
        assert f'data-out="{key}"' in out.html
    assert 'data-out="kv_block_bytes" data-value="67108864"' in out.html


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize("overrides", [
    {}, state(cp=16), state(cp=2), state(cp=32, split="contiguous", link="network"),
    state(model="llama2-7b", seq_len=8192, cp=32, link="network"), state(model="llama3.1-405b", seq_len=1048576, cp=4),
])
def test_sentence_states_the_current_numbers(lang: str, overrides: dict) -> None:
    loc = locale(lang)
    out = render_output("cp", overrides, loc)
    text = sentence(out.html)
    v = out.values
    keys = ["tokens_per_gpu", "memory_per_gpu_bytes", "activation_single_gpu_bytes", "kv_block_bytes",
            "ring_step_transfer_time", "ring_step_compute_time", "min_block_tokens", "attention_time_layer",
            "attention_imbalance"]
    keys += ["ulysses_sent_per_gpu_layer_bytes", "ring_sent_per_gpu_layer_bytes"] if v["ulysses_possible"] else ["ulysses_max_cp"]
    keys += [] if v["transfer_hidden"] else ["ring_exposed_time_layer"]
    keys += [] if v["fits"] and v["cp_needed"] == int(out.state["cp"]) else ["cp_needed"]
    for key in keys:
        assert loc.format(cp.OUTPUTS[key], v[key]) in text, (key, text)


def test_sentence_changes_with_the_meaning() -> None:
    loc = locale("id")
    default = sentence(render_output("cp", {}, loc).html)
    assert "muat di GPU 80 GB, padahal satu GPU saja akan butuh 584,1 GB" in default
    assert "tersembunyi di balik 14,7 ms komputasi karena 16.384 token per GPU melampaui batas 167" in default
    assert "Pembagian seimbang memberi setiap GPU kerja attention yang sama" in default
    assert "Ulysses mengirim 587,2 MB per GPU per layer, dibanding 1,41 GB untuk ring" in default
    assert "perlu setidaknya cp = 8" in sentence(render_output("cp", state(cp=4), loc).html)
    assert "cp = 8 pun sudah cukup" in sentence(render_output("cp", state(cp=32), loc).html)
    assert "GPU terakhir bekerja 1,88×" in sentence(render_output("cp", state(split="contiguous"), loc).html)
    assert "Ulysses tidak bisa dipakai di 16 GPU karena Llama 3.1 8B hanya punya 8 head K/V" in sentence(
        render_output("cp", state(cp=16), loc).html)
    exposed = sentence(render_output("cp", state(model="llama2-7b", seq_len=8192, cp=32, link="network"), loc).html)
    assert "di bawah batas 6.000, jadi tiap layer menunggu" in exposed
    zh = sentence(render_output("cp", state(cp=16), locale("zh")).html)
    assert "Ulysses 无法用在 16 块 GPU 上，因为 Llama 3.1 8B 只有 8 个 K/V 头" in zh


def test_every_control_changes_the_figure_in_every_state() -> None:
    """No control is ever dead: cp starts at 2, so the split and the link always matter."""
    loc = locale("id")
    for base in random_states(cp.CONTROLS, 25, seed=7):
        for control in cp.CONTROLS:
            drawn = {re.search(r"<figure\b.*?</figure>", render_output("cp", {**base, control.name: o}, loc).html,
                               re.S).group(0) for o in control.options}
            assert len(drawn) == len(control.options), (control.name, base)


def test_render_of_the_largest_grid_stays_fast() -> None:
    loc = locale("id")
    st, values = evaluate("cp", state(cp=32, split="contiguous"))
    start = time.perf_counter()
    for _ in range(5):
        cp.render(st, values, loc)
    assert (time.perf_counter() - start) / 5 < 0.1


def test_the_state_cp_leaves_whole_is_16_bytes_per_parameter() -> None:
    _, values = evaluate("cp", state(model="llama3.1-405b"))
    assert values["state_bytes"] == pytest.approx(16 * 405.85e9, rel=1e-4)  # 6.49 TB, "405B"


# -- the machine ------------------------------------------------------------------------
# The book's machine is the seed's mixed one; every preset is one server generation. The
# threshold (h_kv/a) · X/(w·β) and the ratio transfer ÷ compute follow X/β, so the figures
# per preset come from calc.context with the preset's X and β, never typed.


def betas(machine: str) -> dict[str, float]:
    spec = MACHINES[machine]
    return {"nvlink": spec.nvlink_bytes_per_s, "network": spec.network_bytes_per_s}


@pytest.mark.parametrize("machine", list(MACHINES))
@pytest.mark.parametrize("link", ["nvlink", "network"])
@pytest.mark.parametrize("model", ["llama3.1-8b", "llama2-7b", "llama3.1-405b"])
def test_the_threshold_and_the_ratio_follow_the_machines_x_and_beta(machine: str, link: str, model: str) -> None:
    _, v = evaluate("cp", {"machine": machine, "link": link, "model": model})
    spec, m = MACHINES[machine], cp.CP_MODELS[model]
    x, beta = spec.gpu.flops_per_s, betas(machine)[link]
    assert v["gpu_flops"] == x and v["link_bytes_per_s"] == beta
    assert v["gpu_memory_bytes"] == spec.gpu.memory_bytes
    threshold = context.min_block_tokens(hidden=m.hidden, heads=m.heads, kv_heads=m.kv_heads,
                                         flops_per_gpu=x, bytes_per_s=beta)
    assert v["min_block_tokens"] == pytest.approx(threshold, rel=1e-12)
    step = context.ring_step_times(hidden=m.hidden, heads=m.heads, kv_heads=m.kv_heads, seq_len=S,
                                   micro_batch=1, cp=CP, flops_per_gpu=x, bytes_per_s=beta)
    assert v["ring_transfer_over_compute"] == pytest.approx(step.forward_transfer / step.forward_compute)
    assert v["transfer_hidden"] == (1 if LOCAL >= threshold else 0)
    # the book's ratio scaled by X/β: nothing else of the machine enters it
    _, book = evaluate("cp", {"link": link, "model": model})
    scale = (x / X) * (LINKS[link].bytes_per_s / beta)
    assert v["ring_transfer_over_compute"] == pytest.approx(book["ring_transfer_over_compute"] * scale)


@pytest.mark.parametrize("link", ["nvlink", "network"])
@pytest.mark.parametrize("overrides", [{}, state(model="llama2-7b", seq_len=8192, cp=32), state(split="contiguous")])
def test_a_faster_gpu_on_the_same_link_never_makes_the_transfer_easier_to_hide(link: str, overrides: dict) -> None:
    """Compute per step falls as 1/X, the transfer stays: for two machines with the same
    β, the one with more FLOP/s has a ratio and a threshold at least as high, waits at
    least as long, and hides only if the slower one does too."""
    values = {m: evaluate("cp", {**overrides, "link": link, "machine": m})[1] for m in MACHINES}
    pairs = 0
    for fast in MACHINES:
        for slow in MACHINES:
            if betas(fast)[link] != betas(slow)[link] or MACHINES[fast].gpu.flops_per_s < MACHINES[slow].gpu.flops_per_s:
                continue
            pairs += 1
            f, s = values[fast], values[slow]
            assert f["ring_transfer_over_compute"] >= s["ring_transfer_over_compute"] * (1 - 1e-12), (fast, slow)
            assert f["min_block_tokens"] >= s["min_block_tokens"] * (1 - 1e-12), (fast, slow)
            assert f["ring_exposed_time_layer"] >= s["ring_exposed_time_layer"], (fast, slow)
            assert f["transfer_hidden"] <= s["transfer_hidden"], (fast, slow)
    # book, H100, H200 share NVLink 450 GB/s; all but the A100 share the 50 GB/s network
    assert pairs > len(MACHINES)


def test_the_chapters_conclusion_per_machine() -> None:
    """Llama 3.1 8B, 128K, cp = 8: the K/V ring hides on every machine over NVLink; over
    the network it hides up to the H100 generation and not on a B200, whose X rose while
    the network stayed at 50 GB/s."""
    for machine in MACHINES:
        assert evaluate("cp", {"machine": machine})[1]["transfer_hidden"] == 1, machine
    network = {m: evaluate("cp", {"machine": m, "link": "network"})[1] for m in MACHINES}
    assert [network[m]["transfer_hidden"] for m in MACHINES] == [1, 1, 1, 1, 0]
    b200 = network["dgx-b200"]
    assert b200["min_block_tokens"] > b200["tokens_per_gpu"] and b200["ring_exposed_time_layer"] > 0
    assert network["dgx-h100"]["min_block_tokens"] < network["dgx-h100"]["tokens_per_gpu"]


def test_the_machines_gpu_sets_the_memory_line_and_the_cp_needed() -> None:
    """H200 is H100's compute and links with 141 GB; B200's 180 GB hold 128K of Llama 3.1
    8B on four GPUs."""
    v = {m: evaluate("cp", {"machine": m})[1] for m in MACHINES}
    for key in ("min_block_tokens", "ring_step_compute_time", "ring_step_transfer_time", "memory_per_gpu_bytes"):
        assert v["dgx-h200"][key] == v["dgx-h100"][key], key
    for m, values in v.items():
        memory = MACHINES[m].gpu.memory_bytes
        need = cp.cp_needed(cp.CP_MODELS["llama3.1-8b"], S, memory)
        assert values["cp_needed"] == need and values["gpu_memory_bytes"] == memory
        assert math.fsum(cp.memory_parts(cp.CP_MODELS["llama3.1-8b"], S, need)) <= memory
        assert math.fsum(cp.memory_parts(cp.CP_MODELS["llama3.1-8b"], S, need // 2)) > memory
    assert v["dgx-b200"]["cp_needed"] < v["book"]["cp_needed"]
    html = render_output("cp", {"machine": "dgx-b200", "cp": "4"}, locale("id")).html
    mem = svg_of(html, "w-cp-mem")
    assert "GPU 180 GB" in mem and re.findall(r'<rect class="(w-cp-(?:fits|over)[^"]*)"', mem)[2] == "w-cp-fits"


def test_the_machine_control_renders_with_its_labels_in_both_languages() -> None:
    for lang, label, book in (("id", "Mesin", "Mesin ilustratif buku"), ("zh", "机器", "本书的示意机器")):
        html = render_widget("cp", {}, locale(lang))
        assert 'name="machine"' in html and label in html and book in html
        assert '<option value="book" selected>' in html
        assert all(f'<option value="{key}"' in html for key in MACHINES)


@pytest.mark.parametrize(("lang", "expected"), [
    ("id", "Mesin harus salah satu dari book, dgx-a100, dgx-h100, dgx-h200, dgx-b200, bukan “tpu”."),
    ("zh", "机器 必须是 book, dgx-a100, dgx-h100, dgx-h200, dgx-b200 之一，而不是“tpu”。"),
])
def test_a_bad_machine_gives_a_localized_error(lang: str, expected: str) -> None:
    reply = handle({"widget": "cp", "state": {"machine": "tpu"}}, locale(lang))
    assert reply["ok"] is False and 'role="alert"' in reply["html"]
    assert expected in reply["html"]


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_only_the_books_own_machine_is_called_illustrative(lang: str) -> None:
    mark = {"id": "ilustratif", "zh": "示意"}[lang]
    titles = re.compile(r'<title id="w-cp-(?:step|mem)-t">([^<]*)</title>')
    book = titles.findall(render_output("cp", {}, locale(lang)).html)
    assert len(book) == 2 and all(mark in title for title in book)
    for machine in list(MACHINES)[1:]:
        html = render_output("cp", {"machine": machine, "link": "network"}, locale(lang)).html
        named = titles.findall(html)
        name = locale(lang).t(f"cp.controls.machine.options.{machine}")
        assert len(named) == 2 and all(mark not in title and name in title for title in named), (machine, named)
        gb = locale(lang).format("bytes_per_s", MACHINES[machine].network_bytes_per_s)
        assert gb in named[0]  # the link is named with the machine's β


def test_the_chapter_says_in_words_what_the_flags_compute() -> None:
    """docs/{id,zh}/context-parallelism.md says "sudah muat", "tidak muat", "tersembunyi",
    "tidak lagi tersembunyi" and "tidak menunggu sama sekali" in words next to the macros
    (no yes/no output or a bare 0 s in prose); each sentence's state must still give it."""
    failures: list[str] = []

    def claim(text: str, ok: bool) -> None:
        if not ok:
            failures.append(text)

    def v(**state: str) -> dict[str, float]:
        return evaluate("cp", state)[1]

    d = v()
    claim("default (8B, 128K, cp = 8, NVLink): the transfer hides and 73 GB fit (ring, widget, Contoh 1)",
          d["transfer_hidden"] == 1 and d["fits"] == 1 and d["memory_per_gpu_bytes"] <= d["gpu_memory_bytes"])
    claim("cp = 4 does not fit any more (widget, Contoh 1)", v(cp="4")["fits"] == 0)
    b200 = v(link="network", machine="dgx-b200")
    claim("DGX B200 over the network: no longer hidden, every layer waits",
          b200["transfer_hidden"] == 0 and b200["ring_exposed_time_layer"] > 0)
    big = v(model="llama3.1-405b", cp="16", link="network")
    claim("405B, cp = 16, network: hidden in both passes (Contoh 2)",
          big["transfer_hidden"] == 1 and big["ring_step_transfer_time"] <= big["ring_step_compute_time"]
          and big["ring_step_backward_transfer_time"] <= big["ring_step_backward_compute_time"])
    claim("405B, cp = 16: Ulysses impossible (widget)", v(model="llama3.1-405b", cp="16")["ulysses_possible"] == 0)
    net = v(link="network")
    claim("8B, cp = 8, network: the ring does not wait at all (Contoh 3)",
          net["ring_exposed_time_layer"] == 0 and net["transfer_hidden"] == 1)
    short = v(link="network", seq_len="8192", cp="32")
    claim("8K on cp = 32 over the network: below the threshold, GPUs wait (widget)",
          short["tokens_per_gpu"] < short["min_block_tokens"] and short["transfer_hidden"] == 0)
    seventy = v(model="llama3.1-70b", cp="16")
    claim("70B, cp = 16: does not fit (Latihan 1)",
          seventy["fits"] == 0 and seventy["memory_per_gpu_bytes"] > seventy["gpu_memory_bytes"])
    small = v(model="llama3.1-70b", seq_len="8192", cp="16", link="network")
    claim("70B, 8K, cp = 16, network: below the threshold, no longer hidden, waits (Latihan 3)",
          small["tokens_per_gpu"] < small["min_block_tokens"] and small["transfer_hidden"] == 0
          and small["ring_exposed_time_layer"] > 0)
    gqa = v(seq_len="65536", cp="32", link="network")
    mha = v(model="llama2-7b", seq_len="65536", cp="32", link="network")
    claim("64K on cp = 32 over the network: Llama 2 7B waits, Llama 3.1 8B not at all (Latihan 6)",
          mha["ring_exposed_time_layer"] > 0 and gqa["ring_exposed_time_layer"] == 0
          and gqa["tokens_per_gpu"] >= gqa["min_block_tokens"])
    assert not failures, "sentences of context-parallelism.md no longer true:\n" + "\n".join(failures)
