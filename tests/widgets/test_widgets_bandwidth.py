"""Widget `bandwidth`: the arithmetic of NVIDIA nccl-tests (doc/PERFORMANCE.md):
algbw = S / t, busbw = algbw × bus factor, the factor 2(n−1)/n for all-reduce, (n−1)/n
for all-gather, reduce-scatter and all-to-all, 1 for broadcast and reduce."""

from __future__ import annotations

import math
import re

import pytest

from calc.collectives import OPS
from widgets.figures import bandwidth
from widgets.framework.core import evaluate, format_value, render_output
from widgets.figures.hardware import FineLocale
from widgets.build.native import locale

RANKS = [2, 3, 4, 8, 16, 64, 1024]


def nccl_tests_factor(op: str, n: int) -> float:
    """The factors as PERFORMANCE.md's summary lists them (scatter and gather as in
    nccl-tests' scatter.cu and gather.cu: (n−1)/n)."""
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("broadcast", "reduce"):
        return 1.0
    return (n - 1) / n


def sentence(html: str) -> str:
    return re.search(r'<p class="w-sentence">(.*?)</p>', html).group(1)


def widths(html: str) -> dict[str, float]:
    svg = re.search(r'aria-labelledby="w-bw-bars-t.*?</svg>', html, re.S).group(0)
    return {key: float(w) for w, key in re.findall(r'width="([\d.]+)" height="\d+" data-bar="(\w+)"', svg)}


def test_defaults_of_the_chapter_outline() -> None:
    """1 GB all-reduced on 8 ranks in 10 ms: algbw 100 GB/s, busbw 175 GB/s."""
    out = render_output("bandwidth", {}, locale("id"))
    assert out.state == {"op": "all_reduce", "ranks": "8", "size_bytes": "1e9", "time_us": "10000", "link": "nvlink4"}
    v = out.values
    assert v["algbw"] == pytest.approx(100e9)
    assert v["busbw"] == pytest.approx(175e9)
    assert v["bus_factor"] == pytest.approx(1.75)
    loc = locale("id")
    assert format_value("bandwidth", "algbw", {}, loc) == "100 GB/s"
    assert format_value("bandwidth", "busbw", {}, loc) == "175 GB/s"
    assert format_value("bandwidth", "bus_factor", {}, loc) == "1,75"
    # exact, not three digits: 2·15/16 reads 1,875 (Contoh 3), not 1,88
    assert format_value("bandwidth", "bus_factor", {"ranks": "16"}, loc) == "1,875"


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("n", RANKS)
def test_busbw_is_algbw_times_the_nccl_tests_factor(op: str, n: int) -> None:
    _, v = evaluate("bandwidth", {"op": op, "ranks": str(n)})
    assert v["bus_factor"] == pytest.approx(nccl_tests_factor(op, n), rel=1e-12)
    assert v["busbw"] == pytest.approx(v["algbw"] * nccl_tests_factor(op, n), rel=1e-12)
    assert v["ranks"] == n


@pytest.mark.parametrize("size", ["1e3", "1e6", "1e9", "1e11"])
@pytest.mark.parametrize("time", ["1e-6", "5e-4", "1e-2", "2", "100"])
def test_algbw_is_size_over_time(size: str, time: str) -> None:
    """The former spellings (`time_s` in seconds) still read."""
    _, v = evaluate("bandwidth", {"size_bytes": size, "time_s": time})
    assert v["algbw"] == pytest.approx(float(size) / float(time), rel=1e-12)
    assert v["size_bytes"] == float(size) and v["time_s"] == pytest.approx(float(time), rel=1e-15)


def test_an_nccl_tests_row_typed_in_gives_its_algbw_and_busbw() -> None:
    """nccl-tests prints `8589934592 ... 47535` for an 8G all-reduce on 16 ranks (size in
    bytes, `-b 8G` = 8·2^30; time in µs): algbw = 8·2^30 B / 47535 µs = 180.7 GB/s,
    busbw = algbw · 2·15/16 = 338.8 GB/s."""
    for size in ("8G", "8589934592", "8GiB"):
        out = render_output("bandwidth", {"size_bytes": size, "time_us": "47535", "ranks": "16"}, locale("id"))
        assert out.ok and out.state["size_bytes"] == "8G" and out.state["time_us"] == "47535"
        assert out.values["algbw"] == pytest.approx(8 * 2**30 / 47535e-6, rel=1e-12)
        assert out.values["busbw"] == pytest.approx(8 * 2**30 / 47535e-6 * 2 * 15 / 16, rel=1e-12)
        assert format_value("bandwidth", "algbw", {"size_bytes": size, "time_us": "47535", "ranks": "16"},
                            locale("id")) == "180,7 GB/s"
        assert out.labels["size_bytes"] == "8,59 GB" and out.labels["time_us"] == "47,5 ms"
    # any rank count, not only the old select's
    _, v = evaluate("bandwidth", {"ranks": "24"})
    assert v["bus_factor"] == pytest.approx(2 * 23 / 24)


