"""Widget `collectives`: the eight collective operations, run on small vectors.

Controls: the operation, the number of ranks (2–8), the message size S and a step that
walks ring all-reduce chunk by chunk. Every rank starts with the vector 10·r + i
(i = 0…n−1; one value 10·r for gather and all-gather, whose output is the n-chunk
vector). The figure shows every rank's vector before and after, computed by running the
operation in `calc.collectives`; which ranks a value came from is found the same way,
by running the operation once more on markers 2^r (a sum of distinct powers of two
names its contributors). The ring walk, the bytes each rank sends, the bus factor, one
rank's chunk S/n and the bandwidth-only time over NVLink 4 and over one InfiniBand NDR
adapter per GPU (`calc.hardware.INTERCONNECTS`) also come from `calc.collectives`.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Mapping, Sequence

from calc import collectives as coll
from calc.hardware import INTERCONNECTS

from ..framework.html import esc, num, stat_cards, svg
from ..framework.locale import Locale
from ..framework.spec import Choice, NumberChoice, Range
from ._common import all_values_table, output_label

NAME = "collectives"
ROOT = 0  # the root of broadcast, scatter, gather and reduce
MAX_RANKS = 8
ROOTED = ("broadcast", "scatter", "gather", "reduce")
ONE_VALUE = ("gather", "all_gather")  # each rank contributes one chunk; the output has n
IGNORED_BEFORE = ("broadcast", "scatter")  # non-root inputs are overwritten
KEPT_AFTER = ("gather", "reduce")  # non-root ranks keep their vector
# Message sizes S, decimal SI (1 GB = 1e9 bytes): one radio button per power of ten.
SIZES = {"1e6": "1 MB", "1e7": "10 MB", "1e8": "100 MB", "1e9": "1 GB", "1e10": "10 GB"}


CONTROLS = (
    Choice("op", coll.OPS, "all_reduce"),
    Range("ranks", lo=2, hi=MAX_RANKS, step=1, default=4, integer=True, display="integer"),
    NumberChoice("size_bytes", tuple(SIZES), "1e9", radio=True, labels=SIZES),
    # 0 = before; 1..n−1 reduce-scatter; n..2(n−1) all-gather. The range fits 8 ranks;
    # for a smaller ring the slider ends at its last step (`limits`).
    Range("step", lo=0, hi=2 * (MAX_RANKS - 1), step=1, default=0, integer=True, display="integer"),
)

OUTPUTS: dict[str, str] = {
    "sent_per_rank_bytes": "bytes",
    "bus_factor": "ratio",
    "ranks": "integer",
    "size_bytes": "bytes",
    "steps": "integer",
    "chunk_bytes": "bytes",
    "nvlink_time_s": "seconds",
    "ib_time_s": "seconds",
}


def initial_vectors(op: str, ranks: int) -> list[list[int]]:
    """Rank r holds 10·r + i for i = 0…n−1 (one value, 10·r, for gather and all-gather)."""
    length = 1 if op in ONE_VALUE else ranks
    return [[10 * r + i for i in range(length)] for r in range(ranks)]


def run(op: str, ranks: int) -> tuple[list[list[int]], tuple[tuple[float, ...], ...]]:
    """The vectors before and after `op`, the latter computed by calc."""
    before = initial_vectors(op, ranks)
    return before, coll.run(op, before, ROOT)


def provenance(op: str, ranks: int) -> list[list[frozenset[int]]]:
    """For every value after `op`, the ranks whose input it holds: calc runs `op` on
    markers 2^r, and the bits of each result name its contributors."""
    length = 1 if op in ONE_VALUE else ranks
    marks = coll.run(op, [[2**r] * length for r in range(ranks)], ROOT)
    return [[frozenset(r for r in range(ranks) if int(m) >> r & 1) for m in row] for row in marks]


@lru_cache(maxsize=None)
def ring_walk(ranks: int) -> tuple[coll.RingStep, ...]:
    """Ring all-reduce of the initial vectors, step by step (calc)."""
    return coll.ring_all_reduce_steps(initial_vectors("all_reduce", ranks))


def shown_step(state: Mapping[str, Any]) -> int:
    """The ring step drawn: the control's value, at most the ring's last step."""
    return min(state["step"], len(ring_walk(state["ranks"])) - 1)


def limits(state: Mapping[str, Any]) -> dict[str, float]:
    """The step slider ends at this ring's last step, 2(n − 1)."""
    return {"step": len(ring_walk(state["ranks"])) - 1}


