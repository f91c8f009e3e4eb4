"""Widget `pp`: pipeline parallelism (seed 000, step 5).

The layers are split into p stages and the batch into m micro-batches. The timeline
comes from simulating the schedule (calc.pipeline.simulate_schedule), and the bubble
is read off that simulation, not drawn from the formula.

The figure draws the simulated events: one row per stage (GPU s with its layers),
forward and backward boxes numbered by micro-batch, idle time grey, a time axis in
units of one forward pass (backward = 2 units); interleaved chunks are lighter shades.
A second, small chart shows the activations each stage holds at its peak.

ZB-H1, ZB-H2 (Qi et al. 2024) and DualPipe (DeepSeek-V3, Table 2) split the backward
into B (input gradient) and W (weight gradient, green), one unit each, as the ZB paper's
Sec. 2 assumes (T_F = T_B = T_W); DualPipe's overlapped pairs F&B (F + B here: the
overlap hides communication) are outlined, its second direction is the lighter shade.
DualPipe needs an even p and an even m ≥ 2p: for other settings the widget simulates
the nearest such pipeline and says so (``stages_simulated``, ``microbatches_simulated``).

For the worked examples: the formula's slots (p − 1 to fill, v·m + p − 1 a step), the
bubble over the ideal time, the point-to-point messages per micro-batch, stage 0's
activations against GPipe's, the fewest micro-batches for a bubble target
(``calc.pipeline.microbatches_for_bubble``), and whether the state per GPU fits the
memory of the chosen machine (``calc.hardware.MACHINES``; the seed's illustrative one by
default).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Mapping

from calc import pipeline
from calc.hardware import get_machine
from calc.pipeline import ScheduleSummary, simulate_schedule, summarize_schedule

from ..framework.html import esc, line_label, num, stat_cards, svg
from ..framework.locale import Locale
from ..framework.spec import Choice, Range
from ._common import MACHINE, machine_label, MODEL, all_values_table, model_params, output_label

NAME = "pp"
FWD, BWD = 1, 2  # time units of a forward and a backward pass (backward = 2 × forward)
WGRAD = 1  # of the backward's 2 units, the weight gradient W (T_B = T_W = T_F, ZB Sec. 2)
SPLIT = pipeline.SPLIT_BACKWARD

CONTROLS = (
    Range("stages", lo=1, hi=8, step=1, default=4, integer=True, display="integer"),
    Range("microbatches", lo=1, hi=32, step=1, default=4, integer=True, display="integer"),
    Choice("schedule", ("gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "dualpipe"), "gpipe", radio=True),
    Range("chunks", lo=2, hi=4, step=1, default=2, integer=True, display="integer"),
    MODEL,
    # the bubble the reader aims for (GPipe, 1F1B, interleaved formula) and the GPU
    Range("target", lo=0.01, hi=0.5, step=0.01, default=0.1, display="fraction"),
    MACHINE,
)

OUTPUTS: dict[str, str] = {
    "bubble": "fraction",
    "bubble_formula": "fraction",
    "layers_per_gpu": "integer",
    "state_per_gpu_bytes": "bytes",
    # Whole numbers except with interleaving, where a chunk's pass lasts 1/v unit.
    "busy_units": "number",
    "total_units": "number",
    "in_flight": "number",
    "activation_transfer_bytes": "bytes",
    # Idle units per stage and step period (simulated) and the paper's formula for it.
    "bubble_units": "number",
    "bubble_units_formula": "number",
    "in_flight_max": "number",
    "param_copies": "integer",
    "stages_simulated": "integer",
    "microbatches_simulated": "integer",
    # The formula's parts (GPipe, 1F1B, interleaved; v = 1 for the other schedules):
    # p − 1 slots to fill, v·m + p − 1 slots a step, (p − 1)/(v·m) over the ideal time.
    "fill_slots": "integer",
    "step_slots": "integer",
    "bubble_over_ideal": "fraction",
    "microbatch_units": "number",  # T_F + T_B + T_W: one micro-batch's F and B on a stage
    "p2p_messages": "integer",
    "in_flight_share": "fraction",  # stage 0's activations over GPipe's (all m)
    "bubble_target": "fraction",
    "target_coefficient": "number",
    "target_microbatches": "integer",
    "gpu_memory_bytes": "bytes",
    "fits": "yesno",
}


def simulated_shape(p: int, m: int, schedule: str) -> tuple[int, int]:
    """The (p, m) the widget simulates: the reader's, except that DualPipe needs an even
    p and an even m of at least 2p (``calc.pipeline.check_dualpipe``), so it rounds p up
    to even and m up to the nearest such count."""
    if schedule != "dualpipe":
        return p, m
    p2 = p + p % 2
    return p2, max(m + m % 2, 2 * p2)


@lru_cache(maxsize=16)
def _simulated(p: int, m: int, schedule: str, chunks: int) -> tuple[tuple[pipeline.ScheduleEvent, ...], ScheduleSummary]:
    """The simulated schedule and its summary, memoized: compute() and render() of one
    state share one simulation (the largest, 8 × 32 × 4 chunks, has 2,048 events)."""
    p, m = simulated_shape(p, m, schedule)
    events = tuple(simulate_schedule(pp=p, microbatches=m, schedule=schedule, chunks=chunks, fwd=FWD, bwd=BWD,
                                     wgrad=WGRAD))
    return events, summarize_schedule(list(events))


@lru_cache(maxsize=16)
def _pairs(p: int, m: int) -> tuple[tuple[int, float, float], ...]:
    """DualPipe's overlapped F&B pairs, (stage, start, end)."""
    return tuple(pipeline.overlapped_spans(pp=p, microbatches=m, fwd=FWD, bwd=BWD, wgrad=WGRAD))


