"""The precompressed copies (`widgets/build/compress.py`) and how `tools/serve.py` sends
them: Brotli or gzip only to a client that asks, with the original's type and headers."""

from __future__ import annotations

import gzip
import http.client
import re
import sys
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit

import brotli
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from serve import accepted_encodings, start  # noqa: E402  (tools/serve.py)

from widgets.build.compress import MIN_GAIN, MIN_SIZE, SUFFIXES, compress  # noqa: E402
from widgets.build.headers import headers_for, parse_headers_file  # noqa: E402

DECOMPRESS = {".br": brotli.decompress, ".gz": gzip.decompress}


def pyodide(site: Path) -> Path:
    [folder] = (site / "assets" / "pyodide").iterdir()
    return folder


def worth_it(raw: bytes, encoding: str) -> bool:
    return len(compress(raw, encoding)) <= len(raw) * (1 - MIN_GAIN)


def test_the_runtime_the_search_index_and_the_strings_have_both_copies(built_site: Path) -> None:
    files = [pyodide(built_site) / "pyodide.asm.wasm", pyodide(built_site) / "pyodide.asm.mjs",
             built_site / "search" / "search_index.json", built_site / "zh" / "search" / "search_index.json",
             built_site / "assets" / "i18n" / "id.json", built_site / "assets" / "i18n" / "zh.json"]
    for path in files:
        raw = path.read_bytes()
        for suffix, decompress in DECOMPRESS.items():
            copy = path.with_name(path.name + suffix)
            assert copy.is_file(), f"{path.relative_to(built_site)}{suffix} missing"
            assert decompress(copy.read_bytes()) == raw
            assert copy.stat().st_size <= 0.95 * len(raw)
    wasm = (pyodide(built_site) / "pyodide.asm.wasm").stat().st_size
    assert (pyodide(built_site) / "pyodide.asm.wasm.br").stat().st_size < 0.4 * wasm


def test_the_deflated_archives_get_a_copy_only_where_it_gains_five_percent(built_site: Path) -> None:
    """The wheel and the stdlib zip are deflate archives already: a copy that would not be
    5% smaller is not written (and one that is, is)."""
    archives = [*pyodide(built_site).glob("python_stdlib*.zip"), *(built_site / "assets" / "wheels").rglob("*.whl")]
    assert len(archives) == 2
    for path in archives:
        raw = path.read_bytes()
        for suffix, encoding in ((".br", "br"), (".gz", "gzip")):
            copy = path.with_name(path.name + suffix)
            assert copy.is_file() == worth_it(raw, encoding), f"{path.name}{suffix}"
            if copy.is_file():
                assert DECOMPRESS[suffix](copy.read_bytes()) == raw


def test_every_copy_is_the_file_smaller_and_reproducible(built_site: Path) -> None:
    """Each copy decompresses to its file, is at least 5% smaller, sits beside a large file
    of a listed type (mkdocs' own sitemap.xml.gz aside); gzip carries no name and no date."""
    copies = [p for p in built_site.rglob("*") if p.suffix in DECOMPRESS and p.name != "sitemap.xml.gz"]
    assert len(copies) > 100
    for copy in copies:
        original = copy.with_suffix("")
        assert original.suffix in SUFFIXES, copy
        raw = original.read_bytes()
        assert len(raw) >= MIN_SIZE, copy
        assert copy.stat().st_size <= len(raw) * (1 - MIN_GAIN), copy
        data = copy.read_bytes()
        assert DECOMPRESS[copy.suffix](data) == raw, copy
        if copy.suffix == ".gz":
            assert data[3] & 0x08 == 0 and data[4:8] == b"\0\0\0\0", f"{copy}: gzip with a name or a date"
    small = [p for p in built_site.rglob("*") if p.suffix in SUFFIXES and p.is_file() and p.stat().st_size < MIN_SIZE]
    assert small and not any(p.with_name(p.name + s).exists() for p in small for s in DECOMPRESS)


