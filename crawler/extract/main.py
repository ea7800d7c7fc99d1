"""The page's main content: the article, the documentation body, the listing; not its chrome.

Rules over the tree the crawler parsed once (resiliparse/Lexbor), then the same C text
walk as the visible text, told to skip the elements the rules marked. No recursion over
the tree's depth: every step is a C-level selector query, or a walk along a parent
chain or a sibling list. What each rule buys on real pages: ``docs/text.md``
(``bench/text_quality.py``).

1. **Boilerplate names.** Elements whose class or id has a token naming a widget
   (comments, share and social buttons, related or recommended stories, newsletter,
   ads, tags, breadcrumbs, author boxes, galleries) or a layout part (sidebar,
   navigation, menu, footer) are skipped, unless they hold the core; layout parts in
   the flow of the core's text are its own (a documentation page's ``aside.sidebar``).
2. **Core.** Prose blocks (``p``, ``pre``, ``td``, ``blockquote`` of 25 characters or
   more, and elements whose text is split by ``<br>``) vote for their container and
   half of that for its parent, as readability does: one point, one per comma, one per
   100 characters up to three; a block inside boilerplate votes a quarter. Scores move
   25 by class/id vocabulary and are scaled by the share of non-link text; the best
   container is the *core*.
3. **Root.** The innermost landmark that holds the core (``article`` or
   ``[itemprop=articleBody]``, else ``main`` or ``[role=main]``): authors who mark their
   main content are believed. Without one, the core. A page with one ``main`` landmark
   and no article is its landmark, without a vote. Everything outside the root is
   skipped (the siblings of the root and of each of its ancestors: an ancestor is never
   skipped, so a ``<header>`` left open around the whole body keeps it).
4. **Periphery.** Within the root, the siblings of the core and of its ancestors that
   are short (under 30 words: headline, dateline, photo credits, "Advertisement") or
   mostly link text (related stories) are skipped.
5. **Link lists.** Lists, tables, navigation, asides, headers and footers of the root
   whose text is mostly link text are skipped, unless together they are most of the
   root's text: then the page is a listing (an index, a home page) and its links are
   its content. Links to the page itself (``#fragment``: a table of contents) are not
   link text.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import ElementNode, HTMLTree

from crawler.extract.html import BASE_SKIP, extract_text, lines, uncached_nodes, word_count

#: The attribute an element to skip is marked with.
MARK = "data-crawler-skip"
_MARKED = f"[{MARK}]"
_SKIP = [*BASE_SKIP, _MARKED]

_VOTERS = "p, pre, td, blockquote"
_VOTER_TAGS = frozenset(("p", "pre", "td", "blockquote"))
_VOTER_MIN_CHARS = 25
_LANDMARKS = ("article, [itemprop=articleBody]", "main, [role=main]")
_ANY_LANDMARK = ", ".join(_LANDMARKS)
_OUTWARD_LINKS = 'a[href]:not([href^="#"])'
_LINK_BLOCKS = "ul, ol, nav, aside, table, menu, header, footer"

#: Class/id words of boilerplate: a token names boilerplate when one of its ``-``/``_``
#: separated parts, or two adjacent parts, is one of these (``comments-area``,
#: ``c-social-buttons``, ``read-more``; not ``commentary`` or ``shareholders``). Widgets
#: are boilerplate wherever they are; layout words say where a block sits on the page,
#: and inside the core, among its paragraphs, they are the text's own (a documentation
#: page's ``aside.sidebar``).
WIDGET_WORDS = frozenset((
    "comment", "comments", "disqus", "respond", "reply", "share", "sharing", "sharer", "social",
    "related", "recommended", "recommendations", "newsletter", "subscribe", "subscription",
    "signup", "promo", "advert", "advertisement", "ad", "ads", "sponsor", "sponsored", "outbrain",
    "taboola", "tags", "taglist", "breadcrumb", "breadcrumbs", "bio", "authorbox", "popular",
    "trending", "readmore", "widget", "cookie", "cookies", "consent", "modal", "popup", "print",
    "byline", "meta", "dateline", "toolbar", "tools", "follow", "donate", "gallery", "carousel",
    "slideshow", "read-more", "more-stories", "skip-link", "sr-only", "visually-hidden", "screen-reader",
))
LAYOUT_WORDS = frozenset(("sidebar", "nav", "navbar", "navigation", "menu", "footer"))
WIDGET, LAYOUT = "widget", "layout"
#: A token with a digit is one element's own (``post-1806``, ``menu-item-42``): its element
#: carries a shared token too, and one selector fewer is a cheaper walk.
_DIGIT = re.compile(r"\d")
#: Class and id attributes as the tree serialises them (always double-quoted): two
#: patterns with a literal prefix scan 40% faster than one with an alternation.
_CLASS_OR_ID = (("class", re.compile(' class="([^"]*)"')), ("id", re.compile(' id="([^"]*)"')))
#: Class/id words of containers of content and of noise (readability's): +/- 25 votes.
_CONTENT_WORDS = re.compile(r"article|body|content|entry|main|page|post|story|text|blog", re.IGNORECASE)
_NOISE_WORDS = re.compile(
    r"comment|footer|related|sidebar|share|social|widget|sponsor|promo|banner|nav|menu|meta|tags?\b",
    re.IGNORECASE)

#: A main text of fewer words is not plausible: the visible text is taken when it has more.
PLAUSIBLE_WORDS = 10
#: What the votes of a container inside an element named boilerplate count for.
BOILER_VOTE = 0.25
#: A sibling of the core's chain with fewer words is periphery (headline, credits).
PERIPHERY_WORDS = 30
#: A block is a link block when its link text is over this share of its text.
LINK_DENSITY = 0.5
#: When link blocks hold more than this share of the root's text, the page is a listing.
LISTING_SHARE = 0.5


@dataclass(frozen=True)
class MainText:
    """The page's main text, and whether it is the visible text for want of a plausible main."""

    text: str
    fallback: bool = False