def inactive(state: Mapping[str, Any]) -> tuple[str, ...]:
    """v (chunks per GPU) belongs to the interleaved schedule only."""
    return () if state["schedule"] == "interleaved" else ("chunks",)


def _key(state: Mapping[str, Any]) -> tuple[int, int, str, int]:
    return int(state["stages"]), int(state["microbatches"]), state["schedule"], int(state["chunks"])


def schedule_events(state: Mapping[str, Any]) -> list[pipeline.ScheduleEvent]:
    return list(_simulated(*_key(state))[0])


def compute(state: Mapping[str, Any]) -> dict[str, float]:
    model, params = model_params(state)
    schedule = state["schedule"]
    p, m = simulated_shape(state["stages"], state["microbatches"], schedule)
    v = state["chunks"] if schedule == "interleaved" else 1
    summary = _simulated(*_key(state))[1]
    copies = pipeline.parameter_copies(schedule)
    state_bytes = pipeline.state_per_gpu_bytes(params=params, pp=p, copies=copies)
    memory = get_machine(state["machine"]).gpu.memory_bytes
    target = state["target"]
    if schedule in SPLIT:
        # the paper's bubble as a fraction of a step that lasts busy + bubble
        formula_units = pipeline.bubble_time(pp=p, schedule=schedule, fwd=FWD, bwd=BWD, wgrad=WGRAD)
        formula = pipeline.bubble_share(bubble=formula_units, busy=summary.busy_time)
    else:
        formula_units = pipeline.bubble_time(pp=p, schedule=schedule, chunks=v, fwd=FWD, bwd=BWD)
        formula = pipeline.bubble_fraction_of_time(pp=p, microbatches=m, chunks=v)
    return {
        "bubble": summary.bubble_fraction_of_time,
        "bubble_formula": formula,
        "layers_per_gpu": copies * pipeline.layers_per_stage(model.layers, p),
        "state_per_gpu_bytes": state_bytes,
        "busy_units": summary.busy_time,
        "total_units": summary.total_time,
        "in_flight": summary.peak_in_flight[0],
        "activation_transfer_bytes": pipeline.activation_transfer_bytes(hidden=model.hidden, seq_len=model.seq_len),
        "bubble_units": summary.idle_per_period,
        "bubble_units_formula": formula_units,
        "in_flight_max": max(summary.peak_in_flight),
        "param_copies": copies,
        "stages_simulated": p,
        "microbatches_simulated": m,
        "fill_slots": p - 1,
        "step_slots": v * m + p - 1,
        "bubble_over_ideal": pipeline.bubble_over_ideal_time(pp=p, microbatches=m, chunks=v),
        "microbatch_units": FWD + BWD,
        "p2p_messages": pipeline.p2p_messages_per_microbatch(pp=p, chunks=v),
        "in_flight_share": summary.peak_in_flight[0] / m,
        "bubble_target": target,
        "target_coefficient": pipeline.bubble_target_coefficient(target),
        "target_microbatches": pipeline.microbatches_for_bubble(pp=p, bubble=target, chunks=v),
        "gpu_memory_bytes": memory,
        "fits": 1 if state_bytes <= memory else 0,
    }


