"""Driving a live widget in Chromium through the DOM contract (DESIGN.md): shared by the
browser tests. Every wait is on `data-revision`, never on a sleep."""

from __future__ import annotations

import re
import time
from typing import Any
from urllib.parse import urlsplit

from widgets.framework.core import render_output
from widgets.build.native import locale
from widgets.framework.spec import Choice, Number, Range

BOOT_MS = 90_000
VIEWPORT = {"width": 1280, "height": 900}
# The Python memory snapshot the first chapter of a visit stores (worker.js).
SNAPSHOTS = "dtbook-pyodide-snapshots"
KEYS = f"async () => (await (await caches.open('{SNAPSHOTS}')).keys()).map(r => r.url)"
SIZE = f"async (k) => {{ const r = await (await caches.open('{SNAPSHOTS}')).match(k); return r ? (await r.arrayBuffer()).byteLength : 0; }}"


class Recorder:
    """What the pages of a test requested and what they logged as an error."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.expect_errors = False  # a test that breaks the page on purpose sets this

    @classmethod
    def of(cls, site_url: str) -> "Recorder":
        """A recorder for the pages of the site served at `site_url`."""
        parts = urlsplit(site_url)
        return cls(f"{parts.scheme}://{parts.netloc}/")

    def outside(self) -> list[str]:
        return [u for u in self.requests if not u.startswith(self.origin) and not u.startswith(("data:", "blob:"))]

    def watch(self, page: object, label: bool = False) -> None:
        """Record the requests, console errors and uncaught exceptions of `page` (with its
        URL in front of each error when `label`, for a test that visits many pages)."""
        where = (lambda: f"{page.url}: ") if label else (lambda: "")
        page.on("request", lambda request: self.requests.append(request.url))
        page.on("console", lambda message: self.errors.append(where() + message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: self.errors.append(where() + str(error)))

    def check(self) -> None:
        assert self.outside() == [], f"requests left the local server: {self.outside()}"
        if not self.expect_errors:
            assert self.errors == [], f"console errors: {self.errors}"


def stored_snapshots(page: Any, timeout_s: float = 30) -> list[str]:
    """The snapshot keys once the worker has stored a whole one (it waits 1.5 s after the
    boot; a snapshot is ~31 MB, anything under 1 MB is a broken one)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        keys = page.evaluate(KEYS)
        if keys and all(page.evaluate(SIZE, key) > 1_000_000 for key in keys):
            return keys
        page.wait_for_timeout(100)  # polling Cache Storage, which has no event to wait on
    raise AssertionError("no snapshot was stored")


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
    """Operate one control as a reader would, then wait for the live update. A control
    that does nothing in the current state is disabled (Python's `inactive`): a reader
    cannot move it, and neither does this."""
    sel = f'{root(name)} [name="{control.name}"]'
    if page.locator(sel).first.is_disabled():
        return
    before = int(page.get_attribute(root(name), "data-revision"))
    if isinstance(control, (Range, Number)):
        element = page.locator(sel)
        if isinstance(control, Range) and float(value) > float(element.get_attribute("max")):
            value = element.get_attribute("max")  # the browser's slider clamps it so
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
    """Focus the control and change it with a key, as a keyboard user would (not one that
    is disabled because it does nothing in this state)."""
    sel = f'{root(name)} [name="{control.name}"]'
    if page.locator(sel).first.is_disabled():
        return
    before = int(page.get_attribute(root(name), "data-revision"))
    if isinstance(control, Number):  # typed: clear the field and type the other end
        element = page.locator(sel)
        end = control.text(control.lo if element.input_value() != control.text(control.lo) else control.hi)
        element.focus()
        page.keyboard.press("ControlOrMeta+a")
        page.keyboard.type(end)
        page.wait_for_function(
            "([sel, text]) => document.querySelector(sel).value === text", arg=[sel, end])
        wait_revision_above(page, name, before)
        return
    if isinstance(control, Range):
        element = page.locator(sel)
        top = float(element.get_attribute("max"))  # a slider's end may depend on the state
        key = "ArrowLeft" if float(element.input_value()) >= top else "ArrowRight"
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
