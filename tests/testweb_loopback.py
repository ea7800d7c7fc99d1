"""Name resolution that keeps the test web's crawls on this machine."""

from __future__ import annotations

import ipaddress
import json
import os
from collections.abc import Mapping
from typing import Any

from twisted.internet import defer
from twisted.internet.error import DNSLookupError

from crawler.net.addresses import parse_host
from crawler.net.resolver import GuardedResolver

#: Env var with a JSON object ``{"host": "127.x.y.z"}`` read by :class:`LoopbackResolver`.
ADDRESSES_ENV = "TESTWEB_ADDRESSES"
_LOOPBACK_NET = ipaddress.IPv4Network("127.0.0.0/8")

def is_loopback(address: str) -> bool:
    """Whether ``address`` is an IPv4 address in 127.0.0.0/8."""
    try:
        return ipaddress.IPv4Address(address) in _LOOPBACK_NET
    except ValueError:
        return False


def parse_addresses(text: str | None) -> dict[str, str]:
    """Parse a ``TESTWEB_ADDRESSES`` JSON object; every address must be loopback."""
    if not text:
        return {}
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"{ADDRESSES_ENV} must be a JSON object")
    addresses = {str(k).lower().rstrip("."): str(v) for k, v in data.items()}
    for name, address in addresses.items():
        if not is_loopback(address):
            raise ValueError(f"{ADDRESSES_ENV}: {name} -> {address} is not in 127.0.0.0/8")
    return addresses


def loopback_address(name: str, addresses: Mapping[str, str] | None = None) -> str | None:
    """The address :class:`LoopbackResolver` answers for ``name`` without a lookup.

    A name in ``addresses`` gets its address; any other ``*.test`` name and
    ``localhost`` get 127.0.0.1; a loopback IP literal is itself. ``None`` means: not
    answerable here — a non-loopback IP literal (refused) or another name (looked up,
    and refused unless the answer is in 127.0.0.0/8).
    """
    name = name.lower().rstrip(".")
    if addresses and name in addresses:
        address = addresses[name]
        if not is_loopback(address):
            raise ValueError(f"{name} -> {address} is not in 127.0.0.0/8")
        return address
    if name == "test" or name.endswith(".test") or name == "localhost":
        return "127.0.0.1"
    if is_loopback(name):
        return name
    return None


class LoopbackResolver(GuardedResolver):
    """Scrapy DNS resolver that keeps every connection on this machine.

    ``*.test`` names and ``localhost`` resolve to 127.0.0.1 (or their
    ``TESTWEB_ADDRESSES`` entry) at once; loopback IP literals are themselves; any other
    name or literal fails with ``DNSLookupError``, with no query sent. Set
    ``TWISTED_DNS_RESOLVER = "testweb.LoopbackResolver"`` with ``tests/`` importable.
    It is the crawler's :class:`~crawler.net.resolver.GuardedResolver` otherwise: the
    address guard and the DNS cache apply as in a real crawl. It only guards
    Twisted-based download handlers (the default HTTP/1.1 one).
    """

    def __init__(self, reactor: Any, *args: Any, addresses: Mapping[str, str] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(reactor, *args, **kwargs)
        if addresses is None:
            addresses = parse_addresses(os.environ.get(ADDRESSES_ENV))
        self.addresses_by_name: dict[str, str] = dict(addresses)

    def addresses(self, host: str, port: int | None = None) -> defer.Deferred[list[str]]:
        literal = parse_host(host)  # every spelling: 0x0a000001 is 10.0.0.1
        # The guard's refusal, with its reason, comes first; then the test web's own.
        if (literal is not None and not is_loopback(str(literal))
                and self.policy.check(host, literal, port) is None):
            return defer.fail(DNSLookupError(f"testweb refuses non-loopback address {host}"))
        return super().addresses(host, port)

    def _query(self, name: str) -> defer.Deferred[tuple[list[str], float]]:
        try:
            address = loopback_address(name, self.addresses_by_name)
        except ValueError as exc:
            return defer.fail(DNSLookupError(str(exc)))
        if address is None:
            return defer.fail(DNSLookupError(f"testweb refuses {name}: not a test name"))
        return defer.succeed(([address], 300.0))