def render(state: Mapping[str, Any], v: Mapping[str, float], loc: Locale) -> str:
    """Stat cards, the simulated timeline, the activations in flight, the sentence and
    the table of values."""
    model, _ = model_params(state)
    p, m, schedule, chunks = _key(state)
    events, summary = _simulated(p, m, schedule, chunks)
    p, m = simulated_shape(p, m, schedule)
    chunks = chunks if schedule == "interleaved" else 1
    f = {key: loc.format(kind, v[key]) for key, kind in OUTPUTS.items()}
    card_keys = ["bubble", "layers_per_gpu", "state_per_gpu_bytes", "in_flight"]
    if schedule in SPLIT:
        card_keys += ["bubble_units", "bubble_units_formula"]
    if schedule == "dualpipe":
        card_keys.append("param_copies")
    cards = stat_cards([(output_label(NAME, key, loc), key, v[key], OUTPUTS[key]) for key in card_keys], loc)
    notice = ""
    if (p, m) != (int(state["stages"]), int(state["microbatches"])):
        notice = (f'<p class="w-pp-note" data-notice="dualpipe-shape">'
                  f'{loc.h("pp.dualpipe_shape", p=f["stages_simulated"], m=f["microbatches_simulated"])}</p>')
    return (f'{notice}{cards}{figure(model, p, m, schedule, chunks, events, summary, v, f, loc, state["machine"])}'
            f'<p class="w-sentence">{_join(_sentence(model, p, m, schedule, chunks, v, f, loc), _plan(state, p, schedule, v, f, loc), loc)}</p>'
            f'{all_values_table(NAME, OUTPUTS, v, loc)}')


def _sentence(model: Any, p: int, m: int, schedule: str, chunks: int, v: Mapping[str, float],
              f: Mapping[str, str], loc: Locale) -> str:
    common = dict(p=loc.integer(p), m=loc.integer(m), bubble=f["bubble"], formula=f["bubble_formula"],
                  busy=f["busy_units"], total=f["total_units"], in_flight=f["in_flight"],
                  transfer=f["activation_transfer_bytes"], seq=loc.integer(model.seq_len))
    if schedule in SPLIT:
        return _sentence_split(p, m, schedule, v, f, loc, common)
    if p == 1:
        return loc.h("pp.sentence_single", layers=loc.integer(model.layers), state=f["state_per_gpu_bytes"], **common)
    if schedule == "interleaved":
        clause = "pp.formula_same" if f["bubble"] == f["bubble_formula"] else "pp.formula_differs"
        return loc.h("pp.sentence_interleaved", v=loc.integer(chunks),
                     formula_clause=loc.t(clause, formula=f["bubble_formula"], p=loc.integer(p)), **common)
    if schedule == "1f1b":
        template = "pp.sentence_1f1b" if v["in_flight"] < m else "pp.sentence_1f1b_few"
        return loc.h(template, **common)
    return loc.h("pp.sentence_gpipe", **common)


def _plan(state: Mapping[str, Any], p: int, schedule: str, v: Mapping[str, float], f: Mapping[str, str],
          loc: Locale) -> str:
    """Whether the state per GPU fits the machine's GPU and, for the schedules of the
    (p − 1)/(v·m + p − 1) formula, the micro-batches a bubble target needs."""
    machine = machine_name(state["machine"], loc)
    text = loc.h("pp.fit_yes" if v["fits"] else "pp.fit_no", state=f["state_per_gpu_bytes"],
                 gpu=f["gpu_memory_bytes"], machine=machine)
    if schedule not in SPLIT and p > 1:
        text = _join(text, loc.h("pp.target", target=f["bubble_target"], need=f["target_microbatches"],
                                 p=loc.integer(p)), loc)
    return text


