"""A multi-host test web on loopback, for the tests and benchmarks of this project.

One stdlib HTTP/1.1 server (keep-alive, one daemon thread per connection) bound to
loopback addresses only answers many virtual hosts by the ``Host`` header. Test host
names end in ``.test`` (RFC 2606). ``127.0.0.1:<port>`` and ``localhost:<port>`` get
the first site (the default vhost); an unknown host gets a 404.

Everything a site serves is a deterministic function of its :class:`Site` parameters
(seeded ``random.Random`` only), so :meth:`TestWeb.reachable` can compute the ground
truth of a crawl from the same link model that renders the pages.

Crawls in a subprocess reach the ``.test`` names through :class:`LoopbackResolver`
(``TWISTED_DNS_RESOLVER = "testweb.LoopbackResolver"`` with ``tests/`` on
``PYTHONPATH``; :meth:`TestWeb.subprocess_env` builds such an environment). The site
of the default vhost needs no resolver: ``http://127.0.0.1:<port>/``.

Run ``python tests/testweb.py --port 8080`` to serve the demo web in the foreground.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import html
import ipaddress
import itertools
import json
import math
import os
import random
import re
import signal
import socket
import socketserver
import struct
import sys
import threading
import time
import zlib
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from twisted.internet import defer
from twisted.internet.error import DNSLookupError

from crawler.net.addresses import parse_host
from crawler.net.resolver import GuardedResolver

__all__ = [
    "DEFAULT_DROP_PARAMS",
    "LoopbackResolver",
    "RequestRecord",
    "Site",
    "TestWeb",
    "canonical",
    "demo_web",
    "is_loopback",
    "loopback_address",
    "parse_addresses",
    "relative_href",
]

#: Query parameters :func:`canonical` drops by default (regex, full match on the name).
DEFAULT_DROP_PARAMS = r"utm_[a-z]+"
#: Env var with a JSON object ``{"host": "127.x.y.z"}`` read by :class:`LoopbackResolver`.
ADDRESSES_ENV = "TESTWEB_ADDRESSES"
#: Names the server maps to the first site besides that site's own host.
DEFAULT_VHOST_NAMES = frozenset({"127.0.0.1", "localhost"})
#: A status that answers nothing: the server resets the connection (TCP RST).
RESET = 0
#: First month of the calendar trap.
CALENDAR_START = (2024, 1)
#: Default number of consecutive trap hops :meth:`TestWeb.reachable` follows.
TRAP_DEPTH = 3

TESTS_DIR = Path(__file__).resolve().parent
_LOOPBACK_NET = ipaddress.IPv4Network("127.0.0.0/8")
_HTML = "text/html; charset=utf-8"
_CHUNK = 64 * 1024

StatusSpec = int | tuple[int, dict[str, str]]


# --------------------------------------------------------------------------- sites


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
    return f"{parts.scheme.lower()}://{_netloc(host, port)}{path}{query}"


def _netloc(host: str, port: int) -> str:
    return host if port == 80 else f"{host}:{port}"


def _robots_answer(site: Site) -> _Answer:
    """``/robots.txt`` as the site's ``robots_txt`` and ``robots_status`` say."""
    text = site.robots_txt
    status = site.robots_status or (404 if text is None else 200)
    if text is None and status != 200:
        return _error(status, "No robots.txt")
    return _Answer(status, {"Content-Type": "text/plain; charset=utf-8"}, body=(text or "").encode())


def _status_pair(spec: StatusSpec) -> tuple[int, dict[str, str]]:
    if isinstance(spec, int):
        return spec, {}
    status, headers = spec
    return int(status), dict(headers)


_WORD_TEXT = (
    "crawler page link site server request response archive index search network "
    "document content header footer section article market river mountain garden "
    "library history science music travel recipe weather harbour station village "
    "engine signal window forest bridge letter market number summer winter autumn "
    "spring island paper report letter stone silver golden quiet rapid simple gentle "
    "ancient modern local global public private common careful bright narrow open "
    "closed early late often never always across behind beyond within without under "
    "over through around between among writes reads builds finds keeps shows makes "
    "takes gives holds moves turns opens closes starts stops follows leads brings"
)
_WORDS = tuple(_WORD_TEXT.split())


def _paragraph(rng: random.Random) -> str:
    sentences = []
    for _ in range(rng.randint(3, 6)):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(6, 14))]
        sentences.append(" ".join(words).capitalize() + ".")
    return " ".join(sentences)


@lru_cache(maxsize=64)
def _pdf_body(host: str, size: int) -> bytes:
    head = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n"
    tail = b"\n%%EOF\n"
    filler = random.Random(f"pdf/{host}").randbytes(max(0, size - len(head) - len(tail)))
    return head + filler + tail


