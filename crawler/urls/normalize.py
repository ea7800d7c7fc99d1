"""URL normalisation: every spelling of a URL to one canonical http(s) form.

Pure functions over strings, no I/O. The normaliser maps every spelling of a URL
that a server would treat the same to one string, so that the seen-set, the
frontier and the politeness keys agree on what "the same URL" is. The policy
(RFC 3986 section 6 syntax-based normalisation plus a few crawler rules):

- resolve against the base (RFC 3986 5.2); strip surrounding C0 controls and
  spaces; remove ASCII tab, CR and LF anywhere (as browsers do);
- only ``http`` and ``https`` are crawlable: anything else gives ``None``;
- lowercase scheme and host; IDN hosts to punycode (UTS 46, non-transitional,
  as browsers do); drop userinfo, fragment and the default port;
- remove dot-segments (RFC 3986 5.2.4), keep repeated slashes, empty path is ``/``;
- uppercase percent-escapes, decode only those of unreserved characters, encode
  what may not appear raw as UTF-8 escapes; ``+`` and ``%20`` are kept as written;
- split the query on ``&``, drop tracking/session parameters by name, sort the
  rest by name (stable), keep each parameter as written.

The per-link path of the crawler calls this dozens of times per page, so the
common case (ASCII, no escapes, no dot-segments) is done with a few ``str``
methods; ``urllib.parse`` is not used per URL.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

import idna

from crawler.defaults import URL_DROP_PARAMS

__all__ = ["DEFAULT_DROP_PARAMS", "UrlNormalizer", "absolute_reference", "normalize_url"]

DEFAULT_DROP_PARAMS: str = URL_DROP_PARAMS

_DEFAULT_PORTS = {"http": 80, "https": 443}

# Leading/trailing characters removed before parsing: C0 controls and space
# (the WHATWG URL parser's set; non-ASCII spaces are left to be percent-encoded).
_C0_AND_SPACE = "".join(chr(c) for c in range(0x21))
_TAB_CR_LF = {9: None, 10: None, 13: None}

# RFC 3986 3.1: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")

# Characters allowed raw in a normalised path or query: RFC 3986 unreserved and
# reserved (less "#", which always starts the fragment). "%" is not in the set,
# so one search tells whether a component needs any escape work at all.
_RAW_OK = r"A-Za-z0-9\-._~:/?\[\]@!$&'()*+,;="
_NEEDS_ESCAPE_WORK = re.compile(f"[^{_RAW_OK}]")
_ESCAPE_OR_ILLEGAL = re.compile(f"%[0-9A-Fa-f]{{2}}|[^{_RAW_OK}]")

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _build_escape_table() -> dict[str, str]:
    """Map every spelling of every ``%XX`` to its normal form.

    Escapes of unreserved characters decode (RFC 3986 6.2.2.2), all others get
    uppercase hex (6.2.2.1). Precomputed so the hot loop is a dict lookup.
    """
    table: dict[str, str] = {}
    for byte in range(256):
        upper = f"{byte:02X}"
        char = chr(byte)
        normal = char if char in _UNRESERVED else "%" + upper
        for hi in {upper[0], upper[0].lower()}:
            for lo in {upper[1], upper[1].lower()}:
                table["%" + hi + lo] = normal
    return table


_ESCAPES = _build_escape_table()
_REPLACEMENT_CHAR_UTF8 = "%EF%BF%BD"


def _escape_char(char: str) -> str:
    """Percent-encode one character as UTF-8 (a lone surrogate becomes U+FFFD)."""
    try:
        data = char.encode("utf-8")
    except UnicodeEncodeError:
        return _REPLACEMENT_CHAR_UTF8
    return "".join(f"%{b:02X}" for b in data)


def _escape_repl(match: re.Match[str]) -> str:
    text = match.group()
    normal = _ESCAPES.get(text)
    return normal if normal is not None else _escape_char(text)


def _normalize_escapes(component: str) -> str:
    """Normalise percent-encoding of a path or query (see module docstring).

    A ``%`` not followed by two hex digits is taken as a literal and becomes
    ``%25``, so the result is always a valid RFC 3986 component.
    """
    return _ESCAPE_OR_ILLEGAL.sub(_escape_repl, component)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 5.2.4 for an absolute path; ``..`` above the root stays at the root.

    Empty segments are ordinary segments (``//`` is kept, and ``..`` removes one).
    """
    out: list[str] = []
    segments = path.split("/")
    for segment in segments[1:]:
        if segment == "..":
            if out:
                out.pop()
        elif segment != ".":
            out.append(segment)
    # A final "." or ".." leaves a directory: keep its trailing slash.
    if segments[-1] in (".", "..") and out:
        out.append("")
    return "/" + "/".join(out)


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
    if number == _DEFAULT_PORTS[scheme]:
        return host
    return host + ":" + digits


