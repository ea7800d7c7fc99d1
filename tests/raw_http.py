"""An HTTP server on loopback that keeps each request's bytes as received and answers
with a chunked, gzip-encoded page: what the archive must store de-chunked."""

from __future__ import annotations

import asyncio
import gzip
import threading

PAGE = b"<!doctype html><html><head><title>Raw</title></head><body><p>" + b"chunked words " * 300 + \
    b"</p></body></html>"
BODY = gzip.compress(PAGE, mtime=0)


class RawServer:
    """Answers ``/robots.txt`` 404 and any other path with ``BODY`` in three chunks;
    ``requests`` maps each path to the request bytes received (line and headers)."""

    def __init__(self) -> None:
        self.requests: dict[str, bytes] = {}
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            for _ in range(100):  # requests on one connection, bounded
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
                path = head.split(b" ", 2)[1].decode()
                self.requests[path] = head
                if path == "/robots.txt":
                    writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                else:
                    third = len(BODY) // 3
                    chunks = [BODY[:third], BODY[third:2 * third], BODY[2 * third:]]
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n"
                                 b"Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
                                 + b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n")
                await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def __enter__(self) -> RawServer:
        self._thread.start()
        server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._answer, "127.0.0.1", 0), self._loop).result(10)
        self._server = server
        self.port = server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            self._server.close()
            await self._server.wait_closed()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
