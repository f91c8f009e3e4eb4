"""Widget `hardware`: the time to move S bytes over every link is S / β (one direction,
per GPU, `calc.hardware.INTERCONNECTS`), drawn as bars on a log scale, fastest first,
under a picture of the hierarchy (NVLink/NVSwitch, PCIe, InfiniBand, Ethernet)."""

from __future__ import annotations

import math
import re

import pytest

from calc.hardware import INTERCONNECTS
from widgets.figures import hardware
from widgets.framework.core import evaluate, format_value, render_output
from widgets.build.native import locale

SIZES = [float(s) for s in hardware.SIZES]


def sentence(html: str) -> str:
    return re.search(r'<p class="w-sentence">(.*?)</p>', html).group(1)


def bars(html: str) -> list[tuple[str, float]]:
    """(link, width) of each time bar, top to bottom."""
    svg = re.search(r'aria-labelledby="w-hw-time-t.*?</svg>', html, re.S).group(0)
    return [(key, float(w)) for w, key in
            re.findall(r'<rect class="w-c\d[^"]*" x="\d+" y="[\d.]+" width="([\d.]+)" height="15" data-link="([\w-]+)"/>', svg)]


@pytest.mark.parametrize("size", SIZES)
def test_time_is_size_over_bandwidth_for_every_link(size: float) -> None:
    _, v = evaluate("hardware", {"size_bytes": size})
    assert v["size_bytes"] == size
    for key, link in INTERCONNECTS.items():
        slug = key.replace("-", "_")
        assert v[f"bw_{slug}"] == link.bytes_per_s
        assert v[f"time_{slug}"] == pytest.approx(size / link.bytes_per_s, rel=1e-12)
    assert v["nvlink_over_ib"] == pytest.approx(9)  # 450 GB/s vs 50 GB/s, one direction


def test_default_is_one_gigabyte() -> None:
    _, v = evaluate("hardware", {})
    assert v["size_bytes"] == 1e9
    assert v["time_nvlink4"] == pytest.approx(1e9 / 450e9)  # 2.22 ms
    assert v["time_ib_ndr"] == pytest.approx(0.02)
    assert v["time_ethernet_100g"] == pytest.approx(0.08)


@pytest.mark.parametrize("raw", ["1e10", "10000000000", "1.0e10", 1e10, 10**10])
def test_any_spelling_of_a_size_selects_its_option(raw) -> None:
    state, v = evaluate("hardware", {"size_bytes": raw})
    assert state["size_bytes"] == "1e10" and v["size_bytes"] == 1e10


@pytest.mark.parametrize("raw", ["3e9", "abc", "", True, None])
def test_a_size_that_is_not_an_option_is_a_localized_error(raw) -> None:
    out = render_output("hardware", {"size_bytes": raw}, locale("id"))
    assert not out.ok and 'data-error="errors.choice"' in out.html and "Ukuran pesan S" in out.html


def test_the_macro_of_the_chapter_outline() -> None:
    assert format_value("hardware", "time_ib_ndr", {"size_bytes": "1e10"}, locale("id")) == "200 ms"
    assert format_value("hardware", "time_ib_ndr", {"size_bytes": "1e10"}, locale("zh")) == "200 毫秒"
    assert format_value("hardware", "nvlink_over_ib", {}, locale("id")) == "9×"


@pytest.mark.parametrize("size", SIZES)
def test_bars_follow_bandwidth_order_on_a_log_scale(size: float) -> None:
    html = render_output("hardware", {"size_bytes": size}, locale("id")).html
    drawn = bars(html)
    speeds = [INTERCONNECTS[key].bytes_per_s for key, _ in drawn]
    assert sorted(key for key, _ in drawn) == sorted(INTERCONNECTS)
    assert speeds == sorted(speeds, reverse=True)  # fastest link on top
    widths = [w for _, w in drawn]
    assert widths == sorted(widths) and len(set(widths)) == len(widths)  # slower link, longer bar
    assert all(0 < w <= hardware.BAR_W for w in widths)  # the three decades hold every bar
    per_decade = hardware.BAR_W / hardware.DECADES
    (k0, w0) = drawn[0]
    for key, w in drawn[1:]:  # a log scale: width differences are log10 of time ratios
        ratio = INTERCONNECTS[k0].bytes_per_s / INTERCONNECTS[key].bytes_per_s
        assert w - w0 == pytest.approx(per_decade * math.log10(ratio), abs=0.02)


