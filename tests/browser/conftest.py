"""Browser fixtures: a page per test that records every request it makes and every error
it logs (live.Recorder).

`page` is a page in a context of its own: nothing cached, Python boots from scratch (the
tests of the runtime's failures, its first boot and its snapshot need that). `warm_page`
is a new page in one context that the session's tests share, as one reader's visit:
the HTTP cache, the compiled WebAssembly and the Python memory snapshot (worker.js) carry
over, so its pages go live in about a third of the time of a first boot. A test that
needs neither a cold cache nor a context option of its own takes `warm_page`.
"""

from __future__ import annotations

from typing import Iterator

import pytest

from live import BOOT_MS, VIEWPORT, Recorder, stored_snapshots


@pytest.fixture()
def recorder(site_url: str) -> Recorder:
    return Recorder.of(site_url)


@pytest.fixture()
def page(browser, recorder: Recorder) -> Iterator[object]:
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    recorder.watch(page)
    yield page
    context.close()
    recorder.check()


@pytest.fixture(scope="session")
def warm_context(browser, site_url: str) -> Iterator[object]:
    """The context the `warm_page` tests share (never routed or given options by a test:
    routes and media emulation belong to a page). Its first page boots Python from
    scratch and stays until the snapshot is stored (a test's page may close sooner)."""
    context = browser.new_context(viewport=VIEWPORT)
    recorder = Recorder.of(site_url)
    first = context.new_page()
    recorder.watch(first)
    first.goto(site_url + "why-distributed-training/#why.tokens=2000000000000")  # the fragment boots at once
    stored_snapshots(first, timeout_s=BOOT_MS / 1000)
    first.close()
    recorder.check()
    yield context
    context.close()


@pytest.fixture()
def warm_page(warm_context, recorder: Recorder) -> Iterator[object]:
    before = list(warm_context.pages)
    page = warm_context.new_page()
    recorder.watch(page)
    yield page
    for opened in warm_context.pages:  # this one and any the test opened besides
        if opened not in before:
            opened.close()
    recorder.check()
