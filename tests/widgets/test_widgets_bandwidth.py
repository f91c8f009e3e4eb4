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
    state, v = evaluate("bandwidth", {})
    assert state == {"op": "all_reduce", "ranks": "8", "size_bytes": "1e9", "time_s": "1e-2"}
    assert v["algbw"] == pytest.approx(100e9)
    assert v["busbw"] == pytest.approx(175e9)
    assert v["bus_factor"] == pytest.approx(1.75)
    loc = locale("id")
    assert format_value("bandwidth", "algbw", {}, loc) == "100 GB/s"
    assert format_value("bandwidth", "busbw", {}, loc) == "175 GB/s"
    assert format_value("bandwidth", "bus_factor", {}, loc) == "1,75×"


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
    _, v = evaluate("bandwidth", {"size_bytes": size, "time_s": time})
    assert v["algbw"] == pytest.approx(float(size) / float(time), rel=1e-12)
    assert (v["size_bytes"], v["time_s"]) == (float(size), float(time))


def test_the_macro_of_the_chapter_outline_and_numeric_spellings() -> None:
    # {{ bandwidth.busbw op=all_reduce ranks=16 time_s=0.05 }}: 1 GB / 50 ms × 2·15/16
    assert format_value("bandwidth", "busbw", {"op": "all_reduce", "ranks": "16", "time_s": "0.05"},
                        locale("id")) == "37,5 GB/s"
    state, _ = evaluate("bandwidth", {"time_s": "0.01", "size_bytes": "1000000000", "ranks": "8.0"})
    assert state == {"op": "all_reduce", "ranks": "8", "size_bytes": "1e9", "time_s": "1e-2"}
    for bad in ({"time_s": "0.03"}, {"ranks": "9"}, {"size_bytes": "1e12"}, {"op": "allreduce"}):
        out = render_output("bandwidth", bad, locale("zh"))
        assert not out.ok and 'data-error="errors.choice"' in out.html


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
    factor = loc.sig(out.values["bus_factor"])
    assert f"{loc.format('bytes_per_s', out.values['algbw'])} × {factor} = {loc.format('bytes_per_s', out.values['busbw'])}" in text


def test_sentence_explains_busbw_and_reads_it_against_the_right_link() -> None:
    id_default = sentence(render_output("bandwidth", {}, locale("id")).html)
    assert "Pada 8 rank, all-reduce sebesar 1 GB selesai dalam 10 ms, jadi algbw = S / t = 100 GB/s." in id_default
    assert "adalah 2(n − 1)/n = 1,75, jadi busbw = 100 GB/s × 1,75 = 175 GB/s" in id_default
    assert "Kenapa busbw?" in id_default and "tidak bergantung pada n" in id_default
    assert "hambatannya adalah NVLink: busbw ini 38,9% dari line rate-nya (450 GB/s)" in id_default
    zh_default = sentence(render_output("bandwidth", {}, locale("zh")).html)
    assert "algbw = S / t = 100 GB/s。n = 8 时 all-reduce 的 bus factor 为 2(n − 1)/n = 1.75" in zh_default
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
