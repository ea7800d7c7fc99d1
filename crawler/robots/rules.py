"""robots.txt rules of one host for one crawler (RFC 9309), on top of Protego.

Pure code, no I/O: the downloader middleware fetches ``/robots.txt`` and hands the
bytes (or the fetch outcome) to :class:`RobotsRules`, then asks ``allowed(url)`` per
request.

Protego does the matching: rule parsing, longest match with percent-encoding
normalisation, the ``*`` and ``$`` special characters (RFC 9309 2.2.2, 2.2.3),
Crawl-delay and Sitemap lines. Before Protego sees the file, it is rewritten so that
two things follow RFC 9309 where Protego alone does not:

- a group applies when its user-agent line's product token *equals* ours,
  case-insensitively (2.2.1); Protego alone would also match ``Foo`` against
  ``FooBot``. Each user-agent line is rewritten to ``*``, to a name that stands for
  us, or to one that stands for every other crawler, and Protego is asked for us;
- a line that is not a group member does not end a group (2.2.4): Protego ends a
  group at any line but user-agent and Sitemap, so unknown lines are dropped.
  Crawl-delay stays a member of its group (as Bing, Yandex and Protego read it).

A user-agent line's product token is the run of letters, digits, ``-`` and ``_``
it starts with (as Google reads it): ``User-agent: FooBot/1.2`` and
``User-agent: FOO BAR`` name ``FooBot`` and ``FOO``.
"""

from __future__ import annotations

import re
from urllib.parse import quote, urlsplit

from protego import Protego

__all__ = ["ROBOTS_MAX_BYTES", "RobotsRules", "product_token", "robots_text"]

#: RFC 9309 2.5: a parser must read at least 500 KiB; we read and parse exactly that much.
ROBOTS_MAX_BYTES = 500 * 1024

# Byte order marks and the encodings they announce; UTF-32-LE's starts with UTF-16-LE's.
_BOMS = ((b"\x00\x00\xfe\xff", "utf-32-be"), (b"\xff\xfe\x00\x00", "utf-32-le"),
         (b"\xef\xbb\xbf", "utf-8"), (b"\xfe\xff", "utf-16-be"), (b"\xff\xfe", "utf-16-le"))
_EOL = re.compile(r"\r\n?|\n")  # RFC 9309 2.2: NL = CR / LF / CRLF
_TOKEN = re.compile(r"[A-Za-z0-9_-]*")

# The user-agent names Protego sees: ours, and one for every other crawler. Neither
# contains the other, so Protego's substring match cannot confuse them.
_OURS = "ours"
_THEIRS = "theirs"

# The spellings of the records Protego reads in a group (its own aliases and
# misspellings), mapped to the name written out for it. Other records are dropped.
_DIRECTIVES = {
    "user-agent": "user-agent",
    "useragent": "user-agent",
    "user agent": "user-agent",
    "allow": "allow",
    "disallow": "disallow",
    "dissallow": "disallow",
    "dissalow": "disallow",
    "disalow": "disallow",
    "diasllow": "disallow",
    "disallaw": "disallow",
    "crawl-delay": "crawl-delay",
    "crawl delay": "crawl-delay",
    "sitemap": "sitemap",
    "sitemaps": "sitemap",
    "site-map": "sitemap",
}

# Characters at which str.splitlines() (which Protego uses) breaks a line but
# RFC 9309 does not: percent-encoded in the values handed on, as Protego would.
_NOT_EOL = str.maketrans({c: quote(c) for c in "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"})


def product_token(user_agent: str) -> str:
    """The product token a User-Agent value starts with (RFC 9309 2.2.1): letters,
    digits, ``-`` and ``_``. ``"MyBot/1.2 (+http://x)"`` gives ``"MyBot"``."""
    match = _TOKEN.match(user_agent.strip())
    return match.group() if match else ""


def _truncate(body: bytes) -> bytes:
    """The first ROBOTS_MAX_BYTES of ``body``, less a last line cut in two (RFC 9309 2.5)."""
    if len(body) <= ROBOTS_MAX_BYTES:
        return body
    head = body[:ROBOTS_MAX_BYTES]
    if body[ROBOTS_MAX_BYTES] in b"\r\n":
        return head
    return head[: max(head.rfind(b"\n"), head.rfind(b"\r")) + 1]


def robots_text(body: bytes) -> tuple[str, str | None]:
    """The text of a robots.txt body (RFC 9309 2.2: UTF-8) and the encoding its byte
    order mark names, if any: a file saved as UTF-16 or UTF-32 by an editor is read by
    its BOM, not as UTF-8 noise that holds no rule. Errors are replaced."""
    for bom, encoding in _BOMS:
        if body.startswith(bom):
            if encoding == "utf-8":
                return _truncate(body)[len(bom):].decode(encoding, "replace"), encoding
            text = body[len(bom):ROBOTS_MAX_BYTES].decode(encoding, "replace")
            if len(body) > ROBOTS_MAX_BYTES:  # the last line was cut in two
                text = text[: max(text.rfind("\n"), text.rfind("\r")) + 1]
            return text, encoding
    return _truncate(body).decode("utf-8", "replace"), None


