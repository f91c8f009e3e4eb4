"""Whole-site checks in Chromium, over every page of every language (new pages are
picked up from the built site): offline and private, no console errors, no sideways
scrolling on a phone, complete without JavaScript, and no serious accessibility problems."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"


def site_pages(site: Path) -> list[str]:
    """URL paths (relative to the site root) of every page, both languages."""
    pages = []
    for path in sorted(site.rglob("index.html")):
        rel = path.parent.relative_to(site).as_posix()
        if rel.startswith(("assets", "search", "bench-bare")):
            continue
        pages.append("" if rel == "." else rel + "/")
    return pages


@pytest.fixture(scope="module")
def pages(built_site: Path) -> list[str]:
    found = site_pages(built_site)
    assert len(found) >= 20, found
    return found


def test_every_page_on_a_phone_is_private_error_free_and_never_scrolls_sideways(
        browser: Any, site_url: str, pages: list[str], recorder: Any) -> None:
    context = browser.new_context(viewport={"width": 375, "height": 812}, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.on("request", lambda r: recorder.requests.append(r.url))
    page.on("console", lambda m: recorder.errors.append(f"{page.url}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: recorder.errors.append(f"{page.url}: {e}"))
    problems = []
    try:
        for path in pages:
            page.goto(site_url + path, wait_until="load")
            lang = page.get_attribute("html", "lang")
            expected = "zh" if path.startswith("zh/") else "id"
            if lang != expected:
                problems.append(f"{path}: lang={lang}")
            # Against the phone's width, not innerWidth: a mobile layout viewport widens
            # to fit content that overflows, and would hide the overflow it measures.
            overflow = page.evaluate("document.documentElement.scrollWidth") - 375
            if overflow > 1:
                problems.append(f"{path}: scrolls sideways by {overflow}px")
    finally:
        context.close()
    assert problems == []
    assert recorder.outside() == [], recorder.outside()
    assert recorder.errors == [], recorder.errors


def test_without_javascript_every_widget_page_is_complete(browser: Any, site_url: str, pages: list[str]) -> None:
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        seen = 0
        for path in pages:
            page.goto(site_url + path)
            for root in page.locator("[data-widget]").all():
                seen += 1
                assert root.get_attribute("data-status") == "static"
                values = root.locator("[data-out]")
                assert values.count() > 0, f"{path}: widget has no pre-rendered values"
                assert all((v.text_content() or "").strip() for v in values.all()), f"{path}: empty value"
        assert seen >= 2 * 6
    finally:
        context.close()


LIVE = ("() => Array.from(document.querySelectorAll('[data-widget]'))"
        ".every(w => w.dataset.status === 'ready' && Number(w.dataset.revision) > 0)")


def axe_violations(page: Any) -> list[str]:
    page.add_script_tag(path=str(AXE))
    return page.evaluate("""async () => {
        const r = await axe.run(document, { resultTypes: ['violations'] });
        return r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
            .map(v => v.id + ': ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | '));
    }""")


@pytest.mark.parametrize(("viewport", "live"), [({"width": 1280, "height": 900}, False),
                                               ({"width": 375, "height": 812}, True)], ids=["desktop", "phone"])
def test_axe_finds_no_serious_or_critical_problem_on_any_page(browser: Any, site_url: str, pages: list[str],
                                                              viewport: dict[str, int], live: bool) -> None:
    """axe-core from npm (vendored, never a CDN) on a desktop, every page pre-rendered, and
    on a 375 px phone, every page with a widget, all its widgets live (what only the phone
    adds: wide formulas, tables and code scroll sideways there, and the live figures); the
    CSP is bypassed only to inject axe."""
    phone = viewport["width"] < 500
    context = browser.new_context(viewport=viewport, is_mobile=phone, has_touch=phone, bypass_csp=True)
    page = context.new_page()
    found, checked = [], 0
    try:
        for path in pages:
            page.goto(site_url + path)
            if live and not page.locator("[data-widget]").count():
                continue  # a page without a widget: the desktop run checks it
            checked += 1
            if live:
                page.evaluate("document.querySelectorAll('[data-widget]').forEach(w => w.scrollIntoView())")
                page.wait_for_function(LIVE, timeout=90_000)
                page.evaluate("window.scrollTo(0, 0)")
            found += [f"{path} {v}" for v in axe_violations(page)]
    finally:
        context.close()
    assert checked >= (2 * 10 if live else len(pages)), checked  # ten chapters with widgets per language
    assert found == [], "\n".join(found)


def test_the_404_page_is_accessible_and_fits_a_phone(browser: Any, built_site: Path) -> None:
    """The 404 page is a template that MkDocs links from the site root, so it is checked
    served at a root, as a host serves it for any missing URL."""
    from serve import start

    server, base = start(built_site, "/")
    context = browser.new_context(viewport={"width": 375, "height": 812}, is_mobile=True, has_touch=True, bypass_csp=True)
    try:
        page = context.new_page()
        page.goto(base + "404.html")
        assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 1
        assert page.get_attribute(".md-search", "aria-label")
        assert axe_violations(page) == []
    finally:
        context.close()
        server.shutdown()
        server.server_close()