def test_the_macro_of_the_chapter_outline_and_numeric_spellings() -> None:
    # {{ bandwidth.busbw op=all_reduce ranks=16 time_s=0.05 }}: 1 GB / 50 ms × 2·15/16
    assert format_value("bandwidth", "busbw", {"op": "all_reduce", "ranks": "16", "time_s": "0.05"},
                        locale("id")) == "37,5 GB/s"
    out = render_output("bandwidth", {"time_s": "0.01", "size_bytes": "1000000000", "ranks": "8.0"}, locale("id"))
    assert out.state == render_output("bandwidth", {}, locale("id")).state
    for bad, key in (({"time_us": "0"}, "range"), ({"ranks": "1"}, "range"), ({"size_bytes": "2e12"}, "range"),
                     ({"op": "allreduce"}, "choice"), ({"size_bytes": "8 GHz"}, "bytes"),
                     ({"time_us": "47535 h"}, "microseconds"), ({"ranks": "8.5"}, "integer"),
                     ({"link": "pcie5"}, "choice")):
        out = render_output("bandwidth", bad, locale("zh"))
        assert not out.ok and f'data-error="errors.{key}"' in out.html, bad
    html = render_output("bandwidth", {"size_bytes": "2e12"}, locale("id")).html
    assert "harus antara 1 B dan 1 TB, bukan 2e12" in html


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize("state", [{}, {"op": "broadcast", "ranks": "1024"}, {"op": "all_gather", "ranks": "2"},
                                   {"ranks": "64", "time_s": "5e-2", "size_bytes": "1e10"},
                                   {"time_s": "1e-6", "size_bytes": "1e11"}, {"time_s": "100", "size_bytes": "1e3"}])
def test_sentence_states_the_current_numbers(lang: str, state: dict) -> None:
    loc = FineLocale(locale(lang))
    out = render_output("bandwidth", state, locale(lang))
    text = sentence(out.html)
    for key in ("algbw", "busbw", "size_bytes", "time_s", "ranks"):
        assert loc.format(bandwidth.OUTPUTS[key], out.values[key]) in text, (key, text)
    factor = loc.exact(out.values["bus_factor"])
    assert f"{loc.format('bytes_per_s', out.values['algbw'])} × {factor} = {loc.format('bytes_per_s', out.values['busbw'])}" in text


def test_sentence_explains_busbw_and_reads_it_against_the_right_link() -> None:
    id_default = sentence(render_output("bandwidth", {}, locale("id")).html)
    assert "Pada 8 rank, all-reduce sebesar 1 GB selesai dalam 10 ms, jadi algbw = S / T = 100 GB/s." in id_default
    assert "adalah 2(n − 1)/n = 1,75, jadi busbw = 100 GB/s × 1,75 = 175 GB/s" in id_default
    assert "Kenapa busbw?" in id_default and "tidak bergantung pada n" in id_default
    assert "hambatannya adalah NVLink: busbw ini 38,9% dari line rate-nya (450 GB/s)" in id_default
    zh_default = sentence(render_output("bandwidth", {}, locale("zh")).html)
    assert "algbw = S / T = 100 GB/s。n = 8 时 all-reduce 的总线系数为 2(n − 1)/n = 1.75" in zh_default
    assert "与 n 无关" in zh_default and "。 " not in zh_default  # no space after a Chinese full stop
    nodes = sentence(render_output("bandwidth", {"ranks": "64", "time_s": "5e-2", "size_bytes": "1e10"}, locale("id")).html)
    assert "n &gt; 8" in nodes and "7,88× line rate satu adapter InfiniBand NDR (50 GB/s)" in nodes
    over = sentence(render_output("bandwidth", {"time_s": "1e-6"}, locale("zh")).html)
    assert "超过了 NVLink 4 的线速（450 GB/s）" in over and "torch.cuda.synchronize" in over
    root = sentence(render_output("bandwidth", {"op": "reduce"}, locale("id")).html)
    assert "adalah 1, jadi busbw = 100 GB/s × 1 = 100 GB/s" in root and "root" in root


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("n", [2, 8, 1024])
def test_bars_are_on_a_log_scale_with_both_links_on_it(op: str, n: int) -> None:
    out = render_output("bandwidth", {"op": op, "ranks": str(n)}, locale("id"))
    w = widths(out.html)
    v = out.values
    lo, hi = bandwidth._decades(v)
    per_decade = bandwidth.AXIS_W / (hi - lo)
    assert w["busbw"] - w["algbw"] == pytest.approx(per_decade * math.log10(v["bus_factor"]), abs=0.02)
    assert w["algbw"] > 0 and w["busbw"] > 0
    for key in ("nvlink_bytes_per_s", "ib_bytes_per_s"):
        x = float(re.search(rf'<line class="w-bw-ref[^"]*" x1="([\d.]+)"[^>]*data-link="{key}"', out.html).group(1))
        assert x == pytest.approx(bandwidth.AXIS_X + per_decade * (math.log10(v[key]) - lo), abs=0.01)
        assert bandwidth.AXIS_X < x <= bandwidth.AXIS_X + bandwidth.AXIS_W


