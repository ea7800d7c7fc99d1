"""``GuardedResolver``: Scrapy's ``TWISTED_DNS_RESOLVER`` with record TTLs, negative
caching and the address guard, on dnspython's asynchronous resolver.

Twisted's ``HostnameEndpoint`` (Scrapy's HTTP/1.1 handler) connects only to the
addresses this resolver hands it, for every connection: literal IPs, redirect hops
and retries included. So the guard's check is made on the very addresses connected
to, and a DNS answer that changes between a check and a connection (rebinding) cannot
slip past. The resolver is per process (installed on the reactor once); the add-on
installs it from ``update_pre_crawler_settings``.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import dns.asyncresolver
import dns.exception
import dns.nameserver
import dns.resolver
from scrapy.resolver import HostResolution
from twisted.internet import defer
from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.error import DNSLookupError
from twisted.internet.interfaces import IHostnameResolver, IResolutionReceiver
from zope.interface import implementer

from crawler import defaults
from crawler.net.addresses import AddressPolicy, canonical_host, parse_host
from crawler.net.dnscache import DnsAnswer, DnsCache

if TYPE_CHECKING:
    from scrapy.crawler import CrawlerProcess
    from scrapy.settings import BaseSettings
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)

_installed: GuardedResolver | None = None


def installed() -> GuardedResolver | None:
    """The resolver installed on this process's reactor, if it is ours. The frontier
    takes a host's per-IP politeness key from ``installed().lookup(host)``."""
    return _installed


class AddressRefused(DNSLookupError):
    """The guard refused every address of a host; ``reason`` says why."""

    def __init__(self, host: str, reason: str) -> None:
        super().__init__(f"address guard refused {host}: {reason}")
        self.host = host
        self.reason = reason


def nameserver(spec: str) -> dns.nameserver.Do53Nameserver:
    """``"127.0.0.1"``, ``"127.0.0.1:5353"``, ``"::1"`` or ``"[::1]:5353"`` as a nameserver;
    ValueError for anything else (a host name, a port that is no number or out of range)."""
    spec = spec.strip()
    if spec.startswith("["):
        address, _, port = spec[1:].partition("]:")
        address = address.rstrip("]")
    elif spec.count(":") == 1:
        address, port = spec.split(":")
    else:
        address, port = spec, ""
    try:
        ipaddress.ip_address(address)
        number = int(port or 53)
    except ValueError:
        number = 0
    if not 0 < number < 65536:
        raise ValueError(f"{spec!r} is not an IP address with an optional port (127.0.0.1:5353, [::1]:53)")
    return dns.nameserver.Do53Nameserver(address, number)


_NXDOMAIN = "NXDOMAIN"


class NameMissing(DNSLookupError):
    """DNS said the name does not exist (NXDOMAIN): no wait mends it."""


def _error_kind(error: BaseException) -> str:
    if isinstance(error, dns.resolver.NXDOMAIN):
        return _NXDOMAIN
    if isinstance(error, dns.exception.Timeout):
        return "timeout"
    if isinstance(error, dns.resolver.NoNameservers):
        return "no nameserver answered (SERVFAIL or refused)"
    return str(error) or type(error).__name__


def _is_localhost(name: str) -> bool:
    """RFC 6761 6.3: localhost names are loopback, answered without a query."""
    return name == "localhost" or name.endswith(".localhost")


