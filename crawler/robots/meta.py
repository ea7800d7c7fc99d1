"""Page-level robots directives: ``<meta name="robots">`` and the ``X-Robots-Tag`` header
(Google's and Bing's documented syntax; RFC 9309 covers only robots.txt). Pure."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageDirectives:
    """What a page asks of crawlers: not to keep it (``noindex``), not to follow its links
    (``nofollow``). ``none`` is both."""

    noindex: bool = False
    nofollow: bool = False


def page_directives(meta_robots: str | None, x_robots_tags: list[str], product: str) -> PageDirectives:
    """Directives from the meta tag's content and the X-Robots-Tag values. A header value
    prefixed with a user agent (``otherbot: noindex``) applies only when it names
    ``product`` (our robots.txt token, case-insensitive)."""
    words: set[str] = set()
    for value in [meta_robots or "", *x_robots_tags]:
        head, sep, rest = value.partition(":")
        if sep and head.strip() and " " not in head.strip() and "," not in head:
            if head.strip().lower() not in ("*", product.lower()):
                continue  # another crawler's directives
            value = rest
        words.update(word.strip().lower() for word in value.split(","))
    none = "none" in words
    return PageDirectives(noindex=none or "noindex" in words, nofollow=none or "nofollow" in words)