def inactive(state: Mapping[str, Any]) -> tuple[str, ...]:
    """Only all-reduce is walked step by step; for the other operations the step does nothing."""
    return () if state["op"] == "all_reduce" else ("step",)


def compute(state: Mapping[str, Any]) -> dict[str, float]:
    op, n = state["op"], state["ranks"]
    size = float(state["size_bytes"])
    return {
        "sent_per_rank_bytes": coll.ring_bytes_per_rank(op, size, n),
        "bus_factor": coll.bus_factor(op, n),
        "ranks": n,
        "size_bytes": size,
        "steps": len(ring_walk(n)) - 1,
        "chunk_bytes": coll.chunk_bytes(size, n),
        "nvlink_time_s": coll.ring_seconds(op, size_bytes=size, ranks=n, bytes_per_s=INTERCONNECTS["nvlink4"].bytes_per_s),
        "ib_time_s": coll.ring_seconds(op, size_bytes=size, ranks=n, bytes_per_s=INTERCONNECTS["ib-ndr"].bytes_per_s),
    }


def render(state: Mapping[str, Any], v: Mapping[str, float], loc: Locale) -> str:
    """The output region: stat cards, the figure, the sentence, the table of values."""
    op = state["op"]
    f = {key: loc.format(kind, v[key]) for key, kind in OUTPUTS.items()}
    cards = stat_cards([(output_label(NAME, k, loc), k, v[k], OUTPUTS[k]) for k in
                        ("sent_per_rank_bytes", "bus_factor", "size_bytes", "ranks")], loc)
    sentence = loc.h(f"{NAME}.sentence.{op}", ranks=f["ranks"], root=loc.integer(ROOT), size=f["size_bytes"],
                     sent=f["sent_per_rank_bytes"], factor=f["bus_factor"], steps=f["steps"])
    return (f'{cards}{figure(state, v, f, loc)}<p class="w-sentence">{sentence}</p>'
            f'{all_values_table(NAME, OUTPUTS, v, loc)}')


# -- the figure -------------------------------------------------------------------------
# SVGs 400 units wide, like every widget (legible from a 375 px phone up); headings,
# legends and notes are HTML so they wrap. One row per rank, one cell per value.
WIDTH = 400
SWATCH_X, LABEL_X = 2, 14
CELLS_X, CELL_W, CELL_PITCH, CELL_H = 92.0, 34.0, 37.0, 20.0
ROW_PITCH = 24.0  # before / after
RING_PITCH, RING_TOP = 30.0, 10.0  # room for the arrows between rows
GUTTER_GAP = 8.0  # the ring's way back, from the last rank to rank 0, right of the cells
STRIP_H = 3.0


def _rank_label(r: int, op: str, loc: Locale) -> str:
    key = "root_rank" if op in ROOTED and r == ROOT else "rank"
    return loc.t(f"{NAME}.figure.{key}", index=loc.integer(r))


def _cell(x: float, y: float, value: float, sources: frozenset[int], n: int, extra: str = "") -> str:
    """One value: tinted by its rank if it comes from one rank, neutral if it is a sum;
    a strip along its foot marks every rank added into it; a complete sum is framed."""
    if len(sources) == 1:
        cls = f"w-coll-cell w-coll-r{next(iter(sources))}"
    else:
        cls = "w-coll-cell w-coll-mix" + (" w-coll-full" if len(sources) == n else "")
    parts = [f'<g class="{cls}{extra}"><rect x="{num(x)}" y="{num(y)}" width="{num(CELL_W)}" height="{num(CELL_H)}" rx="2"/>']
    slot = (CELL_W - 2) / n
    for r in sorted(sources):
        parts.append(f'<rect class="w-coll-strip w-coll-r{r}" x="{num(x + 1 + r * slot)}" y="{num(y + CELL_H - STRIP_H - 1)}"'
                     f' width="{num(slot)}" height="{num(STRIP_H)}"/>')
    text = str(int(value)) if float(value).is_integer() else repr(value)
    parts.append(f'<text class="w-coll-num" x="{num(x + CELL_W / 2)}" y="{num(y + 12.5)}" text-anchor="middle">{esc(text)}</text></g>')
    return "".join(parts)


