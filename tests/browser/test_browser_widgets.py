"""Every registered widget, in both languages, live in Chromium: the browser shows exactly
what native Python computes (defaults, both ends of every control, seeded random states).

The chapter of each widget is found from the ```widget fences in docs/, so a new widget
is covered as soon as it is registered and placed on a page.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from widgets import REGISTRY
from widgets.core import render_output
from widgets.native import locale
from widgets.spec import Choice, Range, canonical, edge_states, random_states

DOCS = Path(__file__).resolve().parents[2] / "docs"
BOOT_MS = 90_000


def page_of(name: str, lang: str) -> str:
    """The URL path (relative to the site root) of the page that holds widget `name`."""
    for path in sorted((DOCS / lang).rglob("*.md")):
        if re.search(rf"^\s*```widget\s+{re.escape(name)}\s*$", path.read_text(encoding="utf-8"), re.M):
            rel = path.relative_to(DOCS / lang).with_suffix("")
            url = "" if rel.name == "index" else f"{rel.as_posix()}/"
            return ("" if lang == "id" else "zh/") + url
    raise AssertionError(f"widget {name} is on no page of docs/{lang}")


def root(name: str) -> str:
    return f'[data-widget="{name}"]'


def wait_revision_above(page: Any, name: str, previous: int, timeout: int = 30_000) -> None:
    page.wait_for_function(
        "([sel, r]) => Number(document.querySelector(sel).dataset.revision) > r",
        arg=[root(name), previous], timeout=timeout,
    )


def set_control(page: Any, name: str, control: Any, value: str) -> None:
    """Operate one control as a reader would, then wait for the live update."""
    sel = f'{root(name)} [name="{control.name}"]'
    before = int(page.get_attribute(root(name), "data-revision"))
    if isinstance(control, Range):
        element = page.locator(sel)
        if element.input_value() == value:
            return
        element.fill(value)
    elif isinstance(control, Choice) and control.radio:
        element = page.locator(f'{sel}[value="{value}"]')
        if element.is_checked():
            return
        element.check()
    elif isinstance(control, Choice):
        element = page.locator(sel)
        if element.input_value() == value:
            return
        element.select_option(value)
    else:
        element = page.locator(sel)
        if element.is_checked() == (value == "1"):
            return
        element.set_checked(value == "1")
    wait_revision_above(page, name, before)


def assert_matches_native(page: Any, name: str, state: dict[str, str], lang: str) -> None:
    out = render_output(name, state, locale(lang))
    assert out.ok, state
    expected = dict(re.findall(r'data-out="(\w+)" data-value="([^"]+)"', out.html))
    shown = page.evaluate(
        "(sel) => Object.fromEntries(Array.from(document.querySelectorAll(sel + ' [data-out]')).map(e => [e.dataset.out, e.dataset.value]))",
        root(name),
    )
    assert shown == expected, f"{name} {lang}: data-value differs from native for {state}"
    live = page.inner_html(f'{root(name)} [data-region="output"]')
    native = page.evaluate("(h) => { const t = document.createElement('template'); t.innerHTML = h; return t.innerHTML; }", out.html)
    assert live == native, f"{name} {lang}: live HTML differs from native for {state}"
    for control, text in out.labels.items():
        label = page.locator(f'{root(name)} output[data-label="{control}"]')
        if label.count():
            assert label.inner_text() == text


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_widget_is_live_and_equals_native_python(page: Any, site_url: str, name: str, lang: str) -> None:
    module = REGISTRY[name]
    page.goto(site_url + page_of(name, lang))
    page.locator(root(name)).scroll_into_view_if_needed()
    page.wait_for_selector(f'{root(name)}[data-status="ready"]', timeout=BOOT_MS)
    wait_revision_above(page, name, 0, BOOT_MS)
    # The live default equals the pre-rendered page (as this browser parses both).
    prerendered = page.evaluate(
        """async (sel) => {
            const html = await (await fetch(location.href)).text();
            const doc = new DOMParser().parseFromString(html, 'text/html');
            return doc.querySelector(sel + ' [data-region="output"]').innerHTML;
        }""",
        root(name),
    )
    assert page.inner_html(f'{root(name)} [data-region="output"]') == prerendered
    states = [*edge_states(module.CONTROLS), *random_states(module.CONTROLS, 3, seed=2026)]
    controls = {c.name: c for c in module.CONTROLS}
    for state in states:
        wanted = canonical(module.CONTROLS, state)
        for control_name, value in wanted.items():
            set_control(page, name, controls[control_name], value)
        assert_matches_native(page, name, wanted, lang)
    # Every control also works from the keyboard alone.
    for control in module.CONTROLS:
        operate_by_keyboard(page, name, control)
    state = page.evaluate(READ_STATE, root(name))
    assert_matches_native(page, name, state, lang)


READ_STATE = """(sel) => {
    const state = {};
    for (const el of document.querySelector(sel).querySelectorAll('input[name], select[name]')) {
        if (el.type === 'radio') { if (el.checked) state[el.name] = el.value; }
        else if (el.type === 'checkbox') state[el.name] = el.checked ? '1' : '0';
        else state[el.name] = el.value;
    }
    return state;
}"""


def operate_by_keyboard(page: Any, name: str, control: Any) -> None:
    """Focus the control and change it with a key, as a keyboard user would."""
    sel = f'{root(name)} [name="{control.name}"]'
    before = int(page.get_attribute(root(name), "data-revision"))
    if isinstance(control, Range):
        element = page.locator(sel)
        key = "ArrowLeft" if float(element.input_value()) >= control.hi else "ArrowRight"
    elif isinstance(control, Choice) and control.radio:
        element = page.locator(f"{sel}:checked")
        last = page.locator(sel).last.is_checked()
        key = "ArrowLeft" if last else "ArrowRight"
    elif isinstance(control, Choice):
        element = page.locator(sel)
        key = "ArrowUp" if element.input_value() == control.options[-1] else "ArrowDown"
    else:
        element = page.locator(sel)
        key = "Space"
    element.focus()
    page.keyboard.press(key)
    wait_revision_above(page, name, before)
