"""A crawl's WARC files as one WACZ (WACZ 1.1.1): what replayweb.page and Browsertrix open.

A ZIP with ``archive/`` (the WARC files, stored, not deflated: they are gzip already and
are read by ranges), ``indexes/index.cdx`` (their CDXJ lines merged and sorted, less the 304 revisits:
:func:`replay_lines`),
``pages/pages.jsonl`` (the pages stored with their text: the list a replay offers; the
text conversion records are not pages), ``datapackage.json`` (each file's size and
sha256) and ``datapackage-digest.json``. Written after the spec by hand: py-wacz's
``wacz create`` indexes every file again (ours come with their index) and would bring
frictionless, a large dependency, into every crawl's install.
"""

from __future__ import annotations

import datetime
import hashlib
import io
import json
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from warcio.archiveiterator import ArchiveIterator

from crawler.store.cdxj import index_warc
from crawler.store.files import iter_members, iter_records
from crawler.store.warc import INDEX_DIR, index_name

if TYPE_CHECKING:
    from pathlib import Path

    from crawler.store.files import LocalStore
    from crawler.store.s3 import S3Store

WACZ_VERSION = "1.1.1"
_FIRST_RECORD = 64 * 1024  # bytes that hold a file's warcinfo record, and more


def warc_info(store: LocalStore | S3Store, name: str) -> dict[str, str]:
    """The fields of the warcinfo record that starts the WARC file ``name`` ({} if none)."""
    for member in iter_members(store.read_range(name, 0, _FIRST_RECORD), name):
        record = next(iter(ArchiveIterator(io.BytesIO(member))), None)
        if record is None or record.rec_type != "warcinfo":
            return {}
        text = record.content_stream().read().decode("utf-8", "replace")
        return dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
    return {}


def crawl_files(store: LocalStore | S3Store, crawl_id: str) -> list[str]:
    """The WARC files of ``crawl_id``: those whose warcinfo says they are part of it."""
    return [name for name in store.list("warc") if name.endswith(".warc.gz")
            and warc_info(store, name).get("isPartOf") == crawl_id]


def index_lines(store: LocalStore | S3Store, name: str, indexed: set[str]) -> list[str]:
    """The CDXJ lines of the WARC file ``name``: its index file if in ``indexed``, else (a
    crawl killed before it closed the file) the file read again."""
    if index_name(name) in indexed:
        return store.read(index_name(name)).decode("utf-8").splitlines()
    return list(index_warc(io.BytesIO(store.read(name)), name.rsplit("/", 1)[1]))


def replay_lines(lines: list[str]) -> list[str]:
    """The index lines a replay should offer, sorted: all but the 304 revisits. pywb and
    replayweb.page serve a 304 as the empty answer it was, where its capture time should
    show the version it confirmed: without its line, the replay takes the nearest
    capture, which holds that version. The records stay in the WARC files."""
    return sorted(line for line in lines if '"status": "304"' not in line.split(" ", 2)[2])


def pages(store: LocalStore | S3Store, files: set[str]) -> Iterator[dict]:
    """pages.jsonl entries: each page stored with its own text in ``files``, once a URL."""
    seen: set[str] = set()
    for record in iter_records(store):
        url = record.get("fetched_url") or record["url"]
        if record.get("text") is None or record["warc"]["file"] not in files or url in seen:
            continue
        seen.add(url)
        entry = {"id": hashlib.sha1(url.encode()).hexdigest()[:16], "url": url, "ts": record["fetched_at"]}
        if record.get("title"):
            entry["title"] = record["title"]
        if record.get("content_sha256"):
            entry["text_sha256"] = record["content_sha256"]
        yield entry


def _entry(path: str, compress: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(path, datetime.datetime.now(datetime.UTC).timetuple()[:6])
    info.compress_type = compress
    return info


@dataclass
class WaczSummary:
    files: int
    index_lines: int
    pages: int


def write_wacz(store: LocalStore | S3Store, crawl_id: str, output: Path, software: str) -> WaczSummary:
    """Package the WARC files of ``crawl_id`` into the WACZ ``output``."""
    files = crawl_files(store, crawl_id)
    if not files:
        raise LookupError(f"no WARC file of crawl {crawl_id!r} in {store.root}")
    indexed = set(store.list(INDEX_DIR))
    lines = replay_lines([line for name in files for line in index_lines(store, name, indexed)])
    page_list = list(pages(store, set(files)))
    resources = []
    with zipfile.ZipFile(output, "w", allowZip64=True) as wacz:
        def add(path: str, data: bytes, compress: int) -> None:
            wacz.writestr(_entry(path, compress), data)
            resources.append({"name": path.rsplit("/", 1)[1].lower(), "path": path,
                              "hash": "sha256:" + hashlib.sha256(data).hexdigest(), "bytes": len(data)})

        for name in files:
            add(f"archive/{name.rsplit('/', 1)[1]}", store.read(name), zipfile.ZIP_STORED)
        add("indexes/index.cdx", "".join(line + "\n" for line in lines).encode("utf-8"), zipfile.ZIP_DEFLATED)
        header = {"format": "json-pages-1.0", "id": "pages", "title": "All Pages", "hasText": False}
        jsonl = "".join(json.dumps(entry, ensure_ascii=False) + "\n" for entry in [header, *page_list])
        add("pages/pages.jsonl", jsonl.encode("utf-8"), zipfile.ZIP_DEFLATED)
        package = {
            "profile": "data-package",
            "resources": resources,
            "title": crawl_id,
            "created": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "wacz_version": WACZ_VERSION,
            "software": software,
        }
        if page_list:
            package["mainPageURL"] = page_list[0]["url"]
            package["mainPageDate"] = page_list[0]["ts"]
        package_bytes = json.dumps(package, indent=2).encode("utf-8")
        wacz.writestr(_entry("datapackage.json", zipfile.ZIP_DEFLATED), package_bytes)
        digest = {"path": "datapackage.json", "hash": "sha256:" + hashlib.sha256(package_bytes).hexdigest()}
        wacz.writestr(_entry("datapackage-digest.json", zipfile.ZIP_DEFLATED), json.dumps(digest, indent=2))
    return WaczSummary(len(files), len(lines), len(page_list))
