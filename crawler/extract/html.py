"""One parse of an HTML page, and what the crawler reads from it: text, links and head.

The parser is resiliparse's, on Lexbor (an HTML5 parser in C): no recursion over the
tree's depth anywhere, in the parse or in the text walk, so a page of 100,000 nested
unclosed tags gives its text and links; and the visible text is walked in C, with
the skip rules below given as CSS selectors. Why resiliparse and not selectolax, the
other Lexbor binding: ``docs/parsers.md`` (``bench/parsers.py``).
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import cast

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree
from resiliparse.parse.html import node as resiliparse_node

#: Elements that are never text: forms' widgets, embedded documents and drawings, hidden
#: elements. Scripts, styles, ``<noscript>`` and the head are never text for the
#: extractor either.
BASE_SKIP = (
    "template", "svg", "math", "iframe", "object", "canvas", "select", "button",
    "[hidden]", "[aria-hidden=true]",
)
#: Elements whose text is not page content in the visible text: page-level navigation,
#: site header and footer, sidebars (an ``<article>``'s or ``<main>``'s own header and
#: footer are content: a byline) and ARIA landmarks of boilerplate; unless marked
#: ``KEEP`` (:func:`extract_text`).
KEEP = "data-crawler-keep"
CHROME_SELECTORS = (
    "nav", "aside", "menu", "header:not(article header, main header)",
    "footer:not(article footer, main footer)", "[role=navigation]", "[role=banner]",
    "[role=contentinfo]", "[role=complementary]", "[role=menu]",
)
SKIP_SELECTORS = (*BASE_SKIP, *(f"{selector}:not([{KEEP}])" for selector in CHROME_SELECTORS))
_SKIP = list(SKIP_SELECTORS)
_CHROME = ", ".join(CHROME_SELECTORS)
_LINKS = "a[href], area[href]"


@dataclass(frozen=True)
class Head:
    """What a page says about itself: its title, ``<base href>``, ``<link rel=canonical>``
    and ``<meta name=robots>`` (as written; None when absent)."""

    title: str = ""
    base: str | None = None
    canonical: str | None = None
    robots: str | None = None


def parse_html(body: bytes, encoding: str = "utf-8") -> HTMLTree:
    """The page's tree, from its bytes in ``encoding`` (bytes it cannot decode become U+FFFD)."""
    try:
        codecs.lookup(encoding)
    except LookupError:
        encoding = "utf-8"
    return HTMLTree.parse_from_bytes(body, encoding, "replace")


class Lines(str):
    """A text as :func:`lines` makes it: words split by single spaces, lines by single
    line breaks, no other whitespace and no blank line. Its word count and whitespace
    forms (here and in ``crawler.dedup.simhash``) skip the scans that tell whether a
    text is so (each about 0.1 ms over a documentation page's text, and a page's text
    is asked four times)."""

    __slots__ = ()


def lines(text: str) -> Lines:
    """``text`` with spaces collapsed within each line and blank lines dropped (maps
    rather than a generator: no bytecode per line)."""
    return Lines("\n".join(filter(None, map(" ".join, map(str.split, text.split("\n"))))))


def _keep_wrappers(tree: HTMLTree) -> None:
    """Mark ``KEEP`` the chrome elements that hold more than half the body's text: not
    chrome but a wrapper, such as a ``<header>`` left unclosed around the whole page."""
    body = tree.body
    if body is None:
        return
    with uncached_nodes():
        chrome = body.query_selector_all(_CHROME).values()
        if chrome:
            half = len(cast(str, body.text)) / 2  # an element's text is a string, if empty
            for element in chrome:
                if len(cast(str, element.text)) > half:
                    element.setattr(KEEP, "")


def extract_text(tree: HTMLTree) -> str:
    """The page's visible text: one line per block, spaces collapsed, blank lines dropped."""
    _keep_wrappers(tree)
    raw = extract_plain_text(tree, preserve_formatting=True, list_bullets=False, alt_texts=False,
                             skip_elements=_SKIP)
    return lines(raw)


