"""Small HTML and SVG builders shared by the widget modules (no framework)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from .escape import escape
from .locale import Locale, plain_number
from .spec import Choice, Control, Number, Range


def esc(text: Any) -> str:
    return escape(str(text), quote=True)


def attrs(**values: Any) -> str:
    """` a="1" b="x"` from keyword arguments; `_` in a name becomes `-`; None is left out."""
    parts = []
    for key, value in values.items():
        if value is None or value is False:
            continue
        name = key.rstrip("_").replace("_", "-")
        parts.append(f" {name}" if value is True else f' {name}="{esc(value)}"')
    return "".join(parts)


def value_span(key: str, value: float, kind: str, loc: Locale, tag: str = "span", **extra: Any) -> str:
    """An output element of the DOM contract: data-out, data-value (SI), localized text."""
    return f"<{tag}{attrs(data_out=key, data_value=plain_number(value), **extra)}>{esc(loc.format(kind, value))}</{tag}>"


def stat_cards(cards: Iterable[tuple[str, str, float, str]], loc: Locale) -> str:
    """Stat cards: (label, key, value, kind) each."""
    items = "".join(
        f'<div class="w-stat"><dt>{esc(label)}</dt><dd>{value_span(key, value, kind, loc)}</dd></div>'
        for label, key, value, kind in cards
    )
    return f'<dl class="w-stats">{items}</dl>'


def details_table(title: str, rows: Iterable[tuple[str, str, float, str]], loc: Locale) -> str:
    """Every output as a table: the figure's text alternative and the full list of values."""
    body = "".join(
        f"<tr><th scope=\"row\">{esc(label)}</th><td>{value_span(key, value, kind, loc)}</td></tr>"
        for label, key, value, kind in rows
    )
    return f'<details class="w-details"><summary>{esc(title)}</summary><table>{body}</table></details>'


def control_label(widget: str, control: Control, loc: Locale) -> str:
    return loc.t(f"{widget}.controls.{control.name}.label")


def option_label(widget: str, control: Choice, value: str, loc: Locale) -> str:
    if value in control.labels:
        return control.labels[value]
    return loc.t(f"{widget}.controls.{control.name}.options.{value}")


def control_value_text(widget: str, control: Control, value: Any, loc: Locale) -> str:
    """The text shown beside a slider (e.g. `2 triliun`), from the control's display kind;
    beside a typed number, what it was read as (`8G` → `8,59 GB`, `47535` µs → `47,5 ms`)."""
    if isinstance(control, Range):
        return loc.format(control.display, value)
    if isinstance(control, Number):
        return loc.format(control.display, control.to_si(value))
    if isinstance(control, Choice):
        return option_label(widget, control, value, loc)
    return loc.t("units.on") if value else loc.t("units.off")