def _class_and_id(node: ElementNode) -> str:
    return f"{node.getattr('class') or ''} {node.getattr('id') or ''}"


def _chars(text: str | None) -> int:
    """Characters of ``text`` but spaces, tabs and line breaks (three passes in C, where
    collapsing the whitespace of a 50 KB documentation body costs 0.3 ms)."""
    if not text:
        return 0
    return len(text) - text.count(" ") - text.count("\n") - text.count("\t")


class _Chars:
    """An element's characters (``_text_chars``), counted when first asked for: the text of
    a documentation body is a 0.3 ms walk that most pages never need."""

    __slots__ = ("_count", "_node")

    def __init__(self, node: ElementNode) -> None:
        self._node = node
        self._count: int | None = None

    def __call__(self) -> int:
        if self._count is None:
            self._count = _text_chars(self._node)
        return self._count


def _parent(node: ElementNode) -> ElementNode | None:
    """The parent element of ``node`` (None above ``<html>``)."""
    parent = node.parent
    return parent if isinstance(parent, ElementNode) else None


def _link_chars(node: ElementNode) -> int:
    """Characters of ``node``'s text inside links to other pages (not ``#fragment``)."""
    return _chars("".join([link.text or "" for link in node.query_selector_all(_OUTWARD_LINKS).values()]))


def _text_chars(node: ElementNode) -> int:
    return _chars(node.text)


def _sole_main(body: ElementNode) -> ElementNode | None:
    """The page's one ``main`` landmark when it has no article: the root, without a vote."""
    found = body.query_selector_all(_ANY_LANDMARK)  # one walk for both kinds
    if len(found) != 1:
        return None
    landmark = next(iter(found.values()))
    return landmark if landmark.matches(_LANDMARKS[1]) else None


def _mark(node: ElementNode) -> None:
    node.setattr(MARK, "")


def _named(parts: list[str], words: frozenset[str]) -> bool:
    return any(part in words for part in parts) or (
        len(parts) > 1 and any(f"{a}-{b}" in words for a, b in itertools.pairwise(parts)))


@functools.lru_cache(maxsize=1 << 16)
def names_boilerplate(token: str) -> str | None:
    """``WIDGET`` or ``LAYOUT`` when a class or id token names boilerplate, else None."""
    parts = token.lower().replace("_", "-").split("-")
    if _named(parts, WIDGET_WORDS):
        return WIDGET
    return LAYOUT if _named(parts, LAYOUT_WORDS) else None


