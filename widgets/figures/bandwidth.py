"""Widget `bandwidth`: the benchmark arithmetic of NVIDIA's nccl-tests.

Controls: the collective, the number of ranks n, the message size S and the measured
time t. Outputs (nccl-tests, doc/PERFORMANCE.md): the algorithm bandwidth
algbw = S / t and the bus bandwidth busbw = algbw × factor, the factor being 2(n−1)/n
for all-reduce, (n−1)/n for all-gather, reduce-scatter and all-to-all (and scatter,
gather), 1 for broadcast and reduce: `calc.collectives.algbw`, `busbw`, `bus_factor`.
busbw is the rate each GPU's own link had to sustain, independent of n, so it is the
number to set against the hardware's peak. The figure draws algbw and busbw as bars on
a log scale with reference lines at NVLink 4 and InfiniBand NDR (`calc.hardware`).
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from calc import collectives as coll
from calc.hardware import GPUS_PER_NODE, INTERCONNECTS

from ..framework.html import esc, num, stat_cards, svg
from ..framework.locale import Locale
from ..framework.spec import Choice, NumberChoice
from ._common import all_values_table, output_label
from .hardware import FineLocale, join_sentences

NAME = "bandwidth"
NVLINK = INTERCONNECTS["nvlink4"]  # the fastest link of a GPU (inside a node)
IB = INTERCONNECTS["ib-ndr"]  # one 400 Gb/s adapter per GPU (between nodes)

# Message sizes: powers of ten, 1 kB … 100 GB; times: 1-2-5 steps, 1 µs … 100 s.
SIZES = {f"1e{k}": label for k, label in zip(range(3, 12), (
    "1 kB", "10 kB", "100 kB", "1 MB", "10 MB", "100 MB", "1 GB", "10 GB", "100 GB"))}
TIMES = tuple(f"{m}e{k}" if k < 0 else str(m * 10**k) for k in range(-6, 2) for m in (1, 2, 5)) + ("100",)
RANKS = ("2", "3", "4", "5", "6", "7", "8", "16", "32", "64", "128", "256", "512", "1024")
# The factor as nccl-tests writes it (calc.collectives.bus_factor computes it).
FACTOR_TEXT = {"all_reduce": "2(n − 1)/n", "broadcast": "1", "reduce": "1"}
ROOT_OPS = ("broadcast", "reduce")  # factor 1: all data leaves or reaches one root

CONTROLS = (
    Choice("op", coll.OPS, "all_reduce"),
    NumberChoice("ranks", RANKS, "8"),
    NumberChoice("size_bytes", tuple(SIZES), "1e9", labels=SIZES),
    NumberChoice("time_s", TIMES, "1e-2"),
)

OUTPUTS: dict[str, str] = {
    "algbw": "bytes_per_s",
    "busbw": "bytes_per_s",
    "bus_factor": "ratio",
    "busbw_over_nvlink": "fraction",
    "busbw_over_ib": "ratio",
    "size_bytes": "bytes",
    "time_s": "seconds",
    "ranks": "integer",
    "nvlink_bytes_per_s": "bytes_per_s",
    "ib_bytes_per_s": "bytes_per_s",
}


def compute(state: Mapping[str, Any]) -> dict[str, float]:
    """All outputs for a validated state, in SI units (bytes, seconds, bytes/s)."""
    op, n = state["op"], int(state["ranks"])
    size, time = float(state["size_bytes"]), float(state["time_s"])
    bus = coll.busbw(op, ranks=n, size_bytes=size, time_s=time)
    return {
        "algbw": coll.algbw(size, time),
        "busbw": bus,
        "bus_factor": coll.bus_factor(op, n),
        "busbw_over_nvlink": bus / NVLINK.bytes_per_s,
        "busbw_over_ib": bus / IB.bytes_per_s,
        "size_bytes": size,
        "time_s": time,
        "ranks": n,
        "nvlink_bytes_per_s": NVLINK.bytes_per_s,
        "ib_bytes_per_s": IB.bytes_per_s,
    }


def regime(v: Mapping[str, float]) -> str:
    """Which peak busbw is to be read against. Above NVLink's line rate, the fastest
    link a GPU has, it measures no wire: a timer stopped too early, or a reduction
    done in the switches (NVLink SHARP; nccl-tests issue #212). Otherwise, on one node
    (n ≤ 8) the bottleneck is NVLink; across nodes it is the network, one InfiniBand
    adapter per GPU, and NCCL runs a ring over each adapter of the node, so busbw can
    reach the adapters' sum (nccl-tests issues #29, #290: 46–48 GB/s per NDR adapter)."""
    if v["busbw"] > v["nvlink_bytes_per_s"]:
        return "over"
    return "node" if v["ranks"] <= GPUS_PER_NODE else "nodes"


def render(state: Mapping[str, Any], v: Mapping[str, float], loc: Locale) -> str:
    """Stat cards, the bars against the links, the sentences, the table of values."""
    loc = FineLocale(loc)
    op = state["op"]
    f = {key: loc.format(kind, v[key]) for key, kind in OUTPUTS.items()}
    op_name = loc.t(f"bandwidth.controls.op.options.{op}")
    formula = FACTOR_TEXT.get(op, "(n − 1)/n")
    cards = stat_cards([(output_label(NAME, k, loc), k, v[k], OUTPUTS[k]) for k in
                        ("algbw", "busbw", "bus_factor", "busbw_over_nvlink")], loc)
    factor = loc.sig(v["bus_factor"])  # a plain number: "× 1,75", not "× 1,75×"
    common = dict(op=op_name, ranks=f["ranks"], size=f["size_bytes"], time=f["time_s"], algbw=f["algbw"],
                  busbw=f["busbw"], factor=factor, formula=formula,
                  factor_eq=factor if op in ROOT_OPS else f"{formula} = {factor}",
                  nvlink=f["nvlink_bytes_per_s"], ib=f["ib_bytes_per_s"], pct_nvlink=f["busbw_over_nvlink"],
                  over_ib=f["busbw_over_ib"], gpus=loc.integer(GPUS_PER_NODE))
    sentence = join_sentences(
        loc.h("bandwidth.sentence", **common),
        loc.h("bandwidth.why_root" if op in ROOT_OPS else "bandwidth.why", **common),
        loc.h(f"bandwidth.regime_{regime(v)}", **common),
    )
    return (f'{cards}{figure(v, f, formula, loc)}<p class="w-sentence">{sentence}</p>'
            f'{all_values_table(NAME, OUTPUTS, v, loc)}')


# -- the figure -------------------------------------------------------------------------
# One SVG 400 units wide: algbw and busbw as bars on a log axis of bytes/s, the links'
# peaks as dashed vertical lines; heading, legend and note are HTML.
WIDTH = 400
AXIS_X, AXIS_W = 52, 320
BAR_Y = (30, 58)
BAR_H = 20
AXIS_Y = 86
MIN_TICK_GAP = 56  # units between labelled ticks


def _decades(v: Mapping[str, float]) -> tuple[int, int]:
    """The axis' powers of ten: every bar and both links inside, at least two decades."""
    values = (v["algbw"], v["busbw"], v["ib_bytes_per_s"], v["nvlink_bytes_per_s"])
    lo = math.floor(math.log10(min(values)) - 0.15)  # the shortest bar stays visible
    hi = max(math.ceil(math.log10(max(values))), lo + 2)
    return lo, hi


def _x(value: float, lo: int, hi: int) -> float:
    return AXIS_X + AXIS_W * (math.log10(value) - lo) / (hi - lo)


def _bars_svg(v: Mapping[str, float], f: Mapping[str, str], loc: Locale, title: str, desc: str) -> str:
    lo, hi = _decades(v)
    per_decade = AXIS_W / (hi - lo)
    every = max(1, math.ceil(MIN_TICK_GAP / per_decade))
    parts = []
    for k in range(lo, hi + 1):
        x = _x(float(f"1e{k}"), lo, hi)
        parts.append(f'<line class="w-grid" x1="{num(x)}" y1="26" x2="{num(x)}" y2="{AXIS_Y}"/>')
        if (k - lo) % every == 0:
            parts.append(f'<text class="w-fig-tick" x="{num(x)}" y="{AXIS_Y + 13}" text-anchor="middle">'
                         f'{esc(loc.format("bytes_per_s", float(f"1e{k}")))}</text>')
    for key, y, cls in (("algbw", BAR_Y[0], "w-c5"), ("busbw", BAR_Y[1], "w-c6")):
        end = _x(v[key], lo, hi)
        inside = end - AXIS_X > 140  # a long bar carries its value; a short one is followed by it
        parts.append(
            f'<text class="w-fig-note" x="{AXIS_X - 6}" y="{y + 14}" text-anchor="end">{key}</text>'
            f'<rect class="{cls}" x="{AXIS_X}" y="{y}" width="{num(end - AXIS_X)}" height="{BAR_H}" data-bar="{key}"/>'
            f'<text class="w-fig-value {"w-on-bar" if inside else "w-bw-halo"}" x="{num(end - 5 if inside else end + 5)}"'
            f' y="{y + 14}" text-anchor="{"end" if inside else "start"}">{esc(f[key])}</text>'
        )
    # the links' peaks: NVLink's label on the top row, InfiniBand's on the second
    for key, top, cls, link in (("nvlink_bytes_per_s", 10, "w-bw-nvlink", "nvlink4"),
                                ("ib_bytes_per_s", 22, "w-bw-ib", "ib_ndr")):
        x = _x(v[key], lo, hi)
        name = loc.t(f"hardware.short.{link}")
        right = x + 110 > WIDTH
        parts.append(
            f'<line class="w-bw-ref {cls}" x1="{num(x)}" y1="{top + 3}" x2="{num(x)}" y2="{AXIS_Y}" data-link="{key}"/>'
            f'<text class="w-bw-label {cls}" x="{num(x - 3 if right else x + 3)}" y="{top}"'
            f' text-anchor="{"end" if right else "start"}">{esc(name)} {esc(f[key])}</text>'
        )
    parts.append(f'<line class="w-grid" x1="{AXIS_X}" y1="26" x2="{AXIS_X}" y2="{AXIS_Y}"/>')
    return svg("w-bw-bars", WIDTH, AXIS_Y + 17, "".join(parts), title, desc)


def figure(v: Mapping[str, float], f: Mapping[str, str], formula: str, loc: Locale) -> str:
    L = lambda key, **kw: loc.t(f"bandwidth.figure.{key}", **kw)  # noqa: E731
    factor = loc.sig(v["bus_factor"])
    heading = L("heading")
    desc = L("desc", algbw=f["algbw"], busbw=f["busbw"], nvlink=f["nvlink_bytes_per_s"], ib=f["ib_bytes_per_s"])
    legend = (
        f'<li><span class="w-swatch w-c5"></span>{esc(L("algbw"))}</li>'
        f'<li><span class="w-swatch w-c6"></span>{esc(L("busbw", factor=factor, formula=formula))}</li>'
        f'<li><span class="w-swatch w-bw-line w-bw-nvlink"></span>{esc(L("nvlink", nvlink=f["nvlink_bytes_per_s"]))}</li>'
        f'<li><span class="w-swatch w-bw-line w-bw-ib"></span>{esc(L("ib", ib=f["ib_bytes_per_s"]))}</li>'
    )
    return (
        f'<figure class="w-fig w-bw-fig">'
        f'<figcaption class="w-fig-heading">{esc(heading)}</figcaption>'
        f'{_bars_svg(v, f, loc, heading, desc)}'
        f'<ul class="w-legend w-bw-legend">{legend}</ul>'
        f'<p class="w-bw-note">{esc(L("note"))}</p></figure>'
    )
