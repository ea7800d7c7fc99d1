"""Learned irrelevant parameters: pure rules over normalised URLs, no I/O.

A *parameter* is a query parameter (``sid`` in ``?sid=1``) or a path parameter
(``;jsessionid`` in ``/a;jsessionid=1/b``, named with its leading ``;``). When pages of
one host whose URLs differ only in one parameter's value come back with the same text
on ``evidence`` distinct values, the parameter says nothing about the page: it is
learned as irrelevant for the host and removed from its later URLs. One value that
changes the text makes the parameter relevant for good; "the same text" is the crawl's
one test of the same page (``crawler.dedup.same``), so a clock line is no change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from operator import eq

LEARN, RELEVANT = "learn", "relevant"


@dataclass(frozen=True)
class Variant:
    """One parameter of a URL: its name, its value, and the URL without it (``rest``)."""

    name: str
    value: str
    rest: str


def _split(url: str) -> tuple[str, str, str]:
    """(scheme://authority, path, query) of a normalised URL (no fragment)."""
    start = url.find("/", url.find("://") + 3)
    if start < 0:
        return url, "/", ""
    path, _, query = url[start:].partition("?")
    return url[:start], path, query


def _join(prefix: str, path: str, params: list[str]) -> str:
    return prefix + path + ("?" + "&".join(params) if params else "")


def variants(url: str) -> Iterator[Variant]:
    """Every parameter of normalised ``url``, each with the URL that lacks it."""
    prefix, path, query = _split(url)
    params = query.split("&") if query else []
    for i, param in enumerate(params):
        name, _, value = param.partition("=")
        yield Variant(name, value, _join(prefix, path, params[:i] + params[i + 1:]))
    if ";" not in path:
        return
    segments = path.split("/")
    for i, segment in enumerate(segments):
        head, *parts = segment.split(";")
        for j, part in enumerate(parts):
            name, _, value = part.partition("=")
            kept = ";".join([head, *parts[:j], *parts[j + 1:]])
            rest = "/".join([*segments[:i], kept, *segments[i + 1:]])
            yield Variant(";" + name, value, _join(prefix, rest, params))


def strip_params(url: str, names: frozenset[str] | set[str]) -> str:
    """``url`` without the query and path parameters named in ``names``."""
    if not names:
        return url
    prefix, path, query = _split(url)
    params = [p for p in query.split("&") if p.partition("=")[0] not in names] if query else []
    if ";" in path:
        segments = []
        for segment in path.split("/"):
            head, *parts = segment.split(";")
            kept = [p for p in parts if ";" + p.partition("=")[0] not in names]
            segments.append(";".join([head, *kept]))
        path = "/".join(segments)
    return _join(prefix, path, params)


def same_resource(url: str, other: str) -> bool:
    """Whether two normalised URLs differ in parameters only (query, ``;name=value``)."""
    def bare(u: str) -> str:
        prefix, path, _ = _split(u)
        return prefix + "/".join(segment.split(";", 1)[0] for segment in path.split("/"))
    return bare(url) == bare(other)


def verdict(texts: Mapping[str, str], evidence: int,
            same: Callable[[str, str], bool] = eq) -> str | None:
    """What the texts seen for one parameter over one ``rest`` URL (value -> text
    print, ``crawler.dedup.same.TextPrint.token``) say: ``RELEVANT`` when two values
    gave texts that are not the same (``same``: ``SameText.same_tokens``, so a near copy
    is no change), ``LEARN`` when ``evidence`` distinct values gave the same text, else
    None (not known yet)."""
    distinct = list(dict.fromkeys(texts.values()))
    if any(not same(a, b) for i, a in enumerate(distinct) for b in distinct[i + 1:]):
        return RELEVANT
    return LEARN if len(texts) >= evidence else None

