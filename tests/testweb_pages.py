"""What the test web sends back: an answer, and the deterministic bytes of its page or file."""

from __future__ import annotations

import html
import json
import random
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from http.server import BaseHTTPRequestHandler

HTML_CONTENT_TYPE = "text/html; charset=utf-8"

_WORD_TEXT = (
    "crawler page link site server request response archive index search network "
    "document content header footer section article market river mountain garden "
    "library history science music travel recipe weather harbour station village "
    "engine signal window forest bridge letter market number summer winter autumn "
    "spring island paper report letter stone silver golden quiet rapid simple gentle "
    "ancient modern local global public private common careful bright narrow open "
    "closed early late often never always across behind beyond within without under "
    "over through around between among writes reads builds finds keeps shows makes "
    "takes gives holds moves turns opens closes starts stops follows leads brings"
)
_WORDS = tuple(_WORD_TEXT.split())


def _paragraph(rng: random.Random) -> str:
    sentences = []
    for _ in range(rng.randint(3, 6)):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(6, 14))]
        sentences.append(" ".join(words).capitalize() + ".")
    return " ".join(sentences)


@lru_cache(maxsize=64)
def pdf_body(host: str, size: int) -> bytes:
    head = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n"
    tail = b"\n%%EOF\n"
    filler = random.Random(f"pdf/{host}").randbytes(max(0, size - len(head) - len(tail)))
    return head + filler + tail


@lru_cache(maxsize=1)
def png_body(width: int = 64, height: int = 64) -> bytes:
    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    rows = b"".join(
        b"\x00" + bytes(v for x in range(width) for v in ((x * 4) & 255, (y * 4) & 255, 160))
        for y in range(height)
    )
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


@dataclass
class Page:
    """An HTML page before rendering: its links are the ground truth's links."""

    title: str
    text_key: str
    nav: list[tuple[str, str]]
    main: list[tuple[str, str]]
    min_bytes: int

    @property
    def hrefs(self) -> list[str]:
        return [href for href, _ in self.nav] + [href for href, _ in self.main]


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    page: Page | None = None
    body: bytes = b""


def error_answer(status: int, text: str) -> Answer:
    phrase = BaseHTTPRequestHandler.responses.get(status, (text,))[0]
    body = (
        f"<!DOCTYPE html>\n<html><head><title>{status} {html.escape(phrase)}</title></head>"
        f"<body><h1>{status} {html.escape(phrase)}</h1><p>{html.escape(text)}</p></body></html>\n"
    )
    return Answer(status, {"Content-Type": HTML_CONTENT_TYPE}, body=body.encode())


def render_page(page: Page) -> bytes:
    """Deterministic HTML for ``page``: head, nav, main with links, padded text, footer."""
    rng = random.Random(f"text/{page.text_key}")
    title = html.escape(page.title)

    def anchors(links: Sequence[tuple[str, str]]) -> str:
        return "\n".join(
            f'<li><a href="{html.escape(href)}">{html.escape(text)}</a></li>'
            for href, text in links
        )

    head = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{title}</title>\n"
        "<style>body{font-family:sans-serif;margin:2em}nav li{display:inline;margin:0 .4em}"
        "</style>\n</head>\n<body>\n"
        f"<header><h1>{title}</h1></header>\n<nav><ul>\n{anchors(page.nav)}\n</ul></nav>\n"
        "<main>\n"
    )
    paragraphs = [f"<p>{_paragraph(rng)}</p>" for _ in range(3)]
    tail = (
        f"<ul>\n{anchors(page.main)}\n</ul>\n</main>\n"
        f"<footer><p>Served by testweb for {title}.</p></footer>\n"
        f"<script>document.documentElement.dataset.page = {json.dumps(page.title)};</script>\n"
        "</body>\n</html>\n"
    )
    size = len(head) + len(tail) + sum(len(p) + 1 for p in paragraphs)
    while size < page.min_bytes:
        paragraph = f"<p>{_paragraph(rng)}</p>"
        paragraphs.append(paragraph)
        size += len(paragraph) + 1
    return (head + "\n".join(paragraphs) + "\n" + tail).encode("utf-8")