def _row(r: int, y: float, values: Sequence[float], sources: Sequence[frozenset[int]], n: int, op: str,
         loc: Locale, faded: bool = False) -> str:
    extra = " w-coll-faded" if faded else ""
    cells = "".join(_cell(CELLS_X + i * CELL_PITCH, y, value, src, n) for i, (value, src) in enumerate(zip(values, sources)))
    data = ",".join(str(int(x)) if float(x).is_integer() else repr(x) for x in values)
    return (f'<g class="w-coll-row{extra}" data-rank="{r}" data-values="{data}">'
            f'<rect class="w-coll-key w-coll-r{r}" x="{SWATCH_X}" y="{num(y + 6)}" width="8" height="8" rx="1.5"/>'
            f'<text class="w-fig-note" x="{LABEL_X}" y="{num(y + 14)}">{esc(_rank_label(r, op, loc))}</text>'
            f'{cells}</g>')


def _vectors_text(rows: Sequence[Sequence[float]], op: str, loc: Locale) -> str:
    """`rank 0 holds 0, 1, 2, 3; rank 1 holds …` for the figure's description."""
    sep = loc.t(f"{NAME}.figure.list_sep")
    return loc.t(f"{NAME}.figure.rank_sep").join(
        loc.t(f"{NAME}.figure.rank_holds", rank=_rank_label(r, op, loc),
              values=sep.join(loc.integer(x) for x in row))
        for r, row in enumerate(rows))


def _vectors_svg(ident: str, op: str, rows: Sequence[Sequence[float]], sources: Sequence[Sequence[frozenset[int]]],
                 faded: Sequence[bool], loc: Locale, title: str, desc: str) -> str:
    n = len(rows)
    body = "".join(_row(r, 2 + r * ROW_PITCH, rows[r], sources[r], n, op, loc, faded[r]) for r in range(n))
    return svg(ident, WIDTH, math.ceil(2 + n * ROW_PITCH), body, title, desc)


def _arrow_head(x: float, y: float) -> str:
    """A small head pointing down, its tip at (x, y)."""
    return f'<path class="w-coll-head" d="M{num(x - 3.5)} {num(y - 5)}L{num(x + 3.5)} {num(y - 5)}L{num(x)} {num(y)}Z"/>'


def _ring_svg(walk: Sequence[coll.RingStep], k: int, n: int, loc: Locale, title: str, desc: str) -> str:
    """The vectors after ring step k; the chunk each rank sent is framed, with an arrow
    to the next rank (the last rank's arrow goes round the right-hand side to rank 0)."""
    step = walk[k]
    sent = {(src, chunk) for src, _, chunk in step.sends}
    received = {(dst, chunk) for _, dst, chunk in step.sends}
    body = []
    for r in range(n):
        y = RING_TOP + r * RING_PITCH
        sources = [frozenset(c) for c in step.contributors[r]]
        body.append(_row(r, y, step.state[r], sources, n, "all_reduce", loc))
        for chunk in range(n):
            x = CELLS_X + chunk * CELL_PITCH
            if (r, chunk) in sent:
                body.append(f'<rect class="w-coll-send" x="{num(x - 1.5)}" y="{num(y - 1.5)}" width="{num(CELL_W + 3)}" height="{num(CELL_H + 3)}" rx="3"/>')
            if (r, chunk) in received:
                body.append(f'<rect class="w-coll-recv" x="{num(x - 1.5)}" y="{num(y - 1.5)}" width="{num(CELL_W + 3)}" height="{num(CELL_H + 3)}" rx="3"/>')
    last_y = RING_TOP + (n - 1) * RING_PITCH
    gutter_x = CELLS_X + (n - 1) * CELL_PITCH + CELL_W + GUTTER_GAP
    for src, dst, chunk in step.sends:
        cx = CELLS_X + chunk * CELL_PITCH + CELL_W / 2
        top = RING_TOP + src * RING_PITCH + CELL_H + 2
        if dst == src + 1:
            end = RING_TOP + dst * RING_PITCH - 2
            body.append(f'<line class="w-coll-arrow" x1="{num(cx)}" y1="{num(top)}" x2="{num(cx)}" y2="{num(end - 4)}"/>{_arrow_head(cx, end)}')
        else:  # the ring closes: rank n−1 → rank 0, round the right-hand side
            below, above = last_y + CELL_H + 7, RING_TOP - 7
            body.append(f'<path class="w-coll-arrow" d="M{num(cx)} {num(top)}V{num(below)}H{num(gutter_x)}'
                        f'V{num(above)}H{num(cx)}V{num(RING_TOP - 6)}"/>{_arrow_head(cx, RING_TOP - 2)}')
    return svg("w-coll-ring", WIDTH, math.ceil(last_y + CELL_H + 10), "".join(body), title, desc)