def machine_name(machine: str, loc: Locale) -> str:
    """The machine as a sentence names it: a DGX by its name, the book's own machine in
    lower case ("mesin ilustratif buku"), not as the option label that opens a menu line."""
    if machine == "book":
        return loc.t("pp.book_machine")
    return machine_label("pp", machine, loc)


def _join(first: str, second: str, loc: Locale) -> str:
    """Two escaped sentences in a row, spaced as the language spaces them."""
    return loc.t("pp.join", first=first, second=second)


# The fewest micro-batches for which the handcrafted schedules reach their formula.
FORMULA_NEEDS = {"zb-h1": lambda p: p, "zb-h2": lambda p: 2 * p - 1}


def _sentence_split(p: int, m: int, schedule: str, v: Mapping[str, float], f: Mapping[str, str], loc: Locale,
                    common: dict[str, str]) -> str:
    """ZB-H1, ZB-H2, DualPipe: the simulated idle units against the paper's formula."""
    key = schedule.replace("-", "_")
    units = dict(idle=f["bubble_units"], idle_formula=f["bubble_units_formula"], peak=f["in_flight_max"],
                 copies=f["param_copies"])
    if schedule == "dualpipe":
        clause = "pp.dualpipe_same" if f["bubble_units"] == f["bubble_units_formula"] else "pp.dualpipe_differs"
        return loc.h("pp.sentence_dualpipe", clause=loc.t(clause, idle_formula=f["bubble_units_formula"]),
                     **units, **common)
    need = FORMULA_NEEDS[schedule](p)
    if f["bubble_units"] == f["bubble_units_formula"]:
        clause = loc.t(f"pp.{key}_same", idle_formula=f["bubble_units_formula"])
    else:
        clause = loc.t("pp.split_differs", idle_formula=f["bubble_units_formula"], need=loc.integer(need))
    # ZB-H2 with no idle unit (m ≥ 2p − 1 here) says so in words, not as "0 units".
    none = schedule == "zb-h2" and abs(v["bubble_units"]) < 1e-9
    return loc.h(f"pp.sentence_{key}_none" if none else f"pp.sentence_{key}", clause=clause, **units, **common)


# -- the figure -------------------------------------------------------------------------
# SVGs 400 units wide (legible on a 375 px phone); heading, legend and notes are HTML.
WIDTH = 400
TL_X, TL_W = 62, 334  # the timeline's left edge and width; stage labels to its left
TICK_STEPS = (1, 2, 5, 10, 20, 50, 100)
KIND_CLASS = {"F": "w-pp-f", "B": "w-pp-b", "W": "w-pp-w w-c3"}  # W: a third colour
DIGIT_W = 5.6  # width of one digit of a box's number (10 px font), in SVG units
LABEL_CHARS = 11  # longest layer label that fits left of the timeline (L0–3, 16–19)


def _tick_step(total: float) -> int:
    return next((s for s in TICK_STEPS if total / s <= 8), TICK_STEPS[-1])


def _range_text(first: int, last: int) -> str:
    return f"{first}–{last}" if last > first else f"{first}"


def _stage_labels(model: Any, p: int, chunks: int, schedule: str = "gpipe") -> list[str]:
    """Layers of each stage, L0–7; with interleaving each GPU holds v chunks, p stages
    apart (chunk c of GPU s is virtual stage c·p + s): L0–3, 16–19; with DualPipe GPU s
    holds stages s and p − 1 − s: L0–7, 24–31."""
    if schedule == "dualpipe":
        stages = pipeline.stage_layers(model.layers, p)
        return ["L" + ", ".join(_range_text(*stages[k]) for k in (s, p - 1 - s)) for s in range(p)]
    if chunks == 1:
        return ["L" + _range_text(a, b) for a, b in pipeline.stage_layers(model.layers, p)]
    virtual = pipeline.stage_layers(model.layers, p * chunks)
    return ["L" + ", ".join(_range_text(*virtual[c * p + s]) for c in range(chunks)) for s in range(p)]


