"""What the WARC request records cost: their share of the WARC bytes, on real pages.

Each page of the article extraction benchmark (181 real pages) is written as our
crawler writes a first visit: its response record (the page gzip-encoded as nginx
sends it, with nginx's head), its request record (the head Scrapy sends with the
add-on's defaults) and its text conversion record; then as a revisit answered 304
(revisit record + request record with its validators). Our writer (ISA-L, one gzip
member a record) is compared with warcio's own writer (zlib level 9 members) on the
same records. A real site's response heads are longer than nginx's (cookies, caching,
security headers), so the request share printed here is the high end.

    python bench/warc_overhead.py [--pages N]
"""

from __future__ import annotations

import argparse
import gzip
import io
import tempfile
import time
from pathlib import Path

from common import fmt_table, machine
from scrapy import Request
from warcio.warcwriter import WARCWriter

from crawler.extract.html import extract_text, parse_html
from crawler.store.files import LocalStore
from crawler.store.warc import NOT_MODIFIED_PROFILE, RawHead, Referent, WarcFileWriter
from crawler.store.wire import Exchange, request_head

DATASET = Path("/work/shared/datasets/article-extraction-benchmark/html")
HEADERS = {  # as Scrapy's DefaultHeaders, UserAgent and HttpCompression middlewares set them
    "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
    "Accept-Language": "en",
    "User-Agent": "politecrawler/0.1 (+https://example.org/crawler.html)",
    "Accept-Encoding": "gzip, deflate, br, zstd",
}
DATE = "Sun, 06 Dec 2026 06:20:11 GMT"


def nginx_head(status: str, length: int | None) -> bytes:
    lines = [f"HTTP/1.1 {status}", "Server: nginx/1.22.1", f"Date: {DATE}", "Content-Type: text/html",
             "Last-Modified: Sun, 06 Dec 2026 06:20:03 GMT", "Connection: keep-alive",
             'ETag: W/"6b14fe93-605"']
    if length is not None:
        lines += ["Content-Encoding: gzip", f"Content-Length: {length}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def exchanges(paths: list[Path]) -> list[tuple[Exchange, Exchange, str]]:
    """(first visit, 304 revisit, text) of each page (a gzip-compressed HTML file)."""
    out = []
    for number, path in enumerate(paths):
        html = gzip.decompress(path.read_bytes())
        url = f"https://www.example-news.org/2026/12/{path.name[:24]}/article-{number}.html"
        body = gzip.compress(html, 6, mtime=0)
        first = Request(url, headers=HEADERS)
        again = Request(url, headers={**HEADERS, "If-None-Match": 'W/"6b14fe93-605"',
                                      "If-Modified-Since": "Sun, 06 Dec 2026 06:20:03 GMT"})
        when = "2026-12-06T06:20:11.000Z"
        out.append((Exchange(url, request_head(first), b"", 200, nginx_head("200 OK", len(body)), body,
                             "93.184.216.34", when),
                    Exchange(url, request_head(again), b"", 304, nginx_head("304 Not Modified", None), b"",
                             "93.184.216.34", when),
                    extract_text(parse_html(html, "utf-8"))))
    return out


def ours(pages: list, directory: Path) -> dict[str, int]:
    writer = WarcFileWriter(LocalStore(directory), "bench", 0, {"software": "bench"})
    sizes = {"request": 0, "response": 0, "conversion": 0, "revisit": 0, "revisit request": 0}
    for first, again, text in pages:
        archived = writer.exchange(first)
        sizes["response"] += archived.location.length
        sizes["request"] += archived.request_length
        sizes["conversion"] += writer.conversion(first.url, text, archived).length
        revisit = writer.revisit(again, NOT_MODIFIED_PROFILE, Referent(first.url, archived.date,
                                                                       archived.record_id))
        sizes["revisit"] += revisit.location.length
        sizes["revisit request"] += revisit.request_length
    writer.close()
    return sizes


def warcio_peer(pages: list) -> dict[str, int]:
    """The same records through warcio's own writer (its gzip: zlib level 9)."""
    sizes = {"request": 0, "response": 0}
    for first, _, _ in pages:
        for kind, head, body in (("response", first.response_head, first.body),
                                 ("request", first.request_head, b"")):
            out = io.BytesIO()
            writer = WARCWriter(out, gzip=True, warc_version="WARC/1.1")
            writer.write_record(writer.create_warc_record(
                first.url, kind, payload=io.BytesIO(body), length=len(body),
                http_headers=RawHead(head, kind == "request")))
            sizes[kind] += len(out.getvalue())
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=181)
    args = parser.parse_args()
    pages = exchanges(sorted(DATASET.glob("*.html.gz"))[:args.pages])
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        sizes = ours(pages, Path(tmp))
        took = time.perf_counter() - start
        files = sum(p.stat().st_size for p in Path(tmp).rglob("*.warc.gz"))
    peer = warcio_peer(pages)
    first_visit = sizes["request"] + sizes["response"] + sizes["conversion"]
    revisit = sizes["revisit"] + sizes["revisit request"]
    print(machine())
    print(f"{len(pages)} real pages, {sum(len(p[0].body) for p in pages) / len(pages) / 1024:.1f} KiB gzip "
          f"on the wire each; our writer {took * 1000 / len(pages):.2f} ms a page (3 records + revisit pair)")
    rows = [
        ["first visits (request + response + conversion)", f"{first_visit:,}", f"{sizes['request']:,}",
         f"{100 * sizes['request'] / first_visit:.1f}%"],
        ["first visits, request + response only", f"{sizes['request'] + sizes['response']:,}",
         f"{sizes['request']:,}", f"{100 * sizes['request'] / (sizes['request'] + sizes['response']):.1f}%"],
        ["same, warcio's own writer (peer)", f"{peer['request'] + peer['response']:,}",
         f"{peer['request']:,}", f"{100 * peer['request'] / (peer['request'] + peer['response']):.1f}%"],
        ["304 revisits (revisit + request)", f"{revisit:,}", f"{sizes['revisit request']:,}",
         f"{100 * sizes['revisit request'] / revisit:.1f}%"],
        ["whole file (one visit + one 304 revisit a page)", f"{files:,}",
         f"{sizes['request'] + sizes['revisit request']:,}",
         f"{100 * (sizes['request'] + sizes['revisit request']) / files:.1f}%"],
    ]
    print(fmt_table(["records", "WARC bytes", "request record bytes", "request share"], rows))
    # A page kept unchanged for long is revisited many times, each a 304 pair mostly request.
    revisits = next(n for n in range(1, 1000) if sizes["request"] + n * sizes["revisit request"]
                    > 0.1 * (first_visit + n * revisit))
    print(f"a page's request records pass 10% of its WARC bytes at {revisits} revisits answered 304")


if __name__ == "__main__":
    main()