@pytest.mark.parametrize("header, expected", [
    (None, []), ("", []), ("identity", []), ("br, gzip", ["br", "gzip"]), ("gzip, deflate, br, zstd", ["br", "gzip"]),
    ("gzip", ["gzip"]), ("br;q=0", []), ("br;q=0, gzip", ["gzip"]), ("BR;Q=0.0, GZIP;q=1", ["gzip"]),
    ("gzip;q=1.0, br;q=0.5", ["gzip", "br"]), ("*", ["br", "gzip"]), ("*;q=0", []), ("gzip, *;q=0", ["gzip"]),
    ("br;q=0, *", ["gzip"]), ("br;q=nonsense, gzip", ["gzip"]),
])
def test_accept_encoding_is_read_with_its_q_values(header: str | None, expected: list[str]) -> None:
    assert accepted_encodings(header) == expected


@pytest.fixture(scope="module")
def server(built_site: Path) -> Iterator[tuple[str, int, str]]:
    """tools/serve.py on a free port, under the sub-path /book/ as the browser tests use it."""
    httpd, base = start(built_site, "/book/")
    url = urlsplit(base)
    yield url.hostname, url.port, url.path
    httpd.shutdown()
    httpd.server_close()


def fetch(server: tuple[str, int, str], path: str, accept: str | None, method: str = "GET",
          headers: dict[str, str] | None = None) -> tuple[int, http.client.HTTPMessage, bytes]:
    """One request with exactly this Accept-Encoding (None: no such header at all)."""
    host, port, prefix = server
    connection = http.client.HTTPConnection(host, port, timeout=30)
    try:
        connection.putrequest(method, prefix + path, skip_accept_encoding=True)
        if accept is not None:
            connection.putheader("Accept-Encoding", accept)
        for name, value in (headers or {}).items():
            connection.putheader(name, value)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        connection.close()


WASM = "pyodide.asm.wasm"


def wasm_path(built_site: Path) -> str:
    return pyodide(built_site).relative_to(built_site).as_posix() + "/" + WASM


@pytest.mark.parametrize("accept, encoding", [
    ("br, gzip", "br"), ("gzip, deflate, br, zstd", "br"), ("gzip", "gzip"), ("br;q=0, gzip", "gzip"),
    ("identity", None), (None, None), ("br;q=0", None), ("deflate", None),
])
def test_the_server_sends_the_copy_the_client_accepts(built_site: Path, server: tuple[str, int, str],
                                                       accept: str | None, encoding: str | None) -> None:
    path = wasm_path(built_site)
    status, headers, body = fetch(server, path, accept)
    assert status == 200
    assert headers["Content-Type"] == "application/wasm"
    assert headers.get_all("Vary") == ["Accept-Encoding"]
    assert headers.get("Content-Encoding") == encoding
    expected = (built_site / (path + {"br": ".br", "gzip": ".gz", None: ""}[encoding])).read_bytes()
    assert int(headers["Content-Length"]) == len(body) == len(expected)
    assert body == expected
    # The file's own rules of _headers, not those of a .br path: policy and year-long caching.
    assert headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert "wasm-unsafe-eval" in headers["Content-Security-Policy"]
    assert headers["X-Content-Type-Options"] == "nosniff"


def test_head_answers_as_get_without_a_body(built_site: Path, server: tuple[str, int, str]) -> None:
    path = wasm_path(built_site)
    for accept, size in (("br, gzip", (built_site / (path + ".br")).stat().st_size),
                         ("identity", (built_site / path).stat().st_size)):
        status, headers, body = fetch(server, path, accept, method="HEAD")
        assert status == 200 and body == b""
        assert int(headers["Content-Length"]) == size
        assert headers["Content-Type"] == "application/wasm" and headers["Vary"] == "Accept-Encoding"
        assert headers.get("Content-Encoding") == ("br" if accept.startswith("br") else None)


