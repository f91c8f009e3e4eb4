"""Browser fixtures: a fresh page per test that records every request it makes."""

from __future__ import annotations

from typing import Iterator
from urllib.parse import urlsplit

import pytest


class Recorder:
    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.expect_errors = False  # a test that breaks the page on purpose sets this

    def outside(self) -> list[str]:
        return [u for u in self.requests if not u.startswith(self.origin) and not u.startswith(("data:", "blob:"))]


@pytest.fixture()
def recorder(site_url: str) -> Recorder:
    parts = urlsplit(site_url)
    return Recorder(f"{parts.scheme}://{parts.netloc}/")


@pytest.fixture()
def page(browser, recorder: Recorder) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.on("request", lambda request: recorder.requests.append(request.url))
    page.on("console", lambda message: recorder.errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: recorder.errors.append(str(error)))
    yield page
    context.close()
    assert recorder.outside() == [], f"requests left the local server: {recorder.outside()}"
    if not recorder.expect_errors:
        assert recorder.errors == [], f"console errors: {recorder.errors}"
