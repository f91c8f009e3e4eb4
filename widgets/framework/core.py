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
from .spec import Number, Range, StateError, canonical, defaults, parse_link_state, parse_state


@dataclass(frozen=True)
class Output:
    """The result of one evaluation: HTML of the output region plus what the page needs."""

    ok: bool
    html: str
    state: dict[str, str] = field(default_factory=dict)  # canonical control values
    labels: dict[str, str] = field(default_factory=dict)  # text beside each control
    values: dict[str, float] = field(default_factory=dict)
    inactive: tuple[str, ...] = ()  # controls that change nothing in this state
    limits: dict[str, float] = field(default_factory=dict)  # a slider's upper end here
    problems: str = ""  # what a link asked for that was left out (HTML), see render_output


def inactive(module: ModuleType, state: Mapping[str, Any]) -> tuple[str, ...]:
    """The controls that change nothing in `state`: a module's optional `inactive(state)`
    (the pipeline's v outside interleaving). The page disables them and leaves them out
    of the URL."""
    hook = getattr(module, "inactive", None)
    return tuple(sorted(hook(state))) if hook else ()


def limits(module: ModuleType, state: Mapping[str, Any]) -> dict[str, float]:
    """Sliders whose upper end depends on other controls: a module's optional
    `limits(state)` -> {control: hi} (the ring's last step is 2(n − 1))."""
    hook = getattr(module, "limits", None)
    return dict(hook(state)) if hook else {}


def widget_module(name: str) -> ModuleType:
    if name not in REGISTRY:
        raise StateError("errors.unknown", control=name)
    return REGISTRY[name]


def evaluate(name: str, raw: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, float]]:
    """Validated state and computed outputs; raises `StateError` for a bad state."""
    state, values, _ = _evaluate(name, raw, link=False)
    return state, values


def _evaluate(name: str, raw: Mapping[str, Any], *, link: bool
              ) -> tuple[dict[str, Any], dict[str, float], list[StateError]]:
    """`evaluate`, and for a link's state (`link`) what was left out of it
    (`parse_link_state`) instead of an error. A slider beyond its upper end in this state
    (`limits`) holds that end, as the browser's slider itself does once its `max` moves."""
    module = widget_module(name)
    problems: list[StateError] = []
    if link:
        state, problems = parse_link_state(module.CONTROLS, raw)
    else:
        state = parse_state(module.CONTROLS, raw)
    for control, hi in limits(module, state).items():
        if state[control] > hi:
            state[control] = type(state[control])(hi)
    try:
        values = module.compute(state)
    except ValueError as error:  # calc refused a combination the controls allow
        raise StateError("errors.number", control=name, value=str(error)) from None
    return state, values, problems


def _message(error: StateError, name: str, loc: Locale) -> str:
    """One problem in the reader's words: the control by its label, a range in its units."""
    params = dict(error.params)
    module = REGISTRY.get(name)
    if module is not None:
        for control in module.CONTROLS:
            if control.name == params.get("control"):
                params["control"] = control_label(name, control, loc)
                if isinstance(control, Range):  # the reader's units
                    for key in ("lo", "hi", "step"):
                        if key in params:
                            params[key] = loc.format(control.display, getattr(control, key))
                elif isinstance(control, Number) and "lo" in params:
                    params["lo"] = loc.format(control.display, control.to_si(control.lo))
                    params["hi"] = loc.format(control.display, control.to_si(control.hi))
    return loc.h(error.key, **params)


def error_html(error: StateError, name: str, loc: Locale) -> str:
    """A localized message naming the control by its label, as a polite alert."""
    return (f'<div class="w-error" role="alert"{attrs(data_error=error.key)}>'
            f'<strong>{loc.h("errors.heading")}</strong> {_message(error, name, loc)} {loc.h("errors.hint")}</div>')


def link_problems_html(problems: list[StateError], name: str, loc: Locale) -> str:
    """What a link asked for that the figure left out, every item, and what it shows
    instead; empty when the link was fine."""
    if not problems:
        return ""
    items = "".join(f"<li{attrs(data_error=p.key)}>{_message(p, name, loc)}</li>" for p in problems)
    return (f'<div class="w-error" role="alert"{attrs(data_error="errors.link")}>'
            f'<strong>{loc.h("errors.link_heading")}</strong><ul>{items}</ul> {loc.h("errors.link_hint")}</div>')


def render_output(name: str, raw: Mapping[str, Any], loc: Locale, *, link: bool = False) -> Output:
    """The output region's HTML for `raw`, or a localized error if it is invalid. With
    `link` (a state from the URL) what is valid is shown and the rest listed (`problems`)."""
    try:
        state, values, problems = _evaluate(name, raw, link=link)
    except StateError as error:
        return Output(ok=False, html=error_html(error, name, loc))
    module = REGISTRY[name]
    labels = {c.name: control_value_text(name, c, state[c.name], loc) for c in module.CONTROLS}
    return Output(ok=True, html=module.render(state, values, loc),
                  state=canonical(module.CONTROLS, state), labels=labels, values=values,
                  inactive=inactive(module, state), limits=limits(module, state),
                  problems=link_problems_html(problems, name, loc))


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
    # The output region is not a live region: a screen reader would read the whole figure
    # at every arrow key. The page copies the sentence that states the result into the
    # `live` region instead (widgets.js).
    return (f"<div{root}>{controls_html(name, module.CONTROLS, state, loc, inactive=out.inactive, limits=out.limits)}"
            f'<p class="w-status" data-region="status" role="status"></p>'
            f'<div class="w-problem" data-region="problem"></div>'
            f'<div class="w-output" data-region="output">{out.html}</div>'
            f'<p class="w-live" data-region="live" aria-live="polite"></p></div>')


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
    """The worker's entry point: {widget, state, link} in, {ok, html, state, labels,
    inactive, limits, problems} out (`link`: the state came from the URL)."""
    name = str(request.get("widget", ""))
    raw = request.get("state")
    if not isinstance(raw, Mapping):
        raw = {"state": escape(str(raw))}
    out = render_output(name, raw, loc, link=request.get("link") is True)
    return {"ok": out.ok, "html": out.html, "state": out.state, "labels": out.labels,
            "inactive": list(out.inactive), "limits": out.limits, "problems": out.problems}


__all__ = ["Output", "evaluate", "format_value", "named_values", "handle", "render_output", "render_widget"]