def test_pages_and_data_keep_their_types_and_headers(built_site: Path, server: tuple[str, int, str]) -> None:
    """A page by its folder URL, the search index and the strings: Brotli with the original
    Content-Type; the page keeps the revalidation rule and the policy of an identity reply."""
    for path, original, ctype in (("why-distributed-training/", "why-distributed-training/index.html", "text/html; charset=utf-8"),
                                  ("zh/search/search_index.json", "zh/search/search_index.json", "application/json"),
                                  ("assets/i18n/zh.json", "assets/i18n/zh.json", "application/json"),
                                  (pyodide(built_site).relative_to(built_site).as_posix() + "/pyodide.asm.mjs", None, "text/javascript")):
        original = original or path
        status, headers, body = fetch(server, path, "br, gzip")
        assert status == 200 and headers["Content-Encoding"] == "br", path
        assert headers["Content-Type"] == ctype and headers["Vary"] == "Accept-Encoding"
        assert brotli.decompress(body) == (built_site / original).read_bytes()
        _, plain, _ = fetch(server, path, None)
        assert "Content-Encoding" not in plain
        for name in ("Cache-Control", "Content-Security-Policy", "Referrer-Policy"):
            assert headers[name] == plain[name], (path, name)
    _, page, _ = fetch(server, "why-distributed-training/", "gzip")
    assert page["Content-Encoding"] == "gzip" and page["Cache-Control"] == "no-cache"


def test_files_without_a_copy_are_sent_as_they_are_without_vary(built_site: Path, server: tuple[str, int, str]) -> None:
    small = next(p for p in sorted(built_site.rglob("*.js")) if p.stat().st_size < MIN_SIZE)
    status, headers, body = fetch(server, small.relative_to(built_site).as_posix(), "br, gzip")
    assert status == 200 and body == small.read_bytes()
    assert "Content-Encoding" not in headers and "Vary" not in headers
    status, headers, _ = fetch(server, "nope.wasm", "br, gzip")
    assert status == 404 and "Vary" not in headers and headers["Cache-Control"] == "no-store"


def test_a_copy_asked_for_by_name_is_bytes_not_the_original_type(built_site: Path, server: tuple[str, int, str]) -> None:
    status, headers, body = fetch(server, wasm_path(built_site) + ".br", "br")
    assert status == 200 and headers["Content-Type"] == "application/octet-stream"
    assert "Content-Encoding" not in headers


def test_a_revalidated_copy_is_not_modified(built_site: Path, server: tuple[str, int, str]) -> None:
    """Pages are `no-cache`: the browser asks again with If-Modified-Since on every visit."""
    _, first, _ = fetch(server, "why-distributed-training/", "br")
    status, headers, body = fetch(server, "why-distributed-training/", "br",
                                  headers={"If-Modified-Since": first["Last-Modified"]})
    assert status == 304 and body == b"" and headers["Vary"] == "Accept-Encoding"


def test_the_host_files_say_how_to_serve_the_copies(built_site: Path) -> None:
    """`_headers` notes that Netlify and Cloudflare Pages compress by themselves (a comment
    their parsers and ours skip); nginx serves the copies with gzip_static/brotli_static."""
    text = (built_site / "_headers").read_text(encoding="utf-8")
    assert re.search(r"^# .*compress", text, re.M)
    rules = parse_headers_file(text)
    assert all(pattern.startswith("/") for pattern, _ in rules)
    assert headers_for(rules, "/assets/pyodide/x/pyodide.asm.wasm")["Cache-Control"].endswith("immutable")
    assert "gzip_static on;" in (built_site / "nginx.conf.example").read_text(encoding="utf-8")
    nginx = (ROOT / "nginx.conf.example").read_text(encoding="utf-8")
    live = [line.split("#", 1)[0].strip() for line in nginx.splitlines()]
    for directive in ("gzip_static on;", "brotli_static on;", "gzip_vary on;", "include mime.types;",
                      "load_module modules/ngx_http_brotli_static_module.so;"):
        assert directive in live, directive
    assert any(line.startswith("include ") and line.endswith("nginx.conf.example;") for line in live)