def _bytes_svg(n: int, op: str, size: float, f: Mapping[str, str], loc: Locale, title: str, desc: str) -> str:
    """Bytes each rank sends under the ring algorithm, for all eight operations; the
    dashed line is the message S, the chosen operation is highlighted."""
    label_x, bar_x, per_s = 94.0, 100.0, 100.0  # 100 units per message S; bars stay below 2 S
    value_x = bar_x + 2 * per_s + 8
    top, pitch, bar_h = 16.0, 15.0, 10.0
    s_x = bar_x + per_s
    parts = [f'<line class="w-coll-sline" x1="{num(s_x)}" y1="{num(top - 4)}" x2="{num(s_x)}" y2="{num(top + len(coll.OPS) * pitch)}"/>'
             f'<text class="w-fig-tick" x="{num(s_x)}" y="10" text-anchor="middle">{esc(loc.t(f"{NAME}.figure.size_line", size=f["size_bytes"]))}</text>']
    for i, o in enumerate(coll.OPS):
        y = top + i * pitch
        sent = coll.ring_bytes_per_rank(o, size, n)
        width = sent / size * per_s
        on = " w-coll-on" if o == op else ""
        parts.append(f'<text class="w-fig-note{on}" x="{num(label_x)}" y="{num(y + 9)}" text-anchor="end">{esc(loc.t(f"{NAME}.names.{o}"))}</text>'
                     f'<rect class="w-coll-bar{on}" x="{num(bar_x)}" y="{num(y)}" width="{num(width)}" height="{num(bar_h)}"/>'
                     f'<text class="w-fig-tick{on}" x="{num(value_x)}" y="{num(y + 9)}">{esc(loc.bytes(sent))}</text>')
    return svg("w-coll-bytes", WIDTH, math.ceil(top + len(coll.OPS) * pitch + 2), "".join(parts), title, desc)


def _swatch(cls: str) -> str:
    return f'<span class="w-swatch w-coll-swatch {cls}"></span>'


def _legend(items: Sequence[tuple[str, str]]) -> str:
    return '<ul class="w-legend">' + "".join(f"<li>{_swatch(cls)}{esc(text)}</li>" for cls, text in items) + "</ul>"