def controls_html(widget: str, controls: tuple[Control, ...], state: Mapping[str, Any], loc: Locale, *,
                  inactive: tuple[str, ...] = (), limits: Mapping[str, float] | None = None) -> str:
    """The form controls, native and labelled, holding `state`: disabled until the
    browser runtime enables them, so that a page read without JavaScript offers no
    control that would change nothing; a <noscript> note says so. A control that does
    nothing in this state (`inactive`) is marked `data-inactive` and stays disabled; a
    slider's upper end may depend on the state (`limits`)."""
    rows = []
    limits = limits or {}
    for c in controls:
        label = esc(control_label(widget, c, loc))
        cid = f"w-{widget}-{c.name}"
        value = state[c.name]
        off = c.name in inactive
        if isinstance(c, Range):
            field = (
                f"<input{attrs(type='range', id=cid, name=c.name, min=plain_number(c.lo), max=plain_number(limits.get(c.name, c.hi)), step=plain_number(c.step), value=plain_number(value), disabled=True, data_inactive=off)}>"
                f"<output{attrs(for_=cid, data_label=c.name)}>{esc(control_value_text(widget, c, value, loc))}</output>"
            )
            rows.append(f'<div class="w-control w-range"{attrs(data_inactive=off)}><label for="{cid}">{label}</label>{field}</div>')
        elif isinstance(c, Number):
            # A text field (not type=number, which refuses `8G`); Python reads the text.
            field = (
                f"<input{attrs(type='text', id=cid, name=c.name, value=c.text(value), inputmode=c.inputmode, spellcheck='false', autocomplete='off', autocapitalize='off', disabled=True, data_inactive=off)}>"
                f"<output{attrs(for_=cid, data_label=c.name)}>{esc(control_value_text(widget, c, value, loc))}</output>"
            )
            rows.append(f'<div class="w-control w-number"><label for="{cid}">{label}</label>{field}</div>')
        elif isinstance(c, Choice) and not c.radio:
            options = "".join(
                f"<option{attrs(value=o, selected=o == value)}>{esc(option_label(widget, c, o, loc))}</option>"
                for o in c.options
            )
            rows.append(f'<div class="w-control w-select"{attrs(data_inactive=off)}><label for="{cid}">{label}</label><select{attrs(id=cid, name=c.name, disabled=True, data_inactive=off)}>{options}</select></div>')
        elif isinstance(c, Choice):
            options = "".join(
                f"<label><input{attrs(type='radio', name=c.name, value=o, checked=o == value, disabled=True, data_inactive=off)}> {esc(option_label(widget, c, o, loc))}</label>"
                for o in c.options
            )
            rows.append(f'<fieldset class="w-control w-radio"{attrs(data_inactive=off)}><legend>{label}</legend>{options}</fieldset>')
        else:
            rows.append(
                f'<div class="w-control w-toggle"{attrs(data_inactive=off)}><label><input{attrs(type="checkbox", name=c.name, value="1", checked=bool(value), disabled=True, data_inactive=off)}> {label}</label></div>'
            )
    note = f'<noscript><p class="w-noscript">{esc(loc.t("runtime.noscript"))}</p></noscript>'
    return f'<form class="w-controls" autocomplete="off">{"".join(rows)}{note}</form>'


# Figures drawn too densely for larger text on a phone (labels packed in small boxes,
# long one-line notes): there they keep a minimum width and scroll sideways (widgets.css)
# instead of shrinking their text under 11 px. Every other figure gets larger text there.
PHONE_SCROLL = frozenset({
    "w-hw-tree", "w-tp-mlp", "w-pp-timeline", "w-bw-bars", "w-dp-ring", "w-saved-terms",
    "w-precision-scaling", "w-precision-recipes", "w-mfu-bars", "w-zero-mem",
})


def svg(ident: str, width: int, height: int, body: str, title: str, desc: str) -> str:
    """An accessible, scalable SVG: role=img, labelled by its title and description. A
    figure of PHONE_SCROLL sits in a wrapper that scrolls on a phone: a tab stop (a region
    that scrolls must be reachable by keyboard), named by the figure's title; on a wider
    screen it is `display: contents`, neither a box nor a tab stop."""
    figure = (
        f'<svg class="w-figure" viewBox="0 0 {width} {height}" role="img"'
        f' aria-labelledby="{ident}-t {ident}-d" xmlns="http://www.w3.org/2000/svg">'
        f'<title id="{ident}-t">{esc(title)}</title><desc id="{ident}-d">{esc(desc)}</desc>{body}</svg>'
    )
    if ident not in PHONE_SCROLL:
        return figure
    return (f'<div class="w-fig-scroll" data-fig="{ident}" tabindex="0" role="group"'
            f' aria-labelledby="{ident}-t">{figure}</div>')


def line_label(x: float, y: float, text: str, width: float, cls: str = "w-fig-note") -> str:
    """A label beside a vertical line at `x` (e.g. the GPU's memory): to its left, ending
    at the line, in the right half of a figure `width` wide; to its right otherwise.
    `text` is already escaped."""
    if x > width / 2:
        return f'<text class="{cls}" x="{num(x - 4)}" y="{num(y)}" text-anchor="end">{text}</text>'
    return f'<text class="{cls}" x="{num(x + 4)}" y="{num(y)}">{text}</text>'


def bar_end_label(x: float, left: float, y: float, text: str, room: float, cls: str = "w-fig-value") -> str:
    """The value at a bar's end `x`: ending at it when the bar (from the figure's left
    edge) is longer than `room`, else starting at max(x, `left`). `text` is escaped."""
    if x > room:
        return f'<text class="{cls}" x="{num(x)}" y="{num(y)}" text-anchor="end">{text}</text>'
    return f'<text class="{cls}" x="{num(max(x, left))}" y="{num(y)}">{text}</text>'


def num(value: float) -> str:
    """An SVG coordinate: at most 2 decimals, no trailing zeros (stable across Pythons)."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text
