"""Serve the built site over http with the MIME types Pyodide needs, optionally under a
sub-path (to prove the site works from any static host). Used by `make serve` and tests.

Like nginx's `gzip_static`/`brotli_static`, it sends the build's precompressed copy of a
file (`<file>.br`, `<file>.gz`, `widgets/build/compress.py`) to a client whose
Accept-Encoding allows it (`Content-Encoding`, the original's Content-Type), and
`Vary: Accept-Encoding` with every file that has such a copy. No Range requests.

It counts the response bodies it sends (`Server.reset_counts`: the bench's bytes on the
wire).

    python tools/serve.py [--dir site] [--port 8000] [--prefix /book/]
"""

from __future__ import annotations

import argparse
import datetime
import email.utils
import functools
import os
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
    # A compressed copy asked for by its own name is bytes, never the original's type
    # without its Content-Encoding (Python's mimetypes would say text/xml for x.xml.gz).
    ".gz": "application/gzip",
    ".br": "application/octet-stream",
}
ENCODINGS = {"br": ".br", "gzip": ".gz"}  # preferred first, as widgets/build/compress.py writes them


def accepted_encodings(header: str | None) -> list[str]:
    """The content codings of ENCODINGS that an Accept-Encoding header allows, best first
    (by q-value, then br before gzip). No header means identity only; `q=0` refuses a
    coding; `*` stands for every coding the header does not name."""
    if not header:
        return []
    weights: dict[str, float] = {}
    for item in header.split(","):
        name, *params = (part.strip() for part in item.split(";"))
        if not name:
            continue
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value.strip())
                except ValueError:
                    q = 0.0
        name = name.lower()
        weights[name] = q
        if name == "x-gzip":  # RFC 9110, 8.4.1.3: the same coding as gzip
            weights.setdefault("gzip", q)
    wildcard = weights.get("*", 0.0)
    ranked = [(weights.get(name, wildcard), -order, name) for order, name in enumerate(ENCODINGS)]
    return [name for q, _, name in sorted(ranked, reverse=True) if q > 0]


