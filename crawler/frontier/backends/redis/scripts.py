"""The Redis frontier's Lua scripts (``lua/`` beside this module), each with the shared
``common.lua`` in front, as ``RedisFrontier`` registers them."""

from __future__ import annotations

from importlib import resources

PACKAGE = "crawler.frontier.backends.redis"


def lua(name: str) -> str:
    """The text of a script in ``lua/``, installed with the package."""
    return resources.files(PACKAGE).joinpath("lua", name).read_text(encoding="utf-8")


def script(name: str) -> str:
    """A Lua script of ``lua/``: KEYS[1] the crawl prefix, ARGV[1] levels, ARGV[2] a new
    host's pages left, then its own; ``common.lua`` (schedule, release, ensure_host) goes first."""
    return lua("common.lua") + lua(name)


# Exact: a field (the fingerprint's bits past the bucket) in a small bucket hash.
ADD = script("add.lua").replace(
    "SEEN_CHECK", "redis.call('HSETNX', P .. 'seen:' .. ARGV[i], ARGV[i + 1], '') == 1")
# Bloom: the fingerprint's k bit positions (comma-separated) in one of the bitmaps.
ADD_BLOOM = lua("common.lua") + lua("bloom_add.lua") + lua("add.lua").replace(
    "SEEN_CHECK", "bloom_add(P .. 'bloom:' .. ARGV[i], ARGV[i + 1])")
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


def bodies(bloom: bool) -> dict[str, str]:
    """Each script's text by the name ``RedisFrontier`` runs it under (``add``: the Bloom
    seen set's with ``bloom``)."""
    return {"add": ADD_BLOOM if bloom else ADD, "claim": CLAIM, "times": TIMES, "fetched": FETCHED,
            "ack": ACK, "requeue": REQUEUE, "reap": REAP, "key": KEY, "heartbeat": HEARTBEAT,
            "counts": COUNTS, "leaving": LEAVING, "leave": LEAVE, "due": DUE,
            "requeue_dead": REQUEUE_DEAD, "revisit": REVISIT, "dead_host": DEAD_HOST, "demote": DEMOTE,
            "force": FORCE, "unanswered": UNANSWERED}
