"""URL authorities in normal form: the host lowercased or IDNA-encoded (or a checked
IPv6 literal), no userinfo, no default port. Part of the policy of
:mod:`crawler.urls.normalize`; pure, no I/O."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import unquote

import idna

DEFAULT_PORTS = {"http": 80, "https": 443}


# A host after IDNA: LDH labels (underscore allowed, as DNS and browsers allow
# it), no empty label, optionally the root's trailing dot.
_HOSTNAME = re.compile(r"[a-z0-9_\-]+(?:\.[a-z0-9_\-]+)*\.?")
_IPV6_CHARS = re.compile(r"[0-9a-f:.]+")


def _idna_to_ascii(host: str) -> str | None:
    """Map a Unicode host to its ASCII (punycode) form, or None if it cannot be one.

    UTS 46 mapping, non-transitional (so ``ß`` stays ``ß``, as in browsers and
    IDNA 2008): NFKC-style folding (fullwidth letters, ideographic full stops),
    lowercasing, then each non-ASCII label is punycoded. ``xn--`` labels and
    ASCII labels pass through, so mixed hosts work. The stricter IDNA 2008
    validity rules are not applied, as browsers do not apply them either.
    """
    try:
        mapped = idna.uts46_remap(host, std3_rules=False, transitional=False)
    except (idna.IDNAError, ValueError):
        return None
    labels = mapped.split(".")
    for i, label in enumerate(labels):
        if not label.isascii():
            labels[i] = "xn--" + label.encode("punycode").decode("ascii")
    return ".".join(labels)


def _normalize_host(host: str) -> str | None:
    """Lowercase, percent-decode and IDNA-encode a reg-name host; None if invalid."""
    if "%" in host:
        # WHATWG host parsing: percent-decode to bytes, then UTF-8.
        try:
            host = unquote(host, encoding="utf-8", errors="strict")
        except UnicodeDecodeError:
            return None
    if host.isascii():
        host = host.lower()
    else:
        ascii_host = _idna_to_ascii(host)
        if ascii_host is None:
            return None
        host = ascii_host
    return host if _HOSTNAME.fullmatch(host) else None


def _normalize_authority(scheme: str, authority: str) -> str | None:
    """Return ``host[:port]`` in normal form (no userinfo, no default port), or None."""
    at = authority.rfind("@")
    if at >= 0:
        authority = authority[at + 1 :]
    if authority.startswith("["):
        close = authority.find("]")
        if close < 0:
            return None
        literal = authority[1:close].lower()
        if not _IPV6_CHARS.fullmatch(literal):
            return None  # IPvFuture and zone identifiers are not crawlable
        try:
            ipaddress.IPv6Address(literal)
        except ValueError:
            return None
        host = "[" + literal + "]"
        rest = authority[close + 1 :]
        if rest and rest[0] != ":":
            return None
        port = rest[1:]
    else:
        colon = authority.rfind(":")
        if colon >= 0:
            port = authority[colon + 1 :]
            authority = authority[:colon]
        else:
            port = ""
        if not authority:
            return None
        normal_host = _normalize_host(authority)
        if normal_host is None:
            return None
        host = normal_host
    if not port:
        return host
    if not (port.isascii() and port.isdigit()):
        return None
    digits = port.lstrip("0")
    if not digits or len(digits) > 5:
        return None  # port 0, or too many digits to be a port
    number = int(digits)
    if number > 65535:
        return None
    if number == DEFAULT_PORTS[scheme]:
        return host
    return host + ":" + digits


# "scheme://authority" as written -> "scheme://host[:port]" in normal form, or
# None. Links cluster on few hosts, so this saves the host work on most links.
_AUTHORITY_CACHE: dict[str, str | None] = {}
_AUTHORITY_CACHE_MAX = 50_000


def normal_prefix(prefix: str, scheme: str, authority: str) -> str | None:
    """``prefix`` (``scheme://authority`` as written) in normal form, or None; cached."""
    cached = _AUTHORITY_CACHE.get(prefix, "")
    if cached != "":
        return cached
    hostport = _normalize_authority(scheme, authority)
    normal = None if hostport is None else scheme + "://" + hostport
    if len(_AUTHORITY_CACHE) >= _AUTHORITY_CACHE_MAX:
        _AUTHORITY_CACHE.clear()
    _AUTHORITY_CACHE[prefix] = normal
    return normal
