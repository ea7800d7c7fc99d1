"""The test web's HTTP server: one listening socket, a thread per connection, a record per request."""

from __future__ import annotations

import contextlib
import socket
import socketserver
import struct
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from testweb_pages import Answer
from testweb_sites import RESET

if TYPE_CHECKING:
    from testweb import TestWeb

_CHUNK = 64 * 1024


@dataclass(frozen=True)
class RequestRecord:
    """One request the test web answered.

    ``host`` is the Host header's name (lowercase, no port; the URL's host for an
    absolute-form request), ``path`` the request path without query, ``site`` the site
    that answered ("" for an unknown host), ``server_address`` the local address the
    request came in on. ``start`` is ``time.monotonic()`` when the request line was
    read, ``end`` just before the last write of the response (see ``_Handler._write``):
    a client that waits for a complete response before its next request never shows as
    overlapping. ``bytes_sent`` counts body bytes handed to the socket (kernel buffers
    may hold bytes a client never reads; HEAD: 0); ``aborted`` means a write failed.
    """

    host: str
    path: str
    method: str
    start: float
    end: float
    status: int
    bytes_sent: int
    client_port: int
    query: str = ""
    site: str = ""
    server_address: str = ""
    aborted: bool = False
    headers: Mapping[str, str] = field(default_factory=dict)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "testweb/1.0"
    timeout = 30  # idle keep-alive connections are closed after this many seconds
    disable_nagle_algorithm = True  # no 40 ms Nagle/delayed-ACK stall between writes
    server: Server
    _t0: float

    def parse_request(self) -> bool:
        self._t0 = time.monotonic()  # called right after the request line is read
        return super().parse_request()

    def do_GET(self) -> None:
        self._serve(head=False)

    def do_HEAD(self) -> None:
        self._serve(head=True)

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request stderr log."""

    def _serve(self, head: bool) -> None:
        web = self.server.web
        target = self.path
        host_header = self.headers.get("Host", "")
        if target.startswith(("http://", "https://")):  # absolute-form (proxy style)
            absolute = urlsplit(target)
            host_header = absolute.netloc
            target = absolute.path or "/"
            if absolute.query:
                target += "?" + absolute.query
        host = _host_name(host_header)
        path, _, query = target.partition("?")
        path = path.partition("#")[0] or "/"
        site = web.site_for(host) if host else web.sites[0]
        if site is not None and site.latency + site.path_latency.get(path, 0.0) > 0:
            time.sleep(site.latency + site.path_latency.get(path, 0.0))
        try:
            answer = web._answer(site, path, query, stateful=True)
            body = web._render(answer)
        except Exception:  # pragma: no cover - a bug in the model must still answer
            answer, body = Answer(500, {"Content-Type": "text/plain"}), b"testweb error\n"
            self.server.handle_error(self.request, self.client_address)
        web._writing(+1)  # until recorded, so a client that got the response sees its record
        try:
            end, sent, aborted = self._write(answer, body, head)
            web._record(
                RequestRecord(
                    host=host or "",
                    path=path,
                    method=self.command,
                    start=self._t0,
                    end=end,
                    status=answer.status,
                    bytes_sent=sent,
                    client_port=self.client_address[1],
                    query=query,
                    site=site.host if site else "",
                    server_address=self.server.server_address[0],
                    aborted=aborted,
                    headers=dict(self.headers.items()),
                )
            )
        finally:
            web._writing(-1)

    def _write(self, answer: Answer, body: bytes, head: bool) -> tuple[float, int, bool]:
        """Send ``answer`` (one write for small responses); status 0 resets the connection.

        Returns the end time, taken just before the last write (so a client that waits
        for the whole response always starts its next request after it), the body bytes
        handed to the socket and whether the client went away.
        """
        if answer.status == RESET:
            self.close_connection = True
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return time.monotonic(), 0, True
        phrase = self.responses.get(answer.status, ("",))[0]
        lines = [
            f"{self.protocol_version} {answer.status} {phrase}",
            f"Server: {self.version_string()}",
            f"Date: {self.date_time_string()}",
            *(f"{name}: {value}" for name, value in answer.headers.items()),
            f"Content-Length: {len(body)}",
        ]
        if self.close_connection:
            lines.append("Connection: close")
        head_bytes = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        payload = memoryview(head_bytes if head else head_bytes + body)
        written = 0
        end = time.monotonic()
        try:
            while written < len(payload):
                piece = payload[written : written + _CHUNK]
                if written + len(piece) >= len(payload):
                    end = time.monotonic()
                self.wfile.write(piece)
                written += len(piece)
        except OSError:
            self.close_connection = True
            return time.monotonic(), max(0, written - len(head_bytes)), True
        return end, 0 if head else written - len(head_bytes), False


def _host_name(host_header: str) -> str:
    host = host_header.strip().lower()
    if host.startswith("["):  # IPv6 literal
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0].rstrip(".") if ":" in host else host.rstrip(".")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 1024  # listen backlog: crawlers open many connections at once

    def __init__(self, address: tuple[str, int], web: TestWeb) -> None:
        self.web = web
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls socket.getfqdn(), a reverse DNS lookup; skip it.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)
