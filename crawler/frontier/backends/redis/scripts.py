"""The Redis frontier's Lua scripts (``lua/`` beside this module), each with the shared
``common.lua`` in front, as ``RedisFrontier`` registers them."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from redis import Redis, RedisCluster
    from redis.commands.core import Script

PACKAGE = "crawler.frontier.backends.redis"


def lua(name: str) -> str:
    """The text of a script in ``lua/``, installed with the package."""
    return resources.files(PACKAGE).joinpath("lua", name).read_text(encoding="utf-8")


def script(name: str) -> str:
    """A Lua script of ``lua/``: KEYS[1] the crawl prefix, ARGV[1] levels, ARGV[2] a new
    host's pages left, then its own; ``common.lua`` (schedule, release, ensure_host) goes first."""
    return lua("common.lua") + lua(name)


# The seen test of add.lua: exact (a bucket hash), or a Bloom filter's bits.
ADD = lua("common.lua") + lua("seen_exact.lua") + lua("add.lua")
ADD_BLOOM = lua("common.lua") + lua("bloom_add.lua") + lua("seen_bloom.lua") + lua("add.lua")
CLAIM = script("claim.lua")
TIMES = script("times.lua")
FETCHED = script("fetched.lua")
ACK = script("ack.lua")
REQUEUE = script("requeue.lua")
REAP = script("reap.lua")
DUE = script("due.lua")
REVISIT = script("revisit.lua")
DEAD_HOST = script("dead_host.lua")
REQUEUE_DEAD = script("requeue_dead.lua")
HEARTBEAT = script("heartbeat.lua")
COUNTS = script("counts.lua")
LEAVING = script("leaving.lua")
LEAVE = script("leave.lua")
KEY = script("key.lua")
DEMOTE = script("demote.lua")
FORCE = script("force.lua")
UNANSWERED = script("unanswered.lua")


@dataclass(frozen=True)
class FrontierScripts:
    """The scripts of one ``RedisFrontier``, registered on its client: one typed attribute
    each (``add``: the Bloom seen set's when the crawl keeps one)."""

    add: Script
    claim: Script
    times: Script
    fetched: Script
    ack: Script
    requeue: Script
    reap: Script
    key: Script
    heartbeat: Script
    counts: Script
    leaving: Script
    leave: Script
    due: Script
    requeue_dead: Script
    revisit: Script
    dead_host: Script
    demote: Script
    force: Script
    unanswered: Script

    @classmethod
    def register(cls, client: Redis | RedisCluster, bloom: bool) -> FrontierScripts:
        def on(body: str) -> Script:
            return client.register_script(body)

        return cls(
            add=on(ADD_BLOOM if bloom else ADD), claim=on(CLAIM), times=on(TIMES), fetched=on(FETCHED),
            ack=on(ACK), requeue=on(REQUEUE), reap=on(REAP), key=on(KEY), heartbeat=on(HEARTBEAT),
            counts=on(COUNTS), leaving=on(LEAVING), leave=on(LEAVE), due=on(DUE),
            requeue_dead=on(REQUEUE_DEAD), revisit=on(REVISIT), dead_host=on(DEAD_HOST), demote=on(DEMOTE),
            force=on(FORCE), unanswered=on(UNANSWERED),
        )