# "scheme://authority" as written -> "scheme://host[:port]" in normal form, or
# None. Links cluster on few hosts, so this saves the host work on most links.
_AUTHORITY_CACHE: dict[str, str | None] = {}
_AUTHORITY_CACHE_MAX = 50_000


def _normal_prefix(prefix: str, scheme: str, authority: str) -> str | None:
    cached = _AUTHORITY_CACHE.get(prefix, "")
    if cached != "":
        return cached
    hostport = _normalize_authority(scheme, authority)
    normal = None if hostport is None else scheme + "://" + hostport
    if len(_AUTHORITY_CACHE) >= _AUTHORITY_CACHE_MAX:
        _AUTHORITY_CACHE.clear()
    _AUTHORITY_CACHE[prefix] = normal
    return normal


def _clean(text: str) -> str:
    """Strip surrounding C0/space and remove tab, CR and LF anywhere (WHATWG)."""
    if text and (text[0] <= " " or text[-1] <= " "):
        text = text.strip(_C0_AND_SPACE)
    if "\t" in text or "\n" in text or "\r" in text:
        text = text.translate(_TAB_CR_LF)
    return text


def _split_scheme(text: str) -> tuple[str, str] | None:
    """Return (lowercased scheme, rest after ``:``), or None for a relative reference."""
    match = _SCHEME.match(text)
    if match is None:
        return None
    return match.group(1).lower(), text[match.end() :]


def _split_base(base: str) -> tuple[str, str, str, str] | None:
    """Parse an http(s) base URL into (scheme, authority, path, query-with-?)."""
    base = _clean(base)
    hash_at = base.find("#")
    if hash_at >= 0:
        base = base[:hash_at]
    parts = _split_scheme(base)
    if parts is None:
        return None
    scheme, rest = parts
    if scheme not in _DEFAULT_PORTS or not rest.startswith("//"):
        return None
    question = rest.find("?")
    query = ""
    if question >= 0:
        rest, query = rest[:question], rest[question:]
    slash = rest.find("/", 2)
    if slash < 0:
        return scheme, rest[2:], "", query
    return scheme, rest[2:slash], rest[slash:], query


_BASE_CACHE: list[tuple[str, tuple[str, str, str, str] | None]] = [("", None)]


def _resolve(ref: str, base: str) -> str | None:
    """Resolve a reference without a scheme against ``base`` (RFC 3986 5.2.2).

    Dot-segments are left in: the caller removes them from the whole path.
    """
    last_base, parts = _BASE_CACHE[0]
    if base != last_base:
        parts = _split_base(base)
        _BASE_CACHE[0] = (base, parts)  # links of one page share their base
    if parts is None:
        return None
    scheme, authority, path, query = parts
    if ref.startswith("//"):
        return scheme + ":" + ref
    prefix = scheme + "://" + authority
    if not ref:
        return prefix + path + query
    first = ref[0]
    if first == "/":
        return prefix + ref
    if first == "?":
        return prefix + path + ref
    if not path:
        return prefix + "/" + ref
    return prefix + path[: path.rfind("/") + 1] + ref


def absolute_reference(ref: str, base: str) -> str | None:
    """``ref`` made absolute against ``base`` by string rules alone (RFC 3986 5.2.2),
    before any normalisation: dot-segments, case and escapes are left as written.

    Cheap (a few slices; the base is parsed once per page), so it serves as the key
    of a link that is checked against links already handled before normalising it.
    A reference with a scheme is returned as is; a same-page reference (empty, or
    only a fragment) and a base that is not http(s) give None.
    """
    if not ref or ref[0] == "#":
        return None
    if ":" in ref and _SCHEME.match(ref):
        return ref
    return _resolve(ref, base)


def _sort_key(param: str) -> str:
    return param.partition("=")[0]


