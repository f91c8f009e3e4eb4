"""Evaluate and render a widget: the same functions at build time and in Pyodide.

`render_output` turns a raw state (strings from a form, URL or Markdown) into the HTML of
the output region, or into a localized error; `render_widget` adds the root element and
the controls for the pre-rendered page; `handle` is the worker's entry point.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Mapping

from .. import REGISTRY
from .escape import escape
from .html import attrs, control_label, control_value_text, controls_html
from .locale import Locale
from .spec import Number, Range, StateError, canonical, defaults, parse_state


@dataclass(frozen=True)
class Output:
    """The result of one evaluation: HTML of the output region plus what the page needs."""

    ok: bool
    html: str
    state: dict[str, str] = field(default_factory=dict)  # canonical control values
    labels: dict[str, str] = field(default_factory=dict)  # text beside each control
    values: dict[str, float] = field(default_factory=dict)


def widget_module(name: str) -> ModuleType:
    if name not in REGISTRY:
        raise StateError("errors.unknown", control=name)
    return REGISTRY[name]


def evaluate(name: str, raw: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, float]]:
    """Validated state and computed outputs; raises `StateError` for a bad state."""
    module = widget_module(name)
    state = parse_state(module.CONTROLS, raw)
    try:
        values = module.compute(state)
    except ValueError as error:  # calc refused a combination the controls allow
        raise StateError("errors.number", control=name, value=str(error)) from None
    return state, values


def error_html(error: StateError, name: str, loc: Locale) -> str:
    """A localized message naming the control by its label, as a polite alert."""
    params = dict(error.params)
    module = REGISTRY.get(name)
    if module is not None:
        for control in module.CONTROLS:
            if control.name == params.get("control"):
                params["control"] = control_label(name, control, loc)
                if isinstance(control, Range) and "lo" in params:  # the reader's units
                    params["lo"] = loc.format(control.display, control.lo)
                    params["hi"] = loc.format(control.display, control.hi)
                elif isinstance(control, Number) and "lo" in params:
                    params["lo"] = loc.format(control.display, control.to_si(control.lo))
                    params["hi"] = loc.format(control.display, control.to_si(control.hi))
    message = loc.h(error.key, **params)
    return (f'<div class="w-error" role="alert"{attrs(data_error=error.key)}>'
            f'<strong>{loc.h("errors.heading")}</strong> {message} {loc.h("errors.hint")}</div>')


def render_output(name: str, raw: Mapping[str, Any], loc: Locale) -> Output:
    """The output region's HTML for `raw`, or a localized error if it is invalid."""
    try:
        state, values = evaluate(name, raw)
    except StateError as error:
        return Output(ok=False, html=error_html(error, name, loc))
    module = REGISTRY[name]
    labels = {c.name: control_value_text(name, c, state[c.name], loc) for c in module.CONTROLS}
    return Output(ok=True, html=module.render(state, values, loc),
                  state=canonical(module.CONTROLS, state), labels=labels, values=values)


def render_widget(name: str, overrides: Mapping[str, Any], loc: Locale) -> str:
    """The whole pre-rendered widget: root with the DOM contract, controls, output."""
    module = widget_module(name)
    state = {**defaults(module.CONTROLS), **parse_state(module.CONTROLS, overrides)}
    out = render_output(name, state, loc)
    if not out.ok:
        raise ValueError(f"widget {name}: invalid defaults {dict(overrides)}")
    root = attrs(class_="w-widget", id=f"widget-{name}", data_widget=name, data_status="static",
                 data_revision="0", data_lang=loc.lang, data_defaults=_query(out.state),
                 data_search_exclude=True)  # figures and value tables do not belong in the search index
    return (f"<div{root}>{controls_html(name, module.CONTROLS, state, loc)}"
            f'<div class="w-output" data-region="output" aria-live="polite">{out.html}</div>'
            f'<p class="w-status" data-region="status" role="status"></p></div>')


def _query(state: Mapping[str, str]) -> str:
    return "&".join(f"{k}={v}" for k, v in state.items())


def named_values(name: str, overrides: Mapping[str, Any]) -> tuple[Mapping[str, str], dict[str, float]]:
    """What a macro or an exercise answer can name: (output -> kind, output -> value) of a
    widget at its defaults with `overrides`, or of a lab's figures (`lab-<lab>`, see
    `widgets.labs`). Errors are ValueError, naming the widget or lab and the setting."""
    if name.startswith("lab-"):
        from ..labs import LABS, figures  # only a lab page needs them

        lab = name[len("lab-"):]
        if lab not in LABS:
            raise ValueError(f"unknown lab {lab!r}; known: {', '.join(LABS)}")
        return LABS[lab].OUTPUTS, figures(lab, overrides)
    if name not in REGISTRY:
        raise ValueError(f"unknown widget {name!r}; known: {', '.join(REGISTRY)}")
    try:
        _, values = evaluate(name, overrides)
    except StateError as error:
        raise ValueError(f"widget {name}: {error.key} {error.params}") from None
    return REGISTRY[name].OUTPUTS, values


def format_value(name: str, key: str, overrides: Mapping[str, Any], loc: Locale) -> str:
    """One output formatted for prose (the `{{ widget.key }}` macro); errors are ValueError."""
    kinds, values = named_values(name, overrides)
    if key not in kinds:
        what = "lab" if name.startswith("lab-") else "widget"
        raise ValueError(f"{what} {name} has no output {key!r}; it has {', '.join(kinds)}")
    return loc.format(kinds[key], values[key])


def handle(request: Mapping[str, Any], loc: Locale) -> dict[str, Any]:
    """The worker's entry point: {widget, state} in, {ok, html, state, labels} out."""
    name = str(request.get("widget", ""))
    raw = request.get("state")
    if not isinstance(raw, Mapping):
        raw = {"state": escape(str(raw))}
    out = render_output(name, raw, loc)
    return {"ok": out.ok, "html": out.html, "state": out.state, "labels": out.labels}


__all__ = ["Output", "evaluate", "format_value", "named_values", "handle", "render_output", "render_widget"]
