"""Tests of the test web's loopback resolver (tests/testweb_loopback.py): which names it answers,
and a Scrapy crawl in a subprocess that reaches the ``.test`` hosts and nothing else."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from testweb import LoopbackResolver, Site, is_loopback, loopback_address, parse_addresses

from crawler.net.addresses import AddressPolicy


def test_loopback_address_decisions() -> None:
    assert loopback_address("a.test") == "127.0.0.1"
    assert loopback_address("A.Test.") == "127.0.0.1"
    assert loopback_address("localhost") == "127.0.0.1"
    assert loopback_address("b.test", {"b.test": "127.0.0.2"}) == "127.0.0.2"
    assert loopback_address("127.0.0.5") == "127.0.0.5"
    assert loopback_address("example.com") is None  # needs a lookup, then checked
    assert loopback_address("10.0.0.1") is None
    with pytest.raises(ValueError):
        loopback_address("b.test", {"b.test": "192.168.0.1"})
    assert is_loopback("127.255.0.1")
    assert not is_loopback("128.0.0.1")
    assert not is_loopback("::1")
    assert not is_loopback("a.test")
    assert parse_addresses('{"B.test": "127.0.0.2"}') == {"b.test": "127.0.0.2"}
    assert parse_addresses(None) == {}
    with pytest.raises(ValueError):
        parse_addresses('{"b.test": "8.8.8.8"}')


def _result(deferred: Any) -> Any:
    box: list[Any] = []
    deferred.addBoth(box.append)
    assert box, "deferred did not fire synchronously"
    return box[0]


def test_loopback_resolver_without_reactor(monkeypatch) -> None:
    from twisted.internet.error import DNSLookupError
    from twisted.python.failure import Failure

    monkeypatch.setenv("TESTWEB_ADDRESSES", '{"b.test": "127.0.0.2"}')
    resolver = LoopbackResolver(object(), policy=AddressPolicy(allow=["127.0.0.0/8"]))
    assert _result(resolver.addresses("a.test")) == ["127.0.0.1"]
    assert _result(resolver.addresses("b.test")) == ["127.0.0.2"]
    assert _result(resolver.addresses("127.0.0.9")) == ["127.0.0.9"]
    for name in ("10.1.2.3", "0x0a010203", "8.8.8.8", "example.com"):
        failure = _result(resolver.addresses(name))
        assert isinstance(failure, Failure)
        assert failure.check(DNSLookupError)


_PROBE = """
import json, sys
import scrapy
from scrapy.crawler import CrawlerProcess

port = int(sys.argv[1])
out = []

class Probe(scrapy.Spider):
    name = "probe"

    async def start(self):
        for url in (f"http://a.test:{port}/", f"http://b.test:{port}/p/1.html",
                    "http://10.255.255.1/"):
            yield scrapy.Request(url, errback=self.failed, dont_filter=True)

    def parse(self, response):
        out.append([response.url, response.status])

    def failed(self, failure):
        out.append([failure.request.url, type(failure.value).__name__])

process = CrawlerProcess({
    "TWISTED_DNS_RESOLVER": "testweb.LoopbackResolver", "LOG_LEVEL": "ERROR",
    "NETWORK_ALLOW": ["127.0.0.0/8"],  # the test web's hosts, loopback all
    "ROBOTSTXT_OBEY": False, "RETRY_ENABLED": False, "TELNETCONSOLE_ENABLED": False,
})
process.crawl(Probe)
process.start()
print(json.dumps(sorted(out)))
"""


def test_scrapy_subprocess_uses_loopback_resolver(web_factory, tmp_path) -> None:
    web = web_factory([Site("a.test", pages=3), Site("b.test", pages=3)])
    script = tmp_path / "probe.py"
    script.write_text(_PROBE)
    result = subprocess.run(
        [sys.executable, str(script), str(web.port)],
        env=web.subprocess_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    out = dict(json.loads(result.stdout.strip().splitlines()[-1]))
    assert out[web.url("a.test")] == 200
    assert out[web.page_url("b.test", 1)] == 200
    assert out["http://10.255.255.1/"] != 200  # refused, never sent off the machine
    assert {r.host for r in web.log} == {"a.test", "b.test"}
