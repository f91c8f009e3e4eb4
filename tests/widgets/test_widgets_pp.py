"""Widget `pp` reproduces the seed explainer's step 5 (WIDGETS.md) and draws the
SIMULATED schedule: p rows, p·m forward and p·m backward boxes (p·m·v interleaved),
the bubble read off the simulation, and the activations each stage holds."""

from __future__ import annotations

import re
import time

import pytest

from calc.pipeline import stage_layers
from widgets.figures import pp
from widgets.framework.core import evaluate, render_output
from widgets.build.native import locale

# WIDGETS.md, row `pp`: 4 stages, 4 micro-batches, GPipe, Llama 2 7B.
SEED = {
    "bubble": 0.4286,
    "layers_per_gpu": 8,
    "state_per_gpu_bytes": 26.96e9,
    "busy_units": 12,
    "total_units": 21,
    "activation_transfer_bytes": 33.55e6,
}
SWEEP = [(p, m) for p in range(1, 9) for m in (1, 2, 3, 4, 5, 7, 8, 12, 16, 31, 32)]
BIG = {"stages": 8, "microbatches": 32, "schedule": "interleaved", "chunks": 4}


def state(p: int, m: int, schedule: str = "gpipe", v: int = 2) -> dict:
    return {"stages": p, "microbatches": m, "schedule": schedule, "chunks": v}


def timeline(html: str) -> str:
    return re.search(r'aria-labelledby="w-pp-timeline-t.*?</svg>', html).group(0)


def sentence(html: str) -> str:
    return re.search(r'<p class="w-sentence">(.*?)</p>', html).group(1)


@pytest.mark.parametrize("key", SEED)
def test_default_state_reproduces_the_seed_within_a_tenth_of_a_percent(key: str) -> None:
    _, values = evaluate("pp", {})
    assert values[key] == pytest.approx(SEED[key], rel=1e-3)


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
def test_simulated_bubble_is_the_gpipe_formula(schedule: str) -> None:
    """(p − 1)/(m + p − 1) for GPipe and 1F1B alike (Narayanan et al. 2021 Sec. 2.2.1)."""
    for p, m in SWEEP:
        _, v = evaluate("pp", state(p, m, schedule))
        assert v["bubble"] == pytest.approx((p - 1) / (m + p - 1), abs=1e-12), (p, m)
        assert v["bubble_formula"] == pytest.approx(v["bubble"], abs=1e-12)
        assert v["busy_units"] == 3 * m and v["total_units"] == 3 * (m + p - 1)


@pytest.mark.parametrize("v", [2, 3, 4])
def test_interleaving_divides_the_bubble_by_v_once_m_reaches_p(v: int) -> None:
    """(p − 1)/(v·m + p − 1) (Sec. 2.2.2) when there are at least p micro-batches."""
    for p, m in SWEEP:
        if m >= p:
            _, out = evaluate("pp", state(p, m, "interleaved", v))
            assert out["bubble"] == pytest.approx((p - 1) / (v * m + p - 1), abs=1e-12), (p, m)


def test_gpipe_holds_all_m_and_1f1b_at_most_p() -> None:
    for p, m in SWEEP:
        assert evaluate("pp", state(p, m, "gpipe"))[1]["in_flight"] == m
        in_flight = evaluate("pp", state(p, m, "1f1b"))[1]["in_flight"]
        assert in_flight <= p and in_flight == min(p, m)


@pytest.mark.parametrize(("p", "m", "schedule", "v"), [
    (4, 4, "gpipe", 1), (1, 1, "gpipe", 1), (1, 32, "1f1b", 1), (8, 32, "gpipe", 1),
    (8, 32, "1f1b", 1), (3, 7, "1f1b", 1), (4, 4, "interleaved", 2), (8, 32, "interleaved", 4),
    (5, 3, "interleaved", 3), (1, 4, "interleaved", 2),
])
def test_timeline_has_one_box_per_simulated_pass(p: int, m: int, schedule: str, v: int) -> None:
    html = timeline(render_output("pp", state(p, m, schedule, max(v, 2)), locale("id")).html)
    assert len(re.findall(r'<rect class="w-pp-f[ "]', html)) == p * m * v
    assert len(re.findall(r'<rect class="w-pp-b[ "]', html)) == p * m * v
    assert len(re.findall(r'class="w-pp-[fb] w-pp-k\d', html)) == 2 * p * m * (v - 1)
    for s in range(p):
        assert f">GPU {s}</text>" in html
    assert f">GPU {p}</text>" not in html


