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

import re
from collections.abc import Callable
from typing import Any

from crawler.defaults import URL_DROP_PARAMS
from crawler.urls.authority import DEFAULT_PORTS, normal_prefix
from crawler.urls.references import absolute_reference, clean, resolve, split_scheme

__all__ = ["DEFAULT_DROP_PARAMS", "UrlNormalizer", "absolute_reference", "normalize_url"]

DEFAULT_DROP_PARAMS: str = URL_DROP_PARAMS

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


def _sort_key(param: str) -> str:
    return param.partition("=")[0]


def _normalize(url: str, base: str | None, drop: Callable[[str], object] | None) -> str | None:
    """Normalise ``url`` (see module docstring); ``drop(name)`` true drops a parameter."""
    text = clean(url)
    hash_at = text.find("#")
    if hash_at >= 0:
        text = text[:hash_at]

    # Scheme, with a fast path for the usual spellings.
    if text.startswith("http://"):
        scheme, start = "http", 7
    elif text.startswith("https://"):
        scheme, start = "https", 8
    else:
        parts = split_scheme(text)
        if parts is None:
            if base is None:
                return None
            resolved = resolve(text, base)
            if resolved is None:
                return None
            text = resolved
            scheme = "https" if text[4] == "s" else "http"
            start = len(scheme) + 3
        else:
            scheme, rest = parts
            if scheme not in DEFAULT_PORTS:
                return None
            if rest.startswith("//"):
                start = len(text) - len(rest) + 2
            else:
                # "http:path" (no authority): legacy relative form, resolved
                # like browsers do when the base has the same scheme.
                if base is None:
                    return None
                resolved = resolve(rest, base)
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
    prefix = normal_prefix(text[:end], scheme, text[start:end])
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