def test_the_axis_follows_the_size_so_ticks_change_and_bars_keep_their_length() -> None:
    small = render_output("hardware", {"size_bytes": "1e3"}, locale("id")).html
    large = render_output("hardware", {"size_bytes": "1e12"}, locale("id")).html
    assert bars(small) == bars(large)
    assert ">1 ns</text>" in small and ">1 µs</text>" in small
    assert ">1 detik</text>" in large and ">1.000 detik</text>" in large


def test_the_picture_draws_the_hierarchy_with_sourced_bandwidths() -> None:
    html = render_output("hardware", {}, locale("id")).html
    tree = re.search(r'aria-labelledby="w-hw-tree-t.*?</svg>', html, re.S).group(0)
    assert tree.count('class="w-hw-gpu"') == 8 and tree.count(">NIC</text>") == 8
    assert tree.count('class="w-hw-s1"') == 8  # one NVLink per GPU to NVSwitch
    assert ">NVSwitch</text>" in tree and ">CPU</text>" in tree and "switch InfiniBand" in tree
    for text in ("450 GB/s", "63 GB/s", "50 GB/s", "12,5 GB/s", "InfiniBand NDR", "Ethernet 100 GbE"):
        assert f">{text}</text>" in tree
    note = re.findall(r'<p class="w-hw-note">(.*?)</p>', html)[0]
    assert "900 GB/s" in note and "450 GB/s" in note  # datasheets quote both directions


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize("size", SIZES)
def test_sentence_states_the_current_numbers(lang: str, size: float) -> None:
    loc = hardware.FineLocale(locale(lang))
    out = render_output("hardware", {"size_bytes": size}, locale(lang))
    text = sentence(out.html)
    for key in ("size_bytes", "time_nvlink4", "time_pcie5", "time_ib_ndr", "time_ethernet_100g", "nvlink_over_ib"):
        assert loc.format(hardware.OUTPUTS[key], out.values[key]) in text, (key, text)
    latency = {"id": "latency tetap", "zh": "固定延迟"}[lang]
    assert (latency in text) == (size <= 1e6)


def test_durations_under_a_millisecond_read_in_microseconds_and_nanoseconds() -> None:
    kb = render_output("hardware", {"size_bytes": "1e3"}, locale("id")).html
    assert re.search(r'data-out="time_nvlink4" data-value="2\.22+\d*e-09">2,22 ns<', kb)
    mb = render_output("hardware", {"size_bytes": "1e6"}, locale("zh")).html
    assert ">2.22 微秒<" in mb and ">20 微秒<" in mb
    assert "Memindahkan 1 GB satu arah butuh 2,22 ms lewat NVLink 4" in sentence(
        render_output("hardware", {}, locale("id")).html)
    assert "NVLink 的带宽是 InfiniBand 的 9×" in sentence(render_output("hardware", {}, locale("zh")).html)


def test_figure_is_accessible_and_described_in_both_languages() -> None:
    for lang, word in (("id", "satu arah"), ("zh", "单向")):
        html = render_output("hardware", {}, locale(lang)).html
        assert html.count('role="img"') == 2
        assert re.search(r'<desc id="w-hw-tree-d">[^<]*NVSwitch[^<]*450 GB/s', html)
        assert re.search(r'<desc id="w-hw-time-d">[^<]*NVLink 4 2[.,]22', html)
        assert word in html
