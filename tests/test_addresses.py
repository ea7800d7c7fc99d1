"""The address guard's rules (crawler.net.addresses), and the DNS cache's, without I/O."""

from __future__ import annotations

import ipaddress

import pytest

from crawler.net.addresses import AddressPolicy, canonical_host, parse_host, refusal_reason
from crawler.net.dnscache import DnsCache


@pytest.mark.parametrize(
    "spelling",
    [
        "127.0.0.1",
        "2130706433",
        "0x7f000001",
        "0X7F000001",
        "0177.0.0.1",
        "0177.0.0.01",
        "127.1",
        "127.0.1",
        "0x7f.1",
        "127.0.0.1.",
    ],
)
def test_every_ipv4_spelling_is_read_as_the_address_it_means(spelling):
    assert parse_host(spelling) == ipaddress.ip_address("127.0.0.1")


@pytest.mark.parametrize(
    "spelling, address",
    [
        ("[::1]", "::1"),
        ("::1", "::1"),
        ("[0:0:0:0:0:0:0:1]", "::1"),
        ("[::ffff:127.0.0.1]", "::ffff:7f00:1"),
        ("[fe80::1%eth0]", "fe80::1"),
    ],
)
def test_ipv6_literals_with_or_without_brackets(spelling, address):
    assert parse_host(spelling) == ipaddress.ip_address(address)


@pytest.mark.parametrize(
    "name", ["example.com", "cafe", "a.test", "1.2.3.256", "4294967296", "localhost", "0x", "1.2.3.4.5"]
)
def test_names_are_not_addresses(name):
    assert parse_host(name) is None


def test_canonical_host_is_one_spelling():
    assert canonical_host("0x7f000001") == canonical_host("127.1") == "127.0.0.1"
    assert canonical_host("[::FFFF:127.0.0.1]") == "::ffff:7f00:1"
    assert canonical_host("Example.COM.") == "example.com"


@pytest.mark.parametrize(
    "address, reason",
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("10.0.0.1", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "shared"),
        ("100.127.255.254", "shared"),
        ("169.254.169.254", "metadata"),
        ("fd00:ec2::254", "metadata"),
        ("169.254.1.1", "link_local"),
        ("fe80::1", "link_local"),
        ("fc00::1", "unique_local"),
        ("fd12:3456::1", "unique_local"),
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "unspecified"),
        ("::", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("239.1.1.1", "multicast"),
        ("ff02::1", "multicast"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "reserved"),
        ("192.0.2.1", "reserved"),
        ("198.18.0.1", "reserved"),
        ("2001:db8::1", "reserved"),
        # IPv6 forms that carry an IPv4 address are judged by it
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.1.2.3", "private"),
        ("::ffff:169.254.169.254", "metadata"),
        ("::127.0.0.1", "loopback"),
        ("::10.0.0.1", "private"),
        ("64:ff9b::7f00:1", "loopback"),
        ("64:ff9b::a00:1", "private"),  # NAT64, which ipaddress calls global
        ("2002:7f00:1::", "loopback"),
        ("2002:c0a8:101::", "private"),  # 6to4
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"),  # Teredo, client 127.0.0.1 (obfuscated)
    ],
)
def test_non_public_addresses_are_refused_with_their_reason(address, reason):
    assert refusal_reason(ipaddress.ip_address(address)) == reason


@pytest.mark.parametrize(
    "address", ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "::ffff:93.184.216.34", "64:ff9b::5db8:d822"]
)
def test_public_addresses_pass(address):
    assert refusal_reason(ipaddress.ip_address(address)) is None


def test_policy_allows_named_hosts_and_networks_and_nothing_else():
    policy = AddressPolicy(allow=["10.0.0.0/8", "intranet.example", " ", "127.0.0.5"])
    assert policy.check("wiki.corp", "10.1.2.3") is None
    assert policy.check("intranet.example", "192.168.1.1") is None  # a name allowed whatever its address
    assert policy.check("x.example", "127.0.0.5") is None
    assert policy.check("x.example", "127.0.0.6") == "loopback"
    assert policy.check("x.example", "::ffff:10.0.0.1") == "private"  # the mapped form is not in 10/8 as IPv6
    policy.allow_host("Seed.Example")
    assert policy.check("seed.example.", "127.0.0.1") is None
    assert policy.check("0x7f000001", "127.0.0.1") == "loopback"


def test_a_seed_given_by_address_is_allowed_in_any_spelling():
    policy = AddressPolicy()
    policy.allow_host("127.0.0.1")
    assert policy.check("2130706433", "127.0.0.1") is None
    assert policy.check("127.0.0.2", "127.0.0.2") == "loopback"


def test_a_disabled_policy_allows_everything():
    assert AddressPolicy(enabled=False).check("x", "127.0.0.1") is None


# --- the DNS cache, on a fake clock ------------------------------------------------------


def test_answers_hold_for_their_ttl_floored_and_capped():
    cache = DnsCache(10, min_ttl=60, max_ttl=3600, negative_ttl=30)
    assert cache.put("short.example", ["192.0.2.1"], ttl=0, now=0).expires == 60
    assert cache.put("long.example", ["192.0.2.2"], ttl=86400, now=0).expires == 3600
    assert cache.put("mid.example", ["192.0.2.3"], ttl=300, now=0).expires == 300
    assert cache.get("short.example", 59.9).addresses == ("192.0.2.1",)
    assert cache.get("short.example", 60) is None


def test_failures_hold_for_the_negative_ttl():
    cache = DnsCache(10, min_ttl=60, max_ttl=3600, negative_ttl=30)
    cache.put_failure("gone.example", "NXDOMAIN", now=100)
    assert cache.get("gone.example", 129).error == "NXDOMAIN"
    assert cache.get("gone.example", 130) is None


def test_the_cache_is_bounded_least_recently_used_first():
    cache = DnsCache(2, min_ttl=60, max_ttl=60, negative_ttl=60)
    cache.put("a", ["192.0.2.1"], 60, 0)
    cache.put("b", ["192.0.2.2"], 60, 0)
    cache.get("a", 1)
    cache.put("c", ["192.0.2.3"], 60, 1)
    assert len(cache) == 2 and cache.get("b", 2) is None and cache.get("a", 2) is not None
    assert len(DnsCache(0, 1, 1, 1)) == 0


def test_a_seed_origin_allows_its_own_port_only():
    policy = AddressPolicy()
    policy.allow_origin("127.0.0.1", 8080)
    assert policy.check("127.0.0.1", "127.0.0.1", 8080) is None
    assert policy.check("127.0.0.1", "127.0.0.1", 6080) == "loopback"
    assert policy.check("2130706433", "127.0.0.1", 8080) is None  # one host in any spelling
    # A lookup no connection follows (the per-IP politeness key) names no port.
    assert policy.check("127.0.0.1", "127.0.0.1") is None
