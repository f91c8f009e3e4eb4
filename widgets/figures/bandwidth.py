"""Widget `bandwidth`: the benchmark arithmetic of NVIDIA's nccl-tests, and the α–β
model that says what the measurement could have been.

Controls: the collective, the number of ranks n, the message size S and the measured
time T, typed as nccl-tests prints them (`8G`, `47535` µs, any n), and the link. Outputs (nccl-tests, doc/PERFORMANCE.md): the algorithm bandwidth
algbw = S / T and the bus bandwidth busbw = algbw × factor, the factor being 2(n−1)/n
for all-reduce, (n−1)/n for all-gather, reduce-scatter and all-to-all (and scatter,
gather), 1 for broadcast and reduce: `calc.collectives.algbw`, `busbw`, `bus_factor`.
busbw is the rate each GPU's own link had to sustain, independent of n, so it is the
number to set against the hardware's peak: one direction of NVLink inside a node (not
the datasheet's sum of both directions, `both_directions_bytes_per_s`), and across
nodes the node's adapters together (`aggregate_bytes_per_s`). The figure draws algbw and busbw as bars on
a log scale with reference lines at NVLink 4 and InfiniBand NDR (`calc.hardware`), and,
below, the α–β time T = k_α·α + c_β·S/β of each algorithm of the collective against the
message size (`calc.latency`), with the measured (S, T) on it, the latency floor and
the size S* where the bandwidth-optimal algorithm's latency and bandwidth terms are equal.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from calc import collectives as coll
from calc import latency as lat
from calc._check import MAX_GPUS
from calc.hardware import GPUS_PER_NODE, INTERCONNECTS

from ..framework.html import esc, num, stat_cards, svg
from ..framework.locale import Locale
from ..framework.spec import Choice, Number
from ._common import all_values_table, output_label
from .hardware import FineLocale, join_sentences

NAME = "bandwidth"
NVLINK = INTERCONNECTS["nvlink4"]  # the fastest link of a GPU (inside a node)
IB = INTERCONNECTS["ib-ndr"]  # one 400 Gb/s adapter per GPU (between nodes)

LINKS = ("nvlink4", "ib-ndr")  # β from calc.hardware, α from NCCL's model (calc.latency)
# The factor as nccl-tests writes it (calc.collectives.bus_factor computes it).
FACTOR_TEXT = {"all_reduce": "2(n − 1)/n", "broadcast": "1", "reduce": "1"}
ROOT_OPS = ("broadcast", "reduce")  # factor 1: all data leaves or reaches one root

CONTROLS = (
    Choice("op", coll.OPS, "all_reduce"),
    Number("ranks", "count", 2, MAX_GPUS, 8),
    # 1 B … 1 TB; nccl-tests sizes (`8G` = 8·2^30) and the book's (`1e9`) both read.
    Number("size_bytes", "bytes", 1, 1e12, 10**9),
    # nccl-tests' time column, µs: 10 ns … 100 s; `time_s=1e-2` (seconds) still reads.
    Number("time_us", "us", 0.01, 1e8, 10000.0, aliases={"time_s": 1e6}),
    Choice("link", LINKS, "nvlink4"),
)

OUTPUTS: dict[str, str] = {
    "algbw": "bytes_per_s",
    "busbw": "bytes_per_s",
    # exact (1,875 for 2·15/16): three digits would print 1,88 and hide the fraction
    "bus_factor": "exact",
    "busbw_over_nvlink": "fraction",
    "busbw_over_ib": "ratio",
    "size_bytes": "bytes",
    "time_s": "seconds",
    "ranks": "integer",
    "nvlink_bytes_per_s": "bytes_per_s",
    "ib_bytes_per_s": "bytes_per_s",
    # NVLink as datasheets quote it (both directions), and a node's adapters together
    "nvlink_both_bytes_per_s": "bytes_per_s",
    "busbw_over_nvlink_both": "fraction",
    "node_ib_bytes_per_s": "bytes_per_s",
    "busbw_over_node_ib": "fraction",
    # the α–β model of the chosen collective on the chosen link (calc.latency)
    "alpha_s": "seconds",
    "link_bytes_per_s": "bytes_per_s",
    "model_s": "seconds",
    "latency_floor_s": "seconds",
    "crossover_bytes": "bytes",
    "measured_over_model": "ratio",
    # all-reduce of S on n ranks by each algorithm (what the chapters quote)
    "ring_s": "seconds",
    "recursive_doubling_s": "seconds",
    "rabenseifner_s": "seconds",
    "tree_s": "seconds",
    "nvls_s": "seconds",
    "ring_crossover_bytes": "bytes",
    "ring_latency_fraction": "fraction",
    # The chapter's table of circulating figures: "200 MB/s between pods" against the
    # 100–400 Gb/s Ethernet ports of a data centre, in bytes per second, one direction.
    "pod_claim_bytes_per_s": "bytes_per_s",
    "ethernet_low_bytes_per_s": "bytes_per_s",
    "ethernet_high_bytes_per_s": "bytes_per_s",
    "ethernet_low_over_claim": "number",
    "ethernet_high_over_claim": "number",
}

# The figure that circulates with the CS336 cluster diagram (the chapter's table): 200 MB/s.
POD_CLAIM_BYTES_PER_S = 200e6
# Data-centre Ethernet ports, per direction: 100 GbE (calc.hardware) and 400 GbE
# (IEEE 802.3bs, 400 Gb/s = 50 GB/s).
ETHERNET_LOW = INTERCONNECTS["ethernet-100g"].bytes_per_s
ETHERNET_HIGH_BYTES_PER_S = 400e9 / 8


def link_model(state: Mapping[str, Any]) -> dict[str, float]:
    """α and β of the chosen link."""
    return {"alpha_s": lat.LINK_ALPHA_S[state["link"]], "bytes_per_s": INTERCONNECTS[state["link"]].bytes_per_s}


def bandwidth_optimal(op: str, n: int) -> str:
    """The algorithm of `op` that sends the fewest bytes per rank (the first on a tie):
    the one whose crossover size S* says when latency stops dominating."""
    return min(lat.ALGORITHMS[op], key=lambda alg: lat.cost(op, alg, ranks=n, size_bytes=1.0, alpha_s=0.0,
                                                             bytes_per_s=1.0).wire_factor)


def nvls_applies(state: Mapping[str, Any]) -> bool:
    """NCCL runs NVLink SHARP for all-reduce inside one NVLink domain (calc.latency)."""
    return state["op"] == "all_reduce" and state["link"] == "nvlink4" and int(state["ranks"]) <= GPUS_PER_NODE


def compute(state: Mapping[str, Any]) -> dict[str, float]:
    """All outputs for a validated state, in SI units (bytes, seconds, bytes/s)."""
    op, n = state["op"], int(state["ranks"])
    size, time = float(state["size_bytes"]), float(state["time_us"]) / 1e6
    bus = coll.busbw(op, ranks=n, size_bytes=size, time_s=time)
    link = link_model(state)
    model = min(lat.costs(op, ranks=n, size_bytes=size, **link), key=lambda c: c.time_s)
    ring = {c.algorithm: c for c in lat.costs("all_reduce", ranks=n, size_bytes=size, **link)}
    nvls = lat.nvls_all_reduce(ranks=n, size_bytes=size, bytes_per_s=link["bytes_per_s"])
    nvlink_both = coll.both_directions_bytes_per_s(NVLINK.bytes_per_s)
    node_ib = coll.aggregate_bytes_per_s(IB.bytes_per_s, GPUS_PER_NODE)
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
        "nvlink_both_bytes_per_s": nvlink_both,
        "busbw_over_nvlink_both": bus / nvlink_both,
        "node_ib_bytes_per_s": node_ib,
        "busbw_over_node_ib": bus / node_ib,
        "alpha_s": link["alpha_s"],
        "link_bytes_per_s": link["bytes_per_s"],
        "model_s": model.time_s,
        "latency_floor_s": lat.latency_floor_s(op, ranks=n, alpha_s=link["alpha_s"]),
        "crossover_bytes": lat.crossover_bytes(op, bandwidth_optimal(op, n), ranks=n, **link),
        "measured_over_model": time / model.time_s,
        "ring_s": ring["ring"].time_s,
        "recursive_doubling_s": ring["recursive_doubling"].time_s,
        "rabenseifner_s": ring["rabenseifner"].time_s,
        "tree_s": ring["tree"].time_s,
        "nvls_s": nvls.time_s,
        "ring_crossover_bytes": lat.crossover_bytes("all_reduce", "ring", ranks=n, **link),
        "ring_latency_fraction": ring["ring"].latency_share,
        "pod_claim_bytes_per_s": POD_CLAIM_BYTES_PER_S,
        "ethernet_low_bytes_per_s": ETHERNET_LOW,
        "ethernet_high_bytes_per_s": ETHERNET_HIGH_BYTES_PER_S,
        "ethernet_low_over_claim": ETHERNET_LOW / POD_CLAIM_BYTES_PER_S,
        "ethernet_high_over_claim": ETHERNET_HIGH_BYTES_PER_S / POD_CLAIM_BYTES_PER_S,
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
    factor = loc.exact(v["bus_factor"])  # as the card shows it: 1,875
    common = dict(op=op_name, ranks=f["ranks"], size=f["size_bytes"], time=f["time_s"], algbw=f["algbw"],
                  busbw=f["busbw"], factor=factor, formula=formula,
                  factor_eq=factor if op in ROOT_OPS else f"{formula} = {factor}",
                  nvlink=f["nvlink_bytes_per_s"], ib=f["ib_bytes_per_s"], pct_nvlink=f["busbw_over_nvlink"],
                  over_ib=f["busbw_over_ib"], gpus=loc.integer(GPUS_PER_NODE))
    curves = model_curves(state, v)
    best = min(curves[:len(lat.ALGORITHMS[op])], key=lambda c: c[1])[0]
    n = int(state["ranks"])
    model = dict(link=loc.t(f"hardware.short.{state['link'].replace('-', '_')}"), alpha=f["alpha_s"],
                 beta=f["link_bytes_per_s"], op=op_name, best=algorithm_name(best, loc), model=f["model_s"],
                 ratio=f["measured_over_model"], floor=f["latency_floor_s"], crossover=f["crossover_bytes"],
                 cross_alg=algorithm_name(bandwidth_optimal(op, n), loc), nvls=f["nvls_s"])
    parts = [loc.h("bandwidth.sentence", **common),
             loc.h("bandwidth.why_root" if op in ROOT_OPS else "bandwidth.why", **common),
             loc.h(f"bandwidth.regime_{regime(v)}", **common),
             loc.h("bandwidth.model", **model)]
    if nvls_applies(state):
        parts.append(loc.h("bandwidth.model_nvls", **model))
    sentence = join_sentences(*parts)
    return (f'{cards}{figure(state, v, f, formula, curves, loc)}<p class="w-sentence">{sentence}</p>'
            f'{all_values_table(NAME, OUTPUTS, v, loc)}')


def algorithm_name(algorithm: str, loc: Locale) -> str:
    return loc.t(f"bandwidth.algorithms.{algorithm}")


def model_curves(state: Mapping[str, Any], v: Mapping[str, float]) -> list[tuple[str, float, Any]]:
    """(algorithm, α–β time at S, T(S) as a function) for each algorithm of the op, NVLS
    last where NCCL would run it."""
    op, n = state["op"], int(state["ranks"])
    link = link_model(state)
    size = float(state["size_bytes"])

    def of(alg: str) -> Any:
        if alg == "nvls":
            return lambda s: lat.nvls_all_reduce(ranks=n, size_bytes=s, bytes_per_s=link["bytes_per_s"]).time_s
        return lambda s: lat.cost(op, alg, ranks=n, size_bytes=s, **link).time_s

    algs = list(lat.ALGORITHMS[op]) + (["nvls"] if nvls_applies(state) else [])
    return [(alg, of(alg)(size), of(alg)) for alg in algs]


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


def _bars_svg(state: Mapping[str, Any], v: Mapping[str, float], f: Mapping[str, str], curves: list, loc: FineLocale,
              title: str, desc: str) -> str:
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
    parts.append(_model_svg(state, v, curves, loc))
    return svg("w-bw-bars", WIDTH, PLOT_Y1 + 17, "".join(parts), title, desc)


# The α–β panel, below the bars in the same SVG: time against message size, both log.
MODEL_TOP = AXIS_Y + 40  # the panel's heading sits just above
PLOT_Y0, PLOT_Y1 = MODEL_TOP + 10, MODEL_TOP + 150
POINTS = 33  # samples per curve, log-spaced
MIN_Y_TICK_GAP = 16


def _model_decades(state: Mapping[str, Any], v: Mapping[str, float], curves: list) -> tuple[int, int, int, int]:
    """(x_lo, x_hi, y_lo, y_hi) powers of ten: S and S* inside with room either side,
    every curve, the floor and the measured time inside."""
    size, cross = float(state["size_bytes"]), v["crossover_bytes"]
    x_lo = max(0, math.floor(math.log10(min(size, cross))) - 2)
    x_hi = max(math.ceil(math.log10(max(size, cross))) + 1, x_lo + 3)
    lows = [fn(10.0 ** x_lo) for _, _, fn in curves] + [v["latency_floor_s"], v["time_s"]]
    highs = [fn(10.0 ** x_hi) for _, _, fn in curves] + [v["time_s"]]
    y_lo = math.floor(math.log10(min(lows)))
    y_hi = max(math.ceil(math.log10(max(highs))), y_lo + 2)
    return x_lo, x_hi, y_lo, y_hi


def _model_svg(state: Mapping[str, Any], v: Mapping[str, float], curves: list, loc: FineLocale) -> str:
    L = lambda key, **kw: loc.t(f"bandwidth.figure.{key}", **kw)  # noqa: E731
    x_lo, x_hi, y_lo, y_hi = _model_decades(state, v, curves)

    def px(size: float) -> float:
        return AXIS_X + AXIS_W * (math.log10(size) - x_lo) / (x_hi - x_lo)

    def py(seconds: float) -> float:
        return PLOT_Y1 - (PLOT_Y1 - PLOT_Y0) * (math.log10(seconds) - y_lo) / (y_hi - y_lo)

    parts = [f'<text class="w-fig-note w-bw-panel" x="{AXIS_X}" y="{MODEL_TOP - 4}">{esc(L("model_heading"))}</text>']
    every_x = max(1, math.ceil(MIN_TICK_GAP / (AXIS_W / (x_hi - x_lo))))
    for k in range(x_lo, x_hi + 1):
        x = px(10.0 ** k)
        parts.append(f'<line class="w-grid" x1="{num(x)}" y1="{PLOT_Y0}" x2="{num(x)}" y2="{PLOT_Y1}"/>')
        if (k - x_lo) % every_x == 0:
            parts.append(f'<text class="w-fig-tick" x="{num(x)}" y="{PLOT_Y1 + 13}" text-anchor="middle">'
                         f'{esc(loc.format("bytes", 10.0 ** k))}</text>')
    every_y = max(1, math.ceil(MIN_Y_TICK_GAP / ((PLOT_Y1 - PLOT_Y0) / (y_hi - y_lo))))
    for k in range(y_lo, y_hi + 1):
        y = py(10.0 ** k)
        parts.append(f'<line class="w-grid" x1="{AXIS_X}" y1="{num(y)}" x2="{AXIS_X + AXIS_W}" y2="{num(y)}"/>')
        if (k - y_lo) % every_y == 0:
            parts.append(f'<text class="w-fig-tick" x="{AXIS_X - 4}" y="{num(y + 3.5)}" text-anchor="end">'
                         f'{esc(loc.time_tick(10.0 ** k))}</text>')
    floor_y = py(v["latency_floor_s"])
    cross_x = px(v["crossover_bytes"])
    parts.append(f'<line class="w-bw-ref w-bw-floor" x1="{AXIS_X}" y1="{num(floor_y)}" x2="{AXIS_X + AXIS_W}"'
                 f' y2="{num(floor_y)}" data-line="latency_floor_s"/>'
                 f'<line class="w-bw-ref w-bw-cross" x1="{num(cross_x)}" y1="{PLOT_Y0}" x2="{num(cross_x)}"'
                 f' y2="{PLOT_Y1}" data-line="crossover_bytes"/>'
                 f'<text class="w-bw-label w-bw-cross" x="{num(cross_x + 3)}" y="{PLOT_Y0 + 9}">S*</text>')
    for i, (alg, _, fn) in enumerate(curves):
        sizes = [10.0 ** (x_lo + (x_hi - x_lo) * j / (POINTS - 1)) for j in range(POINTS)]
        points = " ".join(f"{num(px(s))},{num(py(fn(s)))}" for s in sizes)
        parts.append(f'<polyline class="w-bw-curve w-c{i + 1}" points="{points}" data-curve="{alg}"/>')
    mx, my = px(float(state["size_bytes"])), py(v["time_s"])
    parts.append(f'<circle class="w-bw-point" cx="{num(mx)}" cy="{num(my)}" r="4" data-point="measured"/>')
    parts.append(f'<line class="w-grid" x1="{AXIS_X}" y1="{PLOT_Y0}" x2="{AXIS_X}" y2="{PLOT_Y1}"/>')
    return "".join(parts)


def figure(state: Mapping[str, Any], v: Mapping[str, float], f: Mapping[str, str], formula: str,
           curves: list, loc: FineLocale) -> str:
    L = lambda key, **kw: loc.t(f"bandwidth.figure.{key}", **kw)  # noqa: E731
    factor = loc.exact(v["bus_factor"])
    heading = L("heading")
    desc = " ".join((
        L("desc", algbw=f["algbw"], busbw=f["busbw"], nvlink=f["nvlink_bytes_per_s"], ib=f["ib_bytes_per_s"]),
        L("model_desc", size=f["size_bytes"], time=f["time_s"], floor=f["latency_floor_s"],
          crossover=f["crossover_bytes"]),
    ))
    legend = (
        f'<li><span class="w-swatch w-c5"></span>{esc(L("algbw"))}</li>'
        f'<li><span class="w-swatch w-c6"></span>{esc(L("busbw", factor=factor, formula=formula))}</li>'
        f'<li><span class="w-swatch w-bw-line w-bw-nvlink"></span>{esc(L("nvlink", nvlink=f["nvlink_bytes_per_s"]))}</li>'
        f'<li><span class="w-swatch w-bw-line w-bw-ib"></span>{esc(L("ib", ib=f["ib_bytes_per_s"]))}</li>'
    )
    model_legend = "".join(
        f'<li><span class="w-swatch w-c{i + 1}"></span>{esc(algorithm_name(alg, loc))}: {esc(loc.format("seconds", t))}</li>'
        for i, (alg, t, _) in enumerate(curves)
    ) + (
        f'<li><span class="w-swatch w-bw-dot"></span>{esc(L("measured", size=f["size_bytes"], time=f["time_s"]))}</li>'
        f'<li><span class="w-swatch w-bw-line w-bw-floor"></span>{esc(L("floor", floor=f["latency_floor_s"]))}</li>'
        f'<li><span class="w-swatch w-bw-line w-bw-cross"></span>{esc(L("crossover", crossover=f["crossover_bytes"]))}</li>'
    )
    return (
        f'<figure class="w-fig w-bw-fig">'
        f'<figcaption class="w-fig-heading">{esc(heading)}</figcaption>'
        f'{_bars_svg(state, v, f, curves, loc, heading, desc)}'
        f'<ul class="w-legend w-bw-legend">{legend}</ul>'
        f'<ul class="w-legend w-bw-legend w-bw-model-legend">{model_legend}</ul>'
        f'<p class="w-bw-note">{esc(L("note"))} {esc(L("model_note"))}</p></figure>'
    )
