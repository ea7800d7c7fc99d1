"""Which addresses a crawl may connect to: the address guard's rules, no I/O.

A host is first read as the address it spells, however it is spelled
(:func:`parse_host`), then an address is refused when it is not on the public
internet (:func:`refusal_reason`), after unwrapping the IPv6 forms that carry an IPv4
address. :class:`AddressPolicy` adds what the operator allows: the seeds' own hosts and
``NETWORK_ALLOW`` (networks and host names).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable

__all__ = ["AddressPolicy", "canonical_host", "parse_host", "refusal_reason"]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# The spellings inet_aton reads besides dotted quads: decimal, hex, octal, short dotted.
_LEGACY_IPV4 = re.compile(r"(0[xX][0-9a-fA-F]*|[0-9]+)(\.(0[xX][0-9a-fA-F]*|[0-9]+)){0,3}")
# Cloud metadata services: link-local and unique-local, named apart for the operator.
_METADATA = {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")  # "this host": Linux connects 0.x to itself
_PRIVATE = [ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")]
_SHARED = ipaddress.ip_network("100.64.0.0/10")  # RFC 6598, carrier-grade NAT
_UNIQUE_LOCAL = ipaddress.ip_network("fc00::/7")


def parse_host(host: str) -> Address | None:
    """The IP address a URL host spells, or None for a name.

    Dotted quads and IPv6 (with or without brackets) as :mod:`ipaddress` reads them,
    and the legacy IPv4 spellings that browsers and libc's ``inet_aton`` accept and
    connect to: ``2130706433``, ``0x7f000001``, ``0177.0.0.1``, ``127.1``. Those are
    hand-matched because :mod:`ipaddress` rejects them; ``inet_aton`` decodes them.
    """
    text = host.strip().rstrip(".")
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    try:
        return ipaddress.ip_address(text.partition("%")[0] if ":" in text else text)
    except ValueError:
        pass
    if _LEGACY_IPV4.fullmatch(text):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(text))
        except OSError:  # a number over 32 bits, or an octet over 255
            return None
    return None


def canonical_host(host: str) -> str:
    """A host as the guard compares it: lower case, no trailing dot, an address in its
    one standard spelling (``0x7f000001`` and ``127.1`` are ``127.0.0.1``)."""
    address = parse_host(host)
    return str(address) if address is not None else host.strip().lower().rstrip(".")


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one stands for: mapped, compatible, 6to4, Teredo, NAT64.
    (``ipaddress`` calls 64:ff9b::/96 global, so it is unwrapped here.)"""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if int(address) >> 32 == 0 and int(address) > 1:  # IPv4-compatible ::a.b.c.d (deprecated)
        return ipaddress.IPv4Address(int(address))
    return None


def refusal_reason(address: Address) -> str | None:
    """Why the guard refuses ``address`` (``loopback``, ``private``, ``shared``,
    ``link_local``, ``metadata``, ``unique_local``, ``unspecified``, ``multicast``,
    ``reserved``), or None for a public address."""
    if isinstance(address, ipaddress.IPv6Address):
        inner = _embedded_ipv4(address)
        if inner is not None:
            return refusal_reason(inner)
    if address in _METADATA:
        return "metadata"
    if address.is_unspecified or (address.version == 4 and address in _THIS_NETWORK):
        return "unspecified"
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link_local"
    if address.version == 4 and any(address in n for n in _PRIVATE):
        return "private"
    if address.version == 4 and address in _SHARED:
        return "shared"
    if address.version == 6 and address in _UNIQUE_LOCAL:
        return "unique_local"
    if address.is_multicast:  # ipaddress calls some of 224/4 global: checked before is_global
        return "multicast"
    if address.is_reserved or not address.is_global:
        return "reserved"
    return None


class AddressPolicy:
    """The guard's decision for a host and the address it resolved to.

    ``enabled`` False allows everything. Allowed whatever their address: hosts named
    in ``allow`` or added with :meth:`allow_host` (a configured proxy), on any port; the
    seeds' origins added with :meth:`allow_origin`, on their own port only (a seed at
    ``127.0.0.1:8080`` does not open the operator's other services on that host); and
    addresses in the networks of ``allow``. Entries of ``allow`` that parse as a network
    (a CIDR or one address, in any spelling :func:`parse_host` reads) are networks;
    others are host names, but one with a ``/`` is a ValueError.
    """

    def __init__(self, enabled: bool = True, allow: Iterable[str] = ()) -> None:
        self.enabled = enabled
        self.networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        self.hosts: set[str] = set()
        self.origins: set[tuple[str, int]] = set()  # (canonical host, port) of the seeds
        for entry in allow:
            entry = entry.strip()
            if not entry:
                continue
            try:
                self.networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                if "/" in entry:  # no host name has one: a network with a typo
                    raise ValueError(f"{entry!r} is not a network (10.0.0.0/8) nor a host name") from None
                self.allow_host(entry)

    def allow_host(self, host: str) -> None:
        """Allow ``host`` (a configured proxy) on any port, whatever it resolves to."""
        self.hosts.add(canonical_host(host))

    def allow_origin(self, host: str, port: int) -> None:
        """Allow ``host`` on ``port`` (a seed's origin: a scheme's default port when its URL
        names none), whatever it resolves to. The scheme is not kept: a connection is a
        host and a port, and no other scheme reaches another service through them."""
        self.origins.add((canonical_host(host), port))

    def allows_host(self, host: str, port: int | None = None) -> bool:
        """Whether ``host`` on ``port`` is allowed by name: its address need not be checked.
        With no port (a lookup that no connection follows, as the per-IP politeness key's),
        a seed's host is allowed on whichever port it was seeded."""
        if not self.enabled:
            return True
        name = canonical_host(host)
        if name in self.hosts or (name, port) in self.origins:
            return True
        return port is None and any(seed == name for seed, _ in self.origins)

    def check(self, host: str, address: Address | str, port: int | None = None) -> str | None:
        """None if a connection to ``address`` (on ``port``) for ``host`` may go ahead, else
        the reason."""
        if self.allows_host(host, port):
            return None
        if isinstance(address, str):
            address = ipaddress.ip_address(address)
        if any(address in network for network in self.networks):
            return None
        return refusal_reason(address)
