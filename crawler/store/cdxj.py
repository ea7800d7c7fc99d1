"""CDXJ index lines (pywb's format), the same lines ``cdxj-indexer`` writes for a file.

One line per ``response`` and ``revisit`` record (cdxj-indexer's default records; the
request and the text conversion records stay out of the replay index):
``<SURT> <14-digit timestamp> {"url", "mime", "status", "digest", "length", "offset",
"filename"}``, a field absent when the record has none. Written by the WARC writer as
each file closes, from what it wrote (no second read of the file), and by
:func:`index_warc` for a file that has none (a crawl killed before it closed the file).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

import surt
from warcio.archiveiterator import ArchiveIterator
from warcio.timeutils import iso_date_to_timestamp

if TYPE_CHECKING:
    from typing import BinaryIO

    from warcio.statusandheaders import StatusAndHeaders

#: The record types a replay index holds (cdxj-indexer's defaults, less what we never write).
INDEXED_TYPES = ("response", "revisit")
_MIME_END = re.compile(r"[;\s]")


def url_key(url: str) -> str:
    """The SURT form pywb and cdxj-indexer sort and look up by."""
    try:
        return surt.surt(url)
    except Exception:  # cdxj-indexer falls back the same way
        return url


def cdxj_line(rec_type: str, url: str, date: str, http: StatusAndHeaders | None, digest: str | None,
              offset: int, length: int, filename: str) -> str:
    """The index line of one record (no newline)."""
    fields: dict[str, str] = {"url": url}
    if rec_type == "revisit":
        fields["mime"] = "warc/revisit"
    else:
        content_type = http.get_header("Content-Type") if http else None
        if content_type:
            fields["mime"] = _MIME_END.split(content_type, 1)[0].strip()
    if http is not None:
        fields["status"] = http.get_statuscode()
    if digest:
        fields["digest"] = digest
    fields.update(length=str(length), offset=str(offset), filename=filename)
    return f"{url_key(url)} {iso_date_to_timestamp(date)} {json.dumps(fields)}"


def index_warc(file: BinaryIO, filename: str) -> Iterator[str]:
    """The index lines of a whole WARC file read from ``file``, in file order."""
    records = ArchiveIterator(file)
    for record in records:
        if record.rec_type not in INDEXED_TYPES:
            continue
        headers = record.rec_headers
        digest = headers.get_header("WARC-Payload-Digest")
        line_at = records.get_record_offset()
        records.read_to_end()
        yield cdxj_line(record.rec_type, headers.get_header("WARC-Target-URI"),
                        headers.get_header("WARC-Date"), record.http_headers, digest, line_at,
                        records.get_record_length(), filename)
