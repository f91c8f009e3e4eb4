"""Every registered widget, in both languages, live in Chromium: the browser shows exactly
what native Python computes (defaults, both ends of every control and seeded random
states in one language, a random state in the other; every control by keyboard in both).

The chapter of each widget is found from the ```widget fences in docs/, so a new widget
is covered as soon as it is registered and placed on a page.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from live import BOOT_MS, READ_STATE, assert_matches_native, operate_by_keyboard, root, set_control, wait_revision_above
from widgets import REGISTRY
from widgets.build.native import locale
from widgets.framework.core import render_output
from widgets.framework.spec import canonical, edge_states, random_states

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.fixture()
def page(warm_page: Any) -> Any:
    """A page of the session's shared context: after the first, the widgets boot from the
    Python memory snapshot, as the next chapter of a reader's visit does."""
    return warm_page


def page_of(name: str, lang: str) -> str:
    """The URL path (relative to the site root) of the page that holds widget `name`."""
    for path in sorted((DOCS / lang).rglob("*.md")):
        if re.search(rf"^\s*```widget\s+{re.escape(name)}\s*$", path.read_text(encoding="utf-8"), re.M):
            rel = path.relative_to(DOCS / lang).with_suffix("")
            url = "" if rel.name == "index" else f"{rel.as_posix()}/"
            return ("" if lang == "id" else "zh/") + url
    raise AssertionError(f"widget {name} is on no page of docs/{lang}")


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
    # Both ends of every control in one language (alternating between widgets), a random
    # state in the other: Pyodide = native for every state in both languages is already
    # proven by tests/parity; here the point is the page's plumbing (and CI time).
    full = (sorted(REGISTRY).index(name) + (lang == "zh")) % 2 == 0
    states = ([*edge_states(module.CONTROLS), *random_states(module.CONTROLS, 3, seed=2026)] if full
              else random_states(module.CONTROLS, 1, seed=2027))
    controls = {c.name: c for c in module.CONTROLS}
    for state in states:
        wanted = canonical(module.CONTROLS, state)
        for control_name, value in wanted.items():
            set_control(page, name, controls[control_name], value)
        # What the controls could not take is what Python says they cannot: a control that
        # does nothing here (disabled), or a slider beyond its end in this state (clamped).
        held = page.evaluate(READ_STATE, root(name))
        native = render_output(name, wanted, locale(lang))
        for key in (k for k in wanted if held[k] != wanted[k]):
            assert key in native.inactive or held[key] == native.state[key], (name, key, held[key], wanted[key])
        assert_matches_native(page, name, held, lang)
    # Every control also works from the keyboard alone.
    for control in module.CONTROLS:
        operate_by_keyboard(page, name, control)
    state = page.evaluate(READ_STATE, root(name))
    assert_matches_native(page, name, state, lang)