class _NoNodeCache:
    """Stands in for resiliparse's node cache: remembers nothing, so a node object is made
    without registering it (see :func:`uncached_nodes`)."""

    __slots__ = ()

    def get(self, key: object, default: object = None) -> object:
        return default

    def __setitem__(self, key: object, value: object) -> None:
        pass


_NO_NODE_CACHE = _NoNodeCache()


@contextmanager
def uncached_nodes() -> Iterator[None]:
    """Within it, resiliparse makes its Python node objects without its node cache.

    resiliparse keeps every node object it hands out in a module-level
    ``WeakValueDictionary`` (``node._node_cache``), so that one element is always one
    Python object. Registering each costs about 1.5 us (a weakref and its callback): on
    a page of 300 links, 0.45 ms of the 1.1 ms the links take. The link and head reads
    only read attributes of nodes they drop at once, so they need no object identity.
    Left as it is when resiliparse has no such cache (another version). Not for threads
    that use resiliparse meanwhile: they would get uncached (not wrong) nodes too.
    """
    saved = getattr(resiliparse_node, "_node_cache", None)
    if saved is None:
        yield
        return
    # resiliparse's stubs leave its private node cache out.
    resiliparse_node._node_cache = _NO_NODE_CACHE  # type: ignore[attr-defined]
    try:
        yield
    finally:
        resiliparse_node._node_cache = saved  # type: ignore[attr-defined]


def extract_hrefs(tree: HTMLTree) -> list[str]:
    """Every ``<a href>`` and ``<area href>`` of the page, in document order, as written."""
    document = tree.document
    if document is None:
        return []
    with uncached_nodes():
        # The selector asks for elements with an href: getattr finds one in each.
        return cast("list[str]", [element.getattr("href")
                                  for element in document.query_selector_all(_LINKS).values()])


def extract_head(tree: HTMLTree) -> Head:
    """The page's title (whitespace collapsed), and the first ``<base href>``,
    ``<link rel=canonical href>`` and ``<meta name=robots content>`` of its head.

    One selector query over the head alone: a query costs a walk of the subtree it is
    asked of (~0.2 ms over a 50 KB body). Scrapy's ``get_base_url`` read the first 4 KB.
    """
    head = tree.head
    if head is None:
        return Head()
    base = canonical = robots = None
    with uncached_nodes():
        elements = head.query_selector_all("base[href], link[rel][href], meta[name][content]").values()
    # The selector asks for the attributes read here: getattr finds each.
    for element in elements:
        tag = element.tag
        if tag == "base":
            base = cast(str, element.getattr("href")).strip() if base is None else base
        elif tag == "link":
            if canonical is None and "canonical" in cast(str, element.getattr("rel")).lower().split():
                canonical = cast(str, element.getattr("href")).strip()
        elif robots is None and cast(str, element.getattr("name")).strip().lower() == "robots":
            robots = cast(str, element.getattr("content")).strip()
    return Head(" ".join((tree.title or "").split()), base, canonical, robots)


def single_spaced(text: str) -> bool:
    """Whether ``text``'s only whitespace is single spaces between words, so that
    ``" ".join(text.split())`` is ``text``: ``str.isprintable`` is false for every
    whitespace character but the space (and for control and format characters, which
    only send a text the slow way). One pass in C instead of making every word."""
    return text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " "


def normalize_whitespace(text: str) -> str:
    """Text with every run of whitespace made one space: the form content hashes see.

    The extracted text (:func:`lines`) is already that but for its line breaks, which
    then only need to become spaces (0.09 against 0.17 ms a 20,000-character page)."""
    normal = text.replace("\n", " ")
    return normal if isinstance(text, Lines) or single_spaced(normal) else " ".join(text.split())


def word_count(text: str) -> int:
    """``len(text.split())``, counted without making the words when ``text`` has single
    spaces and line breaks between words, as the extracted text has."""
    if not text:
        return 0
    if isinstance(text, Lines) or single_spaced(text.replace("\n", " ")):
        return text.count(" ") + text.count("\n") + 1
    return len(text.split())
