"""Content-Encoding decoded with a hard cap on the output, whatever the compression ratio.

Scrapy's own decoding is bounded by ``DOWNLOAD_MAXSIZE`` but turned off by a request's
``download_maxsize = 0`` and can only fail at the cap; a robots.txt must keep what fits
(RFC 9309 2.5: parse at least the first 500 KiB). Written here because no maintained
library decodes gzip, deflate, br and zstd layers incrementally to a cap: each layer
yields at most ``limit + 1`` bytes, so memory is bounded by the cap and the input.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import brotli

try:  # Python 3.14 has it in the standard library; backports.zstd comes with Scrapy before that
    from compression import zstd  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - depends on the Python version
    from backports import zstd

#: The codings decoded here (Scrapy's ACCEPTED_ENCODINGS and the alias x-gzip).
DECODABLE = frozenset({b"gzip", b"x-gzip", b"deflate", b"br", b"zstd"})
_CHUNK = 64 * 1024


class DecodingError(ValueError):
    """The body is not in the coding its header names (nothing could be decoded)."""


@dataclass(frozen=True)
class Decoded:
    """A decoded body: ``cut`` when the output reached the cap (``body`` is then its first
    ``limit`` bytes); ``left`` the codings not decoded (unknown ones, outermost last)."""

    body: bytes
    cut: bool
    left: tuple[bytes, ...] = ()


def codings(header_values: Iterable[bytes]) -> list[bytes]:
    """The codings of Content-Encoding header values, in the order they were applied."""
    return [token.strip().lower() for value in header_values for token in value.split(b",")
            if token.strip() and token.strip().lower() != b"identity"]


def decode(body: bytes, applied: Sequence[bytes], limit: int) -> Decoded:
    """Undo ``applied`` codings (outermost last), yielding at most ``limit`` bytes (0: no cap).
    Decoding stops at the first coding not in :data:`DECODABLE`; those left are named."""
    todo = list(applied)
    cut = False
    while todo and todo[-1] in DECODABLE:
        coding = todo.pop()
        body, layer_cut = _decode_layer(body, coding, limit)
        cut = cut or layer_cut
    return Decoded(body, cut, tuple(todo))


def _decode_layer(data: bytes, coding: bytes, limit: int) -> tuple[bytes, bool]:
    """One coding undone, at most ``limit`` bytes out (one copy of them: up to 50 MiB)."""
    cap = limit + 1 if limit else 0
    if coding in (b"gzip", b"x-gzip"):
        out = _zlib(data, zlib.MAX_WBITS | 16, cap)
    elif coding == b"deflate":
        try:
            out = _zlib(data, zlib.MAX_WBITS, cap)
        except DecodingError:  # raw deflate, as some servers send it
            out = _zlib(data, -zlib.MAX_WBITS, cap)
    elif coding == b"br":
        out = _brotli(data, cap)
    else:
        out = _zstd(data, cap)
    cut = bool(limit) and len(out) > limit
    if cut:
        del out[limit:]
    return bytes(out), cut


def _zlib(data: bytes, wbits: int, cap: int) -> bytearray:
    """gzip (every member), zlib or raw deflate; a stream cut short gives what it holds."""
    out = bytearray()
    while data:
        decompressor = zlib.decompressobj(wbits)
        try:
            out += decompressor.decompress(data, _room(out, cap))
            while decompressor.unconsumed_tail and not decompressor.eof and not _full(out, cap):
                out += decompressor.decompress(decompressor.unconsumed_tail, _room(out, cap))
        except zlib.error as error:
            if not out:
                raise DecodingError(str(error)) from None
            break  # keep what decoded before the damage
        if not decompressor.eof or _full(out, cap) or wbits != zlib.MAX_WBITS | 16:
            break
        data = decompressor.unused_data  # the next gzip member, if any
    return out


def _brotli(data: bytes, cap: int) -> bytearray:
    decompressor = brotli.Decompressor()
    out = bytearray()
    try:
        out += decompressor.process(data, output_buffer_limit=_room(out, cap) or _CHUNK)
        while not decompressor.is_finished() and not _full(out, cap):
            chunk = decompressor.process(b"", output_buffer_limit=_room(out, cap) or _CHUNK)
            if not chunk:
                break  # the input ended before the stream did
            out += chunk
    except brotli.error as error:
        if not out:
            raise DecodingError(str(error)) from None
    return out


def _zstd(data: bytes, cap: int) -> bytearray:
    out = bytearray()
    while data:
        decompressor = zstd.ZstdDecompressor()
        try:
            out += decompressor.decompress(data, _room(out, cap) or -1)
            while not decompressor.eof and not decompressor.needs_input and not _full(out, cap):
                out += decompressor.decompress(b"", _room(out, cap) or -1)
        except zstd.ZstdError as error:
            if not out:
                raise DecodingError(str(error)) from None
            break
        if not decompressor.eof or _full(out, cap):
            break
        data = decompressor.unused_data  # the next frame, if any
    return out


def _room(out: bytearray, cap: int) -> int:
    """How many more bytes a call may yield: 0 means no cap (zlib's and brotli's own 0)."""
    return max(1, cap - len(out)) if cap else 0


def _full(out: bytearray, cap: int) -> bool:
    return bool(cap) and len(out) >= cap
