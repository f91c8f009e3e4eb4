"""How this project launches Chromium (tests, `make pdf`, `make bench`): Debian's
`chromium` (or `$CHROMIUM`) through Playwright's `executable_path`, since Playwright's
own browser download needs the internet; None lets Playwright use its own browser on a
machine that has it. The arguments turn off everything that would call home."""

from __future__ import annotations

import os
import shutil

CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]


def chromium_path() -> str | None:
    """Debian's chromium (or $CHROMIUM); None lets Playwright use its own browser."""
    return os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
