"""Widget `hardware`: the interconnect hierarchy and the time to move S bytes over it.

Control: the message size S, one radio button per power of ten (1 kB … 1 TB). The
figure draws one pod: a node of 8 GPUs joined by NVLink through NVSwitch, PCIe from
each GPU to its NIC and to the CPU, InfiniBand from the NICs to the other nodes of
the pod, Ethernet from the pod to the other pods; each tier is labelled with its
bandwidth (per GPU, one direction, `calc.hardware.INTERCONNECTS`). Below it, the time
T = S / β to move S over every link in `INTERCONNECTS` (`calc.collectives.
transfer_seconds`), fastest link first, as horizontal bars on a log scale whose three
decades follow S, so the bars keep their lengths: in this bandwidth-only model every
time is proportional to S and the ratios between links never change.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from calc.collectives import transfer_seconds
from calc.hardware import GPUS_PER_NODE, INTERCONNECTS

from ..framework.html import esc, num, stat_cards, svg
from ..framework.locale import Locale
from ..framework.spec import NumberChoice
from ._common import all_values_table, output_label

NAME = "hardware"


class FineLocale(Locale):
    """The page's Locale with a tick format for log time axes."""

    def __init__(self, base: Locale) -> None:  # noqa: D107 - a copy of `base`
        self.__dict__.update(base.__dict__)

    def time_tick(self, value: float) -> str:
        """A power of ten of seconds for an axis: 10 ns, 1 ms, 100 detik."""
        if value >= 1:
            return self.t("units.second", value=self.integer(value))
        return self.seconds(value)


def join_sentences(*parts: str) -> str:
    """Sentences in a row: a space after `.`, none after a full-width `。` (Chinese)."""
    out = ""
    for part in parts:
        out += part if not out or out.endswith(("。", "！", "？", "：")) else " " + part
    return out


# Message sizes S, decimal SI (1 kB = 1e3 bytes): one radio button per power of ten.
SIZES = {f"1e{k}": label for k, label in zip(range(3, 13), (
    "1 kB", "10 kB", "100 kB", "1 MB", "10 MB", "100 MB", "1 GB", "10 GB", "100 GB", "1 TB"))}
SMALL_BYTES = 1e6  # at or below 1 MB a transfer's fixed latency (microseconds) dominates

CONTROLS = (
    NumberChoice("size_bytes", tuple(SIZES), "1e9", radio=True, labels=SIZES),
)

# Every link, fastest first (the order of the bars); output keys use `_` for `-`.
LINKS = tuple(sorted(INTERCONNECTS, key=lambda key: -INTERCONNECTS[key].bytes_per_s))
SLUG = {key: key.replace("-", "_") for key in LINKS}
TIER = {"nvlink4": 1, "nvlink3": 1, "pcie5": 2, "pcie4": 2, "ib-ndr": 3, "ib-hdr": 3, "ethernet-100g": 4}
PREVIOUS = ("nvlink3", "pcie4", "ib-hdr")  # the A100 generation, drawn pale
DRAWN = ("nvlink4", "pcie5", "ib-ndr", "ethernet-100g")  # the tiers of the picture (H100)

OUTPUTS: dict[str, str] = {
    "size_bytes": "bytes",
    **{f"time_{SLUG[key]}": "seconds" for key in LINKS},
    **{f"bw_{SLUG[key]}": "bytes_per_s" for key in LINKS},
    "nvlink_over_ib": "ratio",
}


def compute(state: Mapping[str, Any]) -> dict[str, float]:
    """All outputs for a validated state, in SI units (seconds, bytes/s)."""
    size = float(state["size_bytes"])
    values: dict[str, float] = {"size_bytes": size}
    for key in LINKS:
        values[f"time_{SLUG[key]}"] = transfer_seconds(size, INTERCONNECTS[key].bytes_per_s)
    for key in LINKS:
        values[f"bw_{SLUG[key]}"] = INTERCONNECTS[key].bytes_per_s
    values["nvlink_over_ib"] = INTERCONNECTS["nvlink4"].bytes_per_s / INTERCONNECTS["ib-ndr"].bytes_per_s
    return values


def render(state: Mapping[str, Any], v: Mapping[str, float], loc: Locale) -> str:
    """Stat cards, the hierarchy and the time bars, the sentence, the table of values."""
    loc = FineLocale(loc)
    f = {key: loc.format(kind, v[key]) for key, kind in OUTPUTS.items()}
    cards = stat_cards([(output_label(NAME, k, loc), k, v[k], OUTPUTS[k]) for k in
                        ("time_nvlink4", "time_ib_ndr", "time_ethernet_100g", "nvlink_over_ib")], loc)
    sentence = loc.h("hardware.sentence", size=f["size_bytes"], nvlink4=f["time_nvlink4"],
                     pcie5=f["time_pcie5"], ib_ndr=f["time_ib_ndr"], ethernet=f["time_ethernet_100g"],
                     ratio=f["nvlink_over_ib"])
    if v["size_bytes"] <= SMALL_BYTES:
        sentence = join_sentences(sentence, loc.h("hardware.sentence_small"))
    return (f'{cards}{figure(v, f, loc)}<p class="w-sentence">{sentence}</p>'
            f'{all_values_table(NAME, OUTPUTS, v, loc)}')


