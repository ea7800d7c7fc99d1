"""What names a crawl's state: ``CRAWL_ID``, Scrapy's ``JOBDIR``, or the crawl itself.

By default the id is derived from the spider's name, its seeds and its scope, so the
same command resumes the same crawl and new seeds start a new one, instead of joining
a finished crawl and ending at once.
"""

from __future__ import annotations

import hashlib
import logging
import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


def derive_crawl_id(spider_name: str, seeds: Iterable[str], scope: str = "") -> str:
    """``<spider>-<8 hex digits of the seeds and scope>``; the spider's name without seeds.

    The order of the seeds does not matter: the same set names the same crawl.
    """
    unique = sorted(set(seeds))
    if not unique:
        return spider_name
    digest = hashlib.blake2b("\n".join([scope, *unique]).encode("utf-8"), digest_size=4).hexdigest()
    return f"{spider_name}-{digest}"


def crawl_id_of(crawler: Crawler, spider: Spider | None = None) -> str:
    """The crawl id of ``crawler``: ``CRAWL_ID``, else the name of ``JOBDIR``, else derived
    from its spider's seeds (``seed_urls`` or ``start_urls``) and ``scope``. ``spider``
    is for callers that run before ``crawler.spider`` is set."""
    settings = crawler.settings
    if settings.get("CRAWL_ID"):
        return settings.get("CRAWL_ID")
    if settings.get("JOBDIR"):
        return Path(settings.get("JOBDIR")).resolve().name
    spider = spider or crawler.spider
    name = spider.name if spider is not None else crawler.spidercls.name
    seeds = getattr(spider, "seed_urls", None) or getattr(spider, "start_urls", None) or []
    return derive_crawl_id(name, seeds, getattr(spider, "scope", "") or "")


def fresh_crawl_command(argv: list[str], crawl_id: str, suffix: str) -> str:
    """The command that ran (``argv``), with a new ``CRAWL_ID``: a crawl that starts afresh.

    Scrapy's command line takes the command's name out of ``sys.argv``: it is put back.
    """
    args = ["scrapy", *([] if argv[1:2] == ["crawl"] else ["crawl"]), *argv[1:]]
    for i, arg in enumerate(args[:-1]):  # a CRAWL_ID given before is replaced, not repeated
        if arg == "-s" and args[i + 1].startswith("CRAWL_ID="):
            del args[i : i + 2]
            break
    return shlex.join([*args, "-s", f"CRAWL_ID={crawl_id}-{suffix}"])
