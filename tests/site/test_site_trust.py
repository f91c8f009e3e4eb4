"""Claims about the built site turned into checks: a strict Content-Security-Policy the
host can apply, and a reproducible build."""

from __future__ import annotations

import base64
import filecmp
import hashlib
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def test_the_emitted_policy_allows_no_inline_code_but_the_themes_hashed_scripts(built_site: Path) -> None:
    headers = (built_site / "_headers").read_text(encoding="utf-8")
    csp = re.search(r"Content-Security-Policy: (.*)", headers).group(1)
    assert "'unsafe-inline'" not in csp and "'unsafe-eval'" not in csp
    assert "'wasm-unsafe-eval'" in csp and "default-src 'self'" in csp
    assert "object-src 'none'" in csp
    for path in built_site.rglob("*.html"):
        html = path.read_text(encoding="utf-8")
        assert not re.search(r"\son[a-z]+=\"", html), f"{path}: inline event handler"
        for attrs, body in re.findall(r"<script([^>]*)>(.*?)</script>", html, re.S):
            if "src=" in attrs or 'type="application/json"' in attrs:
                continue
            digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
            assert f"'sha256-{digest}'" in csp, f"{path}: an inline script is not in the policy"
    assert "Content-Security-Policy" in (built_site / "nginx.conf.example").read_text(encoding="utf-8")


def test_the_policy_hashes_only_scripts_the_theme_ships(built_site: Path) -> None:
    """A fixed list: each hashed script is one of Material's template scripts (with its
    base URL filled in); the book adds none, so the policy holds at most a handful."""
    from widgets.build.headers import inline_script_hashes, theme_scripts

    patterns = theme_scripts()
    assert 3 <= len(patterns) <= 20
    assert any(p.pattern.startswith(re.escape("__md_scope=new URL(\"")) for p in patterns)
    hashes = inline_script_hashes(built_site, patterns)
    csp = re.search(r"Content-Security-Policy: (.*)", (built_site / "_headers").read_text(encoding="utf-8")).group(1)
    assert sorted(re.findall(r"'sha256-[^']+'", csp)) == hashes
    assert len(hashes) <= 8  # three of Material's scripts, the first at each page depth


def test_an_error_response_is_never_cacheable(built_site: Path) -> None:
    """A file missing for a minute (a deploy in progress) must load once it is back: the
    local server sends no-store with every error, also under the immutable folders."""
    import urllib.error
    import urllib.request

    sys.path.insert(0, str(ROOT / "tools"))
    from serve import start

    server, base = start(built_site, "/book/")
    try:
        [version] = [p.name for p in (built_site / "assets" / "pyodide").iterdir()]
        for missing in (f"assets/pyodide/{version}/nope.wasm", "assets/wheels/0000/nope.whl", "nope/"):
            try:
                urllib.request.urlopen(base + missing)
                raise AssertionError(f"{missing} exists")
            except urllib.error.HTTPError as error:
                assert error.code == 404
                assert error.headers["Cache-Control"] == "no-store", missing
                assert error.headers.get_all("Cache-Control") == ["no-store"]
                assert "Content-Security-Policy" in error.headers
        with urllib.request.urlopen(base + f"assets/pyodide/{version}/pyodide-lock.json") as ok:
            assert ok.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    finally:
        server.shutdown()
        server.server_close()


def test_long_lived_caching_only_for_content_addressed_files(built_site: Path) -> None:
    headers = (built_site / "_headers").read_text(encoding="utf-8")
    assert re.search(r"/assets/pyodide/\*\n  Cache-Control: public, max-age=31536000, immutable", headers)
    assert re.search(r"/assets/wheels/\*\n  Cache-Control: public, max-age=31536000, immutable", headers)
    assert re.search(r"/\*\n(  .*\n)*  Cache-Control: no-cache", headers)
    version = [p.name for p in (built_site / "assets" / "pyodide").iterdir()]
    assert version and all(re.fullmatch(r"\d+\.\d+\.\d+", v) for v in version)


def build_again(site: Path | None, folder: Path) -> dict[str, Any]:
    """A second `mkdocs build --strict` of the same tree, into `folder`/again."""
    return {"args": [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "--site-dir", str(folder / "again")]}


EARLY = {"second-build": build_again}  # run in the background once the session's site is built (tests/conftest.py)


def test_two_builds_of_the_same_commit_are_byte_identical(built_site: Path, early: Any) -> None:
    folder, result = early.result("second-build")
    assert result.returncode == 0, result.stderr[-3000:]
    second = folder / "again"
    first_files = sorted(p.relative_to(built_site) for p in built_site.rglob("*") if p.is_file()
                         and not p.relative_to(built_site).as_posix().startswith("bench-bare"))
    second_files = sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    assert first_files == second_files
    differ = [str(p) for p in first_files if not filecmp.cmp(built_site / p, second / p, shallow=False)]
    assert differ == []