def _normalize(url: str, base: str | None, drop: Callable[[str], object] | None) -> str | None:
    """Normalise ``url`` (see module docstring); ``drop(name)`` true drops a parameter."""
    text = _clean(url)
    hash_at = text.find("#")
    if hash_at >= 0:
        text = text[:hash_at]

    # Scheme, with a fast path for the usual spellings.
    if text.startswith("http://"):
        scheme, start = "http", 7
    elif text.startswith("https://"):
        scheme, start = "https", 8
    else:
        parts = _split_scheme(text)
        if parts is None:
            if base is None:
                return None
            resolved = _resolve(text, base)
            if resolved is None:
                return None
            text = resolved
            scheme = "https" if text[4] == "s" else "http"
            start = len(scheme) + 3
        else:
            scheme, rest = parts
            if scheme not in _DEFAULT_PORTS:
                return None
            if rest.startswith("//"):
                start = len(text) - len(rest) + 2
            else:
                # "http:path" (no authority): legacy relative form, resolved
                # like browsers do when the base has the same scheme.
                if base is None:
                    return None
                resolved = _resolve(rest, base)
                if resolved is None or not resolved.startswith(scheme + ":"):
                    return None
                text = resolved
                start = len(scheme) + 3

    # Authority ends at the first "/" or "?" (the fragment is already gone).
    question = text.find("?", start)
    end = len(text) if question < 0 else question
    slash = text.find("/", start, end)
    if slash >= 0:
        end = slash
    prefix = _normal_prefix(text[:end], scheme, text[start:end])
    if prefix is None:
        return None

    if question < 0:
        path, query = text[end:], ""
    else:
        path, query = text[end:question], text[question + 1 :]

    if not path:
        path = "/"
    else:
        if _NEEDS_ESCAPE_WORK.search(path):
            path = _normalize_escapes(path)
        if "/." in path:
            path = _remove_dot_segments(path)

    if not query:
        return prefix + path
    if _NEEDS_ESCAPE_WORK.search(query):
        query = _normalize_escapes(query)
    if "&" in query:
        params = [p for p in query.split("&") if p]
        if drop is not None:
            params = [p for p in params if not drop(p.partition("=")[0])]
        if not params:
            return prefix + path
        if len(params) > 1:
            params.sort(key=_sort_key)
        query = "&".join(params)
    elif drop is not None and drop(query.partition("=")[0]):
        return prefix + path
    return prefix + path + "?" + query


class UrlNormalizer:
    """Normalise URLs to one canonical http(s) form; None for non-crawlable input.

    ``drop_params`` is a regex (string, case-insensitive, or a compiled pattern,
    to which IGNORECASE is added) that a query parameter's name must fully match
    to be dropped; ``None`` or ``""`` drops nothing. The default comes from the
    ``URL_DROP_PARAMS`` setting. Never raises on any ``str`` input.
    """

    def __init__(self, drop_params: str | re.Pattern[str] | None = DEFAULT_DROP_PARAMS) -> None:
        self._drop: Callable[[str], object] | None
        if drop_params is None or drop_params == "":
            self._drop = None
            return
        if isinstance(drop_params, re.Pattern):
            pattern = re.compile(drop_params.pattern, drop_params.flags | re.IGNORECASE)
        else:
            pattern = re.compile(drop_params, re.IGNORECASE)
        self._drop = pattern.fullmatch

    @classmethod
    def from_settings(cls, settings: Any) -> UrlNormalizer:
        """The normaliser a crawl with these (Scrapy) settings uses: ``URL_DROP_PARAMS``."""
        return cls(settings.get("URL_DROP_PARAMS", DEFAULT_DROP_PARAMS))

    def __call__(self, url: str, base: str | None = None) -> str | None:
        """Return the normal form of ``url`` resolved against ``base``, or None."""
        try:
            return _normalize(url, base, self._drop)
        except Exception:  # the contract is "never raise" on any str
            return None


_DEFAULT_NORMALIZER = UrlNormalizer()
_default_drop = _DEFAULT_NORMALIZER._drop


def normalize_url(url: str, base: str | None = None) -> str | None:
    """Normalise ``url`` with the default policy; None if it is not crawlable http(s)."""
    try:
        return _normalize(url, base, _default_drop)
    except Exception:  # the contract is "never raise" on any str
        return None
