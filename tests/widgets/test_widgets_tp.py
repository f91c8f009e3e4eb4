"""Widget `tp` reproduces the seed explainer's step 4 (WIDGETS.md) and draws Megatron's
split MLP: t column blocks, t row blocks, t partial sums, one all-reduce over the link."""

from __future__ import annotations

import re

import pytest

from calc.hardware import MACHINES
from widgets.figures import tp
from widgets.framework.core import evaluate, handle, render_output, render_widget
from widgets.build.native import locale

# WIDGETS.md, row `tp`: t = 4 over NVLink, Llama 2 7B, one 4,096-token sequence.
SEED = {
    "weights_per_gpu_layer": 50.59e6,
    "state_per_gpu_bytes": 26.96e9,
    "sent_per_gpu_layer_bytes": 201.3e6,
    "comm_time": 4.474e-4,
    "compute_time": 8.289e-3,
    "comm_over_compute": 0.054,
}
STATES = [{"tp": t, "link": link} for t in ("1", "2", "4", "8") for link in ("nvlink", "network")]


def sentence(html: str) -> str:
    return re.search(r'<p class="w-sentence">(.*?)</p>', html).group(1)


@pytest.mark.parametrize("key", SEED)
def test_default_state_reproduces_the_seed_within_a_tenth_of_a_percent(key: str) -> None:
    _, values = evaluate("tp", {})
    assert values[key] == pytest.approx(SEED[key], rel=1e-3)


@pytest.mark.parametrize("machine", list(MACHINES))
@pytest.mark.parametrize("state", STATES)
def test_comm_time_is_the_chosen_links_of_the_machine(state: dict, machine: str) -> None:
    _, v = evaluate("tp", {**state, "machine": machine})
    spec = MACHINES[machine]
    beta = {"nvlink": spec.nvlink_bytes_per_s, "network": spec.network_bytes_per_s}
    assert v["comm_time"] == v[f"comm_time_{state['link']}"]
    assert v["link_bytes_per_s"] == beta[state["link"]]
    assert v["gpu_flops"] == spec.gpu.flops_per_s and v["gpu_memory_bytes"] == spec.gpu.memory_bytes
    ratio = spec.nvlink_bytes_per_s / spec.network_bytes_per_s
    assert v["nvlink_over_network"] == pytest.approx(ratio)
    assert v["comm_time_network"] == pytest.approx(ratio * v["comm_time_nvlink"])


def test_the_books_network_is_nine_times_slower_than_its_nvlink() -> None:
    _, v = evaluate("tp", {})
    assert v["nvlink_over_network"] == pytest.approx(9)  # 450 vs 50 GB/s


# Llama 2 7B, t = 8 over NVLink: comm ÷ compute = 2(t−1)/t · 2sbh · 4 / β ÷ (6 P s / (t X)),
# so it scales with X/β. The seed's machine (150 TFLOP/s, 450 GB/s) hides it; on a real
# DGX the GPU computes faster for the same NVLink and TP = 8 waits a large share.
PER_MACHINE = {"book": 0.1260, "dgx-a100": 0.3931, "dgx-h100": 0.8308, "dgx-h200": 0.8308, "dgx-b200": 0.9450}


@pytest.mark.parametrize(("machine", "ratio"), PER_MACHINE.items())
def test_tp8_over_nvlink_costs_a_machine_dependent_share_of_compute(machine: str, ratio: float) -> None:
    _, v = evaluate("tp", {"tp": "8", "machine": machine})
    assert v["comm_over_compute"] == pytest.approx(ratio, rel=1e-3)
    spec = MACHINES[machine]
    _, book = evaluate("tp", {"tp": "8"})
    scale = (spec.gpu.flops_per_s / 150e12) * (450e9 / spec.nvlink_bytes_per_s)
    assert v["comm_over_compute"] == pytest.approx(book["comm_over_compute"] * scale)


def test_the_machine_control_renders_with_its_labels_in_both_languages() -> None:
    for lang, label, book in (("id", "Mesin", "Mesin ilustratif buku"), ("zh", "机器", "本书的示意机器")):
        html = render_widget("tp", {}, locale(lang))
        assert 'name="machine"' in html and label in html and book in html
        assert '<option value="book" selected>' in html
        assert all(f'<option value="{key}"' in html for key in MACHINES)


