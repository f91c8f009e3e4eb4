"""The site ships a standard library trimmed to what the widgets import (traced in
Pyodide under Node at build time, `widgets.build.stdlib`), and the build fails, naming the
module, when the trimmed library would not be enough. That every widget in every language
renders on it is proven by tests/parity, which runs on the same file."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest

from widgets.build.stdlib import FULL, StdlibError, trace, trim

ROOT = Path(__file__).resolve().parents[2]
PYODIDE = ROOT / "node_modules" / "pyodide"


def shipped(site: Path) -> Path:
    (stdlib,) = (site / "assets" / "pyodide").glob("*/python_stdlib-*.zip")
    return stdlib


def test_the_site_ships_only_the_standard_library_the_widgets_import(built_site: Path) -> None:
    stdlib = shipped(built_site)
    names = set(zipfile.ZipFile(stdlib).namelist())
    full = set(zipfile.ZipFile(PYODIDE / FULL).namelist())
    assert names < full
    # On the wire (the build's Brotli copy of the stored zip): 2.5 MB → about 0.6 MB.
    assert stdlib.with_name(stdlib.name + ".br").stat().st_size < 0.3 * (PYODIDE / FULL).stat().st_size
    # What calc and the widgets import, and what Pyodide's own start needs …
    for needed in ("json/__init__.py", "dataclasses.py", "re/__init__.py", "fractions.py",
                   "pyodide/__init__.py", "_pyodide/__init__.py", "asyncio/__init__.py"):
        assert needed in names, needed
    # … and nothing of the parts no widget touches.
    for unused in ("email/", "unittest/", "xml/", "http/", "multiprocessing/", "sqlite3/", "tomllib/"):
        assert not any(name.startswith(unused) for name in names), unused
    # The name is the content's hash, so a host may cache it for as long as it likes.
    digest = re.search(r"python_stdlib-([0-9a-f]{16})\.zip", stdlib.name).group(1)
    import hashlib
    assert hashlib.sha256(stdlib.read_bytes()).hexdigest()[:16] == digest


def test_every_page_loads_the_trimmed_library_and_counts_its_size(built_site: Path) -> None:
    stdlib = shipped(built_site)
    for page in ("why-distributed-training/index.html", "zh/pipeline-parallelism/index.html"):
        html = (built_site / page).read_text(encoding="utf-8")
        settings = json.loads(re.search(r'<script type="application/json" id="widgets-config">(.*?)</script>', html, re.S).group(1))
        assert settings["stdlib"].endswith(f"/{stdlib.parent.name}/{stdlib.name}")
        assert settings["files"][stdlib.name] == stdlib.stat().st_size
        assert FULL not in settings["files"]


def test_trimming_keeps_the_bytes_and_is_reproducible(tmp_path: Path) -> None:
    files = ["json/__init__.py", "json/decoder.py", "fractions.py"]
    trim(PYODIDE / FULL, files, tmp_path / "a.zip")
    trim(PYODIDE / FULL, list(reversed(files)), tmp_path / "b.zip")
    assert (tmp_path / "a.zip").read_bytes() == (tmp_path / "b.zip").read_bytes()
    with zipfile.ZipFile(tmp_path / "a.zip") as small, zipfile.ZipFile(PYODIDE / FULL) as full:
        assert sorted(small.namelist()) == sorted(files)
        assert all(small.read(name) == full.read(name) for name in files)
    with pytest.raises(StdlibError, match="has no nonexistent.py"):
        trim(PYODIDE / FULL, ["nonexistent.py"], tmp_path / "c.zip")


def test_a_library_that_lacks_an_imported_module_fails_naming_it(built_site: Path, tmp_path: Path) -> None:
    """What the build's verification run does when the trace missed an import: the
    trimmed library without `fractions` (which calc imports) stops the build and says so."""
    stdlib = shipped(built_site)
    with zipfile.ZipFile(stdlib) as good:
        files = [name for name in good.namelist() if name != "fractions.py"]
    trim(PYODIDE / FULL, files, tmp_path / "python_stdlib-broken.zip")
    wheel = next((built_site / "assets" / "wheels").glob("*/*.whl"))
    with pytest.raises(StdlibError, match=r"lacks a module .*fractions"):
        trace(PYODIDE, wheel, built_site / "assets" / "i18n", stdlib=tmp_path / "python_stdlib-broken.zip")