@lru_cache(maxsize=1)
def _png_body(width: int = 64, height: int = 64) -> bytes:
    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    rows = b"".join(
        b"\x00" + bytes(v for x in range(width) for v in ((x * 4) & 255, (y * 4) & 255, 160))
        for y in range(height)
    )
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


# --------------------------------------------------------------------------- model


@dataclass
class _Page:
    """An HTML page before rendering: its links are the ground truth's links."""

    title: str
    text_key: str
    nav: list[tuple[str, str]]
    main: list[tuple[str, str]]
    min_bytes: int

    @property
    def hrefs(self) -> list[str]:
        return [href for href, _ in self.nav] + [href for href, _ in self.main]


@dataclass
class _Answer:
    status: int
    headers: dict[str, str]
    page: _Page | None = None
    body: bytes = b""


_FORMS = ("absolute", "root", "relative", "root#", "relative?", "absolute?#")
_PAGE_RE = re.compile(r"/p/([1-9][0-9]*)\.html")
_HIDDEN_RE = re.compile(r"/hidden/(0|[1-9][0-9]*)\.html")
_CAL_RE = re.compile(r"/cal/([0-9]{4,6})/(1[0-2]|[1-9])")
_LOOP_RE = re.compile(r"/(?:loop/)+")


def _page_index(site: Site, path: str) -> int | None:
    if path == "/":
        return 0
    m = _PAGE_RE.fullmatch(path)
    if m and int(m.group(1)) < site.pages:
        return int(m.group(1))
    return None


def _trap_kind(site: Site, path: str) -> str | None:
    if site.calendar_trap and _CAL_RE.fullmatch(path):
        return "calendar"
    if site.session_trap and path == "/s/":
        return "session"
    if site.repeat_trap and _LOOP_RE.fullmatch(path):
        return "repeat"
    return None


def _session_number(site: Site, query: str) -> int:
    for part in query.split("&"):
        name, _, value = part.partition("=")
        if name == site.session_param and value.isdigit():
            return int(value)
    return 0


def _rules(robots_txt: str, user_agent: str) -> list[tuple[bool, re.Pattern[str], int]]:
    """Allow/Disallow rules of the group that applies to ``user_agent``."""
    groups: list[tuple[list[str], list[tuple[bool, str]]]] = []
    in_agents = False
    for raw in robots_txt.splitlines():
        line = raw.split("#", 1)[0].strip()
        if ":" not in line:
            continue
        key, value = (s.strip() for s in line.split(":", 1))
        key = key.lower()
        if key == "user-agent":
            if not in_agents:
                groups.append(([], []))
            groups[-1][0].append(value.lower())
            in_agents = True
        elif key in ("allow", "disallow") and groups:
            in_agents = False
            if value:
                groups[-1][1].append((key == "allow", value))
    ua = user_agent.lower()
    chosen = [g for g in groups if any(a != "*" and a in ua for a in g[0])]
    if not chosen:
        chosen = [g for g in groups if "*" in g[0]]
    rules = []
    for _, group_rules in chosen:
        for allow, pattern in group_rules:
            anchored = pattern.endswith("$")
            body = pattern[:-1] if anchored else pattern
            regex = ".*".join(re.escape(piece) for piece in body.split("*"))
            rules.append((allow, re.compile(regex + ("$" if anchored else "")), len(pattern)))
    return rules


def _robots_allows(rules: list[tuple[bool, re.Pattern[str], int]], target: str) -> bool:
    """Longest matching rule wins, Allow on a tie (Google's and Protego's rule)."""
    best: tuple[int, bool] | None = None
    for allow, regex, length in rules:
        if regex.match(target) and (best is None or (length, allow) > best):
            best = (length, allow)
    return True if best is None else best[1]


# --------------------------------------------------------------------------- log


@dataclass(frozen=True)
class RequestRecord:
    """One request the test web answered.

    ``host`` is the Host header's name (lowercase, no port; the URL's host for an
    absolute-form request), ``path`` the request path without query, ``site`` the site
    that answered ("" for an unknown host), ``server_address`` the local address the
    request came in on. ``start`` is ``time.monotonic()`` when the request line was
    read, ``end`` just before the last write of the response (see ``_Handler._write``):
    a client that waits for a complete response before its next request never shows as
    overlapping. ``bytes_sent`` counts body bytes handed to the socket (kernel buffers
    may hold bytes a client never reads; HEAD: 0); ``aborted`` means a write failed.
    """

    host: str
    path: str
    method: str
    start: float
    end: float
    status: int
    bytes_sent: int
    client_port: int
    query: str = ""
    site: str = ""
    server_address: str = ""
    aborted: bool = False
    headers: Mapping[str, str] = field(default_factory=dict)