def _ring_part(state: Mapping[str, Any], f: Mapping[str, str], loc: Locale) -> str:
    n = state["ranks"]
    walk = ring_walk(n)
    k = shown_step(state)
    step = walk[k]
    half = {phase: len([s for s in walk if s.phase == phase]) for phase in ("reduce_scatter", "all_gather")}
    t = f"{NAME}.figure."
    control = loc.t(f"{NAME}.controls.step.label")
    if step.phase == "start":
        heading = loc.t(t + "ring_start", steps=f["steps"], control=control)
    else:
        heading = loc.t(t + f"ring_{step.phase}", step=loc.integer(k), steps=f["steps"],
                        k=loc.integer(step.step), half=loc.integer(half[step.phase]))
    complete = len([c for row in step.contributors for c in row if len(c) == n])
    cells = len([c for row in step.contributors for c in row])
    sends = loc.t(t + "rank_sep").join(
        loc.t(t + "ring_send", src=loc.integer(s), dst=loc.integer(d), chunk=loc.integer(c)) for s, d, c in step.sends)
    vectors = _vectors_text(step.state, "all_reduce", loc)
    if step.sends:
        desc = loc.t(t + "ring_desc", step=loc.integer(k), steps=f["steps"], vectors=vectors, sends=sends,
                     complete=loc.integer(complete), cells=loc.integer(cells))
        recv = "legend_recv_copy" if step.phase == "all_gather" else "legend_recv_add"
        legend = _legend([("w-coll-swatch-send", loc.t(t + "legend_send", last=loc.integer(n - 1))),
                          ("w-coll-swatch-recv", loc.t(t + recv))])
    else:
        desc = loc.t(t + "ring_desc_start", steps=f["steps"], vectors=vectors)
        legend = ""
    notes = [loc.t(t + "ring_complete", complete=loc.integer(complete), cells=loc.integer(cells), ranks=f["ranks"])]
    return (f'<p class="w-fig-heading">{esc(heading)}</p>{_ring_svg(walk, k, n, loc, heading, desc)}'
            f'{legend}<p class="w-coll-note">{esc(" ".join(notes))}</p>')


def figure(state: Mapping[str, Any], v: Mapping[str, float], f: Mapping[str, str], loc: Locale) -> str:
    op, n = state["op"], state["ranks"]
    t = f"{NAME}.figure."
    name = loc.t(f"{NAME}.names.{op}")
    before, after = run(op, n)
    start = [[frozenset((r,))] * len(row) for r, row in enumerate(before)]
    before_heading = loc.t(t + "before", op=name)
    before_desc = loc.t(t + "before_desc", op=name, vectors=_vectors_text(before, op, loc))
    after_heading = loc.t(t + "after", op=name, what=loc.t(f"{NAME}.what.{op}"))
    after_desc = loc.t(t + "after_desc", op=name, vectors=_vectors_text(after, op, loc))
    not_root = [r != ROOT for r in range(n)]
    legend = [("w-coll-swatch-ranks", loc.t(t + "legend_numbers"))]
    if op not in ("broadcast", "scatter", "gather", "all_gather", "all_to_all"):
        legend.append(("w-coll-swatch-strip", loc.t(t + "legend_strip")))
        legend.append(("w-coll-swatch-full", loc.t(t + "legend_full", ranks=f["ranks"])))
    if op in IGNORED_BEFORE:
        legend.append(("w-coll-swatch-faded", loc.t(t + "legend_ignored")))
    if op in KEPT_AFTER:
        legend.append(("w-coll-swatch-faded", loc.t(t + "legend_kept")))
    if op == "all_reduce":
        middle = _ring_part(state, f, loc)
    else:
        middle = f'<p class="w-coll-note">{esc(loc.t(t + "step_idle", control=loc.t(f"{NAME}.controls.step.label")))}</p>'
    bytes_heading = loc.t(t + "bytes", size=f["size_bytes"], ranks=f["ranks"])
    bytes_desc = loc.t(t + "bytes_desc", size=f["size_bytes"], list=loc.t(t + "rank_sep").join(
        loc.t(t + "bytes_item", op=loc.t(f"{NAME}.names.{o}"), sent=loc.bytes(coll.ring_bytes_per_rank(o, v["size_bytes"], n)))
        for o in coll.OPS))
    return (
        f'<figure class="w-fig w-coll-fig">'
        f'<figcaption class="w-fig-heading">{esc(before_heading)}</figcaption>'
        f'{_vectors_svg("w-coll-before", op, before, start, [op in IGNORED_BEFORE and x for x in not_root], loc, before_heading, before_desc)}'
        f'{_legend(legend)}{middle}'
        f'<p class="w-fig-heading">{esc(after_heading)}</p>'
        f'{_vectors_svg("w-coll-after", op, after, provenance(op, n), [op in KEPT_AFTER and x for x in not_root], loc, after_heading, after_desc)}'
        f'<p class="w-fig-heading">{esc(bytes_heading)}</p>{_bytes_svg(n, op, v["size_bytes"], f, loc, bytes_heading, bytes_desc)}'
        f'</figure>'
    )
