"""Serve the built site over http with the MIME types Pyodide needs, optionally under a
sub-path (to prove the site works from any static host). Used by `make serve` and tests.

    python tools/serve.py [--dir site] [--port 8000] [--prefix /book/]
"""

from __future__ import annotations

import argparse
import functools
import posixpath
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from widgets.build.headers import headers_for, parse_headers_file  # noqa: E402

MIME = {
    ".wasm": "application/wasm",
    ".mjs": "text/javascript",
    ".js": "text/javascript",
    ".json": "application/json",
    ".whl": "application/zip",
    ".zip": "application/zip",
    ".css": "text/css",
    ".svg": "image/svg+xml",
    ".html": "text/html; charset=utf-8",
}


class Handler(SimpleHTTPRequestHandler):
    prefix = "/"
    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, **MIME}
    rules: list = []  # from the site's `_headers` file (CSP, caching), as a host would

    status = 200

    def send_response(self, code: int, message: str | None = None) -> None:
        self.status = code
        super().send_response(code, message)

    def end_headers(self) -> None:
        path = "/" + self.path.split("?", 1)[0].split("#", 1)[0][len(self.prefix):]
        headers = headers_for(self.rules, path)
        if self.status >= 400:
            # A missing file may be back a minute later (a deploy in progress): an error
            # must never be cached, least of all for a year under an immutable folder.
            headers = {**{k: v for k, v in headers.items() if k.lower() != "cache-control"}, "Cache-Control": "no-store"}
        for name, value in headers.items():
            self.send_header(name, value)
        super().end_headers()

    def translate_path(self, path: str) -> str:
        clean = path.split("?", 1)[0].split("#", 1)[0]
        if not clean.startswith(self.prefix):
            return str(Path(self.directory) / "__outside_prefix__")
        return super().translate_path("/" + clean[len(self.prefix):])

    def do_GET(self) -> None:
        if self.prefix != "/" and self.path.rstrip("/") + "/" == self.prefix and not self.path.endswith("/"):
            self.send_response(301)
            self.send_header("Location", self.prefix)
            self.end_headers()
            return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:  # quiet by default
        if self.server.verbose:  # type: ignore[attr-defined]
            super().log_message(format, *args)


def make_server(directory: str | Path, port: int = 0, prefix: str = "/", verbose: bool = False) -> ThreadingHTTPServer:
    """A server on 127.0.0.1 (port 0 = any free port); call serve_forever() or start().
    The site's `_headers` file, if any, is applied (Content-Security-Policy, caching)."""
    prefix = "/" + prefix.strip("/") + "/" if prefix.strip("/") else "/"
    headers_file = Path(directory) / "_headers"
    rules = parse_headers_file(headers_file.read_text(encoding="utf-8")) if headers_file.is_file() else []
    handler = functools.partial(type("PrefixedHandler", (Handler,), {"prefix": prefix, "rules": rules}), directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.verbose = verbose  # type: ignore[attr-defined]
    server.daemon_threads = True
    return server


def start(directory: str | Path, prefix: str = "/") -> tuple[ThreadingHTTPServer, str]:
    """Serve in a background thread; returns the server and the site's base URL."""
    server = make_server(directory, 0, prefix)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    base = "/" + prefix.strip("/") + "/" if prefix.strip("/") else "/"
    return server, f"http://{host}:{port}{posixpath.normpath(base)}".rstrip("/") + "/"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default="site")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--prefix", default="/")
    args = parser.parse_args()
    server = make_server(args.dir, args.port, args.prefix, verbose=True)
    print(f"Serving {args.dir} at http://127.0.0.1:{args.port}{'/' + args.prefix.strip('/') + '/' if args.prefix.strip('/') else '/'} (Ctrl+C stops)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