# -- the figure -------------------------------------------------------------------------
# Two SVGs 400 units wide (legible on a 375 px phone); headings, legend and notes are HTML.
WIDTH = 400
SLOT = 26  # horizontal pitch of the GPUs in the node
GPU_X0 = 16  # left edge of the first GPU slot
LABEL_X = 280  # the tier labels' column
TIER_Y = {1: 38, 2: 76, 3: 128, 4: 194}  # the vertical centre of each tier's label


def _gpu_x(i: int) -> float:
    return GPU_X0 + SLOT * i + SLOT / 2


def _box(x: float, y: float, w: float, h: float, cls: str, text: str = "", text_cls: str = "w-hw-in") -> str:
    out = f'<rect class="{cls}" x="{num(x)}" y="{num(y)}" width="{num(w)}" height="{num(h)}" rx="2"/>'
    if text:
        out += (f'<text class="{text_cls}" x="{num(x + w / 2)}" y="{num(y + h / 2 + 3.5)}"'
                f' text-anchor="middle">{esc(text)}</text>')
    return out


def _line(x1: float, y1: float, x2: float, y2: float, tier: int) -> str:
    return f'<line class="w-hw-s{tier}" x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}"/>'


def _tier_label(tier: int, key: str, f: Mapping[str, str], loc: Locale) -> str:
    """The right-hand column: the link's name, its bandwidth, where it sits."""
    y = TIER_Y[tier]
    return (f'<rect class="w-c{tier}" x="{LABEL_X - 8}" y="{y - 17}" width="3" height="34" rx="1"/>'
            f'<text class="w-fig-value" x="{LABEL_X}" y="{y - 6}">{esc(loc.t(f"hardware.links.{SLUG[key]}"))}</text>'
            f'<text class="w-fig-note" x="{LABEL_X}" y="{y + 7}">{esc(f["bw_" + SLUG[key]])}</text>'
            f'<text class="w-fig-tick" x="{LABEL_X}" y="{y + 19}">{esc(loc.t(f"hardware.figure.where_{tier}"))}</text>')


def _hierarchy_svg(f: Mapping[str, str], loc: Locale, title: str, desc: str) -> str:
    """One pod: the node (NVSwitch, 8 GPUs, NICs, CPU), the InfiniBand switch with the
    pod's other nodes, the Ethernet network with the other pods."""
    L = lambda key: loc.t(f"hardware.figure.{key}")  # noqa: E731
    parts = [
        # the pod (dashed) and the node
        '<rect class="w-hw-pod" x="2" y="2" width="266" height="170" rx="6"/>',
        f'<text class="w-fig-tick" x="262" y="166" text-anchor="end">{esc(L("pod"))}</text>',
        '<rect class="w-hw-node" x="8" y="6" width="254" height="102" rx="5"/>',
        f'<text class="w-fig-tick" x="14" y="17">{esc(loc.t("hardware.figure.node", gpus=loc.integer(GPUS_PER_NODE)))}</text>',
        _box(GPU_X0, 21, SLOT * GPUS_PER_NODE, 12, "w-c1", "NVSwitch", "w-hw-in w-on-bar"),
        _box(226, 58, 30, 30, "w-hw-box", L("cpu")),
        _line(_gpu_x(0), 74, 226, 74, 2),  # the PCIe tree to the CPU
    ]
    for i in range(GPUS_PER_NODE):
        x = _gpu_x(i)
        parts += [
            _line(x, 33, x, 45, 1),  # NVLink to NVSwitch
            _line(x, 67, x, 86, 2),  # PCIe to the NIC
            _line(x, 98, x, 122, 3),  # InfiniBand to the leaf switch
            _box(x - 11, 45, 22, 22, "w-hw-gpu", str(i)),
            _box(x - 11, 86, 22, 12, "w-hw-box", L("nic"), "w-hw-in w-hw-small"),
        ]
    parts.append(_box(GPU_X0, 122, 240, 12, "w-c3", L("ib_switch"), "w-hw-in w-on-bar"))
    for x in (40, 100, 160):  # the pod's other nodes, on the same switch
        parts.append(_line(x + 22, 134, x + 22, 144, 3))
        parts.append(_box(x, 144, 44, 14, "w-hw-ghost", L("other_node"), "w-hw-in w-hw-small"))
    parts.append('<text class="w-fig-tick" x="214" y="155">…</text>')
    # Ethernet: from the pod to the data-center network and the other pods
    parts += [
        _line(135, 172, 135, 188, 4),
        _box(GPU_X0, 188, 240, 12, "w-c4", L("ethernet"), "w-hw-in w-on-bar"),
    ]
    for x in (40, 100, 160):
        parts.append(_line(x + 22, 200, x + 22, 210, 4))
        parts.append(_box(x, 210, 44, 14, "w-hw-ghost", L("other_pod"), "w-hw-in w-hw-small"))
    parts.append('<text class="w-fig-tick" x="214" y="221">…</text>')
    parts += [_tier_label(TIER[key], key, f, loc) for key in DRAWN]
    return svg("w-hw-tree", WIDTH, 228, "".join(parts), title, desc)


