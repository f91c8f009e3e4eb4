"""Driving a live widget in Chromium through the DOM contract (DESIGN.md): shared by the
browser tests. Every wait is on `data-revision`, never on a sleep."""

from __future__ import annotations

import re
from typing import Any

from widgets.framework.core import render_output
from widgets.build.native import locale
from widgets.framework.spec import Choice, Range

BOOT_MS = 90_000


def with_stall_timeout(page: Any, path: str, ms: int) -> None:
    """Serve the page at `path` with the runtime's stall timeout set to `ms`: a test of a
    failure need not wait 30 s, and one of an exercise not for a busy machine's boot."""
    def rewrite(route: Any) -> None:
        body = route.fetch().text()
        assert '"stallTimeoutMs": 30000' in body, "the page's settings changed: update this helper"
        route.fulfill(body=body.replace('"stallTimeoutMs": 30000', f'"stallTimeoutMs": {ms}'),
                      content_type="text/html; charset=utf-8")

    page.route(f"**/{path}", rewrite)


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