def test_timeline_boxes_sit_where_the_simulation_puts_them() -> None:
    html = render_output("pp", {}, locale("id")).html
    scale = pp.TL_W / 21
    xs = sorted(float(x) for x in re.findall(r'<rect class="w-pp-[fb]" x="([\d.]+)"', timeline(html)))
    expected = sorted(pp.TL_X + e.start * scale for e in pp.schedule_events(evaluate("pp", {})[0]))
    assert xs == pytest.approx(expected, abs=0.01)


def test_idle_time_is_grey_only_when_there_is_a_bubble() -> None:
    assert 'class="w-pp-idle"' in timeline(render_output("pp", {}, locale("id")).html)
    assert '<rect class="w-pp-idle"' not in timeline(render_output("pp", state(1, 8), locale("id")).html)


def test_rows_carry_the_layer_ranges_of_calc() -> None:
    html = timeline(render_output("pp", {}, locale("id")).html)
    for first, last in stage_layers(32, 4):
        assert f">L{first}–{last}</text>" in html
    note = render_output("pp", state(4, 8, "interleaved", 2), locale("id")).html
    assert "GPU 0 memegang L0–3, 16–19" in note  # chunk c of GPU 0 is virtual stage c·p


def test_numbers_show_when_boxes_are_wide_and_hide_when_thin() -> None:
    small = timeline(render_output("pp", {}, locale("id")).html)
    assert len(re.findall(r'<text class="w-pp-num', small)) == 2 * 4 * 4
    numbers = re.findall(r'<text class="w-pp-num"[^>]*>(\d+)</text>', small)  # 1-based, as in the seed
    assert sorted(numbers) == sorted(str(i) for i in range(1, 5) for _ in range(2 * 4))
    big = render_output("pp", BIG, locale("id")).html
    assert "w-pp-num" not in timeline(big)
    assert "terlalu sempit" in big


def test_time_axis_is_in_units_backward_twice_forward() -> None:
    html = render_output("pp", {}, locale("zh")).html
    ticks = re.findall(r'<text class="w-fig-tick" x="[\d.]+" y="\d+" text-anchor="middle">(\d+)</text>', timeline(html))
    assert ticks == ["0", "5", "10", "15", "20"]
    assert "一步共 21 个单位" in html and "反向记 2 个单位" in html


def test_activation_bars_per_stage_read_the_simulation() -> None:
    html = render_output("pp", state(4, 16, "1f1b"), locale("id")).html
    act = re.search(r'aria-labelledby="w-pp-act-t.*?</svg>', html).group(0)
    assert re.findall(r'<text class="w-fig-value"[^>]*>([\d,]+)</text>', act) == ["4", "3", "2", "1"]
    gpipe = re.search(r'aria-labelledby="w-pp-act-t.*?</svg>', render_output("pp", state(4, 16), locale("id")).html).group(0)
    assert re.findall(r'<text class="w-fig-value"[^>]*>([\d,]+)</text>', gpipe) == ["16"] * 4


def test_interleaved_units_keep_their_decimals() -> None:
    """A chunk's pass lasts 1/v unit: 4 stages, 4 micro-batches, v = 2 take 16.5 units."""
    out = render_output("pp", state(4, 4, "interleaved", 2), locale("id"))
    assert out.values["total_units"] == 16.5
    assert 'data-out="total_units" data-value="16.5">16,5<' in out.html
    assert "bekerja 12 dari 16,5 unit" in sentence(out.html)


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize(("p", "m", "schedule", "v"), [
    (4, 4, "gpipe", 2), (1, 4, "gpipe", 2), (8, 32, "1f1b", 2), (8, 5, "1f1b", 2),
    (4, 8, "interleaved", 2), (8, 32, "interleaved", 4), (8, 5, "interleaved", 3),
])
def test_sentence_states_the_current_numbers(lang: str, p: int, m: int, schedule: str, v: int) -> None:
    loc = locale(lang)
    out = render_output("pp", state(p, m, schedule, v), locale(lang))
    text = sentence(out.html)
    keys = ["bubble", "busy_units", "total_units"]
    keys += ["state_per_gpu_bytes"] if p == 1 else ["bubble_formula", "activation_transfer_bytes"]
    if p > 1 and schedule != "interleaved":
        keys.append("in_flight")
    for key in keys:
        assert loc.format(pp.OUTPUTS[key], out.values[key]) in text, (key, text)
    assert loc.integer(m) in text
    if schedule == "interleaved" and p > 1:
        assert f"v = {v}" in text