@pytest.mark.parametrize(("lang", "expected"), [
    ("id", "Mesin harus salah satu dari book, dgx-a100, dgx-h100, dgx-h200, dgx-b200, bukan “tpu”."),
    ("zh", "机器 必须是 book, dgx-a100, dgx-h100, dgx-h200, dgx-b200 之一，而不是“tpu”。"),
])
def test_a_bad_machine_gives_a_localized_error(lang: str, expected: str) -> None:
    reply = handle({"widget": "tp", "state": {"machine": "tpu"}}, locale(lang))
    assert reply["ok"] is False and 'role="alert"' in reply["html"]
    assert expected in reply["html"]


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_only_the_books_own_machine_is_called_illustrative(lang: str) -> None:
    mark = {"id": "ilustratif", "zh": "示意"}[lang]
    heading = re.compile(r'<title id="w-tp-time-t">([^<]*)</title>')
    book = heading.search(render_output("tp", {}, locale(lang)).html).group(1)
    h100 = heading.search(render_output("tp", {"machine": "dgx-h100"}, locale(lang)).html).group(1)
    assert mark in book and "150 TFLOP/s" in book
    assert mark not in h100 and "DGX H100" in h100 and "989 TFLOP/s" in h100


def test_worked_example_steps() -> None:
    """The outputs the chapter's solutions use: S = 2sbh, 2(t−1)/t, 4 × 2(t−1)/t, heads."""
    _, v = evaluate("tp", {"tp": "8", "model": "llama2-70b"})
    assert v["message_bytes"] == 2 * 4096 * 8192
    assert v["ring_factor"] == pytest.approx(7 / 4) and v["sent_over_message"] == pytest.approx(7)
    assert v["sent_per_gpu_layer_bytes"] == pytest.approx(v["sent_over_message"] * v["message_bytes"])
    assert (v["heads_per_gpu"], v["kv_heads_per_gpu"], v["hidden"], v["seq_len"]) == (8, 1, 8192, 4096)
    _, two = evaluate("tp", {"tp": "2"})
    assert two["ring_factor"] == 1 and two["sent_over_message"] == 4 and two["all_reduces_per_layer"] == 4


def test_eight_gpus_over_the_network_wait_longer_than_they_compute() -> None:
    """The seed's point: tensor parallelism stays inside the node."""
    _, nvlink = evaluate("tp", {"tp": "8"})
    _, network = evaluate("tp", {"tp": "8", "link": "network"})
    assert nvlink["comm_over_compute"] < 0.2 < 1 < network["comm_over_compute"]


@pytest.mark.parametrize("t", [1, 2, 4, 8])
def test_figure_splits_w_u_by_columns_w_d_by_rows_one_colour_per_gpu(t: int) -> None:
    html = render_output("tp", {"tp": str(t)}, locale("id")).html
    mlp = re.search(r'<svg class="w-figure"[^>]*aria-labelledby="w-tp-mlp-t.*?</svg>', html).group(0)
    for i in range(t):  # W_u's column block, Y's local slice, W_d's row block, (t > 1) the partial sum
        assert len(re.findall(rf'<rect class="w-tp-g{i} w-tp-block"', mlp)) == 3
        assert len(re.findall(rf'<rect class="w-tp-g{i} w-tp-card"', mlp)) == (1 if t > 1 else 0)
    assert f"w-tp-g{t}" not in mlp
    assert ("Σ" in mlp) == (t > 1)
    assert html.count('<span class="w-swatch w-tp-g') == t  # the legend names each GPU


@pytest.mark.parametrize("t", ["1", "4"])
@pytest.mark.parametrize("lang", ["id", "zh"])
def test_figure_names_the_matrices_in_the_books_letters(lang: str, t: str) -> None:
    """The book's X is a GPU's FLOP/s and B the global batch, so the figure writes the
    input H and the MLP's matrices W_u, W_d (Megatron's X, A, B), in labels and text."""
    html = render_output("tp", {"tp": t}, locale(lang)).html
    mlp = re.search(r'<svg class="w-figure"[^>]*aria-labelledby="w-tp-mlp-t.*?</svg>', html).group(0)
    names = re.findall(r'<text class="w-fig-value"[^>]*>(.*?)</text>', mlp)
    sub = '<tspan class="w-tp-sub" dy="3" font-size="8.5">{}</tspan>'
    assert names[:4] == ["H", "W" + sub.format("u"), "Y", "W" + sub.format("d")] and names[-1] == "Z"
    words = re.sub(r"<[^>]+>", " ", re.search(r'<figure class="w-fig w-tp-fig">.*?</figure>', html).group(0))
    assert re.search(r"\bW_u\b", words) and re.search(r"\bH\b", words)
    assert not re.search(r"\b[XAB]\b", words), words