@dataclass(frozen=True)
class Boilerplate:
    """Selectors for a page's elements whose class or id has a token naming a widget, and
    for those named by layout words only ("" when there are none).

    The tokens are found by one regex pass over the serialised HTML and one over its
    distinct tokens, then asked for by exact token (``[class~="share-bar"]``): a
    selector of substring matches (``[class*=share i]``) for every word costs 3 ms a
    page on the Python docs, this 1 ms."""

    widget: str = ""
    layout: str = ""

    @classmethod
    def of(cls, body: ElementNode) -> Boilerplate:
        html = body.html
        selectors: dict[str, list[str]] = {WIDGET: [], LAYOUT: []}
        for attribute, pattern in _CLASS_OR_ID:
            for token in set(" ".join(pattern.findall(html)).split()):
                kind = names_boilerplate(token)
                if kind is not None and "\\" not in token and not _DIGIT.search(token):
                    selectors[kind].append(f'[{attribute}~="{token}"]')
        return cls(", ".join(selectors[WIDGET]), ", ".join(selectors[LAYOUT]))

    def holds(self, node: ElementNode) -> bool:
        """Whether ``node`` is, or is inside, an element named boilerplate."""
        return any(query and node.closest(query) is not None for query in (self.widget, self.layout))

    def mark(self, root: ElementNode, core: ElementNode, core_chars: Callable[[], int]) -> list[ElementNode]:
        """Mark the elements of ``root`` named boilerplate (``MARK=layout`` when by layout
        words only), but the core, the elements that hold it (a wrapper named
        ``has-sidebar`` or ``modal-enabled`` is no sidebar when the article is in it)
        and those in it that hold most of its text. ``core_chars``: the core's characters,
        asked for only when a named element is in the core (a walk of the whole core).
        Returns the elements marked by layout words (some then marked as widgets too)."""
        layout: list[ElementNode] = []
        for query, value in ((self.layout, LAYOUT), (self.widget, "")):
            if query:
                for node in root.query_selector_all(query).values():
                    if node.contains(core) or (core.contains(node) and _text_chars(node) > core_chars() / 2):
                        continue
                    node.setattr(MARK, value)
                    if value:
                        layout.append(node)
        return layout


def _spare_layout(core: ElementNode, layout: list[ElementNode]) -> None:
    """Unmark the blocks of the core that are named by layout words alone (of ``layout``,
    the elements ``Boilerplate.mark`` marked by layout words: no query of the core), sit
    between two of its blocks and are not mostly links: in the flow of the text they are
    its own (a documentation page's ``aside.sidebar``); a content column's own sidebar
    comes first or last, or is a list of links."""
    for node in layout:
        if node.getattr(MARK) != LAYOUT or not core.contains(node):
            continue
        if node.previous_element_sibling is None or node.next_element_sibling is None:
            continue
        chars = _text_chars(node)
        if chars and _link_chars(node) <= LINK_DENSITY * chars:
            node.delattr(MARK)


