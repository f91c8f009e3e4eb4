"""Widget `saved`: what autograd saves for backward in one transformer layer, term by term.

Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
Sec. 4.1, lists the tensors one layer stores for the backward pass: the attention block's
11·s·b·h + 5·a·s²·b bytes, the MLP's 19·s·b·h, the two LayerNorms' 4·s·b·h. Each term is
one bar with its bytes and the paper's size; selective recomputation drops the three
attention-score terms (Sec. 5), full recomputation keeps only the layer's input (Table 2,
2·s·b·h), and the dropped bars fade. The total stored equals calc's
`activation_bytes_per_layer`; the lab examples/activations.py measures the same terms with
saved_tensors_hooks.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from calc import activations as act

from ..framework.html import esc, num, stat_cards, svg
from ..framework.locale import Locale
from ..framework.spec import Choice, NumberChoice, Range
from ._common import all_values_table, output_label

NAME = "saved"
HIDDENS = ("1024", "2048", "4096", "5120", "8192", "12288")
HEADS = ("8", "16", "32", "40", "64", "96")
SEQ_LENS = ("512", "1024", "2048", "4096", "8192")
BLOCKS = ("attention", "mlp", "layernorm")
COLOURS = {"attention": "w-c1", "mlp": "w-c2", "layernorm": "w-c3"}

CONTROLS = (
    NumberChoice("hidden", HIDDENS, "4096"),
    NumberChoice("heads", HEADS, "32", labels={a: a for a in HEADS}),
    NumberChoice("seq_len", SEQ_LENS, "4096"),
    Range("micro_batch", lo=1, hi=16, step=1, default=1, integer=True, display="integer"),
    Choice("recompute", act.RECOMPUTE_MODES, "none", radio=True),
)

# The paper's terms (their keys do not depend on the shape), in the paper's order.
TERMS = tuple(t.key for t in act.activation_terms_per_layer(hidden=1, heads=1, seq_len=1, micro_batch=1))

OUTPUTS: dict[str, str] = {
    "stored_bytes": "bytes",
    "baseline_bytes": "bytes",
    "dropped_bytes": "bytes",
    "stored_terms": "integer",
    "dropped_terms": "integer",
    "reduction": "ratio",
    **{f"{key}_bytes": "bytes" for key in TERMS},
    "attention_bytes": "bytes",
    "mlp_bytes": "bytes",
    "layernorm_bytes": "bytes",
    "attention_score_bytes": "bytes",
    "score_share": "fraction",
    "sbh": "count",
    "as2b": "count",
    "hidden": "integer",
    "heads": "integer",
    "seq_len": "integer",
    "micro_batch": "integer",
}


def _shape(state: Mapping[str, Any]) -> dict[str, int]:
    return dict(hidden=int(state["hidden"]), heads=int(state["heads"]), seq_len=int(state["seq_len"]),
                micro_batch=int(state["micro_batch"]))


def terms(state: Mapping[str, Any]) -> tuple[tuple[act.ActivationTerm, ...], set[str]]:
    """Every term of one layer (no recomputation) and the keys the chosen mode stores."""
    shape = _shape(state)
    every = act.activation_terms_per_layer(**shape)
    kept = {t.key for t in act.activation_terms_per_layer(**shape, recompute=state["recompute"])}
    return every, kept


def compute(state: Mapping[str, Any]) -> dict[str, float]:
    shape = _shape(state)
    every, kept = terms(state)
    stored = act.activation_bytes_per_layer(**shape, recompute=state["recompute"])
    baseline = act.activation_bytes_per_layer(**shape)
    scores = act.attention_score_bytes_per_layer(**shape)
    h, a, s, b = shape["hidden"], shape["heads"], shape["seq_len"], shape["micro_batch"]
    return {
        "stored_bytes": stored,
        "baseline_bytes": baseline,
        "dropped_bytes": baseline - stored,
        "stored_terms": len(kept),
        "dropped_terms": len(every) - len(kept),
        "reduction": baseline / stored,
        **{f"{t.key}_bytes": t.bytes for t in every},
        **{f"{block}_bytes": math.fsum(t.bytes for t in every if t.block == block) for block in BLOCKS},
        "attention_score_bytes": scores,
        "score_share": scores / baseline,
        "sbh": float(s) * b * h,
        "as2b": float(a) * s * s * b,
        "hidden": h,
        "heads": a,
        "seq_len": s,
        "micro_batch": b,
    }


def render(state: Mapping[str, Any], v: Mapping[str, float], loc: Locale) -> str:
    """Stat cards, the bars of the terms and the total, the sentence, the table of values."""
    f = {key: loc.format(kind, v[key]) for key, kind in OUTPUTS.items()}
    cards = stat_cards([(output_label(NAME, k, loc), k, v[k], OUTPUTS[k]) for k in
                        ("stored_bytes", "baseline_bytes", "dropped_bytes", "stored_terms")], loc)
    mode = state["recompute"]
    sentence = loc.h(f"saved.sentence_{mode}", stored=f["stored_bytes"], baseline=f["baseline_bytes"],
                     scores=f["attention_score_bytes"], share=f["score_share"], reduction=f["reduction"],
                     dropped=f["dropped_bytes"], kept=f["stored_terms"], dropped_terms=f["dropped_terms"],
                     terms=loc.integer(len(TERMS)))
    return (f'{cards}{figure(state, v, f, loc)}<p class="w-sentence">{sentence}</p>'
            f'{all_values_table(NAME, OUTPUTS, v, loc)}')


# -- the figure -------------------------------------------------------------------------
# SVGs 400 units wide (legible on a 375 px phone); headings, legends and notes are HTML.
WIDTH = 400
LABEL_END, BAR_X, BAR_END, VALUE_GAP = 176.0, 180.0, 326.0, 4.0
ROW_PITCH, ROW_H, HEAD_PITCH = 17.0, 12.0, 19.0


def _terms_svg(every: tuple[act.ActivationTerm, ...], kept: set[str], loc: Locale, title: str, desc: str) -> str:
    """One bar per term on one linear scale, grouped by block; the terms the mode does
    not store are faded."""
    scale = (BAR_END - BAR_X) / max(t.bytes for t in every)
    parts, y = [], 2.0
    for block in BLOCKS:
        members = [t for t in every if t.block == block]
        total = math.fsum(t.bytes for t in members)
        head = loc.t(f"saved.blocks.{block}", bytes=loc.bytes(total))
        parts.append(f'<text class="w-fig-note w-act-cur" x="4" y="{num(y + 12)}">{esc(head)}</text>')
        y += HEAD_PITCH
        for t in members:
            stored = t.key in kept
            bar_cls = COLOURS[block] + ("" if stored else " w-act-dim")
            text_cls = "w-fig-value" + ("" if stored else " w-act-dimtext")
            label = loc.t("saved.figure.row", term=loc.t(f"saved.terms.{t.key}"), formula=t.formula)
            end = BAR_X + max(t.bytes * scale, 1.0)
            value = loc.bytes(t.bytes) if stored else loc.t("saved.figure.dropped_value", bytes=loc.bytes(t.bytes))
            parts.append(
                f'<text class="w-fig-note{"" if stored else " w-act-dimtext"}" x="{num(LABEL_END)}" '
                f'y="{num(y + 9.5)}" text-anchor="end">{esc(label)}</text>'
                f'<rect class="{bar_cls}" x="{num(BAR_X)}" y="{num(y)}" width="{num(end - BAR_X)}" height="{num(ROW_H)}"/>'
                f'<text class="{text_cls}" x="{num(end + VALUE_GAP)}" y="{num(y + 9.5)}">{esc(value)}</text>'
            )
            y += ROW_PITCH
        y += 3.0
    return svg("w-saved-terms", WIDTH, math.ceil(y), "".join(parts), title, desc)


def _total_svg(every: tuple[act.ActivationTerm, ...], kept: set[str], v: Mapping[str, float], f: Mapping[str, str],
               loc: Locale, title: str, desc: str) -> str:
    """One bar of the whole layer without recomputation, block by block: the part of each
    block the mode stores, then the part it drops, faded (each block keeps its width in
    every mode, so switching modes only fades pieces)."""
    left, span, top, bar_h = 4.0, 392.0, 4.0, 22.0
    scale = span / v["baseline_bytes"]
    parts, x = [], left
    for block in BLOCKS:
        for stored in (True, False):
            width = math.fsum(t.bytes for t in every if t.block == block and (t.key in kept) == stored) * scale
            if width > 0:
                cls = COLOURS[block] + ("" if stored else " w-act-dim")
                parts.append(f'<rect class="{cls}" x="{num(x)}" y="{num(top)}" width="{num(width)}" height="{num(bar_h)}"/>')
            x += width
    label = loc.t("saved.figure.total_label", stored=f["stored_bytes"], baseline=f["baseline_bytes"])
    parts.append(f'<text class="w-fig-value" x="{num(left)}" y="{num(top + bar_h + 14)}">{esc(label)}</text>')
    return svg("w-saved-total", WIDTH, math.ceil(top + bar_h + 19), "".join(parts), title, desc)


def figure(state: Mapping[str, Any], v: Mapping[str, float], f: Mapping[str, str], loc: Locale) -> str:
    every, kept = terms(state)
    mode = state["recompute"]
    L = lambda key, **kw: loc.t(f"saved.figure.{key}", **kw)  # noqa: E731
    config = L("config", h=f["hidden"], a=f["heads"], s=f["seq_len"], b=f["micro_batch"],
               mode=loc.t(f"saved.controls.recompute.options.{mode}"))
    heading = L("terms")
    listed = "; ".join(L("desc_item", term=loc.t(f"saved.terms.{t.key}"), formula=t.formula,
                         bytes=loc.bytes(t.bytes), status=L("kept" if t.key in kept else "dropped"))
                       for t in every)
    terms_desc = L("terms_desc", values=listed, stored=f["stored_bytes"])
    total_heading = L("total")
    total_desc = L("total_desc", stored=f["stored_bytes"], baseline=f["baseline_bytes"], dropped=f["dropped_bytes"])
    legend = "".join(f'<li><span class="w-swatch {COLOURS[block]}"></span>{esc(L(f"legend_{block}"))}</li>'
                     for block in BLOCKS)
    if v["dropped_terms"]:
        legend += f'<li>{esc(L("legend_dropped"))}</li>'
    note = L(f"note_{mode}", sbh=f["sbh"], as2b=f["as2b"])
    return (
        f'<figure class="w-fig w-saved-fig">'
        f'<figcaption class="w-fig-heading w-act-config">{esc(config)}</figcaption>'
        f'<p class="w-fig-heading">{esc(heading)}</p>'
        f'{_terms_svg(every, kept, loc, heading, terms_desc)}'
        f'<ul class="w-legend">{legend}</ul>'
        f'<p class="w-act-note">{esc(note)}</p>'
        f'<p class="w-fig-heading">{esc(total_heading)}</p>{_total_svg(every, kept, v, f, loc, total_heading, total_desc)}'
        f'</figure>'
    )
