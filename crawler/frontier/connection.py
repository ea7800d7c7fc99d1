"""Redis clients from the settings, as scrapy-redis builds them.

``REDIS_URL`` (a comma list of servers shards the crawl by host) or scrapy-redis's
``REDIS_HOST``/``REDIS_PORT``/``REDIS_DB`` choose the servers; each client is made by
scrapy-redis's own helper, so ``REDIS_PARAMS`` and ``REDIS_ENCODING`` mean what its users
know. No server set: the embedded frontier.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy_redis.connection import SETTINGS_PARAMS_MAP, get_redis
from scrapy_redis.defaults import REDIS_PARAMS

if TYPE_CHECKING:
    from redis import Redis
    from scrapy.settings import BaseSettings

# Ours, under the user's REDIS_PARAMS: a stalled Redis is noticed within seconds.
CLIENT_OPTIONS = {"socket_timeout": 10, "socket_connect_timeout": 5}


def uses_redis(settings: BaseSettings) -> bool:
    """Whether the crawl's state is shared in Redis (``REDIS_URL`` or ``REDIS_HOST`` set)."""
    return bool(settings.get("REDIS_URL") or settings.get("REDIS_HOST"))


def redis_clients(settings: BaseSettings, **options: Any) -> list[Redis]:
    """One client per server of the crawl, in ``REDIS_URL``'s order (every worker must
    list the same servers in the same order). ``options`` are the caller's defaults:
    ``REDIS_PARAMS`` overrides them, as it overrides scrapy-redis's own."""
    # redis-py 6 retries on timeouts by itself and deprecates scrapy-redis's retry_on_timeout.
    base = {k: v for k, v in REDIS_PARAMS.items() if k != "retry_on_timeout"}
    params = {**base, **CLIENT_OPTIONS, **options, **settings.getdict("REDIS_PARAMS")}
    urls = [url.strip() for url in (settings.get("REDIS_URL") or "").split(",") if url.strip()]
    for setting, param in SETTINGS_PARAMS_MAP.items():  # scrapy-redis's REDIS_HOST, _PORT, _DB...
        if settings.get(setting) and setting != "REDIS_URL" and (not urls or setting == "REDIS_ENCODING"):
            params[param] = settings.get(setting)
    params.pop("decode_responses", None)  # our state is bytes: fingerprints, JSON, packed arrays
    if not urls:
        return [get_redis(**params)]
    return [get_redis(url=url, **params) for url in urls]


def first_redis(settings: BaseSettings, **options: Any) -> Redis:
    """A client of the crawl's first server: where the crawl-wide state that is not
    sharded by host lives (pushed seeds, the robots.txt cache, the content index)."""
    return redis_clients(settings, **options)[0]
