"""A test web of trap hosts and real-looking sites, on the test web's server, with the
ground truth of every URL: which real page it shows, or which trap it is.

Hosts (``trap_web``/``precision_web`` build them): a session-id host (every link gets
a random ``?sid=``, a name no drop list has), one whose pages also carry a clock line and
a visitor counter ("Page generated 12:04:05 for visitor 8231"), a soft-404 host (any unknown path answers
200 with one "not found" page that echoes the path), a calendar and a repeating path
(``Site`` traps); a shop with query-driven pages (``?page=``, ``?id=``, ``?lang=``),
print copies and ``?ref=`` copies; a blog whose tag pages all repeat one listing.
"""

from __future__ import annotations

import dataclasses
import itertools
import secrets
import time
from urllib.parse import urlsplit

from testweb import Site, TestWeb, page_path
from testweb_pages import HTML_CONTENT_TYPE, Answer, Page, render_page

SHOP_ITEMS = 12
SHOP_LISTS = 4
TAGS = 30
POSTS = 6

_NOT_FOUND = ("We are sorry, but the page you asked for could not be found on this site. It may have "
              "been moved, renamed or removed, or the address may have been typed wrongly. Please check "
              "the spelling, go back to the home page, or use the search box to find what you were "
              "looking for. If you followed a link from another site, let its owner know.")


def _with_sid(href: str) -> str:
    href, hash_, fragment = href.partition("#")
    joiner = "&" if "?" in href else "?"
    return f"{href}{joiner}sid={secrets.token_hex(8)}{hash_}{fragment}"


