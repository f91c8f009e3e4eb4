"""The runtime on bad days, in Chromium: a slow link still goes live and shows how far it
is, a file that fails says which file and why within seconds (in the page language), a
file that was missing loads once it is back, and a reply that answers a state the reader
has already left is never shown.

Every wait is on the DOM contract (`data-status`, `data-revision`), never on a sleep.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from live import BOOT_MS, root, with_stall_timeout
from widgets.framework.core import render_output
from widgets.build.native import locale

CHAPTER = {"id": "why-distributed-training/", "zh": "zh/why-distributed-training/"}
ROOT = root("why")
WASM = "**/pyodide.asm.wasm"


def status_line(page: Any) -> str:
    return page.inner_text(f'{ROOT} [data-region="status"]')


def wait_error(page: Any, timeout: int = 15_000) -> str:
    page.locator(ROOT).scroll_into_view_if_needed()  # the runtime boots when a widget is in view
    page.wait_for_selector(f'{ROOT}[data-status="error"]', timeout=timeout)
    return status_line(page)


STALL_MS = 10_000  # the slow link's stall timeout


def test_a_slow_link_that_keeps_downloading_goes_live_and_shows_progress(browser: Any, site_url: str) -> None:
    """6 Mbit/s with 300 ms round trips (DevTools throttling): the runtime's ~13 MB need
    about 18 s, longer than the runtime waits for a link that sends nothing (cut to 10 s
    here, still well above the few seconds Python takes to start once the bytes are in).
    It must not give up while bytes arrive, and the loading line must say how far it is."""
    context = browser.new_context()
    try:
        page = context.new_page()
        with_stall_timeout(page, CHAPTER["id"], STALL_MS)
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send("Network.emulateNetworkConditions", {
            "offline": False, "latency": 300, "downloadThroughput": 6e6 / 8, "uploadThroughput": 6e6 / 8})
        page.add_init_script("""
            window.__statusLines = [];
            new MutationObserver(() => {
                const line = document.querySelector('[data-widget="why"] [data-region="status"]');
                if (line && line.textContent && window.__statusLines.at(-1) !== line.textContent)
                    window.__statusLines.push(line.textContent);
            }).observe(document, { subtree: true, childList: true, characterData: true });
        """)
        started = time.monotonic()
        page.goto(site_url + CHAPTER["id"])
        page.locator(ROOT).scroll_into_view_if_needed()
        page.wait_for_function(
            "(sel) => ['ready', 'error'].includes(document.querySelector(sel).dataset.status)",
            arg=ROOT, timeout=180_000)
        took = time.monotonic() - started
        assert page.get_attribute(ROOT, "data-status") == "ready", status_line(page)
        assert took > STALL_MS / 1000, f"the link was not slow ({took:.0f} s): the test proves nothing"
        lines = page.evaluate("window.__statusLines")
        progress = [line for line in lines if line.startswith("Memuat Python di browser… ") and line.endswith("%")]
        assert len(progress) >= 5, lines  # 0%, 10%, … in steps of ten
        percents = [int(line.rsplit(" ", 1)[1].rstrip("%")) for line in progress]
        assert percents == sorted(percents) and percents[-1] >= 90, percents
    finally:
        context.close()


@pytest.fixture()
def wasm_file(built_site: Path) -> Path:
    [path] = built_site.glob("assets/pyodide/*/pyodide.asm.wasm")
    return path


def test_a_missing_wasm_is_named_at_once_and_loads_once_it_is_back(page: Any, site_url: str, wasm_file: Path,
                                                                   recorder: Any) -> None:
    recorder.expect_errors = True  # the 404 is logged
    hidden = wasm_file.with_name("pyodide.asm.wasm.away")
    wasm_file.rename(hidden)
    try:
        started = time.monotonic()
        page.goto(site_url + CHAPTER["id"])
        message = wait_error(page)
        assert time.monotonic() - started < 10
        assert message.startswith("Mode interaktif tidak bisa dimuat (pyodide.asm.wasm tidak dapat diunduh: "
                                  "server menjawab HTTP 404)")
    finally:
        hidden.rename(wasm_file)
    # The 404 must not have been cached (for a year, under an immutable folder).
    page.reload()
    page.locator(ROOT).scroll_into_view_if_needed()
    page.wait_for_selector(f'{ROOT}[data-status="ready"]', timeout=BOOT_MS)


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_a_wasm_with_the_wrong_type_is_named_with_its_type(page: Any, site_url: str, wasm_file: Path,
                                                           recorder: Any, lang: str) -> None:
    recorder.expect_errors = True
    body = wasm_file.read_bytes()
    page.route(WASM, lambda route: route.fulfill(body=body, content_type="application/octet-stream"))
    page.goto(site_url + CHAPTER[lang])
    message = wait_error(page)
    reason = locale(lang).t("runtime.reasons.mime").format(file="pyodide.asm.wasm", type="application/octet-stream")
    assert reason in message


def test_a_corrupted_wasm_is_reported_as_corrupted(page: Any, site_url: str, wasm_file: Path, recorder: Any) -> None:
    recorder.expect_errors = True
    body = wasm_file.read_bytes()[:200_000]
    page.route(WASM, lambda route: route.fulfill(body=body, content_type="application/wasm"))
    page.goto(site_url + CHAPTER["id"])
    message = wait_error(page)
    assert "pyodide.asm.wasm rusak atau tidak lengkap sehingga tidak dapat dijalankan (" in message


def test_a_link_that_sends_nothing_times_out(page: Any, site_url: str, recorder: Any) -> None:
    recorder.expect_errors = True
    page.route(WASM, lambda route: None)  # the request is never answered
    with_stall_timeout(page, CHAPTER["zh"], 3_000)
    page.goto(site_url + CHAPTER["zh"])
    message = wait_error(page)
    assert message.startswith("交互模式未能加载（") and "秒内没有收到任何数据" in message
    assert "107.8 GB" in page.inner_text(f'{ROOT} [data-region="output"]')


def test_a_reply_to_a_state_the_reader_left_is_never_applied(warm_page: Any, site_url: str) -> None:
    """The reader changes the model the moment the widget goes live, while the boot's own
    render (7B) is still being computed: no applied update may show the 7B figure."""
    page = warm_page
    page.add_init_script("""
        window.__applied = [];
        new MutationObserver((records) => {
            for (const r of records) {
                const el = r.target;
                if (el.dataset.widget !== 'why') continue;
                if (r.attributeName === 'data-status' && el.dataset.status === 'ready' && !window.__changed) {
                    window.__changed = true;  // the boot's render request has just been sent
                    const select = el.querySelector('[name=model]');
                    select.value = 'llama2-70b';
                    select.dispatchEvent(new Event('input', { bubbles: true }));
                    select.dispatchEvent(new Event('change', { bubbles: true }));
                }
                if (r.attributeName === 'data-revision' && el.dataset.revision !== '0') {
                    const out = el.querySelector('[data-out="state_bytes"]');
                    window.__applied.push([Number(el.dataset.revision), out.dataset.value]);
                }
            }
        }).observe(document, { subtree: true, attributes: true, attributeFilter: ['data-status', 'data-revision'] });
    """)
    page.goto(site_url + CHAPTER["id"])
    page.locator(ROOT).scroll_into_view_if_needed()
    page.wait_for_function("() => window.__applied.length >= 1", timeout=BOOT_MS)
    page.wait_for_load_state("networkidle")
    applied = page.evaluate("window.__applied")
    expected = render_output("why", {"model": "llama2-70b"}, locale("id")).values["state_bytes"]
    assert applied[0][0] == 1, applied  # data-revision counts applied, current updates only
    assert all(float(value) == expected for _, value in applied), applied  # never the 7B figure