@implementer(IHostnameResolver)
class GuardedResolver:
    """Resolves A and AAAA records with dnspython, caches them for their TTL (within
    ``DNS_MIN_TTL`` .. ``DNS_MAX_TTL``) and failures for ``DNS_NEGATIVE_TTL``, at most
    ``DNSCACHE_SIZE`` names, asking ``DNS_NAMESERVERS`` (default: the system's), and
    hands a connection only the addresses :class:`AddressPolicy` allows (``NETWORK_GUARD``,
    ``NETWORK_ALLOW``). Needs the asyncio reactor (Scrapy's default)."""

    def __init__(
        self,
        reactor: Any,
        cache: DnsCache | None = None,
        policy: AddressPolicy | None = None,
        nameservers: Sequence[str] = (),
        timeout: float = defaults.DNS_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.reactor = reactor
        self.cache = cache or DnsCache(
            defaults.DNSCACHE_SIZE, defaults.DNS_MIN_TTL, defaults.DNS_MAX_TTL, defaults.DNS_NEGATIVE_TTL
        )
        self.policy = policy or AddressPolicy()
        self.clock = clock
        self._pending: dict[str, list[defer.Deferred[list[str]]]] = {}
        self._dns = self._dns_resolver(list(nameservers), timeout)

    @classmethod
    def from_crawler(cls, crawler: CrawlerProcess, reactor: Any) -> GuardedResolver:
        """``crawler`` is the CrawlerProcess: process-level settings only."""
        s = crawler.settings
        return cls(
            reactor,
            cache_from_settings(s),
            policy_from_settings(s),
            s.getlist("DNS_NAMESERVERS", defaults.DNS_NAMESERVERS),
            s.getfloat("DNS_TIMEOUT", defaults.DNS_TIMEOUT),
        )

    @staticmethod
    def _dns_resolver(nameservers: list[str], timeout: float) -> dns.asyncresolver.Resolver:
        try:
            resolver = dns.asyncresolver.Resolver(configure=not nameservers)
        except dns.resolver.NoResolverConfiguration:
            logger.warning("No DNS nameserver configured (no /etc/resolv.conf): set DNS_NAMESERVERS")
            resolver = dns.asyncresolver.Resolver(configure=False)
        if nameservers:
            resolver.nameservers = [nameserver(spec) for spec in nameservers]
        resolver.lifetime = timeout
        resolver.cache = None  # ours holds the answers, with our TTL rules
        return resolver

    def install_on_reactor(self) -> None:
        global _installed
        self.reactor.installNameResolver(self)
        _installed = self

    # ------------------------------------------------------------ IHostnameResolver

    def resolveHostName(
        self,
        resolutionReceiver: IResolutionReceiver,
        hostName: str,
        portNumber: int = 0,
        addressTypes: Sequence[type] | None = None,
        transportSemantics: str = "TCP",
    ) -> HostResolution:
        resolution = HostResolution(hostName)
        resolutionReceiver.resolutionBegan(resolution)

        def deliver(addresses: list[str]) -> None:
            for text in addresses:
                kind = IPv6Address if ":" in text else IPv4Address
                if addressTypes is None or kind in addressTypes:
                    resolutionReceiver.addressResolved(kind("TCP", text, portNumber))

        def failed(failure: Failure) -> None:
            # HostnameEndpoint turns "no address" into DNSLookupError; the guard
            # middleware reads the reason back from refusal().
            logger.debug("%s: %s", hostName, failure.getErrorMessage())

        d = self.addresses(hostName, portNumber or None)
        d.addCallbacks(deliver, failed)
        d.addBoth(lambda _: resolutionReceiver.resolutionComplete())
        return resolution

    # ------------------------------------------------------------ guarded answers

    def addresses(self, host: str, port: int | None = None) -> defer.Deferred[list[str]]:
        """The addresses a connection to ``host`` (on ``port``) may use; fails with
        :class:`AddressRefused` when the guard allows none, DNSLookupError when the
        name does not resolve."""
        literal = parse_host(host)
        if literal is not None:
            return self._checked(host, [str(literal)], port)
        d = self.lookup(host)
        d.addCallback(lambda addresses: self._checked(host, addresses, port))
        return d

    def _checked(self, host: str, addresses: list[str], port: int | None) -> defer.Deferred[list[str]]:
        allowed = [a for a in addresses if self.policy.check(host, a, port) is None]
        if allowed:
            return defer.succeed(allowed)
        return defer.fail(AddressRefused(host, self.policy.check(host, addresses[0], port) or "refused"))

    def refusal(self, host: str, port: int | None = None) -> str | None:
        """Why the guard refuses ``host`` (on ``port``) on its current answer, or None (not
        refused, or not resolved now)."""
        literal = parse_host(host)
        if literal is not None:
            return self.policy.check(host, literal, port)
        answer = self.cache.get(canonical_host(host), self.clock())
        if answer is None or not answer.addresses:
            return None
        reasons = [self.policy.check(host, a, port) for a in answer.addresses]
        return None if None in reasons else reasons[0]

    def name_missing(self, host: str) -> bool:
        """Whether DNS said ``host`` does not exist (NXDOMAIN), while that answer is cached."""
        answer = self.cache.get(canonical_host(host), self.clock())
        return answer is not None and answer.missing

    def lookup_error(self, host: str) -> str | None:
        """Why ``host`` did not resolve (``NXDOMAIN``, ``timeout``...) while that failure
        is cached, else None: Twisted reports every failed lookup alike."""
        answer = self.cache.get(canonical_host(host), self.clock())
        return answer.error if answer is not None and not answer.addresses else None

    # ------------------------------------------------------------ cached lookups

    def lookup(self, host: str) -> defer.Deferred[list[str]]:
        """``host``'s addresses (A, then AAAA) from the cache or DNS, unguarded; one
        query at a time per name, whoever asks."""
        name = canonical_host(host)
        answer = self.cache.get(name, self.clock())
        if answer is not None:
            return self._result(name, answer)
        waiter: defer.Deferred[list[str]] = defer.Deferred()
        if name in self._pending:
            self._pending[name].append(waiter)
            return waiter
        self._pending[name] = [waiter]
        self._query(name).addCallbacks(self._answered, self._failed,
                                       callbackArgs=(name,), errbackArgs=(name,))
        return waiter

    def _answered(self, result: tuple[list[str], float], name: str) -> None:
        addresses, ttl = result
        self._wake(name, self.cache.put(name, addresses, ttl, self.clock()))

    def _failed(self, failure: Failure, name: str) -> None:
        self._wake(name, self.cache.put_failure(name, failure.getErrorMessage(), self.clock(),
                                                missing=failure.check(NameMissing) is not None))

    def _wake(self, name: str, answer: DnsAnswer) -> None:
        for waiter in self._pending.pop(name, []):
            self._result(name, answer).chainDeferred(waiter)

    @staticmethod
    def _result(name: str, answer: DnsAnswer) -> defer.Deferred[list[str]]:
        if answer.error is not None:
            return defer.fail(DNSLookupError(f"{name}: {answer.error}"))
        return defer.succeed(list(answer.addresses))

    def _query(self, name: str) -> defer.Deferred[tuple[list[str], float]]:
        """One DNS round for ``name``: (addresses, TTL), or a failure."""
        if _is_localhost(name):
            return defer.succeed((["127.0.0.1", "::1"], self.cache.max_ttl))
        # As scrapy.utils.defer.deferred_from_coro does on the asyncio reactor; written out
        # so that a test can drive it on an asyncio loop of its own.
        return defer.Deferred.fromFuture(asyncio.ensure_future(self._ask(name)))

    async def _ask(self, name: str) -> tuple[list[str], float]:
        answers = await asyncio.gather(
            *(
                self._dns.resolve(name, rdtype, search=False, raise_on_no_answer=False)
                for rdtype in ("A", "AAAA")
            ),
            return_exceptions=True,
        )
        addresses: list[str] = []
        ttls: list[float] = []
        errors: list[BaseException] = []
        for answer in answers:
            if isinstance(answer, BaseException):
                errors.append(answer)
            elif answer.rrset:
                addresses += [record.address for record in answer.rrset]
                ttls.append(answer.chaining_result.minimum_ttl)
        if not addresses:
            if errors and isinstance(errors[0], dns.resolver.NXDOMAIN):
                raise NameMissing(_NXDOMAIN)
            raise DNSLookupError(_error_kind(errors[0]) if errors else "no address")
        return addresses, min(ttls)


def cache_from_settings(s: BaseSettings) -> DnsCache:
    size = s.getint("DNSCACHE_SIZE", defaults.DNSCACHE_SIZE) if s.getbool("DNSCACHE_ENABLED", True) else 0
    return DnsCache(
        size,
        s.getfloat("DNS_MIN_TTL", defaults.DNS_MIN_TTL),
        s.getfloat("DNS_MAX_TTL", defaults.DNS_MAX_TTL),
        s.getfloat("DNS_NEGATIVE_TTL", defaults.DNS_NEGATIVE_TTL),
    )


def policy_from_settings(s: BaseSettings) -> AddressPolicy:
    return AddressPolicy(
        s.getbool("NETWORK_GUARD", defaults.NETWORK_GUARD), s.getlist("NETWORK_ALLOW", defaults.NETWORK_ALLOW)
    )
