"""Shared fixtures: one site build and one Chromium per test session (DEVELOPERS.md).

The site is built once into a temporary folder with `mkdocs build --strict` and served
under a sub-path (`/book/`) from 127.0.0.1, so every browser test also proves that the
site works from any static host under any prefix.

Slow subprocesses that a test only checks the result of (another build, the Pyodide
parity run) start in the background as soon as that site is built: a test module
declares them in `EARLY`, {name: prepare}, where `prepare(site, folder)` writes what the
command needs into `folder` and returns `Early`'s arguments (`args`, and `cwd`, `stdin`
if need be) as a dict; its test takes the result with `early.result(name)`. They run at
a lower CPU priority while the browser tests, which leave a core idle, run in front.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from chromium import CHROMIUM_ARGS, chromium_path  # noqa: E402  (tools/chromium.py, shared with make pdf and bench)

LANGS = ("id", "zh")


@dataclass
class Early:
    """A command to run in the background: `args` in `cwd`, `stdin` from a file."""

    args: list[str]
    folder: Path  # where its `prepare` wrote its files
    cwd: Path = ROOT
    stdin: Path | None = None
    env: dict[str, str] = field(default_factory=lambda: {**os.environ, "NO_MKDOCS_2_WARNING": "1"})


# prepare(the built site, or None when the session builds none; a folder of its own) -> Early's arguments
Prepare = Callable[[Path | None, Path], dict[str, Any]]


class Started:
    """An `Early` command running at a lower CPU priority (nice 10); its output goes to
    files, so a chatty command never blocks on a full pipe."""

    def __init__(self, early: Early) -> None:
        self.early = early
        self.done: subprocess.CompletedProcess[str] | None = None
        self.out, self.err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
        stdin = open(early.stdin, "rb") if early.stdin else subprocess.DEVNULL
        try:
            self.process = subprocess.Popen(["nice", "-n", "10", *early.args], cwd=early.cwd, env=early.env,
                                            stdin=stdin, stdout=self.out, stderr=self.err, text=True)
        finally:
            if early.stdin:
                stdin.close()

    def result(self, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        if self.done is None:
            code = self.process.wait(timeout)
            output = []
            for file in (self.out, self.err):
                file.seek(0)
                output.append(file.read())
                file.close()
            self.done = subprocess.CompletedProcess(self.early.args, code, *output)
        return self.done

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.out.close()
        self.err.close()


class EarlyRuns:
    """The `EARLY` commands of the collected test modules: started by `start` (when the
    session's site is built), or when a test first asks for one."""

    def __init__(self, tmp: pytest.TempPathFactory, declared: dict[str, Prepare]) -> None:
        self.tmp, self.declared = tmp, declared
        self.site: Path | None = None
        self.started: dict[str, Started | BaseException] = {}

    def start(self, site: Path) -> None:
        self.site = site
        for name in self.declared:
            self._start(name)

    def _start(self, name: str) -> Started | BaseException:
        if name not in self.started:
            folder = self.tmp.mktemp(name)
            try:
                self.started[name] = Started(Early(folder=folder, **self.declared[name](self.site, folder)))
            except Exception as error:  # a failing prepare fails its own test, not the site build
                self.started[name] = error
        return self.started[name]

    def result(self, name: str) -> tuple[Path, subprocess.CompletedProcess[str]]:
        """(the folder its `prepare` wrote, the finished command), waiting for it if need be."""
        run = self._start(name)
        if isinstance(run, BaseException):
            raise run
        return run.early.folder, run.result()

    def stop(self) -> None:
        for run in self.started.values():
            if isinstance(run, Started):
                run.stop()


@pytest.fixture(scope="session")
def early(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EarlyRuns]:
    declared: dict[str, Prepare] = {}
    for module in {item.module for item in request.session.items if getattr(item, "module", None)}:
        for name, prepare in getattr(module, "EARLY", {}).items():
            assert name not in declared, f"two modules declare the early run {name!r}"
            declared[name] = prepare
    runs = EarlyRuns(tmp_path_factory, declared)
    yield runs
    runs.stop()


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory, early: EarlyRuns) -> Path:
    """The whole site, both languages, built once with --strict."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT, capture_output=True, text=True, env=env,
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}\n{result.stderr}"
    early.start(out)
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
