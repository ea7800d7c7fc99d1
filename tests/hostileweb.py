"""A hostile test web: servers that defend themselves against crawlers, on loopback.

One asyncio server on a free loopback port answers virtual hosts by the ``Host`` header;
each ``*.test`` host is one hostile case (the crawl reaches them through
``testweb.LoopbackResolver``, which maps every ``.test`` name to 127.0.0.1):

- ``br-bomb``, ``gzgz-bomb``, ``deflate-bomb``: a robots.txt that decodes to 1 GiB
  (brotli; gzip inside gzip; raw deflate), and three pages beside it;
- ``page-bomb``: pages and sitemaps that decode to 1 GiB (``Content-Encoding: br``,
  ``gzip, gzip``, ``deflate``; a ``.xml.gz`` file);
- ``no-length``: a 50 MB close-delimited body and an endless chunked one;
- ``big-headers``: 2,000 headers of 1 KB;
- ``odd-headers``: a page whose ``Link`` and other headers hold bytes that are not ASCII;
- ``loops``: a redirect loop and a chain of 40 redirects;
- ``utf16``: a robots.txt saved as UTF-16 with a BOM, disallowing ``/private/``;
- ``stall``: accepts, reads the request, never answers.

Every other path of a host is a small HTML page. Bodies are made once per process
(``bombs()``); every write loop is bounded in bytes and time.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gzip
import random
import struct
import threading
import time
import zlib
from collections.abc import Awaitable, Callable

import brotli

MIB = 1 << 20
BOMB_MIB = 1024  # what each bomb decodes to
ENDLESS_LIMIT = 400 * MIB  # the most an "endless" body sends, for the write loops' bound
STALL_SECONDS = 120.0  # a stalled answer is held this long at most


def _deflate_bomb(wbits: int, mib: int) -> bytes:
    """``mib`` MiB of zeros, compressed by repeating one full-flushed block (made in
    milliseconds where compressing 1 GiB takes seconds); gzip's trailer is written by hand."""
    zeros = b"\0" * MIB
    compressor = zlib.compressobj(9, zlib.DEFLATED, wbits)
    first = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    tail = compressor.flush()
    if wbits < 0:
        return first + block * (mib - 1) + tail
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(zeros, crc)
    return first + block * (mib - 1) + tail[:-8] + struct.pack("<II", crc, (mib * MIB) & 0xFFFFFFFF)


@functools.cache
def bombs() -> dict[str, bytes]:
    """Bodies that each decode to BOMB_MIB MiB, by coding."""
    compressor = brotli.Compressor(quality=5)
    zeros = b"\0" * MIB
    br = b"".join(compressor.process(zeros) for _ in range(BOMB_MIB)) + compressor.finish()
    gz = _deflate_bomb(31, BOMB_MIB)
    return {"br": br, "gzip": gz, "gzip, gzip": gzip.compress(gz, 9),
            "deflate": _deflate_bomb(-15, BOMB_MIB)}


def _head(status: str, headers: list[tuple[str, str]] | list[tuple[bytes, bytes]]) -> bytes:
    lines = [f"HTTP/1.1 {status}".encode()]
    for name, value in headers:
        lines.append((name.encode() if isinstance(name, str) else name) + b": "
                     + (value.encode() if isinstance(value, str) else value))
    return b"\r\n".join(lines) + b"\r\n\r\n"


def page(links: list[str], words: str) -> bytes:
    anchors = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return (f"<!doctype html><html><head><title>{words}</title></head><body><main><h1>{words}</h1>"
            f"<p>{words} It has enough words in it to be kept as the main text of a page.</p>"
            f"<ul>{anchors}</ul></main></body></html>").encode()


