"""The Redis backends' errors in the contract's words: ``FrontierUnavailable``."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from redis import RedisError
from redis.exceptions import RedisClusterException

from crawler.frontier.api import FrontierUnavailable

T = TypeVar("T")


class RedisUnavailable(FrontierUnavailable, RedisError):
    """A Redis error as the frontier contract names it. Still a ``RedisError``, so a
    backend made of others (shards of one crawl) handles its parts' outages as before."""


def _translated(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except FrontierUnavailable:
            raise
        except (RedisError, RedisClusterException) as error:
            raise RedisUnavailable(f"{type(error).__name__}: {error}") from error

    call.__translated__ = True  # type: ignore[attr-defined]
    return call


def raises_unavailable(cls: type[T]) -> type[T]:
    """``cls`` with every public method and property raising ``RedisUnavailable`` for a
    Redis error: callers of a backend catch the contract's exception, not redis-py's."""
    for name in dir(cls):
        if name.startswith("_"):
            continue
        member = inspect.getattr_static(cls, name)
        if isinstance(member, property) and member.fget is not None:
            setter = member.fset and _translated(member.fset)
            setattr(cls, name, property(_translated(member.fget), setter, doc=member.__doc__))
        elif inspect.isfunction(member) and not getattr(member, "__translated__", False):
            setattr(cls, name, _translated(member))
    return cls
