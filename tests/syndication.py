"""Syndicated copies of real articles: one article's content in other sites' templates.

A page's *content element* is found with its true article text (an oracle, not the
extractor under test): the smallest element of the page whose words hold at least
``COVER`` of the true text's words. A copy of article A in page B's template is B with
its content element's children replaced by A's. Two copies of A in two templates are a
syndicated pair (the same story: a near-duplicate); two different articles in one
template are a control pair (different stories: not one). Used by
``tests/test_syndication.py`` on a small fixture and ``bench/text_quality.py`` on the
whole article extraction benchmark.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from dataclasses import dataclass

import lxml.html

COVER = 0.9
_WORD = re.compile(r"\w+")
_CONTAINERS = "//div | //article | //section | //main | //td | //body"


@dataclass(frozen=True)
class Article:
    """A real page, and the element of it that holds its true article text."""

    name: str
    document: lxml.html.HtmlElement
    content: lxml.html.HtmlElement


def content_element(document: lxml.html.HtmlElement, truth: str) -> lxml.html.HtmlElement | None:
    """The smallest element whose words cover ``COVER`` of the true text's, or None."""
    want = Counter(_WORD.findall(truth.lower()))
    total = sum(want.values())
    if not total:
        return None
    best, best_size = None, None
    for element in document.xpath(_CONTAINERS):
        got = Counter(_WORD.findall(element.text_content().lower()))
        size = sum(got.values())
        if best_size is not None and size >= best_size:
            continue
        if sum((got & want).values()) >= COVER * total:
            best, best_size = element, size
    return best


def article(name: str, html: str, truth: str) -> Article | None:
    """``html`` parsed, with its content element; None when none covers the truth."""
    document = lxml.html.document_fromstring(html)
    for junk in document.xpath("//script | //style | //noscript"):
        junk.drop_tree()
    content = content_element(document, truth)
    return None if content is None else Article(name, document, content)


def transplant(story: Article, template: Article) -> bytes:
    """``template``'s page with ``story``'s content in place of its own, as UTF-8 HTML."""
    document = copy.deepcopy(template.document)
    path = template.document.getroottree().getpath(template.content)
    target = document.getroottree().xpath(path)[0]
    for child in list(target):
        target.remove(child)
    target.text = story.content.text
    for child in story.content:
        target.append(copy.deepcopy(child))
    return lxml.html.tostring(document, encoding="utf-8", doctype="<!DOCTYPE html>")


def pairs(articles: list[Article], count: int) -> tuple[list[tuple[bytes, bytes]], list[tuple[bytes, bytes]]]:
    """(syndicated pairs, control pairs): for each of the first ``count`` articles, the
    article in the next two articles' templates; and the article and the next one in
    the template two ahead (different stories, one template)."""
    n = len(articles)
    syndicated, control = [], []
    for i in range(min(count, n)):
        story, first, second = articles[i], articles[(i + 1) % n], articles[(i + 2) % n]
        syndicated.append((transplant(story, first), transplant(story, second)))
        control.append((transplant(story, second), transplant(first, second)))
    return syndicated, control