def test_exact_parameter_count_and_three_digit_share() -> None:
    """Ψ exact, so that 16Ψ/t is checked by hand; comm ÷ compute as a percentage keeps
    its digits where the ratio format drops trailing zeros (0,1× for 0,1004×)."""
    _, v = evaluate("tp", {"model": "llama2-13b", "tp": "4"})
    assert v["params"] == 13_015_864_320
    assert v["state_per_gpu_bytes"] == pytest.approx(16 * v["params"] / 4)
    _, eight = evaluate("tp", {"model": "llama2-13b", "tp": "8"})
    assert eight["comm_share_of_compute"] == eight["comm_over_compute"]
    assert locale("id").format(tp.OUTPUTS["comm_share_of_compute"], eight["comm_share_of_compute"]) == "10,0%"
    assert locale("id").format(tp.OUTPUTS["params"], v["params"]) == "13.015.864.320"


def test_the_link_is_visible_in_the_figure() -> None:
    nvlink = render_output("tp", {}, locale("id")).html
    network = render_output("tp", {"link": "network"}, locale("id")).html
    assert 'class="w-tp-sum w-tp-nvlink"' in nvlink and "w-tp-network" not in nvlink
    assert 'class="w-tp-sum w-tp-network"' in network and ">jaringan</text>" in network


def test_time_bars_show_compute_and_both_links_the_unchosen_one_faded() -> None:
    html = render_output("tp", {"link": "network", "tp": "8"}, locale("zh")).html
    bars = re.search(r'aria-labelledby="w-tp-time-t.*?</svg>', html).group(0)
    widths = [float(w) for w in re.findall(r'<rect class="w-c\d" x="\d+" y="\d+" width="([\d.]+)"', bars)]
    _, v = evaluate("tp", {"link": "network", "tp": "8"})
    compute, nvlink, network = widths
    assert network / compute == pytest.approx(v["comm_time_network"] / v["compute_time"], rel=0.01)
    assert nvlink / compute == pytest.approx(v["comm_time_nvlink"] / v["compute_time"], rel=0.01)
    assert bars.count('<g class="w-tp-other">') == 1
    assert re.search(r'<g class="w-tp-other"><text[^>]*>NVLink</text>', bars)


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize("state", STATES)
def test_sentence_states_the_current_numbers(lang: str, state: dict) -> None:
    loc = locale(lang)
    out = render_output("tp", state, loc)
    text = sentence(out.html)
    keys = ["weights_per_gpu_layer", "state_per_gpu_bytes", "compute_time"]
    if state["tp"] != "1":
        keys += ["sent_per_gpu_layer_bytes", "comm_time", "comm_over_compute",
                 "comm_time_nvlink", "comm_time_network"]
    for key in keys:
        assert loc.format(tp.OUTPUTS[key], out.values[key]) in text, (key, text)


def test_sentence_changes_with_the_meaning() -> None:
    loc = locale("id")
    single = sentence(render_output("tp", {"tp": "1"}, loc).html)
    split = sentence(render_output("tp", {}, loc).html)
    slower = sentence(render_output("tp", {"tp": "8", "link": "network"}, loc).html)
    assert "tanpa all-reduce" in single and "Lewat" not in single
    assert "lewat NVLink 450 GB/s makan waktu 447,4 µs, sementara komputasi layer itu 8,29 ms" in split
    assert "lebih lama dari 4,14 ms komputasinya" in slower and "lebih lama dari" not in split
    zh = sentence(render_output("tp", {"tp": "8", "link": "network"}, locale("zh")).html)
    assert "走网络 50 GB/s 需要 4.7 毫秒，比这一层 4.14 毫秒的计算还长" in zh


def test_figure_is_accessible_and_described_in_both_languages() -> None:
    for lang, word in (("id", "blok kolom"), ("zh", "按列")):
        html = render_output("tp", {}, locale(lang)).html
        assert html.count('role="img"') == 2
        assert re.search(r'<desc id="w-tp-mlp-d">[^<]*4[^<]*NVLink', html)
        assert word in html