# --------------------------------------------------------------------------- server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "testweb/1.0"
    timeout = 30  # idle keep-alive connections are closed after this many seconds
    disable_nagle_algorithm = True  # no 40 ms Nagle/delayed-ACK stall between writes
    server: _Server
    _t0: float

    def parse_request(self) -> bool:
        self._t0 = time.monotonic()  # called right after the request line is read
        return super().parse_request()

    def do_GET(self) -> None:
        self._serve(head=False)

    def do_HEAD(self) -> None:
        self._serve(head=True)

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request stderr log."""

    def _serve(self, head: bool) -> None:
        web = self.server.web
        target = self.path
        host_header = self.headers.get("Host", "")
        if target.startswith(("http://", "https://")):  # absolute-form (proxy style)
            absolute = urlsplit(target)
            host_header = absolute.netloc
            target = absolute.path or "/"
            if absolute.query:
                target += "?" + absolute.query
        host = _host_name(host_header)
        path, _, query = target.partition("?")
        path = path.partition("#")[0] or "/"
        site = web.site_for(host) if host else web.sites[0]
        if site is not None and site.latency + site.path_latency.get(path, 0.0) > 0:
            time.sleep(site.latency + site.path_latency.get(path, 0.0))
        try:
            answer = web._answer(site, path, query, stateful=True)
            body = web._render(answer)
        except Exception:  # pragma: no cover - a bug in the model must still answer
            answer, body = _Answer(500, {"Content-Type": "text/plain"}), b"testweb error\n"
            self.server.handle_error(self.request, self.client_address)
        web._writing(+1)  # until recorded, so a client that got the response sees its record
        try:
            end, sent, aborted = self._write(answer, body, head)
            web._record(
                RequestRecord(
                    host=host or "",
                    path=path,
                    method=self.command,
                    start=self._t0,
                    end=end,
                    status=answer.status,
                    bytes_sent=sent,
                    client_port=self.client_address[1],
                    query=query,
                    site=site.host if site else "",
                    server_address=self.server.server_address[0],
                    aborted=aborted,
                    headers=dict(self.headers.items()),
                )
            )
        finally:
            web._writing(-1)

    def _write(self, answer: _Answer, body: bytes, head: bool) -> tuple[float, int, bool]:
        """Send ``answer`` (one write for small responses); status 0 resets the connection.

        Returns the end time, taken just before the last write (so a client that waits
        for the whole response always starts its next request after it), the body bytes
        handed to the socket and whether the client went away.
        """
        if answer.status == RESET:
            self.close_connection = True
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return time.monotonic(), 0, True
        phrase = self.responses.get(answer.status, ("",))[0]
        lines = [
            f"{self.protocol_version} {answer.status} {phrase}",
            f"Server: {self.version_string()}",
            f"Date: {self.date_time_string()}",
            *(f"{name}: {value}" for name, value in answer.headers.items()),
            f"Content-Length: {len(body)}",
        ]
        if self.close_connection:
            lines.append("Connection: close")
        head_bytes = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        payload = memoryview(head_bytes if head else head_bytes + body)
        written = 0
        end = time.monotonic()
        try:
            while written < len(payload):
                piece = payload[written : written + _CHUNK]
                if written + len(piece) >= len(payload):
                    end = time.monotonic()
                self.wfile.write(piece)
                written += len(piece)
        except OSError:
            self.close_connection = True
            return time.monotonic(), max(0, written - len(head_bytes)), True
        return end, 0 if head else written - len(head_bytes), False


def _host_name(host_header: str) -> str:
    host = host_header.strip().lower()
    if host.startswith("["):  # IPv6 literal
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0].rstrip(".") if ":" in host else host.rstrip(".")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 1024  # listen backlog: crawlers open many connections at once

    def __init__(self, address: tuple[str, int], web: TestWeb) -> None:
        self.web = web
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls socket.getfqdn(), a reverse DNS lookup; skip it.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class TestWeb:
    """The multi-host test web: sites, the server, the request log and the ground truth.

    Use as a context manager (``with TestWeb([...]) as web:``) or ``start()``/``stop()``.
    ``log`` holds a :class:`RequestRecord` per answered request, ordered by ``end``.
    One listening socket per distinct ``Site.address`` (127.0.0.1 always), all on the
    same port; with ``port=0`` a port free on every address is picked (20 tries), with
    a fixed port ``start()`` raises ``OSError`` if any address cannot bind it. Any
    address answers any host; ``RequestRecord.server_address`` tells which one was used.
    """

    __test__ = False  # not a pytest test class

    def __init__(self, sites: list[Site], port: int = 0) -> None:
        if not sites:
            raise ValueError("a TestWeb needs at least one site")
        self.sites: list[Site] = list(sites)
        self._by_host: dict[str, Site] = {}
        for site in self.sites:
            if site.host in self._by_host:
                raise ValueError(f"duplicate site host {site.host!r}")
            self._by_host[site.host] = site
        self._content: dict[str, Site] = {s.host: self._content_site(s) for s in self.sites}
        self._mirrored = {self._content[s.host].host for s in self.sites if s.mirror_of}
        self.port: int = port
        self._requested_port = port
        self.log: list[RequestRecord] = []
        self._log_lock = threading.Lock()
        self._responses_writing = 0
        self._settled = threading.Condition()
        self._sequence_pos: dict[tuple[str, str], int] = {}
        self._sequence_lock = threading.Lock()
        self._robots_cache: dict[tuple[str, str], list[tuple[bool, re.Pattern[str], int]]] = {}
        self._servers: list[_Server] = []
        self._threads: list[threading.Thread] = []

    def _content_site(self, site: Site) -> Site:
        seen = {site.host}
        while site.mirror_of is not None:
            if site.mirror_of not in self._by_host:
                raise ValueError(f"{site.host}: mirror_of unknown site {site.mirror_of!r}")
            site = self._by_host[site.mirror_of]
            if site.host in seen:
                raise ValueError(f"mirror_of loop through {site.host!r}")
            seen.add(site.host)
        return site

    # ------------------------------------------------------------ lifecycle

    @property
    def addresses(self) -> list[str]:
        """Loopback addresses the web listens on (127.0.0.1 first)."""
        extra = sorted({s.address for s in self.sites} - {"127.0.0.1"})
        return ["127.0.0.1", *extra]

    def start(self) -> TestWeb:
        """Bind every address on one port and serve in daemon threads."""
        if self._servers:
            return self
        attempts = 1 if self._requested_port else 20
        for attempt in range(attempts):
            servers: list[_Server] = []
            try:
                port = self._requested_port
                for address in self.addresses:
                    servers.append(_Server((address, port), self))
                    port = servers[0].server_address[1]
            except OSError:
                for server in servers:
                    server.server_close()
                if attempt == attempts - 1:
                    raise
                continue
            break
        self._servers = servers
        self.port = servers[0].server_address[1]
        for server in servers:
            thread = threading.Thread(
                target=server.serve_forever,
                kwargs={"poll_interval": 0.1},
                name=f"testweb-{server.server_address[0]}:{self.port}",
                daemon=True,
            )
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        """Stop listening and close open keep-alive connections."""
        for server in self._servers:
            server.shutdown()
            server.server_close()
            server.close_connections()
        for thread in self._threads:
            thread.join(timeout=5)
        self._servers, self._threads = [], []

    def __enter__(self) -> TestWeb:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def reset(self) -> None:
        """Clear the request log and restart every status sequence."""
        with self._log_lock:
            self.log.clear()
        with self._sequence_lock:
            self._sequence_pos.clear()

    # ------------------------------------------------------------ addressing

    def url(self, host: str, path: str = "/") -> str:
        """``http://<host>:<port><path>``."""
        return f"http://{_netloc(host, self.port)}{path}"

    def page_url(self, host: str, i: int) -> str:
        """Canonical URL of page ``i`` of ``host``."""
        return self.url(host, page_path(i))

    def site_for(self, host: str) -> Site | None:
        """The site answering Host ``host`` (the default vhost for 127.0.0.1/localhost)."""
        host = host.lower().rstrip(".")
        site = self._by_host.get(host)
        if site is None and host in DEFAULT_VHOST_NAMES:
            site = self.sites[0]
        return site

    def subprocess_env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """Environment for a crawl subprocess using ``testweb.LoopbackResolver``.

        Copies ``base`` (default ``os.environ``), prepends ``tests/`` to ``PYTHONPATH``,
        sets ``TESTWEB_ADDRESSES`` to every site's address and removes proxy variables
        (Scrapy's HttpProxyMiddleware would send ``.test`` requests to a proxy).
        """
        env = dict(os.environ if base is None else base)
        for name in list(env):
            if name.lower() in ("http_proxy", "https_proxy", "all_proxy"):
                del env[name]
        paths = [str(TESTS_DIR), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
        env["PYTHONPATH"] = os.pathsep.join(paths)
        env[ADDRESSES_ENV] = json.dumps({s.host: s.address for s in self.sites})
        return env

    # ------------------------------------------------------------ log

    def _record(self, record: RequestRecord) -> None:
        with self._log_lock:
            bisect.insort(self.log, record, key=lambda r: r.end)

    def _writing(self, delta: int) -> None:
        with self._settled:
            self._responses_writing += delta
            if not self._responses_writing:
                self._settled.notify_all()

    def settle(self, timeout: float = 2.0) -> bool:
        """Wait until every response being written is in the log; False on timeout.

        A client can read a whole response a moment before the server thread appends
        its record; :meth:`hits` and the timing helpers settle first, code reading
        :attr:`log` directly should call this.
        """
        with self._settled:
            return self._settled.wait_for(lambda: not self._responses_writing, timeout)

    def hits(self, host: str | None = None, path: str | None = None) -> list[RequestRecord]:
        """Log records (ordered by ``end``) matching ``host`` and ``path`` (no query)."""
        self.settle()
        with self._log_lock:
            records = list(self.log)
        return [
            r
            for r in records
            if (host is None or r.host == host.lower()) and (path is None or r.path == path)
        ]

    def max_in_flight(self, host: str) -> int:
        """Most requests to ``host`` that overlapped in time, from the log."""
        events = []
        for r in self.hits(host):
            events.append((r.start, 1))
            events.append((r.end, -1))
        events.sort(key=lambda e: (e[0], e[1]))  # an end before a start at the same instant
        current = best = 0
        for _, delta in events:
            current += delta
            best = max(best, current)
        return best

    def min_gap(self, host: str) -> float:
        """Smallest time from the end of the requests so far to the next request's start.

        Negative when requests overlap; ``math.inf`` with fewer than two requests.
        """
        records = sorted(self.hits(host), key=lambda r: r.start)
        best, last_end = math.inf, None
        for r in records:
            if last_end is not None:
                best = min(best, r.start - last_end)
            last_end = r.end if last_end is None else max(last_end, r.end)
        return best

    def min_start_gap(self, host: str) -> float:
        """Smallest time between two consecutive request starts to ``host``."""
        starts = sorted(r.start for r in self.hits(host))
        return min((b - a for a, b in itertools.pairwise(starts)), default=math.inf)

    # ------------------------------------------------------------ model

    def is_trap(self, url: str) -> bool:
        """Whether ``url`` is a page of a trap that is on for its site."""
        parts = urlsplit(url)
        site = self.site_for(parts.hostname or "")
        return site is not None and _trap_kind(self._content[site.host], parts.path) is not None

    def _answer(self, site: Site | None, path: str, query: str, stateful: bool) -> _Answer:
        """What the web answers for ``path``/``query`` on ``site`` (None: unknown host)."""
        if site is None:
            return _error(404, "Unknown host")
        if path == "/robots.txt" and not (
            path in site.statuses or path in site.redirects or path in site.status_sequences
        ):
            return _robots_answer(site)
        if stateful and path in site.status_sequences:
            with self._sequence_lock:
                key = (site.host, path)
                pos = self._sequence_pos.get(key, 0)
                self._sequence_pos[key] = pos + 1
            sequence = site.status_sequences[path]
            if pos < len(sequence):
                return self._override(site, path, query, *_status_pair(sequence[pos]))
        if path in site.statuses:
            return self._override(site, path, query, *_status_pair(site.statuses[path]))
        if path in site.redirects:
            location = site.redirects[path]
            answer = _error(301, "Moved Permanently")
            answer.headers["Location"] = location
            return answer
        return self._content_answer(site, path, query)

    def _override(
        self, site: Site, path: str, query: str, status: int, headers: dict[str, str]
    ) -> _Answer:
        if status == 200:
            answer = self._content_answer(site, path, query)
            if answer.status == 200:
                answer.headers.update(headers)
                return answer
        answer = _error(status, "Status override")
        answer.headers.update(headers)
        return answer

    def _content_answer(self, site: Site, path: str, query: str) -> _Answer:
        if path == "/robots.txt":  # after its status sequence, robots.txt is itself again
            return _robots_answer(site)
        if path in site.files:
            content_type, body = site.files[path]
            return _Answer(200, {"Content-Type": content_type}, body=body)
        cs = self._content[site.host]
        page = self._page(cs, path, query)
        if page is not None:
            return _Answer(200, {"Content-Type": _HTML}, page=page)
        if cs.binary_links and path == "/files/doc.pdf":
            return _Answer(
                200, {"Content-Type": "application/pdf"}, body=_pdf_body(cs.host, cs.binary_bytes)
            )
        if cs.binary_links and path == "/files/img.png":
            return _Answer(200, {"Content-Type": "image/png"}, body=_png_body())
        return _error(404, "Not Found")

    def _href(self, cs: Site, src: str, tgt: str, form: str) -> str:
        if form.startswith("absolute") and cs.host in self._mirrored:
            form = "root" + form[len("absolute") :]
        if form.startswith("absolute"):
            href = self.url(cs.host, tgt)
        elif form.startswith("root"):
            href = tgt
        else:
            href = relative_href(src, tgt)
        if form.endswith("?#"):
            return href + "?utm_source=x#top"
        if form.endswith("?"):
            return href + "?utm_source=x"
        if form.endswith("#"):
            return href + "#content"
        return href

    def _page(self, cs: Site, path: str, query: str) -> _Page | None:
        """The HTML page at ``path`` of content site ``cs``, or None."""
        i = _page_index(cs, path)
        nav_count = min(cs.nav_links, cs.pages)
        nav = [
            (
                self._href(cs, path, page_path(j), _FORMS[(j + (i or 0)) % len(_FORMS)]),
                "Home" if j == 0 else f"Page {j}",
            )
            for j in range(nav_count)
        ]
        if not nav:
            nav = [("/", "Home")]
        if i is not None:
            return _Page(
                f"{cs.host} page {i}",
                f"{cs.host}{path}",
                nav,
                self._page_links(cs, i, path),
                cs.page_bytes,
            )
        m = _HIDDEN_RE.fullmatch(path)
        if m and int(m.group(1)) < cs.unlinked_pages:
            return _Page(
                f"{cs.host} hidden page {m.group(1)}", f"{cs.host}{path}", nav, [], cs.page_bytes
            )
        kind = _trap_kind(cs, path)
        if kind == "calendar":
            m = _CAL_RE.fullmatch(path)
            assert m is not None
            year, month = int(m.group(1)), int(m.group(2))
            year, month = (year, month + 1) if month < 12 else (year + 1, 1)
            return _Page(
                f"{cs.host} calendar {path[5:]}",
                f"{cs.host}{path}",
                nav,
                [(f"/cal/{year}/{month}", "Next month")],
                cs.page_bytes,
            )
        if kind == "session":
            n = _session_number(cs, query)
            return _Page(
                f"{cs.host} session {n}",
                f"{cs.host}{path}?{n}",
                nav,
                [(f"/s/?{cs.session_param}={n + 1}", "Continue")],
                cs.page_bytes,
            )
        if kind == "repeat":
            return _Page(
                f"{cs.host} loop {path.count('loop/')}",
                f"{cs.host}{path}",
                nav,
                [("loop/", "Again")],
                cs.page_bytes,
            )
        return None

    def _page_links(self, cs: Site, i: int, path: str) -> list[tuple[str, str]]:
        targets = list(range(cs.fanout * i + 1, min(cs.fanout * i + cs.fanout, cs.pages - 1) + 1))
        rng = random.Random(f"links/{cs.seed}/{cs.host}/{i}")
        targets += [rng.randrange(cs.pages) for _ in range(cs.extra_links)]
        links = [
            (self._href(cs, path, page_path(j), _FORMS[(k + 2 * i) % len(_FORMS)]), f"Page {j}")
            for k, j in enumerate(targets)
        ]
        if i == 0 or cs.cross_links_every_page:
            links += [(self.url(host, "/"), f"Site {host}") for host in cs.cross_links]
        if i != 0:
            return links
        links += [(f"/missing/{k}.html", f"Missing {k}") for k in range(cs.broken_links)]
        if cs.binary_links:
            links += [("/files/doc.pdf", "Document (PDF)"), ("/files/img.png", "Image (PNG)")]
        if cs.calendar_trap:
            links.append((f"/cal/{CALENDAR_START[0]}/{CALENDAR_START[1]}", "Calendar"))
        if cs.session_trap:
            links.append((f"/s/?{cs.session_param}=1", "Session"))
        if cs.repeat_trap:
            links.append(("loop/", "Loop"))
        special = sorted({*cs.statuses, *cs.status_sequences, *cs.redirects})
        links += [(p, f"Special {p}") for p in special if _page_index(cs, p) is None]
        return links

    def _render(self, answer: _Answer) -> bytes:
        """Body bytes of ``answer``."""
        if answer.page is None:
            return answer.body
        return _render_page(answer.page)

    # ------------------------------------------------------------ ground truth

    def reachable(
        self,
        seeds: Iterable[str],
        scope_hosts: set[str] | None = None,
        *,
        trap_depth: int = TRAP_DEPTH,
        obey_robots: bool = False,
        user_agent: str = "*",
        drop_params: str = DEFAULT_DROP_PARAMS,
    ) -> set[str]:
        """Canonical URLs of every 200 HTML page reachable from ``seeds`` within scope.

        Follows links (and redirects: a redirect source is not a page, its target is)
        breadth-first, staying on hosts in ``scope_hosts`` (None: every host this web
        answers, including 127.0.0.1/localhost) and on this web's port. Excludes
        non-200 answers, non-HTML files and pages no link leads to. A status sequence
        counts as its final answer (a crawler that retries gets it). Trap pages are
        included up to ``trap_depth`` consecutive trap hops (0: none). With
        ``obey_robots`` a URL its site's ``robots_txt`` disallows for ``user_agent`` is
        neither included nor followed (the body is parsed whatever ``robots_status``
        is, as Scrapy does). URLs are compared after :func:`canonical` with
        ``drop_params``.
        """
        scope = None if scope_hosts is None else {h.lower().rstrip(".") for h in scope_hosts}
        found: set[str] = set()
        queue: deque[tuple[str, int]] = deque()
        seen: set[str] = set()
        joined: dict[tuple[str, str], tuple[str, bool]] = {}
        for seed in seeds:
            url = canonical(seed, drop_params)
            depth = 1 if self.is_trap(url) else 0
            if url not in seen and depth <= trap_depth:
                seen.add(url)
                queue.append((url, depth))
        while queue:
            url, depth = queue.popleft()
            parts = urlsplit(url)
            host = parts.hostname or ""
            if (parts.port or 80) != self.port or parts.scheme != "http":
                continue
            if scope is not None and host not in scope:
                continue
            site = self.site_for(host)
            if site is None:
                continue
            if obey_robots and not self._allowed(site, parts.path, parts.query, user_agent):
                continue
            answer = self._answer(site, parts.path, parts.query, stateful=False)
            if 300 <= answer.status < 400 and "Location" in answer.headers:
                hrefs = [answer.headers["Location"]]
            elif answer.status == 200 and answer.headers["Content-Type"].startswith("text/html"):
                found.add(url)
                hrefs = answer.page.hrefs if answer.page else []
            else:
                continue
            base_dir = url[: url.rfind("/") + 1] if "?" not in url else None
            for href in hrefs:
                # Links resolve alike from every page of one directory: memoise.
                key = (base_dir or url, href) if href[:1] not in ("?", "#", "") else (url, href)
                resolved = joined.get(key)
                if resolved is None:
                    target = canonical(urljoin(url, href), drop_params)
                    resolved = joined[key] = (target, self.is_trap(target))
                target, trap = resolved
                target_depth = depth + 1 if trap else 0
                if target not in seen and target_depth <= trap_depth:
                    seen.add(target)
                    queue.append((target, target_depth))
        return found

    def _allowed(self, site: Site, path: str, query: str, user_agent: str) -> bool:
        if site.robots_txt is None:
            return True
        key = (site.host, user_agent)
        if key not in self._robots_cache:
            self._robots_cache[key] = _rules(site.robots_txt, user_agent)
        return _robots_allows(self._robots_cache[key], path + ("?" + query if query else ""))


def _error(status: int, text: str) -> _Answer:
    phrase = BaseHTTPRequestHandler.responses.get(status, (text,))[0]
    body = (
        f"<!DOCTYPE html>\n<html><head><title>{status} {html.escape(phrase)}</title></head>"
        f"<body><h1>{status} {html.escape(phrase)}</h1><p>{html.escape(text)}</p></body></html>\n"
    )
    return _Answer(status, {"Content-Type": _HTML}, body=body.encode())


def _render_page(page: _Page) -> bytes:
    """Deterministic HTML for ``page``: head, nav, main with links, padded text, footer."""
    rng = random.Random(f"text/{page.text_key}")
    title = html.escape(page.title)

    def anchors(links: Sequence[tuple[str, str]]) -> str:
        return "\n".join(
            f'<li><a href="{html.escape(href)}">{html.escape(text)}</a></li>'
            for href, text in links
        )

    head = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{title}</title>\n"
        "<style>body{font-family:sans-serif;margin:2em}nav li{display:inline;margin:0 .4em}"
        "</style>\n</head>\n<body>\n"
        f"<header><h1>{title}</h1></header>\n<nav><ul>\n{anchors(page.nav)}\n</ul></nav>\n"
        "<main>\n"
    )
    paragraphs = [f"<p>{_paragraph(rng)}</p>" for _ in range(3)]
    tail = (
        f"<ul>\n{anchors(page.main)}\n</ul>\n</main>\n"
        f"<footer><p>Served by testweb for {title}.</p></footer>\n"
        f"<script>document.documentElement.dataset.page = {json.dumps(page.title)};</script>\n"
        "</body>\n</html>\n"
    )
    size = len(head) + len(tail) + sum(len(p) + 1 for p in paragraphs)
    while size < page.min_bytes:
        paragraph = f"<p>{_paragraph(rng)}</p>"
        paragraphs.append(paragraph)
        size += len(paragraph) + 1
    return (head + "\n".join(paragraphs) + "\n" + tail).encode("utf-8")


