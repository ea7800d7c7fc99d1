"""What keeps other web pages and other hosts out of the crawl service: its token, the
``Host`` and ``Origin`` checks against DNS rebinding and cross-site requests, and the
address guard on seeds. Pure rules apart from the token file and the seeds' DNS lookup."""

from __future__ import annotations

import ipaddress
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import dns.exception
import dns.resolver

from crawler import defaults
from crawler.net.addresses import AddressPolicy, canonical_host, parse_host
from crawler.net.resolver import nameserver
from crawler.service.spec import BadRequest

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

TOKEN_FILE = "token"


def is_loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def service_token(setting: str | None, service_dir: Path) -> tuple[str, bool]:
    """(token, made now) for the ``SERVE_TOKEN`` setting: its value when set (``""``: no
    token), else the one kept in ``service_dir/token`` (mode 0600), made at the first start."""
    if setting is not None:
        return setting, False
    path = service_dir / TOKEN_FILE
    try:
        return path.read_text(encoding="ascii").strip(), False
    except FileNotFoundError:
        pass
    service_dir.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(token + "\n")
    return token, True


class Gate:
    """Which ``Host`` and ``Origin`` headers name this service: its bind address,
    ``localhost`` and ``allowed_hosts``, on its port (an ``Origin`` must also be http)."""

    def __init__(self, bind: str, port: int, allowed_hosts: list[str]) -> None:
        self.port = port
        names = {canonical_host(bind), "localhost", *(canonical_host(h) for h in allowed_hosts if h.strip())}
        if is_loopback(bind):
            names |= {"127.0.0.1", "::1"}
        self.names = names

    def host_allowed(self, host_header: str | None) -> bool:
        """Whether a request's ``Host`` names the service (a rebinding page's does not)."""
        if not host_header:
            return False
        parts = urlsplit("//" + host_header)
        try:
            port = parts.port
        except ValueError:
            return False
        return canonical_host(parts.hostname or "") in self.names and port in (None, self.port)

    def origin_allowed(self, origin: str | None) -> bool:
        """Whether a browser's ``Origin`` is one of the service's own pages; absent: not a browser's."""
        if origin is None:
            return True
        parts = urlsplit(origin)
        return parts.scheme == "http" and parts.netloc != "" and self.host_allowed(parts.netloc)


def check_seed_addresses(seeds: list[str], policy: AddressPolicy, resolver: dns.resolver.Resolver) -> None:
    """Refuse (``BadRequest``) a seed whose host is, or resolves to, an address the
    address guard refuses (loopback, private, link-local, metadata...), unless the
    service's ``NETWORK_ALLOW`` opens it; also one whose name does not resolve, since a
    crawl then trusts its seeds' hosts whatever they resolve to later."""
    for seed in seeds:
        host = urlsplit(seed).hostname or ""
        if policy.allows_host(host):
            continue
        literal = parse_host(host)
        addresses = [literal] if literal is not None else _resolve(host, seed, resolver)
        reasons = [policy.check(host, address) for address in addresses]
        refused = next((r for r in reasons if r is not None), None)
        if refused is not None:
            raise BadRequest(f"seed {seed!r}: the address guard refuses {host} ({refused}); the service's "
                             "NETWORK_ALLOW setting can open it")


def _resolve(host: str, seed: str, resolver: dns.resolver.Resolver) -> list[str]:
    if host == "localhost" or host.endswith(".localhost"):
        return ["127.0.0.1"]
    found: list[str] = []
    try:
        for kind in ("A", "AAAA"):
            try:
                found += [record.address for record in resolver.resolve(host, kind, search=False)]
            except dns.resolver.NoAnswer:
                continue
    except dns.exception.DNSException as error:
        raise BadRequest(f"seed {seed!r}: {host} does not resolve ({type(error).__name__}), so the "
                         "address guard cannot check it") from None
    if not found:
        raise BadRequest(f"seed {seed!r}: {host} has no address, so the address guard cannot check it")
    return found


def seed_resolver(settings: BaseSettings) -> dns.resolver.Resolver:
    """A resolver for the seeds' check, asking the crawls' nameservers (``DNS_NAMESERVERS``)."""
    servers = settings.getlist("DNS_NAMESERVERS", defaults.DNS_NAMESERVERS)
    try:
        resolver = dns.resolver.Resolver(configure=not servers)
    except dns.resolver.NoResolverConfiguration:
        resolver = dns.resolver.Resolver(configure=False)
    if servers:
        resolver.nameservers = [nameserver(spec) for spec in servers]
    resolver.lifetime = settings.getfloat("DNS_TIMEOUT", defaults.DNS_TIMEOUT)
    return resolver
