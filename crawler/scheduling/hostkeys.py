"""Per-IP politeness: each new host is resolved before it may be fetched."""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crawler.scheduling.client import FrontierClient

logger = logging.getLogger(__name__)


class PolitenessKeys:
    """With ``POLITENESS_PER_IP`` the frontier holds each new host until it is given a
    politeness key: its IP address (hosts on one address share one fetch at a time), or
    its own name when it does not resolve (the fetch then fails with the DNS error and is
    counted). Resolution is the crawl's own resolver, asynchronous."""

    def __init__(self, client: FrontierClient, keyed: Callable[[], object]) -> None:
        self.client = client
        self.keyed = keyed  # a host may now be fetched: wake the engine
        self.closed = False
        self._resolving: set[str] = set()

    def resolve(self, names: list[str]) -> None:
        for name in names:
            try:
                ipaddress.ip_address(name)
            except ValueError:
                if name not in self._resolving:
                    self._resolving.add(name)
                    from twisted.internet import reactor  # the crawl's reactor, its resolver

                    d = reactor.resolve(name)
                    d.addCallbacks(self._resolved, self._unresolved,
                                   callbackArgs=(name,), errbackArgs=(name,))
            else:
                self.client.set_politeness_key(name, name)

    def _resolved(self, address: str, name: str) -> None:
        self._give(name, address)

    def _unresolved(self, failure: Any, name: str) -> None:
        logger.debug("Could not resolve %s: %s", name, failure.getErrorMessage())
        self._give(name, name)

    def _give(self, name: str, key: str) -> None:
        self._resolving.discard(name)
        if not self.closed:
            self.client.set_politeness_key(name, key)
            self.keyed()
