"""rel=canonical: which URL a page names as its own (RFC 6596). Pure code, no I/O."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from crawler.urls.keys import url_host

# One link-value of a Link header (RFC 8288 3): <target> then ;-separated parameters.
_LINK_VALUE = re.compile(r"<([^>]*)>((?:\s*;\s*[^;,]*)*)")
_REL = re.compile(r"""(?i);\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,"]+))""")
_NOT_ASCII = re.compile(r"[^\x00-\x7f]")


def header_canonical(values: Iterable[bytes | str]) -> str | None:
    """The target of the first ``rel="canonical"`` link of ``Link`` header values as received
    (bytes, or text decoded as Latin-1: one character a byte), its bytes that are not ASCII
    percent-encoded as they are (a header has no charset to decode them by)."""
    for value in values:
        text = value.decode("latin-1") if isinstance(value, bytes) else value
        for target, params in _LINK_VALUE.findall(text):
            for quoted, bare in _REL.findall(params):
                if "canonical" in (quoted or bare).lower().split():
                    return _NOT_ASCII.sub(lambda m: f"%{ord(m.group()):02X}", target.strip())
    return None


def page_canonical(page_url: str, href: str | None, header: str | None,
                   normalize: Callable[[str, str], str | None]) -> tuple[str | None, bool]:
    """(the canonical URL normalised against ``page_url``, whether it is on the page's
    host). The ``Link`` header wins over ``<link rel=canonical>`` (a server's word over
    a template's); an unusable one gives (None, False)."""
    written = header or href
    canonical = normalize(written, page_url) if written else None
    if canonical is None:
        return None, False
    return canonical, url_host(canonical) == url_host(page_url)