class TrapWeb(TestWeb):
    """The test web with session-id, soft-404, shop and tag-blog hosts besides ``Site``'s."""

    __test__ = False

    def __init__(self, sites: list[Site], session: str | None = None, soft_404: str | None = None,
                 shop: str | None = None, blog: str | None = None, clock: str | None = None) -> None:
        super().__init__(sites)
        self.session, self.soft_404, self.shop, self.blog = session, soft_404, shop, blog
        self.clock = clock  # a session-id host whose pages also say when and for whom they were made
        self._visitors = itertools.count(8231)

    def _answer(self, site: Site | None, path: str, query: str, stateful: bool) -> Answer:
        if site is not None and site.host in (self.shop, self.blog) and path != "/robots.txt":
            page = self._shop(path, query) if site.host == self.shop else self._blog(path)
            if page is None:
                return Answer(404, {})
            headers = {"Content-Type": HTML_CONTENT_TYPE}
            if path.startswith("/print/item/"):
                headers["Link"] = f'</item?id={path[12:]}>; rel="canonical"'
            return Answer(200, headers, page=page)
        answer = super()._answer(site, path, query, stateful)
        if site is None or path == "/robots.txt":
            return answer
        if site.host == self.soft_404 and answer.status == 404:
            nav = [("/", "Home"), ("/p/1.html", "Page 1")]
            return Answer(200, {"Content-Type": HTML_CONTENT_TYPE},
                           page=Page("Page not found", "notfound", nav,
                                      [(path, f"{_NOT_FOUND} ({path})")], 0))
        if site.host in (self.session, self.clock) and answer.page is not None:
            page = answer.page
            answer.page = dataclasses.replace(page, nav=[(_with_sid(h), t) for h, t in page.nav],
                                              main=[(_with_sid(h), t) for h, t in page.main])
        if site.host == self.clock and answer.page is not None:
            visitor = next(self._visitors)
            stamp = time.strftime("%H:%M:%S", time.gmtime(time.time() + visitor))
            body = render_page(answer.page).replace(
                b"<main>\n", f"<main>\n<p>Page generated {stamp} for visitor {visitor}</p>\n".encode(), 1)
            return Answer(answer.status, answer.headers, body=body)
        return answer

    # ------------------------------------------------------------ the shop and the blog

    @staticmethod
    def _item(n: int) -> Page:
        return Page(f"Shop item {n}", f"item{n}", [("/", "Shop")],
                     [("/list?page=1", "All items"), (f"/item?id={n % SHOP_ITEMS + 1}", "Next item")], 0)

    def _shop(self, path: str, query: str) -> Page | None:
        params = dict(p.partition("=")[::2] for p in query.split("&") if p)
        nav = [("/", "Shop"), ("/about?lang=en", "About")]
        if path == "/":
            links = [("/print/item/3", "Print 3"), ("/print/item/8", "Print 8")]
            links += [(f"/list?page={n}", f"Page {n}") for n in range(1, SHOP_LISTS + 1)]
            links += [("/item?id=5&ref=home", "Offer"), ("/item?id=5&ref=news", "News"),
                      ("/item?id=5&ref=mail", "Mail"), ("/item?id=9&ref=mail", "Mail 9"),
                      ("/about?lang=fr", "A propos")]
            return Page("Shop", "shop", nav, links, 0)
        if path == "/list" and params.get("page", "").isdigit() and 1 <= int(params["page"]) <= SHOP_LISTS:
            n = int(params["page"])
            items = range(3 * n - 2, 3 * n + 1)
            links = [(f"/item?id={i}", f"Item {i}") for i in items]
            return Page(f"Shop list {n}", f"list{n}", nav, links, 0)
        if path == "/item" and params.get("id", "").isdigit() and 1 <= int(params["id"]) <= SHOP_ITEMS:
            return self._item(int(params["id"]))
        if path.startswith("/print/item/") and path[12:].isdigit() and 1 <= int(path[12:]) <= SHOP_ITEMS:
            return self._item(int(path[12:]))  # with a Link: rel=canonical header (_answer)
        if path == "/about" and params.get("lang") in ("en", "fr"):
            return Page(f"About ({params['lang']})", f"about-{params['lang']}", nav, [], 0)
        return None

    def _blog(self, path: str) -> Page | None:
        if path == "/":
            links = []
            for t in range(1, TAGS + 1):
                links.append((f"/tag/{t}", f"Tag {t}"))
                if t % 5 == 0 and t // 5 <= POSTS:
                    links.append((f"/post/{t // 5}", f"Post {t // 5}"))
            return Page("Blog", "blog", [("/", "Blog")], links, 0)
        if path.startswith("/tag/") and path[5:].isdigit() and 1 <= int(path[5:]) <= TAGS:
            return Page("All posts", "all-posts", [("/", "Blog")],
                         [(f"/post/{p}", f"Post {p}") for p in range(1, POSTS + 1)], 0)
        if path.startswith("/post/") and path[6:].isdigit() and 1 <= int(path[6:]) <= POSTS:
            return Page(f"Post {path[6:]}", f"post{path[6:]}", [("/", "Blog")], [], 0)
        return None

    # ------------------------------------------------------------ ground truth

    def real_pages(self) -> set[str]:
        """The content key of every real page of the web (what a crawl should store once)."""
        keys = {f"{self.shop}:{k}" for k in ("shop", *(f"list{n}" for n in range(1, SHOP_LISTS + 1)),
                                               *(f"item{n}" for n in range(1, SHOP_ITEMS + 1)),
                                               "about-en", "about-fr")} if self.shop else set()
        if self.blog:
            posts = (f"post{n}" for n in range(1, POSTS + 1))
            keys |= {f"{self.blog}:{k}" for k in ("blog", "all-posts", *posts)}
        for site in self.sites:
            if site.host not in (self.shop, self.blog):
                keys |= {f"{site.host}:{site.host}{page_path(i)}" for i in range(site.pages)}
        return keys

    def truth(self, url: str) -> tuple[str, str]:
        """(kind, content key) of ``url``: kind "page" (a real page, the key names its
        content: copies share it), "soft_404", "trap", "probe" (a 404 nonsense path)."""
        parts = urlsplit(url)
        host, path, query = parts.hostname or "", parts.path or "/", parts.query
        site = self.site_for(host)
        if site is None:
            return "unknown", url
        if self.is_trap(url):
            return "trap", url
        if host in (self.shop, self.blog):
            page = self._shop(path, query) if host == self.shop else self._blog(path)
            return ("page", f"{host}:{page.text_key}") if page else ("probe", url)
        answer = TestWeb._answer(self, site, path, "", stateful=False)
        if answer.page is not None:
            return "page", f"{host}:{answer.page.text_key}"
        return ("soft_404", url) if host == self.soft_404 else ("probe", url)


def trap_web() -> TrapWeb:
    """Four trap hosts: session ids in every link, soft 404s, an endless calendar and a
    path that repeats itself."""
    return TrapWeb([
        Site("sid.test", pages=11, fanout=3, nav_links=4),
        Site("soft.test", pages=10, fanout=3, broken_links=6),
        Site("cal.test", pages=3, calendar_trap=True),
        Site("loop.test", pages=3, repeat_trap=True),
    ], session="sid.test", soft_404="soft.test")


def precision_web() -> TrapWeb:
    """Real-looking sites whose pages share templates and queries, with copies, and the
    trap hosts: what a learned rule, the probe or demotion must not take for a trap."""
    web = trap_web()
    extra = [Site("shop.test"), Site("blog.test"), Site("docs.test", pages=40, fanout=4, nav_links=6)]
    return TrapWeb([*web.sites, *extra], session="sid.test", soft_404="soft.test", shop="shop.test",
                   blog="blog.test")


def clock_web() -> TrapWeb:
    """A session-id host whose pages differ on every fetch by a clock line and a counter."""
    return TrapWeb([Site("clock.test", pages=12, fanout=3, nav_links=4)], clock="clock.test")


__all__ = ["TrapWeb", "clock_web", "precision_web", "trap_web"]