class Handler(SimpleHTTPRequestHandler):
    # Keep-alive, as every real host: a page's requests share a few connections, which
    # matters on an emulated slow link (a new connection costs a round trip).
    protocol_version = "HTTP/1.1"
    # No Nagle: on a kept-alive connection a body's last small piece would otherwise wait
    # for the client's delayed ACK (40 ms per response).
    disable_nagle_algorithm = True
    prefix = "/"
    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, **MIME}
    rules: list = []  # from the site's `_headers` file (CSP, caching), as a host would

    status = 200
    vary = False  # this response's file has a compressed copy

    def parse_request(self) -> bool:
        self.vary = False  # per request, also when an error answers it before send_head
        return super().parse_request()

    def copyfile(self, source, outputfile) -> None:  # type: ignore[no-untyped-def]
        """The body, counted (`Server.sent`) before each piece goes out, so that a client
        that has read a body never sees a count without it."""
        self.server.count(0, bodies=1)  # type: ignore[attr-defined]
        while chunk := source.read(64 * 1024):
            self.server.count(len(chunk))  # type: ignore[attr-defined]
            outputfile.write(chunk)

    def send_response(self, code: int, message: str | None = None) -> None:
        self.status = code
        super().send_response(code, message)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """A 404 answered with the site's own `404.html` when it has one, as Netlify,
        Cloudflare Pages and nginx's `error_page 404 /404.html` do (the status stays 404,
        `end_headers` makes it no-store); every other error as the standard library has it."""
        page = Path(self.directory) / "404.html"
        if code != 404 or not page.is_file():
            super().send_error(code, message, explain)
            return
        body = page.read_bytes()
        self.log_error("code %d, message %s", code, message)
        self.send_response(code, message)
        self.send_header("Connection", "close")
        self.send_header("Content-Type", MIME[".html"])
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def end_headers(self) -> None:
        path = "/" + self.path.split("?", 1)[0].split("#", 1)[0][len(self.prefix):]
        headers = headers_for(self.rules, path)
        if self.status >= 400:
            # A missing file may be back a minute later (a deploy in progress): an error
            # must never be cached, least of all for a year under an immutable folder.
            headers = {**{k: v for k, v in headers.items() if k.lower() != "cache-control"}, "Cache-Control": "no-store"}
        for name, value in headers.items():
            self.send_header(name, value)
        if self.vary:
            self.send_header("Vary", "Accept-Encoding")
        super().end_headers()

    def send_head(self):  # type: ignore[no-untyped-def]
        """The compressed copy of the file when one exists and the client accepts it;
        otherwise the standard handling (directories, redirects, 404, the file itself)."""
        self.vary = False
        path = self.translate_path(self.path)
        if os.path.isdir(path) and self.path.split("?", 1)[0].split("#", 1)[0].endswith("/"):
            path = os.path.join(path, "index.html")
        copies = {name: path + suffix for name, suffix in ENCODINGS.items() if os.path.isfile(path + suffix)}
        if not copies or not os.path.isfile(path):
            return super().send_head()
        self.vary = True
        encoding = next((name for name in accepted_encodings(self.headers.get("Accept-Encoding")) if name in copies), None)
        if encoding is None:
            return super().send_head()  # the file itself, with Vary
        f = open(copies[encoding], "rb")
        try:
            modified = os.stat(path).st_mtime
            if self.not_modified(modified):
                self.send_response(304)
                self.end_headers()
                f.close()
                return None
            self.send_response(200)
            self.send_header("Content-type", self.guess_type(path))
            self.send_header("Content-Encoding", encoding)
            self.send_header("Content-Length", str(os.fstat(f.fileno()).st_size))
            self.send_header("Last-Modified", self.date_time_string(modified))
            self.end_headers()
            return f
        except BaseException:
            f.close()
            raise

    def not_modified(self, mtime: float) -> bool:
        """If-Modified-Since as SimpleHTTPRequestHandler.send_head checks it."""
        if "If-Modified-Since" not in self.headers or "If-None-Match" in self.headers:
            return False
        try:
            since = email.utils.parsedate_to_datetime(self.headers["If-Modified-Since"])
        except (TypeError, IndexError, OverflowError, ValueError):
            return False
        if since.tzinfo is None:
            since = since.replace(tzinfo=datetime.timezone.utc)
        if since.tzinfo is not datetime.timezone.utc:
            return False
        return datetime.datetime.fromtimestamp(mtime, datetime.timezone.utc).replace(microsecond=0) <= since

    def translate_path(self, path: str) -> str:
        clean = path.split("?", 1)[0].split("#", 1)[0]
        if not clean.startswith(self.prefix):
            return str(Path(self.directory) / "__outside_prefix__")
        return super().translate_path("/" + clean[len(self.prefix):])

    def do_GET(self) -> None:
        if self.prefix != "/" and self.path.rstrip("/") + "/" == self.prefix and not self.path.endswith("/"):
            self.send_response(301)
            self.send_header("Location", self.prefix)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:  # quiet by default
        if self.server.verbose:  # type: ignore[attr-defined]
            super().log_message(format, *args)


class Server(ThreadingHTTPServer):
    """Counts the response bodies it sends (`sent` bytes in `responses` bodies), for the
    bench's bytes on the wire."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler, verbose: bool = False) -> None:  # type: ignore[no-untyped-def]
        super().__init__(address, handler)
        self.verbose = verbose
        self.sent = self.responses = 0
        self._count_lock = threading.Lock()

    def handle_error(self, request, client_address) -> None:  # type: ignore[no-untyped-def]
        """A browser closing a kept-alive connection is not an error worth a traceback."""
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)

    def count(self, size: int, bodies: int = 0) -> None:
        with self._count_lock:
            self.sent += size
            self.responses += bodies

    def reset_counts(self) -> tuple[int, int]:
        """The (bytes, responses) counted so far; starts counting again from zero."""
        with self._count_lock:
            counts, self.sent, self.responses = (self.sent, self.responses), 0, 0
        return counts


def make_server(directory: str | Path, port: int = 0, prefix: str = "/", verbose: bool = False) -> Server:
    """A server on 127.0.0.1 (port 0 = any free port); call serve_forever() or start().
    The site's `_headers` file, if any, is applied (Content-Security-Policy, caching)."""
    prefix = "/" + prefix.strip("/") + "/" if prefix.strip("/") else "/"
    headers_file = Path(directory) / "_headers"
    rules = parse_headers_file(headers_file.read_text(encoding="utf-8")) if headers_file.is_file() else []
    handler = functools.partial(type("PrefixedHandler", (Handler,), {"prefix": prefix, "rules": rules}), directory=str(directory))
    return Server(("127.0.0.1", port), handler, verbose)


def start(directory: str | Path, prefix: str = "/") -> tuple[Server, str]:
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
