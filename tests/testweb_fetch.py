"""Reading the test web over real HTTP in its tests: urllib with the page's host in the Host
header, and a tiny breadth-first crawler to hold against the web's ground truth."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections import deque
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit

from testweb import TestWeb, canonical

# No proxies (an http_proxy in the environment must not see test traffic), no redirects.
OPENER = urllib.request.build_opener(
    urllib.request.ProxyHandler({}),
    type(
        "NoRedirect",
        (urllib.request.HTTPRedirectHandler,),
        {"redirect_request": lambda *args, **kwargs: None},
    ),
)


def fetch(
    web: TestWeb, url: str, method: str = "GET", headers: dict[str, str] | None = None
) -> tuple[int, Any, bytes]:
    """Fetch ``url`` from the web with urllib, sending its host in the Host header."""
    parts = urlsplit(url)
    site = web.site_for(parts.hostname or "")
    address = site.address if site else "127.0.0.1"
    target = f"http://{address}:{web.port}{parts.path or '/'}"
    if parts.query:
        target += "?" + parts.query
    request = urllib.request.Request(
        target, method=method, headers={"Host": parts.netloc, **(headers or {})}
    )
    try:
        with OPENER.open(request, timeout=10) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.headers, error.read()


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs += [v for k, v in attrs if k == "href" and v]


def hrefs_of(body: bytes) -> list[str]:
    parser = _Links()
    parser.feed(body.decode("utf-8"))
    return parser.hrefs


def crawl(
    web: TestWeb,
    seeds: list[str],
    scope: set[str] | None = None,
    trap_depth: int = 3,
    limit: int = 3000,
) -> set[str]:
    """A tiny BFS crawler over real HTTP; returns canonical URLs of 200 HTML pages."""
    queue = deque((canonical(s), 0) for s in seeds)
    seen = {url for url, _ in queue}
    found: set[str] = set()
    fetches = 0
    while queue:
        url, depth = queue.popleft()
        parts = urlsplit(url)
        if parts.port != web.port or (scope is not None and parts.hostname not in scope):
            continue
        fetches += 1
        assert fetches <= limit, "crawl did not terminate"
        status, headers, body = fetch(web, url)
        if 300 <= status < 400:
            hrefs = [headers["Location"]]
        elif status == 200 and headers["Content-Type"].startswith("text/html"):
            found.add(url)
            hrefs = hrefs_of(body)
        else:
            continue
        for href in hrefs:
            target = canonical(urljoin(url, href))
            target_depth = depth + 1 if web.is_trap(target) else 0
            if target not in seen and target_depth <= trap_depth:
                seen.add(target)
                queue.append((target, target_depth))
    return found
