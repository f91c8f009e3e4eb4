"""Widget `dp`: data parallelism (seed 000, step 2).

Every GPU holds the whole training state and a 1/d slice of the global batch (d the
data-parallel degree); the fp16 gradient is summed by a ring all-reduce. Memory does
not shrink with d; compute per step does; the bytes each GPU sends stay near 2 × the
gradient.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from calc import data_parallel as dp
from calc.collectives import bus_factor
from calc.hardware import get_machine

from ..framework.html import esc, num, stat_cards, svg
from ..framework.locale import Locale
from ..framework.spec import Range
from ._common import MACHINE, machine_label, MODEL, all_values_table, model_params, output_label

NAME = "dp"

# The machine: by default the seed's illustrative one (80 GB at 150 TFLOP/s, gradients
# over a 50 GB/s network); the presets are whole servers of one generation.
CONTROLS = (
    Range("gpus", lo=1, hi=64, step=1, default=8, integer=True, display="integer"),
    MODEL,
    MACHINE,
)

OUTPUTS: dict[str, str] = {
    "state_per_gpu_bytes": "bytes",
    "gpu_memory_bytes": "bytes",
    "fits": "yesno",
    "seqs_per_gpu": "count",
    "tokens_per_step": "count",
    "gradient_bytes": "bytes",
    "sent_per_gpu_bytes": "bytes",
    "compute_time": "seconds",
    "comm_time": "seconds",
    "comm_over_compute": "ratio",
    "global_batch_seqs": "integer",
    "seq_len": "integer",
    "gpu_flops": "flops_per_s",
    "link_bytes_per_s": "bytes_per_s",
    "flops_per_byte": "integer",
    "overlap_min_tokens": "integer",
    "overlap_min_micro_batch": "integer",
    "gpus": "integer",
    # The worked examples: the ring's bytes per byte of gradient, 2(d−1)/d, and what a
    # central GPU would carry instead, (d−1) × 2Ψ each way.
    "ring_factor": "number",
    "central_bytes": "bytes",
}


def compute(state: Mapping[str, Any]) -> dict[str, float]:
    _, params = model_params(state)
    n = state["gpus"]
    machine = get_machine(state["machine"])
    x, beta = machine.gpu.flops_per_s, machine.network_bytes_per_s
    compute_time = dp.compute_seconds(params=params, dp=n, flops_per_gpu=x)
    comm_time = dp.comm_seconds(params=params, dp=n, bytes_per_s=beta)
    memory = dp.state_per_gpu_bytes(params)
    return {
        "state_per_gpu_bytes": memory,
        "gpu_memory_bytes": machine.gpu.memory_bytes,
        "fits": 1 if memory <= machine.gpu.memory_bytes else 0,
        "seqs_per_gpu": dp.seqs_per_gpu(n),
        "tokens_per_step": dp.tokens_per_step(),
        "gradient_bytes": dp.gradient_bytes(params),
        "sent_per_gpu_bytes": dp.sent_per_gpu_bytes(params, n),
        "compute_time": compute_time,
        "comm_time": comm_time,
        "comm_over_compute": comm_time / compute_time,
        "global_batch_seqs": dp.GLOBAL_BATCH_SEQS,
        "seq_len": dp.SEQ_LEN,
        "gpu_flops": x,
        "link_bytes_per_s": beta,
        "flops_per_byte": x / beta,
        "overlap_min_tokens": dp.overlap_min_tokens(dp=n, flops_per_gpu=x, bytes_per_s=beta),
        "overlap_min_micro_batch": dp.overlap_min_micro_batch(dp=n, seq_len=dp.SEQ_LEN, flops_per_gpu=x,
                                                              bytes_per_s=beta),
        "gpus": n,
        "ring_factor": bus_factor("all_reduce", n),
        "central_bytes": dp.central_gpu_bytes(params, n),
    }


def render(state: Mapping[str, Any], v: Mapping[str, float], loc: Locale) -> str:
    """The output region: stat cards, the figure, the sentence, the table of values."""
    n = state["gpus"]
    f = {key: loc.format(kind, v[key]) for key, kind in OUTPUTS.items()}
    cards = stat_cards([(output_label(NAME, k, loc), k, v[k], OUTPUTS[k]) for k in
                        ("state_per_gpu_bytes", "seqs_per_gpu", "sent_per_gpu_bytes", "compute_time")], loc)
    fit_key = ("dp.fit_single_" if n == 1 else "dp.fit_") + ("yes" if v["fits"] else "no")
    fit = loc.t(fit_key, state=f["state_per_gpu_bytes"], gpu=f["gpu_memory_bytes"])
    if n == 1:
        sentence = loc.h("dp.sentence_single", batch=f["global_batch_seqs"], compute=f["compute_time"], fit=fit)
    else:
        sentence = loc.h("dp.sentence", gpus=loc.integer(n), seqs=f["seqs_per_gpu"], compute=f["compute_time"],
                         sent=f["sent_per_gpu_bytes"], gradient=f["gradient_bytes"], bandwidth=f["link_bytes_per_s"],
                         comm=f["comm_time"], fit=fit)
        overlap_key = "dp.overlap_one" if v["overlap_min_micro_batch"] == 1 else "dp.overlap_more"
        sentence += " " + loc.h(overlap_key, tokens=f["overlap_min_tokens"], ratio=f["flops_per_byte"],
                                seqs=f["overlap_min_micro_batch"], seq_len=f["seq_len"])
    return (f'{cards}{figure(n, v, f, loc, state["machine"])}<p class="w-sentence">{sentence}</p>'
            f'{all_values_table(NAME, OUTPUTS, v, loc)}')


# -- the figure -------------------------------------------------------------------------
# SVGs 400 units wide (legible from a 375 px phone up); headings and legends are HTML.
WIDTH = 400
LANE_X = 7  # the ring's way back to GPU 0 runs down this left lane
GRID_X = 18  # the first column of GPU boxes
GRID_RIGHT = 358  # leaves room for the memory label right of the first row
MAX_CELL = 62
HEAD = 3.5  # arrowhead half-size


def _layout(n: int) -> tuple[int, int, float, float, float]:
    """Columns, rows, cell pitch, box width and bar height for N GPU boxes."""
    cols = n if n <= 8 else (8 if n <= 32 else 16)
    rows = math.ceil(n / cols)
    cell = min(MAX_CELL, (GRID_RIGHT - GRID_X) / cols)
    box_w = cell * 0.7
    bar_h = 66.0 if rows == 1 else (44.0 if rows == 2 else 30.0)
    return cols, rows, cell, box_w, bar_h


def _arrow(x1: float, y1: float, x2: float, y2: float) -> str:
    """A straight ring segment with its head at (x2, y2); horizontal or vertical."""
    dx, dy = (x2 > x1) - (x2 < x1), (y2 > y1) - (y2 < y1)
    bx, by = x2 - dx * 2 * HEAD, y2 - dy * 2 * HEAD  # base of the head
    px, py = -dy * HEAD, dx * HEAD  # half-width, perpendicular
    return (f'<line class="w-dp-ring" x1="{num(x1)}" y1="{num(y1)}" x2="{num(bx)}" y2="{num(by)}"/>'
            f'<polygon class="w-dp-arrow" points="{num(x2)},{num(y2)} {num(bx + px)},{num(by + py)} {num(bx - px)},{num(by - py)}"/>')


def _replicas_svg(n: int, v: Mapping[str, float], f: Mapping[str, str], loc: Locale, title: str, desc: str) -> str:
    """N GPU boxes, each filled with the whole state against its memory line, joined by a ring."""
    cols, rows, cell, box_w, bar_h = _layout(n)
    labelled = rows == 1  # one row: each box carries its GPU number
    top = 38.0 if labelled else 24.0
    pitch = bar_h + 14.0
    scale = (bar_h - 2) / max(v["state_per_gpu_bytes"], v["gpu_memory_bytes"])
    fill_h = v["state_per_gpu_bytes"] * scale
    limit_h = v["gpu_memory_bytes"] * scale
    over = v["state_per_gpu_bytes"] > v["gpu_memory_bytes"]
    boxes = [f'<text class="w-fig-note" x="{num(GRID_X)}" y="11">'
             f'{esc(loc.t("dp.figure.each_box", seqs=f["seqs_per_gpu"], state=f["state_per_gpu_bytes"]))}</text>']
    ring = []
    centres: list[tuple[float, float]] = []
    for k in range(n):
        row, pos = divmod(k, cols)
        col = pos if row % 2 == 0 else cols - 1 - pos  # ring order runs back and forth
        x, y = GRID_X + col * cell, top + row * pitch
        centres.append((x, y))
        bottom = y + bar_h
        boxes.append(f'<rect class="w-dp-gpu" x="{num(x)}" y="{num(y)}" width="{num(box_w)}" height="{num(bar_h)}" rx="2"/>')
        keep = min(fill_h, limit_h)
        boxes.append(f'<rect class="w-c1" x="{num(x + 2)}" y="{num(bottom - 1 - keep)}" width="{num(box_w - 4)}" height="{num(keep)}"/>')
        if over:
            boxes.append(f'<rect class="w-dp-overfill" x="{num(x + 2)}" y="{num(bottom - 1 - fill_h)}" width="{num(box_w - 4)}" height="{num(fill_h - limit_h)}"/>')
        ly = bottom - 1 - limit_h
        boxes.append(f'<line class="w-limit w-dp-limit" x1="{num(x - 2)}" y1="{num(ly)}" x2="{num(x + box_w + 2)}" y2="{num(ly)}"/>')
        if labelled:
            boxes.append(f'<text class="w-fig-tick" x="{num(x + box_w / 2)}" y="{num(top - 5)}" text-anchor="middle">'
                         f'{esc(loc.t("dp.figure.gpu", index=loc.integer(k)))}</text>')
    # The memory line's label, right of the first row's last box.
    last_x = GRID_X + (min(n, cols) - 1) * cell + box_w
    ly0 = top + bar_h - 1 - limit_h
    boxes.append(f'<text class="w-fig-note w-dp-limit-label" x="{num(last_x + 6)}" y="{num(ly0 + 4)}">{esc(f["gpu_memory_bytes"])}</text>')
    grid_bottom = top + (rows - 1) * pitch + bar_h
    if n > 1:
        for k in range(n - 1):
            (x1, y1), (x2, y2) = centres[k], centres[k + 1]
            if y1 == y2:  # same row: across the gap
                mid = y1 + bar_h / 2
                if x2 > x1:
                    ring.append(_arrow(x1 + box_w + 1, mid, x2 - 1, mid))
                else:
                    ring.append(_arrow(x1 - 1, mid, x2 + box_w + 1, mid))
            else:  # next row, same column: down through the row gap
                cx = x1 + box_w / 2
                ring.append(_arrow(cx, y1 + bar_h + 1, cx, y2 - 1))
        # Back to GPU 0: down from the last box, left along the bottom, up the left lane.
        (xl, yl), (x0, y0) = centres[-1], centres[0]
        lane_y = grid_bottom + 9
        cx = xl + box_w / 2
        mid0 = y0 + bar_h / 2
        ring.append(f'<polyline class="w-dp-ring" points="{num(cx)},{num(yl + bar_h + 1)} {num(cx)},{num(lane_y)} '
                    f'{num(LANE_X)},{num(lane_y)} {num(LANE_X)},{num(mid0)}"/>')
        ring.append(_arrow(LANE_X - 0.75, mid0, x0 - 1, mid0))
        caption = loc.t("dp.figure.ring", gradient=f["gradient_bytes"], sent=f["sent_per_gpu_bytes"])
    else:
        lane_y = grid_bottom + 2
        caption = loc.t("dp.figure.no_ring")
    parts = boxes + ring
    y = lane_y + 15
    parts.append(f'<text class="w-fig-note" x="{num(GRID_X)}" y="{num(y)}">{esc(caption)}</text>')
    return svg("w-dp-ring", WIDTH, math.ceil(y + 5), "".join(parts), title, desc)


BAR_X, BAR_END = 84.0, 330.0  # bars of the per-step comparison, labels to the left


def _bars_svg(ident: str, rows: list[tuple[str, str, float, str]], hi: float, ticks: list[tuple[float, str]],
              title: str, desc: str) -> str:
    """Horizontal bars on one linear axis from 0 to `hi`: (label, class, value, text) each."""
    scale = (BAR_END - BAR_X) / hi
    parts = []
    height = 4 + len(rows) * 26
    for value, text in ticks:
        tx = BAR_X + value * scale
        parts.append(f'<line class="w-grid" x1="{num(tx)}" y1="0" x2="{num(tx)}" y2="{height}"/>'
                     f'<text class="w-fig-tick" x="{num(tx)}" y="{height + 12}" text-anchor="middle">{esc(text)}</text>')
    for i, (label, cls, value, text) in enumerate(rows):
        y = 4 + i * 26
        end = BAR_X + value * scale
        inside = end - BAR_X > 110
        parts.append(
            f'<text class="w-fig-note" x="{num(BAR_X - 6)}" y="{y + 14}" text-anchor="end">{esc(label)}</text>'
            f'<rect class="{cls}" x="{num(BAR_X)}" y="{y}" width="{num(max(value * scale, 0))}" height="20"/>'
            f'<text class="w-fig-value{" w-on-bar" if inside else ""}" x="{num(end - 5 if inside else end + 5)}" y="{y + 14}"'
            f' text-anchor="{"end" if inside else "start"}">{esc(text)}</text>'
        )
    return svg(ident, WIDTH, height + (16 if ticks else 4), "".join(parts), title, desc)


def figure(n: int, v: Mapping[str, float], f: Mapping[str, str], loc: Locale, machine: str = "book") -> str:
    heading = loc.t("dp.figure.replicas", gpus=loc.integer(n), batch=f["global_batch_seqs"], seq_len=f["seq_len"])
    replicas_desc = loc.t("dp.figure.replicas_desc", gpus=loc.integer(n), seqs=f["seqs_per_gpu"],
                          state=f["state_per_gpu_bytes"], gpu=f["gpu_memory_bytes"],
                          gradient=f["gradient_bytes"], sent=f["sent_per_gpu_bytes"])
    legend = (
        f'<li><span class="w-swatch w-c1"></span>{esc(loc.t("dp.figure.state", state=f["state_per_gpu_bytes"]))}</li>'
        f'<li><span class="w-swatch w-dp-swatch-over"></span>{esc(loc.t("dp.figure.over", gpu=f["gpu_memory_bytes"]))}</li>'
        f'<li><span class="w-swatch w-dp-swatch-limit"></span>{esc(loc.t("dp.figure.limit", gpu=f["gpu_memory_bytes"]))}</li>'
    )
    if n > 1:
        legend += f'<li><span class="w-swatch w-dp-swatch-ring"></span>{esc(loc.t("dp.figure.ring_legend"))}</li>'
    bytes_heading = loc.t("dp.figure.bytes")
    bytes_desc = loc.t("dp.figure.bytes_desc", gradient=f["gradient_bytes"], sent=f["sent_per_gpu_bytes"])
    grad = v["gradient_bytes"]
    bytes_svg = _bars_svg("w-dp-bytes", [
        (loc.t("dp.figure.gradient_row"), "w-c2", grad, f["gradient_bytes"]),
        (loc.t("dp.figure.sent_row"), "w-c6", v["sent_per_gpu_bytes"], f["sent_per_gpu_bytes"]),
    ], 2.05 * grad, [(grad, loc.t("dp.figure.times_gradient", factor=loc.integer(1))),
                     (2 * grad, loc.t("dp.figure.times_gradient", factor=loc.integer(2)))], bytes_heading, bytes_desc)
    # Only the book's own machine is illustrative; a preset is a real DGX and is named.
    time_heading = (loc.t("dp.figure.time", gpu_flops=f["gpu_flops"], bandwidth=f["link_bytes_per_s"])
                    if machine == "book" else
                    loc.t("dp.figure.time_machine", machine=machine_label("dp", machine, loc),
                          gpu_flops=f["gpu_flops"], bandwidth=f["link_bytes_per_s"]))
    time_desc = loc.t("dp.figure.time_desc", compute=f["compute_time"], comm=f["comm_time"])
    time_svg = _bars_svg("w-dp-time", [
        (loc.t("dp.figure.compute_row"), "w-c4", v["compute_time"], f["compute_time"]),
        (loc.t("dp.figure.comm_row"), "w-c5", v["comm_time"], f["comm_time"]),
    ], max(v["compute_time"], v["comm_time"]), [], time_heading, time_desc)
    return (
        f'<figure class="w-fig w-dp-fig">'
        f'<figcaption class="w-fig-heading">{esc(heading)}</figcaption>'
        f'{_replicas_svg(n, v, f, loc, heading, replicas_desc)}'
        f'<ul class="w-legend">{legend}</ul>'
        f'<p class="w-fig-heading">{esc(bytes_heading)}</p>{bytes_svg}'
        f'<p class="w-fig-heading">{esc(time_heading)}</p>{time_svg}</figure>'
    )