class HostileWeb:
    """The hostile hosts on one free loopback port; ``url(host, path)`` names a page."""

    PAGES = ["/one", "/two", "/three"]

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self.hits: list[tuple[float, str, str]] = []  # (time, host, path)
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._server: asyncio.base_events.Server | None = None
        self.hosts: dict[str, Callable[[str, asyncio.StreamWriter], Awaitable[bool | None]]] = {
            "br-bomb": self._br_bomb, "gzgz-bomb": self._gzgz_bomb, "deflate-bomb": self._deflate_bomb,
            "page-bomb": self._page_bomb, "no-length": self._no_length, "big-headers": self._big_headers,
            "odd-headers": self._odd_headers, "loops": self._loops, "utf16": self._utf16,
            "stall": self._stall,
        }
        bombs()  # made before the clock of any test starts

    def url(self, host: str, path: str = "/") -> str:
        return f"http://{host}.test:{self.port}{path}"

    def __enter__(self) -> HostileWeb:
        self._thread.start()
        self._started.wait(10)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self._server = self.loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0, limit=256 * 1024))
        self.port = self._server.sockets[0].getsockname()[1]
        self._started.set()
        self.loop.run_forever()
        self._server.close()
        for task in asyncio.all_tasks(self.loop):
            task.cancel()
        with contextlib.suppress(Exception):
            self.loop.run_until_complete(asyncio.sleep(0))
        self.loop.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                                 asyncio.CancelledError):
            for _ in range(100):  # requests on one connection, bounded
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 60)
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                host = next((line.split(":", 1)[1].strip() for line in lines[1:]
                             if line.lower().startswith("host:")), "")
                name = host.split(":")[0].removesuffix(".test")
                self.hits.append((time.monotonic(), name, path))
                keep_open = await self._answer(name, path, writer)
                await writer.drain()
                if not keep_open:
                    break
        with contextlib.suppress(Exception):
            writer.close()

    async def _answer(self, host: str, path: str, writer: asyncio.StreamWriter) -> bool:
        """Write the answer; False when the connection ends with it."""
        special = self.hosts.get(host)
        if special is not None:
            answered = await special(path, writer)
            if answered is not None:
                return answered
        if path == "/robots.txt":
            writer.write(_head("404 Not Found", [("Content-Length", "0")]))
            return True
        self._html(writer, host, path, self.PAGES if path == "/" else [])
        return True

    def _html(self, writer: asyncio.StreamWriter, host: str, path: str, links: list[str]) -> None:
        self._send(writer, "200 OK", page(links, self.words(host, path)), [("Content-Type", "text/html")])

    @staticmethod
    def words(host: str, path: str) -> str:
        """A text of its own for every page: none is a duplicate of another."""
        draw = random.Random(f"{host}{path}")
        syllables = ["ka", "lo", "mi", "ne", "su", "ri", "to", "va", "de", "po", "gu", "zi"]
        return f"{host} {path}: " + " ".join(
            "".join(draw.choices(syllables, k=3)) for _ in range(60))

    @staticmethod
    def _send(writer: asyncio.StreamWriter, status: str, body: bytes,
              headers: list[tuple[str, str]] | None = None) -> None:
        writer.write(_head(status, [*(headers or []), ("Content-Length", str(len(body)))]) + body)

    # ---- one method a host: None lets the plain answer through

    async def _robots_bomb(self, coding: str, path: str, writer: asyncio.StreamWriter) -> bool | None:
        if path != "/robots.txt":
            return None
        self._send(writer, "200 OK", bombs()[coding],
                   [("Content-Type", "text/plain"), ("Content-Encoding", coding)])
        return True

    async def _br_bomb(self, path: str, writer: asyncio.StreamWriter) -> bool | None:
        return await self._robots_bomb("br", path, writer)

    async def _gzgz_bomb(self, path: str, writer: asyncio.StreamWriter) -> bool | None:
        return await self._robots_bomb("gzip, gzip", path, writer)

    async def _deflate_bomb(self, path: str, writer: asyncio.StreamWriter) -> bool | None:
        return await self._robots_bomb("deflate", path, writer)

    async def _page_bomb(self, path: str, writer: asyncio.StreamWriter) -> bool | None:
        if path == "/robots.txt":
            body = (f"User-agent: *\nAllow: /\nSitemap: {self.url('page-bomb', '/sitemap.xml.gz')}\n"
                    f"Sitemap: {self.url('page-bomb', '/sitemap-br.xml')}\n").encode()
            self._send(writer, "200 OK", body, [("Content-Type", "text/plain")])
        elif path == "/":
            self._html(writer, "page-bomb", path, ["/br", "/gzgz", "/deflate", "/one"])
        elif path in ("/br", "/gzgz", "/deflate"):
            coding = {"/br": "br", "/gzgz": "gzip, gzip", "/deflate": "deflate"}[path]
            self._send(writer, "200 OK", bombs()[coding],
                       [("Content-Type", "text/html"), ("Content-Encoding", coding)])
        elif path == "/sitemap.xml.gz":
            self._send(writer, "200 OK", bombs()["gzip"], [("Content-Type", "application/x-gzip")])
        elif path == "/sitemap-br.xml":
            self._send(writer, "200 OK", bombs()["br"],
                       [("Content-Type", "application/xml"), ("Content-Encoding", "br")])
        else:
            return None
        return True

    async def _no_length(self, path: str, writer: asyncio.StreamWriter) -> bool | None:
        if path == "/close-delimited":  # 50 MB, its end the end of the connection
            writer.write(_head("200 OK", [("Content-Type", "text/html"), ("Connection", "close")]))
            await self._stream(writer, 50 * MIB, chunked=False)
            return False
        if path == "/endless":  # chunked, never a last chunk
            writer.write(_head("200 OK", [("Content-Type", "text/html"), ("Transfer-Encoding", "chunked")]))
            await self._stream(writer, ENDLESS_LIMIT, chunked=True)
            return False
        if path == "/":
            self._html(writer, "no-length", path, ["/close-delimited", "/endless", "/one"])
            return True
        return None

    @staticmethod
    async def _stream(writer: asyncio.StreamWriter, total: int, chunked: bool) -> None:
        block = b"<p>" + b"x" * (64 * 1024 - 7) + b"</p>"
        deadline = time.monotonic() + 60
        for _ in range(total // len(block)):  # bounded in bytes, and in time below
            writer.write(b"%x\r\n%s\r\n" % (len(block), block) if chunked else block)
            await writer.drain()
            if time.monotonic() > deadline:
                return

    async def _big_headers(self, path: str, writer: asyncio.StreamWriter) -> bool | None:
        if path != "/":
            return None
        headers = [(f"X-Filler-{i}", "f" * 1000) for i in range(2000)]
        self._send(writer, "200 OK", page([], "big headers"), [("Content-Type", "text/html"), *headers])
        return True

    async def _odd_headers(self, path: str, writer: asyncio.StreamWriter) -> bool | None:
        if path != "/":
            return None
        body = page([], self.words("odd-headers", path))
        headers = [(b"Content-Type", b"text/html"), (b"Link", b"</u/\xff>; rel=canonical"),
                   (b"X-Note", b"caf\xe9 \x80\xfe"), (b"Content-Length", str(len(body)).encode())]
        writer.write(_head("200 OK", headers) + body)
        return True

    async def _loops(self, path: str, writer: asyncio.StreamWriter) -> bool | None:
        target = {"/": None, "/loop-a": "/loop-b", "/loop-b": "/loop-a"}.get(path, "")
        if path.startswith("/chain/"):
            hop = int(path.rsplit("/", 1)[1])
            target = f"/chain/{hop + 1}" if hop < 40 else "/one"
        if path == "/":
            self._html(writer, "loops", path, ["/loop-a", "/chain/0", "/one"])
            return True
        if not target:
            return None
        writer.write(_head("302 Found", [("Location", target), ("Content-Length", "0")]))
        return True

    async def _utf16(self, path: str, writer: asyncio.StreamWriter) -> bool | None:
        if path == "/robots.txt":
            body = "User-agent: *\r\nDisallow: /private/\r\n".encode("utf-16")  # with its BOM
            self._send(writer, "200 OK", body, [("Content-Type", "text/plain")])
        elif path == "/":
            self._html(writer, "utf16", path, ["/private/secret", "/one"])
        else:
            return None
        return True

    async def _stall(self, path: str, writer: asyncio.StreamWriter) -> bool | None:
        if path in ("/robots.txt", "/"):
            return None
        await asyncio.sleep(STALL_SECONDS)  # never answers within a crawl's patience
        return False