def test_figure_is_accessible_and_its_legend_names_the_factor() -> None:
    for lang, text in (("id", "busbw = algbw × 1,75 (faktor 2(n − 1)/n)"), ("zh", "busbw = algbw × 1.75（系数 2(n − 1)/n）")):
        html = render_output("bandwidth", {}, locale(lang)).html
        assert html.count('role="img"') == 1
        assert re.search(r'<desc id="w-bw-bars-d">[^<]*100 GB/s[^<]*175 GB/s[^<]*450 GB/s[^<]*50 GB/s', html)
        assert text in html


# -- the α–β panel -----------------------------------------------------------------------

def model_panel(html: str) -> dict:
    curves = {alg: points for points, alg in re.findall(r'points="([^"]+)" data-curve="(\w+)"', html)}
    point = re.search(r'cx="([\d.]+)" cy="([\d.]+)" r="4" data-point="measured"', html)
    cross = float(re.search(r'x1="([\d.]+)"[^>]*data-line="crossover_bytes"', html).group(1))
    floor = float(re.search(r'y1="([\d.]+)"[^>]*data-line="latency_floor_s"', html).group(1))
    return {"curves": curves, "point": (float(point.group(1)), float(point.group(2))), "cross": cross, "floor": floor}


def test_alpha_beta_outputs_follow_calc_latency() -> None:
    """8 GPUs on NVLink: α = 0.6 µs (NCCL's LL step), β = 450 GB/s; a ring all-reduce of
    1 GB takes 14 α + 1.75 GB / 450 GB/s; the ring's S* is n·α·β = 2.16 MB."""
    from calc import latency as lat

    _, v = evaluate("bandwidth", {})
    assert v["alpha_s"] == 0.6e-6 and v["link_bytes_per_s"] == 450e9
    assert v["ring_s"] == pytest.approx(14 * 0.6e-6 + 1.75e9 / 450e9, rel=1e-12)
    assert v["ring_crossover_bytes"] == pytest.approx(2.16e6) == v["crossover_bytes"]
    assert v["latency_floor_s"] == pytest.approx(3 * 0.6e-6)  # recursive doubling, log2 8 steps
    assert v["model_s"] == v["rabenseifner_s"] == min(v[k] for k in ("ring_s", "recursive_doubling_s",
                                                                     "rabenseifner_s", "tree_s"))
    assert v["measured_over_model"] == pytest.approx(1e-2 / v["model_s"])
    assert v["nvls_s"] == lat.nvls_all_reduce(ranks=8, size_bytes=1e9, bytes_per_s=450e9).time_s
    _, ib = evaluate("bandwidth", {"link": "ib-ndr", "ranks": "64", "size_bytes": "25M"})
    assert ib["ring_crossover_bytes"] == pytest.approx(64 * 2.7e-6 * 50e9)
    assert ib["ring_latency_fraction"] == pytest.approx(
        126 * 2.7e-6 / (126 * 2.7e-6 + 2 * 63 / 64 * 25 * 2**20 / 50e9))


@pytest.mark.parametrize("state", [{}, {"op": "broadcast", "ranks": "1024"}, {"size_bytes": "8", "time_us": "20"},
                                   {"op": "all_to_all", "link": "ib-ndr", "ranks": "64", "size_bytes": "1e12"},
                                   {"size_bytes": "8G", "time_us": "47535", "ranks": "16"}])
