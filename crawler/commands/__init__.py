"""Commands of this package (``COMMANDS_MODULE = "crawler.commands"``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import UsageError

from crawler.frontier.connection import redis_clients, uses_redis
from crawler.frontier.redis import RedisFrontier, ShardedRedisFrontier, open_redis_frontier

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


def redis_crawl(args: list[str], settings: BaseSettings) -> tuple[str, RedisFrontier | ShardedRedisFrontier]:
    """(crawl id, its Redis frontier) for a command given one crawl id and ``REDIS_URL``."""
    if len(args) != 1:
        raise UsageError("give one crawl id")
    if not uses_redis(settings):
        raise UsageError("set REDIS_URL (-s REDIS_URL=redis://host:port/db)")
    return args[0], open_redis_frontier(redis_clients(settings), args[0])
