"""Where a crawl's keys live in Redis: every key of crawl ``<id>`` starts ``crawl:{<id>}:``.

The braces are a Redis Cluster hash tag, so the crawl's keys share one slot; a Cluster
crawl's frontier shards have tags of their own (``<id>:<n>``, ``tagged``). Pure code: the
one place the key layout is written.
"""

from __future__ import annotations

from dataclasses import dataclass

#: What every crawl's keys start with, for a scan over all crawls (``scrapy crawls``).
ANY_CRAWL = "crawl:{*}:"


def tagged(tag: str) -> str:
    """The key prefix of hash tag ``tag``: ``crawl:{<tag>}:``."""
    return f"crawl:{{{tag}}}:"


@dataclass(frozen=True)
class CrawlKeys:
    """The keys of one crawl."""

    crawl_id: str

    @property
    def prefix(self) -> str:
        """``crawl:{<crawl id>}:``: every key of the crawl but its Cluster shards' starts so."""
        return tagged(self.crawl_id)

    def key(self, *parts: str) -> str:
        """``crawl:{<crawl id>}:<part>:<part>...``."""
        return self.prefix + ":".join(parts)

    @staticmethod
    def crawl_of(key: str) -> str | None:
        """The crawl id in a key of some crawl (``crawl:{<id>}:...``), None for another key."""
        if not key.startswith("crawl:{"):
            return None
        end = key.find("}:", 7)
        return key[7:end] if end > 7 else None
