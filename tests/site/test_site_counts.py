"""`tools/serve.py` counts the response bodies it sends (`Server.reset_counts`), which the
bench's first-visit bytes stand on, and keeps connections alive as a real host does."""

from __future__ import annotations

import http.client
import sys
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from serve import start  # noqa: E402  (tools/serve.py)

SIZE = 250_000  # not a multiple of the server's pieces: the last piece is a small one


def test_the_server_counts_the_bodies_it_sent_on_one_kept_alive_connection(tmp_path: Path) -> None:
    (tmp_path / "a.bin").write_bytes(b"x" * SIZE)
    server, base = start(tmp_path, "/")
    url = urlsplit(base)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    try:
        for _ in range(6):
            connection.request("GET", "/a.bin")
            response = connection.getresponse()
            assert response.status == 200 and len(response.read()) == SIZE
            assert response.getheader("Connection", "").lower() != "close"
        assert server.reset_counts() == (6 * SIZE, 6)
        assert server.reset_counts() == (0, 0)  # counting starts again
    finally:
        connection.close()
        server.shutdown()
        server.server_close()
