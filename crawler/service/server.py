"""The service's HTTP server: uvicorn, on a socket bound before it starts, with a read
timeout on every request.

uvicorn closes an idle keep-alive connection (``timeout_keep_alive``) but waits forever
for a request that never finishes arriving; :class:`TimedH11Protocol` adds the read
timeout it lacks (a few lines on its own protocol class). A stalled client costs an
open socket until then, never a thread: connections live on the event loop, and only
the API's blocking calls go to a thread pool of ``SERVE_THREADS``.
"""

from __future__ import annotations

import asyncio
import socket
from typing import TYPE_CHECKING, Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

if TYPE_CHECKING:
    from fastapi import FastAPI

# uvicorn's protocol takes only its own config: the read timeout is set on the class.
READ_TIMEOUT = 10.0


class TimedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request (headers and body) has
    not all arrived ``read_timeout`` seconds after its first byte (or the connection)."""

    read_timeout = READ_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._read_timer: asyncio.TimerHandle | None = None

    def _arm(self) -> None:
        self._read_timer = self.loop.call_later(self.read_timeout, self._read_timed_out)

    def _disarm(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._read_timer is None:
            self._arm()
        super().data_received(data)

    def on_response_complete(self) -> None:
        self._disarm()
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _read_timed_out(self) -> None:
        self._read_timer = None
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete and not cycle.more_body:
            return  # the request is all here and being answered
        if not self.transport.is_closing():
            self.transport.close()


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (OSError, OverflowError for a bad port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def serve(app: FastAPI, sock: socket.socket, read_timeout: float, idle_timeout: float,
          max_connections: int) -> None:
    """Serve ``app`` on ``sock`` until SIGINT or SIGTERM (uvicorn's graceful shutdown)."""
    protocol = type("ServiceH11Protocol", (TimedH11Protocol,), {"read_timeout": read_timeout})
    config = uvicorn.Config(app, http=protocol, lifespan="on", log_config=None, access_log=False,
                            timeout_keep_alive=max(1, round(idle_timeout)), limit_concurrency=max_connections,
                            timeout_graceful_shutdown=5, proxy_headers=False, server_header=False)
    uvicorn.Server(config).run(sockets=[sock])