def _timeline_svg(p: int, m: int, events: tuple[pipeline.ScheduleEvent, ...], summary: ScheduleSummary,
                  labels: list[str], loc: Locale, title: str, desc: str,
                  pairs: tuple[tuple[int, float, float], ...] = ()) -> str:
    """One row per stage: idle gaps grey, then each simulated pass as a box."""
    row_h = 26 if p <= 4 else 22
    box_h = row_h - 6
    top = 2
    rows_h = p * row_h
    total = summary.total_time
    scale = TL_W / total
    digits_w = len(str(m)) * DIGIT_W + 3
    parts: list[str] = []
    # time axis: grid lines and ticks in units
    step = _tick_step(total)
    for k in range(0, int(total // step) + 1):
        x = TL_X + k * step * scale
        parts.append(f'<line class="w-grid" x1="{num(x)}" y1="{top}" x2="{num(x)}" y2="{top + rows_h + 3}"/>'
                     f'<text class="w-fig-tick" x="{num(x)}" y="{top + rows_h + 15}" text-anchor="middle">{esc(loc.integer(k * step))}</text>')
    # stage labels and idle time (the gaps between a stage's passes)
    by_stage: list[list[pipeline.ScheduleEvent]] = [[] for _ in range(p)]
    for e in events:
        by_stage[e.stage].append(e)
    show_layers = max(len(text) for text in labels) <= LABEL_CHARS  # else only in the note
    for s in range(p):
        y = top + s * row_h
        gpu = esc(loc.t("pp.figure.gpu", index=loc.integer(s)))
        if show_layers:
            parts.append(f'<text class="w-fig-note" x="{TL_X - 5}" y="{y + row_h / 2 - 1}" text-anchor="end">{gpu}</text>'
                         f'<text class="w-fig-tick w-pp-layers" x="{TL_X - 5}" y="{y + row_h / 2 + 9}" text-anchor="end">{esc(labels[s])}</text>')
        else:
            parts.append(f'<text class="w-fig-note" x="{TL_X - 5}" y="{y + row_h / 2 + 4}" text-anchor="end">{gpu}</text>')
        clock = 0.0
        for e in by_stage[s] + [None]:  # type: ignore[list-item]
            start = total if e is None else e.start
            if start - clock > 1e-9:  # a real gap, not a rounding residue
                parts.append(f'<rect class="w-pp-idle" x="{num(TL_X + clock * scale)}" y="{num(y + 3)}"'
                             f' width="{num((start - clock) * scale)}" height="{box_h}"/>')
            if e is not None:
                clock = e.end
    # the passes, numbered by micro-batch (1-based, as in the seed) when there is room
    boxes = []
    for e in events:
        x = TL_X + e.start * scale
        w = (e.end - e.start) * scale
        y = top + e.stage * row_h + 3
        cls = KIND_CLASS[e.kind] + (f" w-pp-k{e.chunk}" if e.chunk else "") + ("" if w >= 3 else " w-pp-thin")
        boxes.append(f'<rect class="{cls}" x="{num(x)}" y="{y}" width="{num(w)}" height="{box_h}"/>')
        if w >= digits_w:
            boxes.append(f'<text class="w-pp-num{" w-pp-num-k" if e.chunk else ""}" x="{num(x + w / 2)}" y="{y + box_h / 2 + 3.5}" text-anchor="middle">{e.microbatch + 1}</text>')
    parts.extend(boxes)
    # DualPipe's overlapped pairs F&B: one dashed outline around both passes
    for s, start, end in pairs:
        parts.append(f'<rect class="w-pp-ref w-pp-pair" fill="none" x="{num(TL_X + start * scale)}"'
                     f' y="{top + s * row_h + 1.5}" width="{num((end - start) * scale)}" height="{box_h + 3}"/>')
    return svg("w-pp-timeline", WIDTH, top + rows_h + 20, "".join(parts), title, desc)


ACT_X, ACT_W = 62, 280


def _activations_svg(p: int, m: int, summary: ScheduleSummary, loc: Locale, title: str, desc: str) -> str:
    """Peak micro-batches of activations held per stage, against m (all of them)."""
    row_h = 16
    peaks = summary.peak_in_flight
    scale = ACT_W / max(m, *peaks)
    parts = []
    ref = ACT_X + m * scale
    height = p * row_h + 16
    parts.append(f'<line class="w-pp-ref" x1="{num(ref)}" y1="12" x2="{num(ref)}" y2="{height}"/>'
                 f'<text class="w-fig-tick" x="{num(ref)}" y="9" text-anchor="end">{esc(loc.t("pp.figure.all_m", m=loc.integer(m)))}</text>')
    for s, peak in enumerate(peaks):
        y = 14 + s * row_h
        end = ACT_X + peak * scale
        parts.append(f'<text class="w-fig-note" x="{ACT_X - 5}" y="{y + 11}" text-anchor="end">{esc(loc.t("pp.figure.gpu", index=loc.integer(s)))}</text>'
                     f'<rect class="w-c4" x="{ACT_X}" y="{y + 2}" width="{num(peak * scale)}" height="{row_h - 5}"/>'
                     f'<text class="w-fig-value" x="{num(end + 4)}" y="{y + 11}">{esc(loc.number(peak))}</text>')
    return svg("w-pp-act", WIDTH, height + 2, "".join(parts), title, desc)


def _plan_svg(v: Mapping[str, float], f: Mapping[str, str], loc: Locale, machine: str, title: str, desc: str) -> str:
    """Two rows against a limit line: the simulated bubble against the reader's target,
    and the training state per GPU against the chosen machine's GPU memory."""
    row_h = 22
    parts = []
    bubble_x = ACT_X + v["bubble"] * ACT_W
    target_x = ACT_X + v["bubble_target"] * ACT_W
    top = max(v["state_per_gpu_bytes"], v["gpu_memory_bytes"])
    state_x = ACT_X + v["state_per_gpu_bytes"] / top * ACT_W
    memory_x = ACT_X + v["gpu_memory_bytes"] / top * ACT_W
    rows = (
        (loc.t("pp.figure.plan_bubble_row"), "w-c1", bubble_x, f["bubble"], target_x,
         loc.t("pp.figure.plan_target", target=f["bubble_target"])),
        (loc.t("pp.figure.plan_state_row"), "w-c4", state_x, f["state_per_gpu_bytes"], memory_x,
         loc.t("pp.figure.plan_memory", gpu=f["gpu_memory_bytes"], machine=machine)),
    )
    for k, (label, cls, end, value, limit, limit_text) in enumerate(rows):
        y = 14 + k * (row_h + 14)
        parts.append(f'<text class="w-fig-note" x="{ACT_X - 5}" y="{y + 12}" text-anchor="end">{esc(label)}</text>'
                     f'<rect class="{cls}" x="{ACT_X}" y="{y + 3}" width="{num(end - ACT_X)}" height="{row_h - 8}"/>'
                     f'<text class="w-fig-value" x="{num(end + 4)}" y="{y + 14}">{esc(value)}</text>'
                     f'<line class="w-limit" x1="{num(limit)}" y1="{y - 2}" x2="{num(limit)}" y2="{y + row_h}"/>'
                     f'{line_label(limit, y - 4, esc(limit_text), WIDTH)}')
    return svg("w-pp-plan", WIDTH, 2 * (row_h + 14) + 8, "".join(parts), title, desc)


def figure(model: Any, p: int, m: int, schedule: str, chunks: int, events: tuple[pipeline.ScheduleEvent, ...],
           summary: ScheduleSummary, v: Mapping[str, float], f: Mapping[str, str], loc: Locale,
           machine: str = "book") -> str:
    L = lambda key, **kw: loc.t(f"pp.figure.{key}", **kw)  # noqa: E731
    name = loc.t(f"pp.controls.schedule.options.{schedule}")
    split = schedule in SPLIT
    labels = _stage_labels(model, p, chunks, schedule)
    heading = L("timeline", schedule=name) if chunks == 1 else L("timeline_interleaved", schedule=name, v=loc.integer(chunks))
    timeline_desc = L("timeline_desc", p=loc.integer(p), m=loc.integer(m), total=f["total_units"],
                      busy=f["busy_units"], bubble=f["bubble"])
    legend = [f'<li><span class="w-swatch w-pp-f"></span>{esc(L("forward"))}</li>',
              f'<li><span class="w-swatch w-pp-b"></span>{esc(L("backward_input" if split else "backward"))}</li>']
    if split:
        legend.append(f'<li><span class="w-swatch w-c3"></span>{esc(L("weight"))}</li>')
    for c in range(chunks if chunks > 1 else 0):
        legend.append(f'<li><span class="w-swatch w-pp-f w-pp-k{c}"></span><span class="w-swatch w-pp-b w-pp-k{c}"></span>'
                      f'{esc(L("chunk", index=loc.integer(c)))}</li>')
    pairs: tuple[tuple[int, float, float], ...] = ()
    if schedule == "dualpipe":
        pairs = _pairs(p, m)
        legend.append(f'<li><span class="w-swatch w-pp-f w-pp-k1"></span><span class="w-swatch w-pp-b w-pp-k1"></span>'
                      f'{esc(L("reverse", last=loc.integer(p - 1)))}</li>')
        legend.append(f'<li><span class="w-swatch w-pp-f"></span><span class="w-swatch w-pp-b"></span>{esc(L("pair"))}</li>')
    legend.append(f'<li><span class="w-swatch w-pp-idle"></span>{esc(L("idle"))}</li>')
    axis = L("axis", total=f["total_units"], busy=f["busy_units"])
    if split:
        axis += " " + L("axis_split")
    if chunks > 1:
        axis += " " + L("axis_interleaved", v=loc.integer(chunks), layers=labels[0])
    if schedule == "dualpipe":
        axis += " " + L("axis_dualpipe", layers=labels[0])
    unit_w = TL_W / summary.total_time / chunks  # width of a chunk's one unit of time
    digits_w = len(str(m)) * DIGIT_W + 3
    if digits_w > (FWD if split else BWD) * unit_w:
        axis += " " + L("no_numbers")
    elif digits_w > FWD * unit_w:
        axis += " " + L("no_numbers_forward")
    act_heading = L("activations")
    act_desc = L("activations_desc", peaks=", ".join(loc.number(x) for x in summary.peak_in_flight), m=loc.integer(m))
    act_note = L(f"activations_{schedule.replace('-', '_')}", m=loc.integer(m), p=loc.integer(p),
                 v=loc.integer(chunks), peak=f["in_flight_max"])
    machine_text = machine_name(machine, loc)
    plan_heading = L("plan")
    plan_desc = L("plan_desc", bubble=f["bubble"], target=f["bubble_target"], state=f["state_per_gpu_bytes"],
                  gpu=f["gpu_memory_bytes"])
    plan_note = (L("plan_note", target=f["bubble_target"], need=f["target_microbatches"], p=loc.integer(p))
                 if not split else L("plan_note_split"))
    return (
        f'<figure class="w-fig w-pp-fig">'
        f'<figcaption class="w-fig-heading">{esc(heading)}</figcaption>'
        f'{_timeline_svg(p, m, events, summary, labels, loc, heading, timeline_desc, pairs)}'
        f'<p class="w-pp-note">{esc(axis)}</p>'
        f'<ul class="w-legend w-pp-legend">{"".join(legend)}</ul>'
        f'<p class="w-fig-heading">{esc(act_heading)}</p>'
        f'{_activations_svg(p, m, summary, loc, act_heading, act_desc)}'
        f'<p class="w-pp-note">{esc(act_note)}</p>'
        f'<p class="w-fig-heading">{esc(plan_heading)}</p>'
        f'{_plan_svg(v, f, loc, machine_text, plan_heading, plan_desc)}'
        f'<p class="w-pp-note">{esc(plan_note)}</p></figure>'
    )
