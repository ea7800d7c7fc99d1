"""What every URL of the test web answers, and the ground truth of a crawl over it.

:class:`WebModel` holds the sites and renders their answers without serving them;
:class:`~testweb.TestWeb` serves it. Both the pages and :meth:`WebModel.reachable`
come from the same link model, so the ground truth is the web as served.
"""

from __future__ import annotations

import random
import re
import threading
from collections import deque
from collections.abc import Iterable
from urllib.parse import urljoin, urlsplit

from testweb_pages import HTML_CONTENT_TYPE, Answer, Page, error_answer, pdf_body, png_body, render_page
from testweb_robots import robots_allows, robots_answer, robots_rules
from testweb_sites import (
    CALENDAR_PATH_RE,
    CALENDAR_START,
    DEFAULT_DROP_PARAMS,
    HIDDEN_PATH_RE,
    TRAP_DEPTH,
    Site,
    canonical,
    netloc,
    page_index,
    page_path,
    relative_href,
    session_number,
    status_pair,
    trap_kind,
)

#: Names the server maps to the first site besides that site's own host.
DEFAULT_VHOST_NAMES = frozenset({"127.0.0.1", "localhost"})
_FORMS = ("absolute", "root", "relative", "root#", "relative?", "absolute?#")


class WebModel:
    """The sites of a test web on ``port``, what each URL answers and what a crawl can reach."""

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
        self._sequence_pos: dict[tuple[str, str], int] = {}
        self._sequence_lock = threading.Lock()
        self._robots_cache: dict[tuple[str, str], list[tuple[bool, re.Pattern[str], int]]] = {}

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

    # ------------------------------------------------------------ addressing

    def url(self, host: str, path: str = "/") -> str:
        """``http://<host>:<port><path>``."""
        return f"http://{netloc(host, self.port)}{path}"

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

    # ------------------------------------------------------------ model

    def is_trap(self, url: str) -> bool:
        """Whether ``url`` is a page of a trap that is on for its site."""
        parts = urlsplit(url)
        site = self.site_for(parts.hostname or "")
        return site is not None and trap_kind(self._content[site.host], parts.path) is not None

    def _answer(self, site: Site | None, path: str, query: str, stateful: bool) -> Answer:
        """What the web answers for ``path``/``query`` on ``site`` (None: unknown host)."""
        if site is None:
            return error_answer(404, "Unknown host")
        if path == "/robots.txt" and not (
            path in site.statuses or path in site.redirects or path in site.status_sequences
        ):
            return robots_answer(site)
        if stateful and path in site.status_sequences:
            with self._sequence_lock:
                key = (site.host, path)
                pos = self._sequence_pos.get(key, 0)
                self._sequence_pos[key] = pos + 1
            sequence = site.status_sequences[path]
            if pos < len(sequence):
                return self._override(site, path, query, *status_pair(sequence[pos]))
        if path in site.statuses:
            return self._override(site, path, query, *status_pair(site.statuses[path]))
        if path in site.redirects:
            location = site.redirects[path]
            answer = error_answer(301, "Moved Permanently")
            answer.headers["Location"] = location
            return answer
        return self._content_answer(site, path, query)

    def _override(
        self, site: Site, path: str, query: str, status: int, headers: dict[str, str]
    ) -> Answer:
        if status == 200:
            answer = self._content_answer(site, path, query)
            if answer.status == 200:
                answer.headers.update(headers)
                return answer
        answer = error_answer(status, "Status override")
        answer.headers.update(headers)
        return answer

    def _content_answer(self, site: Site, path: str, query: str) -> Answer:
        if path == "/robots.txt":  # after its status sequence, robots.txt is itself again
            return robots_answer(site)
        if path in site.files:
            content_type, body = site.files[path]
            return Answer(200, {"Content-Type": content_type}, body=body)
        cs = self._content[site.host]
        page = self._page(cs, path, query)
        if page is not None:
            return Answer(200, {"Content-Type": HTML_CONTENT_TYPE}, page=page)
        if cs.binary_links and path == "/files/doc.pdf":
            return Answer(
                200, {"Content-Type": "application/pdf"}, body=pdf_body(cs.host, cs.binary_bytes)
            )
        if cs.binary_links and path == "/files/img.png":
            return Answer(200, {"Content-Type": "image/png"}, body=png_body())
        return error_answer(404, "Not Found")

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

    def _page(self, cs: Site, path: str, query: str) -> Page | None:
        """The HTML page at ``path`` of content site ``cs``, or None."""
        i = page_index(cs, path)
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
            return Page(
                f"{cs.host} page {i}",
                f"{cs.host}{path}",
                nav,
                self._page_links(cs, i, path),
                cs.page_bytes,
            )
        m = HIDDEN_PATH_RE.fullmatch(path)
        if m and int(m.group(1)) < cs.unlinked_pages:
            return Page(
                f"{cs.host} hidden page {m.group(1)}", f"{cs.host}{path}", nav, [], cs.page_bytes
            )
        kind = trap_kind(cs, path)
        if kind is None:
            return None
        text_key = f"{cs.host}{path}"
        if kind == "calendar":
            m = CALENDAR_PATH_RE.fullmatch(path)
            assert m is not None
            year, month = int(m.group(1)), int(m.group(2))
            year, month = (year, month + 1) if month < 12 else (year + 1, 1)
            title, link = f"{cs.host} calendar {path[5:]}", (f"/cal/{year}/{month}", "Next month")
        elif kind == "session":
            n = session_number(cs, query)
            title, link = f"{cs.host} session {n}", (f"/s/?{cs.session_param}={n + 1}", "Continue")
            text_key += f"?{n}"
        else:  # repeat
            title, link = f"{cs.host} loop {path.count('loop/')}", ("loop/", "Again")
        return Page(title, text_key, nav, [link], cs.page_bytes)

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
        links += [(p, f"Special {p}") for p in special if page_index(cs, p) is None]
        return links

    def _render(self, answer: Answer) -> bytes:
        """Body bytes of ``answer``."""
        if answer.page is None:
            return answer.body
        return render_page(answer.page)

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
            self._robots_cache[key] = robots_rules(site.robots_txt, user_agent)
        return robots_allows(self._robots_cache[key], path + ("?" + query if query else ""))
