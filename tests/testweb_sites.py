"""The sites of the test web: what a :class:`Site` is and the URLs it has.

A site's pages, traps and special paths are a deterministic function of its parameters;
:func:`canonical` is the URL form the ground truth compares in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from testweb_loopback import is_loopback

#: Query parameters :func:`canonical` drops by default (regex, full match on the name).
DEFAULT_DROP_PARAMS = r"utm_[a-z]+"
#: A status that answers nothing: the server resets the connection (TCP RST).
RESET = 0
#: First month of the calendar trap.
CALENDAR_START = (2024, 1)
#: Default number of consecutive trap hops :meth:`TestWeb.reachable` follows.
TRAP_DEPTH = 3

StatusSpec = int | tuple[int, dict[str, str]]


@dataclass
class Site:
    """One virtual host of the test web and everything it serves.

    Page ``i`` is served at ``/`` for ``i == 0`` and at ``/p/<i>.html`` otherwise. Page
    ``i`` links to its tree children ``fanout*i+1 .. fanout*i+fanout`` (so every page
    is reachable from ``/``), to ``extra_links`` seeded-random pages of the site and to
    the first ``nav_links`` pages (the same on every page). Links come in a mix of
    absolute, root-relative and document-relative forms, some with a ``#fragment`` or
    a ``?utm_source=x`` parameter; all resolve to the canonical page URL.

    Page 0 also links to: ``cross_links`` (other hosts' ``/``), ``broken_links``
    pages ``/missing/<k>.html`` (404), ``/files/doc.pdf`` and ``/files/img.png`` when
    ``binary_links``, the entry of each trap that is on, and every path named in
    ``statuses``, ``status_sequences`` or ``redirects`` that is not a page path.

    ``statuses`` maps a path (without query) to a status or ``(status, headers)``; a
    200 override serves the normal content with the extra headers. ``status_sequences``
    maps a path to answers served in order, one per request, before the normal answer
    (see :meth:`TestWeb.reset`). ``redirects`` maps a path to a 301 ``Location``.

    A ``mirror_of`` site serves the other site's pages byte for byte (its own
    statuses, redirects, robots, latency and address apply; the paths page 0 links to
    are the original's); a site that has a mirror renders its own links without the
    absolute form, so they stay on the mirror.

    Traps (opt-in, endless, every URL answers 200 HTML): ``calendar_trap``
    ``/cal/<year>/<month>`` from ``/cal/2024/1``, each linking to the next month;
    ``session_trap`` ``/s/?<session_param>=<n>`` linking to ``n + 1`` (the crawler's
    normaliser drops ``sessionid``; pick another ``session_param`` for a trap it cannot
    defuse that way); ``repeat_trap`` the relative link ``loop/`` on ``/`` and on every
    ``/loop/.../loop/`` path, so paths grow one segment per hop.

    ``latency`` is slept before every answer of the host (robots.txt included);
    ``page_bytes`` is the minimum HTML size (padded with seeded text paragraphs);
    ``robots_txt`` is served as text/plain (None: 404), with ``robots_status`` if set;
    ``address`` is the loopback address the host resolves to (see ``LoopbackResolver``).
    """

    host: str
    pages: int = 10
    fanout: int = 3
    extra_links: int = 0
    nav_links: int = 0
    seed: int = 0
    cross_links: list[str] = field(default_factory=list)
    cross_links_every_page: bool = False
    unlinked_pages: int = 0
    broken_links: int = 0
    binary_links: bool = False
    binary_bytes: int = 200_000
    latency: float = 0.0
    page_bytes: int = 2048
    statuses: dict[str, StatusSpec] = field(default_factory=dict)
    status_sequences: dict[str, list[StatusSpec]] = field(default_factory=dict)
    redirects: dict[str, str] = field(default_factory=dict)
    robots_txt: str | None = None
    robots_status: int | None = None
    path_latency: dict[str, float] = field(default_factory=dict)  # extra sleep per path
    files: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # path -> (type, body)
    mirror_of: str | None = None
    calendar_trap: bool = False
    session_trap: bool = False
    session_param: str = "sessionid"
    repeat_trap: bool = False
    address: str = "127.0.0.1"

    def __post_init__(self) -> None:
        self.host = self.host.lower().rstrip(".")
        if not self.host:
            raise ValueError("Site.host must not be empty")
        if self.pages < 1 or self.fanout < 1:
            raise ValueError(f"{self.host}: pages and fanout must be >= 1")
        if not is_loopback(self.address):
            raise ValueError(f"{self.host}: address {self.address!r} is not in 127.0.0.0/8")
        self.cross_links = [h.lower().rstrip(".") for h in self.cross_links]

    def page_path(self, i: int) -> str:
        """Path of page ``i``."""
        return page_path(i)


def page_path(i: int) -> str:
    """Path of page ``i`` of any site: ``/`` or ``/p/<i>.html``."""
    return "/" if i == 0 else f"/p/{i}.html"


def relative_href(src_path: str, tgt_path: str) -> str:
    """Document-relative reference from the page at ``src_path`` to ``tgt_path``.

    ``relative_href("/", "/p/5.html") == "p/5.html"``,
    ``relative_href("/p/3.html", "/p/5.html") == "5.html"``,
    ``relative_href("/p/3.html", "/") == "../"``.
    """
    src_dirs = src_path.split("/")[1:-1]
    tgt_parts = tgt_path.split("/")[1:]
    tgt_dirs, tgt_file = tgt_parts[:-1], tgt_parts[-1]
    common = 0
    while common < min(len(src_dirs), len(tgt_dirs)) and src_dirs[common] == tgt_dirs[common]:
        common += 1
    rest = tgt_dirs[common:]
    rel = "../" * (len(src_dirs) - common) + "".join(d + "/" for d in rest) + tgt_file
    return rel or "./"


def canonical(url: str, drop_params: str = DEFAULT_DROP_PARAMS) -> str:
    """The canonical form the ground truth uses for ``url``.

    Lowercase scheme and host, explicit port unless 80, empty path is ``/``, no
    fragment, query parameters whose name fully matches ``drop_params`` removed (the
    rest kept as written, in order).
    """
    parts = urlsplit(url)
    host = (parts.hostname or "").rstrip(".")
    port = parts.port or 80
    path = parts.path or "/"
    drop = re.compile(drop_params, re.IGNORECASE) if drop_params else None
    params = [
        p for p in parts.query.split("&") if p and not (drop and drop.fullmatch(p.split("=", 1)[0]))
    ]
    query = "?" + "&".join(params) if params else ""
    return f"{parts.scheme.lower()}://{netloc(host, port)}{path}{query}"


def netloc(host: str, port: int) -> str:
    return host if port == 80 else f"{host}:{port}"

def status_pair(spec: StatusSpec) -> tuple[int, dict[str, str]]:
    if isinstance(spec, int):
        return spec, {}
    status, headers = spec
    return int(status), dict(headers)


_PAGE_RE = re.compile(r"/p/([1-9][0-9]*)\.html")
HIDDEN_PATH_RE = re.compile(r"/hidden/(0|[1-9][0-9]*)\.html")
CALENDAR_PATH_RE = re.compile(r"/cal/([0-9]{4,6})/(1[0-2]|[1-9])")
_LOOP_RE = re.compile(r"/(?:loop/)+")


def page_index(site: Site, path: str) -> int | None:
    if path == "/":
        return 0
    m = _PAGE_RE.fullmatch(path)
    if m and int(m.group(1)) < site.pages:
        return int(m.group(1))
    return None


def trap_kind(site: Site, path: str) -> str | None:
    if site.calendar_trap and CALENDAR_PATH_RE.fullmatch(path):
        return "calendar"
    if site.session_trap and path == "/s/":
        return "session"
    if site.repeat_trap and _LOOP_RE.fullmatch(path):
        return "repeat"
    return None


def session_number(site: Site, query: str) -> int:
    for part in query.split("&"):
        name, _, value = part.partition("=")
        if name == site.session_param and value.isdigit():
            return int(value)
    return 0
