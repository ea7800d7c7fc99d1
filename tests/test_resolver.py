"""GuardedResolver against a real DNS server (dnsmasq on a loopback port): record TTLs,
their floor and cap, negative caching, A and AAAA, and the guard on changing answers.

The resolver runs on an asyncio loop of the test's own; its clock is a fake one, so a
TTL passes without waiting, while the records really change in dnsmasq."""

from __future__ import annotations

import asyncio

import pytest
from dns_server import DnsServer
from twisted.internet import defer
from twisted.internet.error import DNSLookupError

from crawler.net.addresses import AddressPolicy
from crawler.net.dnscache import DnsCache
from crawler.net.resolver import AddressRefused, GuardedResolver, nameserver


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield loop
    loop.close()
    asyncio.set_event_loop(None)


@pytest.fixture
def server(tmp_path):
    server = DnsServer(tmp_path, ttl=120).start()
    yield server
    server.stop()


@pytest.fixture
def clock():
    return Clock()


def make_resolver(server: DnsServer, clock: Clock, **kwargs) -> GuardedResolver:
    cache = DnsCache(kwargs.pop("size", 100), min_ttl=60, max_ttl=3600, negative_ttl=60)
    return GuardedResolver(
        None, cache, kwargs.pop("policy", AddressPolicy()), [server.nameserver], timeout=2, clock=clock
    )


def run(loop, deferred: defer.Deferred):
    return loop.run_until_complete(deferred.asFuture(loop))


def test_answers_are_kept_for_their_ttl_then_asked_again(loop, server, clock):
    server.set_records({"site.example": ["192.0.2.10", "2001:db8::10"]})
    resolver = make_resolver(server, clock)
    assert run(loop, resolver.lookup("site.example")) == ["192.0.2.10", "2001:db8::10"]  # A and AAAA
    server.set_records({"site.example": ["192.0.2.20"]})
    clock.now += 119
    assert run(loop, resolver.lookup("site.example")) == ["192.0.2.10", "2001:db8::10"]  # TTL 120 holds
    clock.now += 2
    assert run(loop, resolver.lookup("Site.Example.")) == ["192.0.2.20"]  # expired: asked again


def test_a_short_ttl_is_floored_and_a_long_one_capped(loop, server, clock):
    server.set_records({"site.example": ["192.0.2.10"]})
    server.restart(ttl=5)
    resolver = make_resolver(server, clock)
    assert server.ask("site.example") == (["192.0.2.10"], 5)
    run(loop, resolver.lookup("site.example"))
    server.set_records({"site.example": ["192.0.2.20"]})
    clock.now += 59  # TTL 5 is held for DNS_MIN_TTL = 60
    assert run(loop, resolver.lookup("site.example")) == ["192.0.2.10"]
    clock.now += 2
    assert run(loop, resolver.lookup("site.example")) == ["192.0.2.20"]
    server.restart(ttl=86400)
    server.set_records({"site.example": ["192.0.2.30"]})
    clock.now += 61
    assert run(loop, resolver.lookup("site.example")) == ["192.0.2.30"]
    server.set_records({"site.example": ["192.0.2.40"]})
    clock.now += 3599  # TTL 86400 is held for DNS_MAX_TTL = 3600 at most
    assert run(loop, resolver.lookup("site.example")) == ["192.0.2.30"]
    clock.now += 2
    assert run(loop, resolver.lookup("site.example")) == ["192.0.2.40"]


def test_a_failed_name_is_not_asked_again_within_the_negative_ttl(loop, server, clock):
    resolver = make_resolver(server, clock)
    with pytest.raises(DNSLookupError, match="NXDOMAIN"):
        run(loop, resolver.lookup("new.example"))
    server.set_records({"new.example": ["192.0.2.50"]})
    clock.now += 59
    with pytest.raises(DNSLookupError, match="NXDOMAIN"):  # the failure is cached
        run(loop, resolver.lookup("new.example"))
    clock.now += 2
    assert run(loop, resolver.lookup("new.example")) == ["192.0.2.50"]


def test_concurrent_lookups_of_a_name_share_one_query(loop, server, clock):
    server.set_records({"site.example": ["192.0.2.10"]})
    resolver = make_resolver(server, clock)
    asked = []
    query = resolver._query
    resolver._query = lambda name: asked.append(name) or query(name)
    results = run(loop, defer.gatherResults([resolver.lookup("site.example") for _ in range(20)]))
    assert results == [["192.0.2.10"]] * 20 and asked == ["site.example"]


