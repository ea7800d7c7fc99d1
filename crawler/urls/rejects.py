"""Why a URL from the network cannot be fetched: the reason in ``urls/rejected/<reason>``.

Pure, no I/O. Called for URLs the normaliser refused (:func:`crawler.urls.normalize_url`
returns None), to name the reason a link or a redirect is skipped; the parsing is
the standard library's (``urlsplit`` checks brackets and ports) and idna's.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import idna

__all__ = ["REASONS", "rejection_reason"]

REASONS = ("scheme", "bad_ipv6", "bad_port", "no_host", "bad_host", "malformed")
_HOST_CHARS = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?")


def rejection_reason(url: str) -> str:
    """One of :data:`REASONS`: ``scheme`` (not http or https: javascript:, mailto:,
    data:...), ``bad_ipv6`` (a bracketed host that is not an IPv6 literal, or unclosed
    brackets), ``bad_port``, ``no_host``, ``bad_host`` (characters or labels no host
    name has), else ``malformed``."""
    scheme, colon, _ = url.partition(":")
    if not colon or scheme.strip().lower() not in ("http", "https"):
        return "scheme"
    try:
        parts = urlsplit(url.strip())
    except ValueError:  # "Invalid IPv6 URL", or brackets around something else
        return "bad_ipv6"
    try:
        parts.port  # noqa: B018 - the property raises for a bad port
    except ValueError:
        return "bad_port"
    host = parts.hostname
    if not host:
        return "no_host"
    if "[" in parts.netloc:
        return "bad_ipv6"  # IPvFuture ("[v1.x]"): urlsplit takes it, no connection can
    try:
        ascii_host = idna.encode(host, uts46=True).decode("ascii")
    except (idna.IDNAError, UnicodeError):
        return "bad_host"
    return "malformed" if _HOST_CHARS.fullmatch(ascii_host) else "bad_host"
