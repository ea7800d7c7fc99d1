"""URI references made absolute against a base by string rules (RFC 3986 5.2), after
the cleaning of raw input that browsers do (WHATWG). Part of the policy of
:mod:`crawler.urls.normalize`; pure, no I/O."""

from __future__ import annotations

import re

from crawler.urls.authority import DEFAULT_PORTS

# Leading/trailing characters removed before parsing: C0 controls and space
# (the WHATWG URL parser's set; non-ASCII spaces are left to be percent-encoded).
_C0_AND_SPACE = "".join(chr(c) for c in range(0x21))
_TAB_CR_LF = {9: None, 10: None, 13: None}

# RFC 3986 3.1: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")


def clean(text: str) -> str:
    """Strip surrounding C0/space and remove tab, CR and LF anywhere (WHATWG)."""
    if text and (text[0] <= " " or text[-1] <= " "):
        text = text.strip(_C0_AND_SPACE)
    if "\t" in text or "\n" in text or "\r" in text:
        text = text.translate(_TAB_CR_LF)
    return text


def split_scheme(text: str) -> tuple[str, str] | None:
    """Return (lowercased scheme, rest after ``:``), or None for a relative reference."""
    match = _SCHEME.match(text)
    if match is None:
        return None
    return match.group(1).lower(), text[match.end() :]


def _split_base(base: str) -> tuple[str, str, str, str] | None:
    """Parse an http(s) base URL into (scheme, authority, path, query-with-?)."""
    base = clean(base)
    hash_at = base.find("#")
    if hash_at >= 0:
        base = base[:hash_at]
    parts = split_scheme(base)
    if parts is None:
        return None
    scheme, rest = parts
    if scheme not in DEFAULT_PORTS or not rest.startswith("//"):
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


def resolve(ref: str, base: str) -> str | None:
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
    return resolve(ref, base)
