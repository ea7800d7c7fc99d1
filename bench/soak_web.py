"""The web of ``bench/soak.py``: many hosts on one loopback port whose pages change on a clock.

Host ``h<i>.example`` serves ``/`` (links to its pages) and ``/p/<j>``; a page with
``j % 3 == 0`` gets a new text every ``period`` seconds, the others never change. Every
answer carries an ETag, and a request whose ``If-None-Match`` names the current one gets
a 304. Every request is recorded with its host, start and end (``Fetch``), so that the
soak judges politeness, revisits and the fetch rate from the server's side.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

WORDS = ["harbour", "lantern", "orchard", "meadow", "quarry", "thistle", "beacon", "cobble", "ferry",
         "granary", "willow", "tannery", "spindle", "almanac", "bellows", "cistern", "furrow", "gazette",
         "hamlet", "ledger"]


@dataclass(frozen=True)
class Fetch:
    host: str
    path: str
    status: int
    start: float  # time.time()
    end: float  # stamped just before the answer's one write
    conditional: bool


class SoakWeb:
    """``hosts`` x ``pages`` pages on 127.0.0.1; ``changing(path)`` tells which change."""

    def __init__(self, hosts: int = 20, pages: int = 30, period: float = 20.0) -> None:
        self.hosts = [f"h{i}.example" for i in range(hosts)]
        self.pages, self.period = pages, period
        self.started = time.time()
        self.fetches: list[Fetch] = []
        self._lock = threading.Lock()
        web = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                web._answer(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> SoakWeb:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def url(self, host: str, path: str = "/") -> str:
        return f"http://{host}:{self.port}{path}"

    def page_urls(self) -> list[str]:
        return [self.url(h, f"/p/{j}") for h in self.hosts for j in range(self.pages)]

    @staticmethod
    def changing(path: str) -> bool:
        return path.startswith("/p/") and path[3:].isdigit() and int(path[3:]) % 3 == 0

    def version(self, path: str, at: float) -> int:
        return int((at - self.started) / self.period) if self.changing(path) else 0

    def __getstate__(self) -> dict:
        """What a saved soak keeps (``bench/soak.py --save``): the web's shape and its log."""
        return {k: self.__dict__[k] for k in ("hosts", "pages", "period", "started", "port", "fetches")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def snapshot(self) -> list[Fetch]:
        with self._lock:
            return list(self.fetches)

    def _body(self, host: str, path: str, version: int) -> str | None:
        if path == "/":
            links = "".join(f'<li><a href="/p/{j}">page {j}</a></li>' for j in range(self.pages))
            about = " ".join(random.Random(host).choices(WORDS, k=30))
            return (f"<html><head><title>{host}</title></head><body><p>{host}: {about}</p>"
                    f"<ul>{links}</ul></body></html>")
        if not (path.startswith("/p/") and path[3:].isdigit() and int(path[3:]) < self.pages):
            return None
        words = " ".join(random.Random(f"{host}{path} {version}").choices(WORDS, k=60))
        return (f"<html><head><title>{host}{path}</title></head><body><article><p>{host} {path} "
                f"version {version}: {words}</p></article></body></html>")

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        start = time.time()
        host = (handler.headers.get("Host") or "").split(":")[0].lower()
        path = handler.path.split("?")[0]
        version = self.version(path, start)
        body = self._body(host, path, version) if host in self.hosts else None
        etag = f'"{version}"'
        conditional = bool(handler.headers.get("If-None-Match"))
        if body is None:
            status, data = 404, b"not found"
        elif handler.headers.get("If-None-Match") == etag:
            status, data = 304, b""
        else:
            status, data = 200, body.encode()
        head = [f"HTTP/1.1 {status} {handler.responses[status][0]}",
                f"Content-Type: {'text/html; charset=utf-8' if body else 'text/plain'}"]
        if body is not None:
            head.append(f"ETag: {etag}")
        if status != 304:
            head.append(f"Content-Length: {len(data)}")
        answer = ("\r\n".join(head) + "\r\n\r\n").encode() + data
        # The answer leaves in one write, its end stamped just before it: the write hands
        # the GIL over, and a thread slow to take it back would stamp a later end than the
        # client saw, a gap shorter than the crawler left.
        end = time.time()
        handler.wfile.write(answer)
        with self._lock:
            self.fetches.append(Fetch(host, path, status, start, end, conditional))
