"""What a page says of itself beyond its text: its language and its publication date.

``lang``: the page's declared ``<html lang>``, else its ``Content-Language`` header (the
first of a list), else the language of its text as ``py3langid`` tells it (langid.py's
model, shipped with the package: no download, no network; 0.1 ms for the first 1,000
characters it reads). Lower case, as declared (``en-gb``).

``published``: the date the page states for itself, in ISO 8601: a ``<meta>`` of the
Open Graph article, schema.org or Dublin Core vocabularies, a ``<time itemprop=
datePublished>``, or a JSON-LD ``datePublished``; None when it states none.
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime
from email.utils import parsedate_to_datetime

from resiliparse.parse.html import ElementNode, HTMLTree

from crawler.extract.html import uncached_nodes

#: Characters of the text the language is told from.
DETECT_CHARS = 1000
_LANG = re.compile(r"^[a-z]{2,3}(?:-[a-z0-9]{1,8})*$")
_META_DATES = (
    'meta[property="article:published_time"], meta[itemprop="datePublished"], '
    'meta[name="date"], meta[name="dc.date.issued"], meta[name="DC.date.issued"], '
    'meta[name="dcterms.created"], meta[name="pubdate"], meta[name="publish-date"], '
    'time[itemprop="datePublished"]'
)
_JSON_LD = 'script[type="application/ld+json"]'
#: What the body is asked for: fewer selectors for each of its many elements to be
#: matched against (0.05 ms less on a 50 KB page); its ``<meta>`` are then matched
#: against ``_META_DATES`` one by one (a page's microdata has few).
_HEAD_DATES = f"{_META_DATES}, {_JSON_LD}"
_BODY_DATES = f'meta, time[itemprop="datePublished"], {_JSON_LD}'
_JSON_LD_NODES = 50  # JSON-LD objects looked at, at most


def _tag(value: str | None) -> str | None:
    """A language tag, lower case, when ``value`` is one (``en``, ``pt-BR``); else None."""
    if not value:
        return None
    tag = value.split(",")[0].strip().replace("_", "-").lower()
    return tag if _LANG.match(tag) else None


def detect_language(text: str) -> str | None:
    """The language of ``text`` as py3langid tells it (an ISO 639-1 code), or None when
    the text has no letters."""
    sample = text[:DETECT_CHARS]
    if not any(ch.isalpha() for ch in sample):
        return None
    import py3langid  # type: ignore[import-untyped]  # its model loads on first use (0.5 s)

    return str(py3langid.classify(sample)[0])


def page_language(tree: HTMLTree, content_language: str | None, text: str) -> str | None:
    """The page's declared language (``<html lang>``, else ``Content-Language``), else
    its text's detected one."""
    document = tree.document
    declared = None
    if document is not None:
        with uncached_nodes():
            root = document.query_selector("html")
            declared = _tag(root.getattr("lang") or root.getattr("xml:lang")) if root is not None else None
    return declared or _tag(content_language) or detect_language(text)


def iso_date(value: str) -> str | None:
    """``value`` (ISO 8601, or an RFC 2822 date as some pages write) in ISO 8601: a
    date, or a date and time with its offset when the page gives one; None otherwise."""
    value = value.strip()
    if not value:
        return None
    try:
        if len(value) == 10:
            return date.fromisoformat(value).isoformat()
        return datetime.fromisoformat(value.replace("Z", "+00:00")).isoformat()
    except ValueError:
        pass
    try:
        return parsedate_to_datetime(value).isoformat()
    except (TypeError, ValueError, IndexError):
        return None


def _json_ld_date(data: object) -> str | None:
    """The first ``datePublished`` of JSON-LD ``data`` (objects, lists, ``@graph``),
    breadth first over at most ``_JSON_LD_NODES`` objects."""
    queue, seen = [data], 0
    while queue and seen < _JSON_LD_NODES:
        item = queue.pop(0)
        if isinstance(item, list):
            queue.extend(item)
            continue
        if not isinstance(item, dict):
            continue
        seen += 1
        found = item.get("datePublished")
        if isinstance(found, str) and (stamp := iso_date(found)):
            return stamp
        queue.extend(value for value in item.values() if isinstance(value, (dict, list)))
    return None


def _element_date(element: ElementNode) -> str | None:
    raw = element.getattr("content") or element.getattr("datetime") or element.text
    return iso_date(raw) if raw else None


def published_date(tree: HTMLTree) -> str | None:
    """The publication date the page states in its metadata or JSON-LD, ISO 8601: the
    first element of ``_META_DATES`` in document order, else the first JSON-LD's."""
    head, body = tree.head, tree.body
    with uncached_nodes():
        found = [*(head.query_selector_all(_HEAD_DATES).values() if head is not None else ()),
                 *(body.query_selector_all(_BODY_DATES).values() if body is not None else ())]
        scripts = []
        for element in found:
            if element.tag == "script":
                scripts.append(element)
            elif (element.tag != "meta" or element.matches(_META_DATES)) and (
                    stamp := _element_date(element)):
                return stamp
    for script in scripts:
        try:
            data = json.loads(script.text or "")
        except ValueError:
            continue
        if stamp := _json_ld_date(data):
            return stamp
    return None
