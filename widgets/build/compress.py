"""Precompressed copies of the site's large files, for hosts that serve them as they are.

After the build, every file whose suffix is in `SUFFIXES` and whose size is at least
`MIN_SIZE` gets a Brotli (`<file>.br`) and a gzip (`<file>.gz`) sibling, each only if it
is at least 5% smaller than the file (`MIN_GAIN`): the wheel and Pyodide's stdlib zip are
deflate archives already and may gain nothing. `tools/serve.py` sends them to a browser
that accepts them (`Content-Encoding`, `Vary: Accept-Encoding`); nginx does the same with
`gzip_static on;` and ngx_brotli's `brotli_static on;` (`nginx.conf.example`), and hosts
that compress by themselves (Netlify, Cloudflare Pages) ignore them.

The output is deterministic: Brotli from the `brotli` package (Google's own bindings) at
a fixed quality, gzip from the standard library at level 9 with no name and mtime 0, so
two builds of one commit are byte-identical. Quality 11 is Brotli's best and costs about
2 s per MB. The wasm takes 32 s at 11 against 1.5 s at 9, but 11 saves 360 KB of every
first visit and the cache below pays the 32 s once per machine (the wasm is pinned), so
large files get 11 too; `LARGE_QUALITY` is where to trade that back.
Compressed bytes are kept in `build/compress-cache/`, keyed by the file's SHA-256, so a
rebuild compresses only what changed (the Pyodide core, Material's bundles and unchanged
pages come from the cache); entries unused for `CACHE_DAYS` days are dropped.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
import time
from pathlib import Path

import brotli

SUFFIXES = frozenset({".wasm", ".mjs", ".js", ".zip", ".whl", ".json", ".css", ".html", ".svg", ".txt"})
MIN_SIZE = 1024  # bytes: below this the headers weigh more than the saving
MIN_GAIN = 0.05  # a compressed copy must be at least 5% smaller than the file
QUALITY = 11  # Brotli's best
LARGE = 2 * 1024 * 1024  # bytes: from here on, quality 11 is too slow for a build
LARGE_QUALITY = 11  # 9 would save ~30 s of a cold build for ~13% more bytes
GZIP_LEVEL = 9
ENCODINGS = {"br": ".br", "gzip": ".gz"}  # Content-Encoding -> sibling suffix, preferred first
CACHE_DAYS = 30

__all__ = ["compress_site", "compress", "ENCODINGS", "SUFFIXES"]


def compress(data: bytes, encoding: str) -> bytes:
    """`data` compressed for `Content-Encoding: encoding` ("br" or "gzip"), deterministically."""
    if encoding == "br":
        return brotli.compress(data, quality=QUALITY if len(data) < LARGE else LARGE_QUALITY)
    if encoding == "gzip":
        return gzip.compress(data, GZIP_LEVEL, mtime=0)
    raise ValueError(f"unknown encoding {encoding!r}")


def _cache_key(data: bytes, encoding: str) -> str:
    quality = (QUALITY if len(data) < LARGE else LARGE_QUALITY) if encoding == "br" else GZIP_LEVEL
    version = brotli.__version__ if encoding == "br" else "stdlib"
    return f"{hashlib.sha256(data).hexdigest()}-{encoding}{quality}-{version}"


def _compressed(data: bytes, encoding: str, cache: Path | None) -> bytes:
    if cache is None:
        return compress(data, encoding)
    entry = cache / _cache_key(data, encoding)
    try:
        out = entry.read_bytes()
        os.utime(entry)  # used: keep it
        return out
    except OSError:
        pass
    out = compress(data, encoding)
    cache.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=cache, prefix=".tmp-")
    with os.fdopen(fd, "wb") as file:
        file.write(out)
    os.replace(tmp, entry)  # atomic: two builds at once never read half an entry
    return out


def _write(path: Path, data: bytes) -> None:
    if path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data:
        return
    path.write_bytes(data)


def compress_site(root: Path, cache: Path | None = None) -> dict[str, dict[str, int]]:
    """Write `.br` and `.gz` beside the large files of `root` (and remove stale ones);
    returns {relative path: {"raw": bytes, "br": bytes, "gzip": bytes}} for every file
    considered, an encoding left out when its copy was not worth writing."""
    report: dict[str, dict[str, int]] = {}
    for path in sorted(root.rglob("*")):
        if path.suffix not in SUFFIXES or not path.is_file():
            continue
        data = path.read_bytes()
        sizes = {"raw": len(data)}
        for encoding, suffix in ENCODINGS.items():
            sibling = path.with_name(path.name + suffix)
            out = _compressed(data, encoding, cache) if len(data) >= MIN_SIZE else None
            if out is not None and len(out) <= len(data) * (1 - MIN_GAIN):
                _write(sibling, out)
                sizes[encoding] = len(out)
            elif sibling.is_file():
                sibling.unlink()  # left from an earlier build of other content
        if len(data) >= MIN_SIZE:
            report[path.relative_to(root).as_posix()] = sizes
    if cache is not None and cache.is_dir():
        stale = time.time() - CACHE_DAYS * 86400
        for entry in cache.iterdir():
            try:
                if entry.stat().st_mtime < stale:
                    entry.unlink()
            except OSError:
                pass  # another build removed it
    return report