def test_the_guard_checks_each_answer_so_a_rebound_name_is_refused(loop, server, clock):
    # A public address (never connected to: this test only resolves).
    server.set_records({"flip.example": ["93.184.216.60"], "inside.example": ["10.1.2.3", "127.0.0.1"]})
    resolver = make_resolver(server, clock)
    assert run(loop, resolver.addresses("flip.example")) == ["93.184.216.60"]
    server.set_records(
        {"flip.example": ["127.0.0.1"], "inside.example": ["10.1.2.3", "127.0.0.1"]}
    )  # rebinding
    clock.now += 121
    with pytest.raises(AddressRefused) as refused:
        run(loop, resolver.addresses("flip.example"))
    assert refused.value.reason == "loopback" and resolver.refusal("flip.example") == "loopback"
    with pytest.raises(AddressRefused):
        run(loop, resolver.addresses("inside.example"))
    resolver.policy = AddressPolicy(allow=["10.0.0.0/8"])
    assert run(loop, resolver.addresses("inside.example")) == ["10.1.2.3"]  # only the allowed address


def test_literal_spellings_are_checked_without_a_query(loop, server, clock):
    resolver = make_resolver(server, clock)
    for spelling in ("2130706433", "0x7f000001", "127.1", "[::ffff:127.0.0.1]", "::1"):
        with pytest.raises(AddressRefused, match="loopback"):
            run(loop, resolver.addresses(spelling))
    with pytest.raises(AddressRefused, match="reserved"):
        run(loop, resolver.addresses("192.0.2.1"))  # TEST-NET-1 is not on the internet either
    assert run(loop, resolver.addresses("0x5db8d822")) == ["93.184.216.34"]


def test_localhost_is_loopback_without_a_query(loop, server, clock):
    resolver = make_resolver(server, clock)
    assert run(loop, resolver.lookup("localhost")) == ["127.0.0.1", "::1"]
    with pytest.raises(AddressRefused, match="loopback"):
        run(loop, resolver.addresses("app.localhost"))


@pytest.mark.parametrize(
    "spec, address, port",
    [
        ("127.0.0.1", "127.0.0.1", 53),
        ("127.0.0.1:5353", "127.0.0.1", 5353),
        ("::1", "::1", 53),
        ("[::1]:5353", "::1", 5353),
    ],
)
def test_dns_nameservers_are_read_with_their_ports(spec, address, port):
    server = nameserver(spec)
    assert (server.address, server.port) == (address, port)


def test_a_crawl_through_the_resolver_dead_letters_a_name_that_does_not_exist(crawl, server, tmp_path):
    """End to end: the crawl asks dnsmasq; an NXDOMAIN name is confirmed once, past the
    negative TTL, then its URLs are dead letters; the name that exists is all crawled."""
    import json

    from test_retries import deadletters
    from testweb import Site, TestWeb

    server.set_records({"fine.example": ["127.0.0.1"]})
    with TestWeb([Site("fine.example", pages=3)]) as web:
        seeds = [web.url("fine.example"), web.url("gone.example"), web.url("gone.example", "/second")]
        (tmp_path / "seeds.txt").write_text("\n".join(seeds) + "\n")
        result = crawl(web, tmp_path, f"seeds={tmp_path / 'seeds.txt'}", CRAWL_ID="names",
                       TWISTED_DNS_RESOLVER="crawler.net.resolver.GuardedResolver",
                       DNS_NAMESERVERS=server.nameserver, DNS_NEGATIVE_TTL=1, FRONTIER_RETRY_DELAYS="1,60",
                       ROBOTSTXT_OBEY=False, NETWORK_ALLOW="127.0.0.0/8", timeout=60)
        letters = [json.loads(line) for line in deadletters(web, tmp_path, "names").stdout.splitlines()]
    assert result.returncode == 0, result.log[-3000:]
    assert len(result.records) == 3
    assert sorted(letter["url"] for letter in letters) == sorted(seeds[1:])
    assert all("NXDOMAIN" in letter["error"] for letter in letters), letters
    assert max(letter["attempts"] for letter in letters) <= 2  # confirmed once, not the whole chain
