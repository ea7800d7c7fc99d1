"""One HTTP exchange as it went over the wire: the request as sent, the response as received.

The bytes a WARC ``request`` and ``response`` record hold (ISO 28500): the request line
and headers the download handler wrote, and the status line, headers and entity body
the server sent, its ``Content-Encoding`` kept (the chunked framing is gone: Twisted
removed it, and the head says so as warcio does, with a ``Content-Length``). Header
bytes stay bytes: a value that is not ASCII is stored as received, never re-encoded.
"""

from __future__ import annotations

import gzip
import time
import zlib
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response

#: request.meta key: the exchange of a response a spider may make a page of.
WIRE_META = "_wire_exchange"

# Response headers about the connection, not the message: not part of what was received
# as the entity's description once the framing is gone.
_FRAMING = frozenset({b"transfer-encoding", b"content-length"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


def iso_time(seconds: float) -> str:
    """``2026-12-02T11:10:05.123Z``: UTC, milliseconds (a WARC-Date)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{int(seconds % 1 * 1000):03d}Z"


@dataclass(frozen=True)
class Exchange:
    """A request and its response as transferred."""

    url: str  # the URL fetched (WARC-Target-URI)
    request_head: bytes  # request line and headers, ending in the blank line
    request_body: bytes
    status: int
    response_head: bytes  # status line and headers, ending in the blank line
    body: bytes  # the entity body as received (Content-Encoding kept)
    ip_address: str | None
    fetched_at: str  # ISO 8601 UTC: when the response came
    truncated: bool = False  # the download was stopped after its headers

    @property
    def content_encoding(self) -> bytes:
        return header_value(self.response_head, b"content-encoding") or b""

    def decoded_body(self) -> bytes:
        """The entity body with its Content-Encoding undone: what a reader of HTML wants."""
        return decode_content(self.body, self.content_encoding)


def request_head(request: Request) -> bytes:
    """The request line and headers as Twisted writes them for Scrapy's HTTP/1.1 handler:
    ``METHOD origin-form HTTP/1.1``, the request's headers in order, then the ``Host``
    the agent adds when none is set, then ``Content-Length`` for a body."""
    parts = urlsplit(request.url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    lines = [f"{request.method} {target} HTTP/1.1".encode("latin-1")]
    headers = list(request.headers.items())
    for name, values in headers:
        lines.extend(name + b": " + value for value in values)
    if not any(name.lower() == b"host" for name, _ in headers):
        host = parts.hostname or ""
        host = f"[{host}]" if ":" in host else host
        if parts.port and parts.port != _DEFAULT_PORTS.get(parts.scheme):
            host += f":{parts.port}"
        lines.append(b"Host: " + host.encode("idna" if not host.isascii() else "ascii"))
    if request.body:
        lines.append(b"Content-Length: " + str(len(request.body)).encode("ascii"))
    return b"\r\n".join(lines) + b"\r\n\r\n"


def response_head(response: Response, body_length: int, truncated: bool = False) -> bytes:
    """The status line and headers as received, with ``Content-Length`` the stored body's
    (a chunked response's ``Transfer-Encoding`` dropped with its framing); a download
    stopped after its headers (``truncated``) keeps the ``Content-Length`` it announced."""
    try:
        reason = HTTPStatus(response.status).phrase
    except ValueError:
        reason = ""
    protocol = (response.protocol or "HTTP/1.1").upper()
    lines = [f"{protocol} {response.status} {reason}".rstrip().encode("latin-1")]
    announced = response.headers.get(b"Content-Length") if truncated else None
    for name, values in response.headers.items():
        if name.lower() not in _FRAMING:
            lines.extend(name + b": " + value for value in values)
    lines.append(b"Content-Length: " + (announced or str(body_length).encode("ascii")))
    return b"\r\n".join(lines) + b"\r\n\r\n"


def exchange_of(request: Request, response: Response) -> Exchange:
    """The exchange of ``response`` (not yet decompressed by Scrapy) and its request."""
    body = response.body
    truncated = "download_stopped" in response.flags
    return Exchange(
        url=request.url,
        request_head=request_head(request),
        request_body=request.body,
        status=response.status,
        response_head=response_head(response, len(body), truncated),
        body=body,
        ip_address=None if response.ip_address is None else str(response.ip_address),
        fetched_at=iso_time(time.time()),
        truncated=truncated,
    )


def header_value(head: bytes, name: bytes) -> bytes | None:
    """The first value of header ``name`` (lower case) in a raw head, or None."""
    for line in head.split(b"\r\n")[1:]:
        key, sep, value = line.partition(b":")
        if sep and key.strip().lower() == name:
            return value.strip()
    return None


def decode_content(body: bytes, encoding: bytes) -> bytes:
    """``body`` with each Content-Encoding undone, last applied first; a coding this does
    not know, or a body that does not decode, is returned as it is."""
    codings = [c.strip().lower() for c in encoding.split(b",") if c.strip()]
    for coding in reversed(codings):
        try:
            if coding in (b"gzip", b"x-gzip"):
                body = gzip.decompress(body)
            elif coding == b"deflate":
                try:
                    body = zlib.decompress(body)
                except zlib.error:  # raw deflate, as some servers send
                    body = zlib.decompress(body, -zlib.MAX_WBITS)
            elif coding == b"br":
                import brotli  # Scrapy's own optional dependency for br

                body = brotli.decompress(body)
            elif coding != b"identity":
                return body
        except (OSError, EOFError, zlib.error, ImportError, ValueError):
            return body
    return body