def _vote(votes: dict[ElementNode, float], container: ElementNode, text: str,
          parents: dict[ElementNode, ElementNode | None] | None = None) -> None:
    """One prose block's votes: to its container, and half of them to the container's
    parent (looked up in ``parents`` when given: the paragraphs of one container share it)."""
    score = 1 + text.count(",") + min(len(text) // 100, 3)
    votes[container] = votes.get(container, 0.0) + score
    if parents is None:
        grand = _parent(container)
    elif container in parents:
        grand = parents[container]
    else:
        grand = parents[container] = _parent(container)
    if grand is not None:
        votes[grand] = votes.get(grand, 0.0) + score / 2


def _votes(body: ElementNode) -> dict[ElementNode, float]:
    """Each container's votes from the prose blocks it holds (readability's scores). Text
    split by ``<br>`` rather than paragraphs votes for the element that holds it."""
    votes: dict[ElementNode, float] = {}
    parents: dict[ElementNode, ElementNode | None] = {}
    for block in body.query_selector_all(_VOTERS).values():
        text = (block.text or "").strip()
        if len(text) >= _VOTER_MIN_CHARS and (parent := _parent(block)) is not None:
            _vote(votes, parent, text, parents)
    _vote_breaks(body, votes)
    return votes


def _vote_breaks(body: ElementNode, votes: dict[ElementNode, float]) -> None:
    """The votes of elements whose text is split by ``<br>`` rather than paragraphs."""
    broken = {_parent(br) for br in body.query_selector_all("br").values()}
    for holder in broken:
        if holder is None or holder.tag in _VOTER_TAGS or holder.tag in ("body", "html"):
            continue  # a paragraph's line breaks: voted for already
        text = (holder.text or "").strip()
        if len(text) >= _VOTER_MIN_CHARS:
            _vote(votes, holder, text)


def _core(votes: dict[ElementNode, float], boilerplate: Boilerplate) -> ElementNode | None:
    """The container the most prose votes for (readability's candidate), or None: the
    votes plus or minus 25 by class/id vocabulary, times the share of non-link text,
    times ``BOILER_VOTE`` inside an element named boilerplate (a comment section).
    Those factors only lower a score, so candidates are weighed best first until the
    next one's unweighed score cannot win (the walks are the costly part)."""
    ranked = []
    for node, score in votes.items():
        words = _class_and_id(node)
        ranked.append((score, 25 * (bool(_CONTENT_WORDS.search(words)) - bool(_NOISE_WORDS.search(words))),
                       node))
    ranked.sort(key=lambda item: -item[0] - item[1])
    best, best_score = None, 0.0
    for score, bonus, node in ranked:
        if score + bonus <= best_score:
            break
        if boilerplate.holds(node):
            score *= BOILER_VOTE
        score += bonus
        chars = _text_chars(node)
        if chars:
            score *= 1 - min(1.0, _link_chars(node) / chars)
        if score > best_score:
            best, best_score = node, score
    return best


def _root(core: ElementNode) -> ElementNode:
    """The innermost landmark that holds the core, else the core."""
    for landmarks in _LANDMARKS:
        landmark = core.closest(landmarks)
        if landmark is not None:
            return landmark
    return core


def _chain_siblings(node: ElementNode, top: ElementNode) -> list[ElementNode]:
    """The element siblings of ``node`` and of each of its ancestors below ``top``."""
    siblings = []
    while node != top:
        parent = _parent(node)
        if parent is None:
            break
        sibling = parent.first_element_child
        while sibling is not None:
            if sibling != node:
                siblings.append(sibling)
            sibling = sibling.next_element_sibling
        node = parent
    return siblings


def _mark_periphery(root: ElementNode, core: ElementNode) -> None:
    """Mark the siblings of the core's chain within the root that are short or links."""
    for sibling in _chain_siblings(core, root):
        text = sibling.text or ""
        words = len(text.split())
        if words and (words < PERIPHERY_WORDS or _link_chars(sibling) > LINK_DENSITY * _chars(text)):
            _mark(sibling)


def _mark_link_blocks(root: ElementNode, core: ElementNode, total: Callable[[], int]) -> None:
    """Mark the link blocks of ``root`` (outside the core's chain), unless they are most
    of it (a listing). Only the outermost of nested blocks is looked at: no subtree is
    walked twice. ``total``: the root's characters, asked for only when there are link
    blocks."""
    dense: list[ElementNode] = []
    dense_chars = 0
    outer: ElementNode | None = None
    for node in root.query_selector_all(_LINK_BLOCKS).values():
        if (outer is not None and outer.contains(node)) or node.contains(core):
            continue
        outer = node
        chars = _text_chars(node)
        if chars and _link_chars(node) > LINK_DENSITY * chars:
            dense.append(node)
            dense_chars += chars
    if dense and dense_chars <= LISTING_SHARE * total():
        for node in dense:
            _mark(node)


def main_text(tree: HTMLTree) -> str:
    """The page's main text, one line per block ("" when the page has no prose)."""
    body = tree.body
    if body is None:
        return ""
    with uncached_nodes():
        landmark = _sole_main(body)
        if landmark is not None:
            root = core = landmark
            boilerplate = Boilerplate.of(root)
        else:
            boilerplate = Boilerplate.of(body)
            voted = _core(_votes(body), boilerplate)
            if voted is None:
                return ""
            root, core = _root(voted), voted
        core_chars = _Chars(core)
        _spare_layout(core, boilerplate.mark(root, core, core_chars))
        for outside in _chain_siblings(root, body):
            _mark(outside)
        if root != core:
            _mark_periphery(root, core)
        _mark_link_blocks(root, core, core_chars if root == core else _Chars(root))
    raw = extract_plain_text(tree, preserve_formatting=True, list_bullets=False, alt_texts=False,
                             skip_elements=_SKIP)
    return lines(raw)


def extract_main(tree: HTMLTree) -> MainText:
    """The main text, or the visible text when the main pass finds nothing plausible
    (fewer than ``PLAUSIBLE_WORDS`` words, and the visible text has more)."""
    text = main_text(tree)
    words = word_count(text)
    if words >= PLAUSIBLE_WORDS:
        return MainText(text)
    visible = extract_text(tree)
    return MainText(visible, True) if word_count(visible) > words else MainText(text)