def test_sentence_changes_with_the_meaning() -> None:
    loc = locale("id")
    assert "tanpa menunggu" in sentence(render_output("pp", state(1, 4), loc).html)
    assert "stage 0 sudah menahan activation 4 micro-batch" in sentence(render_output("pp", {}, loc).html)
    assert "paling banyak 4 micro-batch, bukan 16" in sentence(render_output("pp", state(4, 16, "1f1b"), loc).html)
    assert "m tidak melebihi p" in sentence(render_output("pp", state(8, 5, "1f1b"), loc).html)
    assert "sama dengan (p − 1)/(v·m + p − 1)" in sentence(render_output("pp", state(4, 8, "interleaved"), loc).html)
    assert "mengandaikan m ≥ p = 8" in sentence(render_output("pp", state(8, 5, "interleaved", 3), loc).html)


def test_render_of_the_largest_schedule_stays_fast() -> None:
    """8 stages × 32 micro-batches × 4 chunks: 2,048 boxes; render reuses compute()'s
    simulation, so a live update costs one simulation plus one render."""
    loc = locale("id")
    st, values = evaluate("pp", BIG)
    start = time.perf_counter()
    for _ in range(5):
        pp.render(st, values, loc)
    assert (time.perf_counter() - start) / 5 < 0.1


# -- zero-bubble schedules and DualPipe (Qi et al. 2024; DeepSeek-V3 Table 2) -------------
SPLIT = ("zb-h1", "zb-h2", "dualpipe")


def test_default_stays_gpipe_and_new_outputs_are_defined_everywhere() -> None:
    st, values = evaluate("pp", {})
    assert st["schedule"] == "gpipe"
    assert values["bubble_units"] == values["bubble_units_formula"] == 9  # (p − 1)(F + B)
    assert values["param_copies"] == 1 and values["in_flight_max"] == 4
    for schedule in ("gpipe", "1f1b", "interleaved", *SPLIT):
        for p, m in SWEEP:
            _, out = evaluate("pp", state(p, m, schedule))
            assert set(out) == set(pp.OUTPUTS), (schedule, p, m)


@pytest.mark.parametrize("schedule", ["zb-h1", "zb-h2"])
def test_zero_bubble_matches_the_papers_formula_once_m_is_large_enough(schedule: str) -> None:
    """ZB-H1: (p − 1)(T_F + T_B − T_W) = p − 1 units for m ≥ p; ZB-H2: 0 for m ≥ 2p − 1
    (the period of overlapping steps), with T_F = T_B = T_W = 1 unit."""
    need = {"zb-h1": lambda p: p, "zb-h2": lambda p: 2 * p - 1}[schedule]
    for p, m in SWEEP:
        _, v = evaluate("pp", state(p, m, schedule))
        if m >= need(p):
            assert v["bubble_units"] == v["bubble_units_formula"] == (p - 1 if schedule == "zb-h1" else 0), (p, m)
        assert v["busy_units"] == 3 * m


def test_split_schedules_hold_the_papers_activations() -> None:
    for p, m in SWEEP:
        assert evaluate("pp", state(p, m, "zb-h1"))[1]["in_flight_max"] == min(p, m)
        assert evaluate("pp", state(p, m, "zb-h2"))[1]["in_flight_max"] == min(2 * p - 1, m)
        _, v = evaluate("pp", state(p, m, "dualpipe"))
        assert v["in_flight_max"] == v["stages_simulated"] + 1
        assert v["param_copies"] == 2


def test_dualpipe_doubles_parameters_and_layers_per_gpu() -> None:
    gpipe = evaluate("pp", state(4, 8))[1]
    dual = evaluate("pp", state(4, 8, "dualpipe"))[1]
    assert dual["state_per_gpu_bytes"] == 2 * gpipe["state_per_gpu_bytes"]
    assert dual["layers_per_gpu"] == 2 * gpipe["layers_per_gpu"] == 16
    html = render_output("pp", state(4, 8, "dualpipe"), locale("id")).html
    assert "GPU 0 memegang L0–7, 24–31" in html  # stage 0 and stage p − 1 (too long for the row)


@pytest.mark.parametrize(("p", "m", "p2", "m2"), [(4, 4, 4, 8), (3, 5, 4, 8), (1, 1, 2, 4), (7, 32, 8, 32),
                                                  (8, 17, 8, 18), (4, 8, 4, 8)])
def test_dualpipe_simulates_the_nearest_valid_pipeline_and_says_so(p: int, m: int, p2: int, m2: int) -> None:
    for lang, text in (("id", f"yang disimulasikan di sini p = {p2}, m = {m2}"), ("zh", f"这里模拟的是 p = {p2}、m = {m2}")):
        out = render_output("pp", state(p, m, "dualpipe"), locale(lang))
        assert out.ok
        assert (out.values["stages_simulated"], out.values["microbatches_simulated"]) == (p2, m2)
        assert (text in out.html) == ((p, m) != (p2, m2))
        assert len(re.findall(r'<rect class="w-pp-w', timeline(out.html))) == p2 * m2