# --------------------------------------------------------------------------- resolver


def is_loopback(address: str) -> bool:
    """Whether ``address`` is an IPv4 address in 127.0.0.0/8."""
    try:
        return ipaddress.IPv4Address(address) in _LOOPBACK_NET
    except ValueError:
        return False


def parse_addresses(text: str | None) -> dict[str, str]:
    """Parse a ``TESTWEB_ADDRESSES`` JSON object; every address must be loopback."""
    if not text:
        return {}
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"{ADDRESSES_ENV} must be a JSON object")
    addresses = {str(k).lower().rstrip("."): str(v) for k, v in data.items()}
    for name, address in addresses.items():
        if not is_loopback(address):
            raise ValueError(f"{ADDRESSES_ENV}: {name} -> {address} is not in 127.0.0.0/8")
    return addresses


def loopback_address(name: str, addresses: Mapping[str, str] | None = None) -> str | None:
    """The address :class:`LoopbackResolver` answers for ``name`` without a lookup.

    A name in ``addresses`` gets its address; any other ``*.test`` name and
    ``localhost`` get 127.0.0.1; a loopback IP literal is itself. ``None`` means: not
    answerable here — a non-loopback IP literal (refused) or another name (looked up,
    and refused unless the answer is in 127.0.0.0/8).
    """
    name = name.lower().rstrip(".")
    if addresses and name in addresses:
        address = addresses[name]
        if not is_loopback(address):
            raise ValueError(f"{name} -> {address} is not in 127.0.0.0/8")
        return address
    if name == "test" or name.endswith(".test") or name == "localhost":
        return "127.0.0.1"
    if is_loopback(name):
        return name
    return None


