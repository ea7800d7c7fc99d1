"""A loopback site whose pages change on a clock and answer conditional requests.

``/`` links to ``/fast/<i>`` (new text every ``period`` seconds), ``/slow/<i>`` (never
changes), and ``/ad`` (same text, but markup that changes on every request: a rotating
ad, no validators). Pages with validators answer ``If-None-Match`` / ``If-Modified-Since``
with a 304 when unchanged. Every request is recorded: (path, status, conditional).
"""

from __future__ import annotations

import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_EPOCH_HTTP = "Mon, 01 Jan 2024 00:00:00 GMT"


class ChangingSite:
    def __init__(self, fast: int = 2, slow: int = 3, period: float = 0.5) -> None:
        self.fast, self.slow, self.period = fast, slow, period
        self.started = time.monotonic()
        self.requests: list[tuple[str, int, bool]] = []
        self._lock = threading.Lock()
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                site._answer(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> ChangingSite:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def paths(self, kind: str) -> list[str]:
        count = self.fast if kind == "fast" else self.slow
        return [f"/{kind}/{i}" for i in range(count)]

    def fetches(self, path: str) -> list[tuple[int, bool]]:
        with self._lock:
            return [(status, conditional) for p, status, conditional in self.requests if p == path]

    def _page(self, path: str) -> tuple[str, str | None, str | None] | None:
        """(html, etag, last-modified) of ``path`` now, or None for a 404."""
        if path == "/":
            links = "".join(f'<li><a href="{p}">{p}</a></li>'
                            for p in [*self.paths("fast"), *self.paths("slow"), "/ad"])
            index = f"<html><head><title>Index</title></head><body><ul>{links}</ul></body></html>"
            return index, '"index"', None
        kind, _, number = path.strip("/").partition("/")
        if kind == "fast" and number.isdigit() and int(number) < self.fast:
            version = int((time.monotonic() - self.started) / self.period)
            body = f"<p>Fast page {number}, version {version}: the news of the moment.</p>"
            return _html(body), f'"v{version}"', None
        if kind == "slow" and number.isdigit() and int(number) < self.slow:
            body = f"<p>Slow page {number}: an archive that never changes.</p>"
            return _html(body), f'"s{number}"', _EPOCH_HTTP
        if path == "/ad":
            ad = uuid.uuid4().hex
            return _html(f'<p>A page whose text stays.</p><script>var ad = "{ad}";</script>'), None, None
        return None

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        path = handler.path.split("?")[0]
        page = self._page(path)
        conditional = bool(handler.headers.get("If-None-Match") or handler.headers.get("If-Modified-Since"))
        if page is None:
            status, body, headers = 404, b"not found", {"Content-Type": "text/plain"}
        else:
            html, etag, last_modified = page
            headers = {"Content-Type": "text/html; charset=utf-8"}
            if etag:
                headers["ETag"] = etag
            if last_modified:
                headers["Last-Modified"] = last_modified
            not_modified = etag is not None and handler.headers.get("If-None-Match") == etag
            status, body = (304, b"") if not_modified else (200, html.encode())
        with self._lock:
            self.requests.append((path, status, conditional))
        handler.send_response(status)
        for name, value in headers.items():
            handler.send_header(name, value)
        if status != 304:
            handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if status != 304:
            handler.wfile.write(body)


def _html(body: str) -> str:
    return f"<html><head><title>Page</title></head><body>{body}</body></html>"