@pytest.mark.parametrize("schedule", SPLIT)
def test_split_timeline_draws_f_b_and_w_once_per_pass(schedule: str) -> None:
    for p, m in [(4, 8), (8, 16), (2, 4), (6, 12)]:
        out = render_output("pp", state(p, m, schedule), locale("zh"))
        html = timeline(out.html)
        for kind in "fbw":
            assert len(re.findall(rf'<rect class="w-pp-{kind}[ "]', html)) == p * m, (kind, p, m)
        assert "W：对权重的梯度" in out.html and "B：对输入的梯度" in out.html
        pairs = len(re.findall(r'class="w-pp-ref w-pp-pair"', html))
        assert pairs == (len(pipeline_spans(p, m)) if schedule == "dualpipe" else 0)


def pipeline_spans(p: int, m: int) -> list:
    from calc.pipeline import overlapped_spans
    return overlapped_spans(pp=p, microbatches=m, fwd=pp.FWD, bwd=pp.BWD, wgrad=pp.WGRAD)


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize(("p", "m", "schedule"), [
    (4, 8, "zb-h1"), (8, 5, "zb-h1"), (4, 8, "zb-h2"), (4, 4, "zb-h2"), (8, 32, "zb-h2"), (4, 8, "dualpipe"),
    (8, 16, "dualpipe"), (2, 4, "dualpipe"),
])
def test_split_sentence_states_simulated_and_formula(lang: str, p: int, m: int, schedule: str) -> None:
    loc = locale(lang)
    out = render_output("pp", state(p, m, schedule), loc)
    text = sentence(out.html)
    for key in ("bubble_units", "bubble_units_formula", "in_flight_max"):
        assert loc.format(pp.OUTPUTS[key], out.values[key]) in text, (key, text)
    cards = re.findall(r'data-out="(\w+)"', out.html.split('<figure')[0])
    assert "bubble_units" in cards and "bubble_units_formula" in cards
    assert ("param_copies" in cards) == (schedule == "dualpipe")
    if schedule == "dualpipe" and p > 2:
        # T_F = T_B = T_W: the simulation is Table 2's (p/2 − 1)(F&B + B − 3W) exactly
        assert ("sama dengan rumus Tabel 2" if lang == "id" else "一致；这里 T_F = T_B = T_W") in text
        assert out.values["bubble_units"] == out.values["bubble_units_formula"] == 2 * (p // 2 - 1)


def test_split_sentences_change_with_the_meaning() -> None:
    loc = locale("id")
    assert "sama dengan rumus (p − 1)(T_F + T_B − T_W) = 3" in sentence(render_output("pp", state(4, 8, "zb-h1"), loc).html)
    assert "mengandaikan m ≥ 8" in sentence(render_output("pp", state(8, 5, "zb-h1"), loc).html)
    assert "mengandaikan m ≥ 7" in sentence(render_output("pp", state(4, 4, "zb-h2"), loc).html)
    zb2 = sentence(render_output("pp", state(4, 8, "zb-h2"), loc).html)
    # no idle unit is said in words, not as "0 units" (the formula clause still shows = 0)
    assert "tidak ada GPU yang menganggur sama sekali" in zb2 and "sampai 7 micro-batch" in zb2
    assert "0 unit" not in zb2
    assert "完全没有空闲" in sentence(render_output("pp", state(4, 8, "zb-h2"), locale("zh")).html)
    assert "menganggur 3 unit" in sentence(render_output("pp", state(4, 4, "zb-h2"), loc).html)
    assert "memegang 2× parameter" in sentence(render_output("pp", state(4, 8, "dualpipe"), loc).html)


@pytest.mark.parametrize(("lang", "name"), [("id", "mesin ilustratif buku"), ("zh", "本书的示意机器")])
def test_sentence_names_the_book_machine_in_running_text(lang: str, name: str) -> None:
    """The option label ("Mesin ilustratif buku") opens a menu line; inside a sentence
    and on the figure's limit line the machine is named in running-text case."""
    loc = locale(lang)
    html = render_output("pp", {}, loc).html
    assert name in sentence(html) and name in html.split("<figure")[1].split("w-pp-plan")[-1]
    assert "Mesin ilustratif buku" not in sentence(html)
    assert "DGX H100" in sentence(render_output("pp", {"machine": "dgx-h100"}, loc).html)