BAR_X, BAR_W = 64, 264  # the time axis: three decades from BAR_X to BAR_X + BAR_W
DECADES = 3
ROW = 21


def _axis(v: Mapping[str, float]) -> int:
    """The exponent of the axis' left end: the power of ten at or below the fastest
    link's time (the slowest is 36× longer, so three decades always hold every bar)."""
    fastest = min(v[f"time_{SLUG[key]}"] for key in LINKS)
    return math.floor(math.log10(fastest))


def _time_svg(v: Mapping[str, float], f: Mapping[str, str], loc: FineLocale, title: str, desc: str) -> str:
    """One bar per link, fastest first, length log10(t / 10^lo) over three decades."""
    lo = _axis(v)
    height = ROW * len(LINKS)
    parts = []
    for k in range(DECADES + 1):
        x = BAR_X + BAR_W * k / DECADES
        tick = float(f"1e{lo + k}")
        parts.append(f'<line class="w-grid" x1="{num(x)}" y1="0" x2="{num(x)}" y2="{height + 2}"/>'
                     f'<text class="w-fig-tick" x="{num(x)}" y="{height + 15}" text-anchor="middle">{esc(loc.time_tick(tick))}</text>')
    for row, key in enumerate(LINKS):
        slug = SLUG[key]
        y = 3 + row * ROW
        width = BAR_W * (math.log10(v[f"time_{slug}"]) - lo) / DECADES
        cls = f"w-c{TIER[key]}" + (" w-hw-old" if key in PREVIOUS else "")
        parts.append(
            f'<text class="w-fig-note" x="{BAR_X - 6}" y="{y + 12}" text-anchor="end">{esc(loc.t(f"hardware.short.{slug}"))}</text>'
            f'<rect class="{cls}" x="{BAR_X}" y="{y}" width="{num(width)}" height="15" data-link="{key}"/>'
            f'<text class="w-fig-value" x="{num(BAR_X + width + 5)}" y="{y + 12}">{esc(f["time_" + slug])}</text>'
        )
    parts.append(f'<line class="w-grid" x1="{BAR_X}" y1="0" x2="{BAR_X}" y2="{height + 2}"/>')
    return svg("w-hw-time", WIDTH, height + 20, "".join(parts), title, desc)


def figure(v: Mapping[str, float], f: Mapping[str, str], loc: FineLocale) -> str:
    L = lambda key, **kw: loc.t(f"hardware.figure.{key}", **kw)  # noqa: E731
    nvlink = INTERCONNECTS["nvlink4"].bytes_per_s
    heading = L("tree", gpus=loc.integer(GPUS_PER_NODE))
    tree_desc = L("tree_desc", gpus=loc.integer(GPUS_PER_NODE), nvlink4=f["bw_nvlink4"], pcie5=f["bw_pcie5"],
                  ib_ndr=f["bw_ib_ndr"], ethernet=f["bw_ethernet_100g"])
    directions = L("directions", both=loc.format("bytes_per_s", 2 * nvlink),  # datasheets add both directions
                   one_way=f["bw_nvlink4"])
    time_heading = L("time", size=f["size_bytes"])
    time_desc = L("time_desc", size=f["size_bytes"], **{SLUG[key]: f["time_" + SLUG[key]] for key in LINKS})
    legend = "".join(
        f'<li><span class="w-swatch w-c{tier}"></span>{esc(L(f"tier_{tier}"))}</li>' for tier in (1, 2, 3, 4)
    ) + f'<li><span class="w-swatch w-c1 w-hw-old"></span>{esc(L("previous"))}</li>'
    return (
        f'<figure class="w-fig w-hw-fig">'
        f'<figcaption class="w-fig-heading">{esc(heading)}</figcaption>'
        f'{_hierarchy_svg(f, loc, heading, tree_desc)}'
        f'<p class="w-hw-note">{esc(directions)}</p>'
        f'<p class="w-fig-heading">{esc(time_heading)}</p>'
        f'{_time_svg(v, f, loc, time_heading, time_desc)}'
        f'<ul class="w-legend w-hw-legend">{legend}</ul>'
        f'<p class="w-hw-note">{esc(L("time_note"))}</p></figure>'
    )