def test_panel_draws_each_algorithm_and_the_measured_point_on_log_axes(state: dict) -> None:
    out = render_output("bandwidth", state, locale("id"))
    panel = model_panel(out.html)
    full = evaluate("bandwidth", state)[0]
    names = [alg for alg, _, _ in bandwidth.model_curves(full, out.values)]
    assert list(panel["curves"]) == names
    x_lo, x_hi, y_lo, y_hi = bandwidth._model_decades(full, out.values, bandwidth.model_curves(full, out.values))

    def px(s: float) -> float:
        return bandwidth.AXIS_X + bandwidth.AXIS_W * (math.log10(s) - x_lo) / (x_hi - x_lo)

    def py(t: float) -> float:
        return bandwidth.PLOT_Y1 - (bandwidth.PLOT_Y1 - bandwidth.PLOT_Y0) * (math.log10(t) - y_lo) / (y_hi - y_lo)

    assert panel["point"] == (pytest.approx(px(out.values["size_bytes"]), abs=0.006),
                              pytest.approx(py(out.values["time_s"]), abs=0.006))
    assert panel["cross"] == pytest.approx(px(out.values["crossover_bytes"]), abs=0.006)
    assert panel["floor"] == pytest.approx(py(out.values["latency_floor_s"]), abs=0.006)
    for points in panel["curves"].values():  # every curve inside the plot, time rising with size
        ys = [float(p.split(",")[1]) for p in points.split()]
        assert all(bandwidth.PLOT_Y0 - 0.01 <= y <= bandwidth.PLOT_Y1 + 0.01 for y in ys)
        assert all(b <= a + 0.01 for a, b in zip(ys, ys[1:]))


def test_nvls_is_drawn_only_where_nccl_runs_it() -> None:
    assert 'data-curve="nvls"' in render_output("bandwidth", {}, locale("id")).html
    for state in ({"ranks": "16"}, {"link": "ib-ndr"}, {"op": "all_gather"}):
        assert 'data-curve="nvls"' not in render_output("bandwidth", state, locale("id")).html


def test_model_sentence_names_the_winner_the_floor_and_the_crossover() -> None:
    tiny = sentence(render_output("bandwidth", {"size_bytes": "8", "time_us": "20"}, locale("id")).html)
    assert "tercepat untuk S ini adalah recursive doubling" in tiny
    assert "paling sedikit 1,8 µs" in tiny and "S* = 2,16 MB" in tiny
    big = sentence(render_output("bandwidth", {}, locale("zh")).html)
    assert "“Rabenseifner（reduce-scatter + all-gather）”是最快的 all-reduce 算法" in big and "NVLink SHARP" in big
    # a name ending in Latin (Bruck) is quoted, so it never runs straight into the Chinese after it
    a2a = sentence(render_output("bandwidth", {"op": "all_to_all", "size_bytes": "8", "time_us": "20"}, locale("zh")).html)
    assert "“Bruck”是最快的 all-to-all 算法" in a2a and "“两两交换（pairwise）”算法花在" in a2a


@pytest.mark.parametrize(("lang", "tiny"), [("id", "<\u00a00,1%"), ("zh", "<\u00a00.1%")])
def test_a_latency_share_that_rounds_to_zero_is_not_printed_as_zero(lang: str, tiny: str) -> None:
    """1 TB all-reduced in one node: the ring's latency is 2 × 10⁻⁶ of its time, not 0."""
    state = {"size_bytes": "1e12", "time_us": "1e7"}
    _, v = evaluate("bandwidth", state)
    assert 0 < v["ring_latency_fraction"] < 5e-6
    assert format_value("bandwidth", "ring_latency_fraction", state, locale(lang)) == tiny
    html = render_output("bandwidth", state, locale(lang)).html
    shown = tiny.replace("<", "&lt;")  # escaped in the page
    assert f'data-out="ring_latency_fraction" data-value="{v["ring_latency_fraction"]!r}">{shown}<' in html
    assert not re.search(r">-?0[.,]0%<", html)  # no share anywhere in the widget reads as a false zero


def test_busbw_against_the_datasheet_figure_and_a_nodes_adapters() -> None:
    """8 H100 in 10 ms: busbw 175 GB/s is 38.9% of NVLink's 450 GB/s each way but only
    19.4% of the datasheet's 900 GB/s; 16 ranks on two DGX H100 against 8 × 50 GB/s."""
    _, v = evaluate("bandwidth", {})
    assert v["nvlink_both_bytes_per_s"] == pytest.approx(900e9)
    assert v["busbw_over_nvlink_both"] == pytest.approx(175 / 900)
    _, v = evaluate("bandwidth", {"ranks": "16"})
    assert v["node_ib_bytes_per_s"] == pytest.approx(400e9)
    assert v["busbw_over_node_ib"] == pytest.approx(v["busbw"] / 400e9)