class LoopbackResolver(GuardedResolver):
    """Scrapy DNS resolver that keeps every connection on this machine.

    ``*.test`` names and ``localhost`` resolve to 127.0.0.1 (or their
    ``TESTWEB_ADDRESSES`` entry) at once; loopback IP literals are themselves; any other
    name or literal fails with ``DNSLookupError``, with no query sent. Set
    ``TWISTED_DNS_RESOLVER = "testweb.LoopbackResolver"`` with ``tests/`` importable.
    It is the crawler's :class:`~crawler.net.resolver.GuardedResolver` otherwise: the
    address guard and the DNS cache apply as in a real crawl. It only guards
    Twisted-based download handlers (the default HTTP/1.1 one).
    """

    def __init__(self, reactor: Any, *args: Any, addresses: Mapping[str, str] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(reactor, *args, **kwargs)
        if addresses is None:
            addresses = parse_addresses(os.environ.get(ADDRESSES_ENV))
        self.addresses_by_name: dict[str, str] = dict(addresses)

    def addresses(self, host: str) -> defer.Deferred[list[str]]:
        literal = parse_host(host)  # every spelling: 0x0a000001 is 10.0.0.1
        # The guard's refusal, with its reason, comes first; then the test web's own.
        if literal is not None and not is_loopback(str(literal)) and self.policy.check(host, literal) is None:
            return defer.fail(DNSLookupError(f"testweb refuses non-loopback address {host}"))
        return super().addresses(host)

    def _query(self, name: str) -> defer.Deferred[tuple[list[str], float]]:
        try:
            address = loopback_address(name, self.addresses_by_name)
        except ValueError as exc:
            return defer.fail(DNSLookupError(str(exc)))
        if address is None:
            return defer.fail(DNSLookupError(f"testweb refuses {name}: not a test name"))
        return defer.succeed(([address], 300.0))


# --------------------------------------------------------------------------- demo / CLI


def _demo_hosts(count: int) -> list[str]:
    letters = "bcdefghijklmnopqrstuvwxyz"
    return [letters[k] + ".test" if k < len(letters) else f"h{k}.test" for k in range(count)]


def demo_web(port: int = 0, hosts: int = 3, pages: int = 100) -> TestWeb:
    """The README demo: ``127.0.0.1`` (default vhost, ``pages`` pages) linking to
    ``hosts - 1`` ``.test`` sites of ``pages // 2`` pages that link back. Not started."""
    others = _demo_hosts(max(0, hosts - 1))
    main = Site(
        "127.0.0.1",
        pages=pages,
        extra_links=3,
        nav_links=8,
        cross_links=others,
        unlinked_pages=2,
        broken_links=2,
        binary_links=True,
        robots_txt="User-agent: *\nDisallow: /hidden/\n",
    )
    sites = [main] + [
        Site(
            host,
            pages=max(1, pages // 2),
            extra_links=2,
            nav_links=5,
            seed=k,
            cross_links=["127.0.0.1"],
            robots_txt="User-agent: *\nAllow: /\n",
        )
        for k, host in enumerate(others, start=1)
    ]
    return TestWeb(sites, port=port)


def main(argv: list[str] | None = None) -> int:
    """Serve the demo web in the foreground until Ctrl-C or SIGTERM."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8080, help="port (0: pick a free one)")
    parser.add_argument("--hosts", type=int, default=3, help="number of sites")
    parser.add_argument("--pages", type=int, default=100, help="pages of the first site")
    args = parser.parse_args(argv)

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    for signum in (signal.SIGINT, signal.SIGTERM):  # SIGINT too: background jobs ignore it
        signal.signal(signum, interrupt)
    web = demo_web(args.port, max(1, args.hosts), max(1, args.pages))
    try:
        web.start()
        print(f"testweb: {len(web.sites)} sites on 127.0.0.1:{web.port}", flush=True)
        print(f"seed: {web.url('127.0.0.1')}", flush=True)
        for site in web.sites[1:]:
            print(f"seed (needs testweb.LoopbackResolver): {web.url(site.host)}", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        web.stop()
        print("testweb: stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
