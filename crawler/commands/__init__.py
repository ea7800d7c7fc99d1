"""Commands of this package (``COMMANDS_MODULE = "crawler.commands"``)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.exceptions import UsageError

from crawler.config import setting_problems
from crawler.context.connection import redis_clients, redis_problem, uses_redis
from crawler.frontier.backends.embedded.frontier import EmbeddedFrontier
from crawler.frontier.backends.redis.opening import open_redis_frontier
from crawler.frontier.backends.redis.sharded import ShardedRedisFrontier
from crawler.frontier.backends.redis.single import RedisFrontier
from crawler.paths import embedded_frontier_path

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


def check_command_settings(settings: BaseSettings, consequence: str = "") -> None:
    """The settings check of every command: a bad value is a usage error naming it, not a
    traceback. ``consequence`` follows the heading (``", nothing was fetched"``)."""
    problems = setting_problems(settings)
    if problems:
        raise UsageError(f"bad setting(s){consequence}:\n" + "\n".join(problems), print_help=False)


def check_redis(settings: BaseSettings, consequence: str = "") -> None:
    """A usage error naming ``REDIS_URL`` (or ``REDIS_HOST``) when the crawl's Redis is set
    and cannot be used (:func:`redis_problem`); ``consequence`` as for the settings."""
    problem = redis_problem(settings) if uses_redis(settings) else None
    if problem:
        raise UsageError(f"Redis cannot be used{consequence}:\n  {problem}", print_help=False)


def redis_crawl(args: list[str], settings: BaseSettings) -> tuple[str, RedisFrontier | ShardedRedisFrontier]:
    """(crawl id, its Redis frontier) for a command given one crawl id and ``REDIS_URL``."""
    if len(args) != 1:
        raise UsageError("give one crawl id (scrapy crawls lists them)")
    if not uses_redis(settings):
        raise UsageError("set REDIS_URL (-s REDIS_URL=redis://host:port/db)")
    check_redis(settings)
    return args[0], open_redis_frontier(redis_clients(settings), args[0])


def embedded_state(args: list[str], settings: BaseSettings) -> Path:
    """The state file of the embedded crawl named by the one crawl id in ``args``."""
    if len(args) != 1:
        raise UsageError("give one crawl id (scrapy crawls lists them)")
    path = embedded_frontier_path(settings, args[0])
    if not path.is_file():
        known = sorted(p.parent.name for p in path.parent.parent.glob("*/frontier.sqlite"))
        there = f"; crawls there: {', '.join(known)}" if known else ""
        jobdir = ("" if settings.get("JOBDIR") else
                  "; a crawl run with JOBDIR is kept in it: give the same -s JOBDIR=...")
        raise UsageError(f"no crawl {args[0]!r} in {path.parent.parent}{there}{jobdir}", print_help=False)
    return path


def crawl_frontier(args: list[str],
                   settings: BaseSettings) -> EmbeddedFrontier | RedisFrontier | ShardedRedisFrontier:
    """The frontier of the crawl named in ``args``: in Redis with ``REDIS_URL``, else the
    embedded one (which a running crawl holds locked)."""
    if uses_redis(settings):
        return redis_crawl(args, settings)[1]
    try:
        return EmbeddedFrontier(embedded_state(args, settings))
    except RuntimeError as error:  # its lock: the crawl is running
        raise UsageError(str(error), print_help=False) from None


def lock_holder(state: Path) -> str | None:
    """Which process holds the lock of the embedded crawl state ``state`` (its
    ``frontier.sqlite``): ``"process 123"``, ``"another process"`` where Linux's /proc/locks
    does not say, or None when no process runs the crawl."""
    lock = state.with_suffix(".lock")
    if not lock.is_file():
        return None
    with lock.open("ab") as file:
        try:
            fcntl.flock(file, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pass
        else:
            return None  # closing the file releases it
    inode = os.stat(lock).st_ino
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return "another process"
    for line in lines:
        fields = line.split()  # 1: FLOCK ADVISORY WRITE <pid> <major>:<minor>:<inode> 0 EOF
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5].rsplit(":", 1)[-1] == str(inode):
            return f"process {fields[4]}"
    return "another process"


def process_command(holder: str) -> str:
    """``holder`` (:func:`lock_holder`) with its command line, where /proc has it."""
    pid = holder.removeprefix("process ")
    try:
        said = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").strip().decode(errors="replace")
    except (OSError, ValueError):
        return holder
    return f"{holder} ({said[:200]}{'...' if len(said) > 200 else ''})"