def _read_record(line: str) -> tuple[str, str] | None:
    """``(directive, value)`` of a comment-free, stripped line, read as Protego reads
    it (``key: value``, or ``key value`` with no colon), or None when the line is not
    a record Protego uses in a group (RFC 9309 2.2.4: other records)."""
    key, colon, value = line.partition(":")
    directive = _DIRECTIVES.get(key.strip().lower())
    if colon and directive:
        return directive, value.strip()
    if colon and (not value or value[0].isspace()):
        return None  # "Unknown-Field: value"
    words = line.split()
    for count in (1, 2):
        directive = _DIRECTIVES.get(" ".join(words[:count]).lower())
        if directive:
            return directive, " ".join(words[count:])
    return None


def _agent_name(value: str, token: str) -> str:
    """What Protego sees of a user-agent line: ``*``, us, or another crawler. The
    line's product token must equal ours, case-insensitively (RFC 9309 2.2.1)."""
    if value == "*" or (value[:1] == "*" and value[1:2].isspace()):
        return "*"
    name = product_token(value).lower()
    return _OURS if name and name == token else _THEIRS


def _for_protego(text: str, token: str) -> str:
    """The robots.txt ``text`` rewritten so that Protego, asked for ``_OURS``, gives
    the RFC 9309 answer for the crawler whose product token is ``token``."""
    token = token.lower()
    out: list[str] = []
    for raw_line in _EOL.split(text):
        line = raw_line.partition("#")[0].strip()
        record = _read_record(line) if line else None
        if record is None:
            # Fix 2.2.4: Protego ends a group at an unknown line; dropping it does not.
            continue
        directive, value = record
        if directive == "user-agent":
            # Fix 2.2.1: Protego matches "Foo" in "FooBot"; only an exact token becomes us.
            value = _agent_name(value, token)
        out.append(f"{directive}: {value.translate(_NOT_EOL)}")
    return "\n".join(out)


def _is_robots_txt(url: str) -> bool:
    """Whether ``url`` (full or path only) is the robots.txt URL itself."""
    return "/robots.txt" in url and urlsplit(url).path == "/robots.txt"


class RobotsRules:
    """The rules of one host for one product token.

    Build with :meth:`parse` (a fetched robots.txt), :meth:`allow_all` (4xx: RFC 9309
    2.3.1.3) or :meth:`disallow_all` (5xx or unreachable: 2.3.1.4), then ask
    :meth:`allowed` per request.
    """

    __slots__ = ("_protego", "crawl_delay", "encoding", "kind", "sitemaps")

    def __init__(
        self,
        kind: str,
        protego: Protego | None = None,
        crawl_delay: float | None = None,
        sitemaps: list[str] | None = None,
    ) -> None:
        self.kind = kind  # "parsed", "allow_all" or "disallow_all"
        self._protego = protego  # matches for _OURS; None unless parsed
        self.crawl_delay = crawl_delay  # our group's Crawl-delay (non-standard)
        self.sitemaps = sitemaps if sitemaps is not None else []  # whole file, in order
        self.encoding: str | None = None  # named by the file's byte order mark

    @classmethod
    def parse(cls, body: bytes, token: str) -> RobotsRules:
        """The rules for ``token`` (a product token, see :func:`product_token`) in a
        robots.txt body: the first ROBOTS_MAX_BYTES of it (RFC 9309 2.5), decoded as
        :func:`robots_text` reads it. A token that is not a product token (empty, with
        a space) matches only the ``*`` group."""
        text, encoding = robots_text(body)
        protego = Protego.parse(_for_protego(text, token))
        rules = cls("parsed", protego, protego.crawl_delay(_OURS), list(protego.sitemaps))
        rules.encoding = encoding
        return rules

    @classmethod
    def allow_all(cls) -> RobotsRules:
        """Every path allowed: robots.txt "unavailable", a 4xx (RFC 9309 2.3.1.3)."""
        return cls("allow_all")

    @classmethod
    def disallow_all(cls) -> RobotsRules:
        """Complete disallow: robots.txt "unreachable", a 5xx or no answer (RFC 9309 2.3.1.4)."""
        return cls("disallow_all")

    def allowed(self, url: str) -> bool:
        """Whether we may fetch ``url`` (full URL or path): its path and query are
        matched (RFC 9309 2.2.2); ``/robots.txt`` itself is always allowed."""
        if self._protego is not None:
            return self._protego.can_fetch(url, _OURS)  # allows /robots.txt itself
        return self.kind == "allow_all" or _is_robots_txt(url)

    def __repr__(self) -> str:
        return f"<RobotsRules {self.kind} crawl_delay={self.crawl_delay} sitemaps={len(self.sitemaps)}>"
