"""Shared fixtures: one site build and one Chromium per test session (DEVELOPERS.md).

The site is built once into a temporary folder with `mkdocs build --strict` and served
under a sub-path (`/book/`) from 127.0.0.1, so every browser test also proves that the
site works from any static host under any prefix.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from chromium import CHROMIUM_ARGS, chromium_path  # noqa: E402  (tools/chromium.py, shared with make pdf and bench)

LANGS = ("id", "zh")


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole site, both languages, built once with --strict."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT, capture_output=True, text=True, env=env,
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}\n{result.stderr}"
    return out


@pytest.fixture(scope="session")
def site_url(built_site: Path) -> Iterator[str]:
    """Base URL of the built site served under the sub-path /book/."""
    from serve import start

    server, base = start(built_site, "/book/")
    yield base
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        yield browser
        browser.close()
