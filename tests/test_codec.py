"""Requests stored by the frontier: JSON, compact, never pickles."""

from __future__ import annotations

import json

from scrapy import Request, Spider

from crawler.scheduling.codec import request_from_json, request_to_json


class Site(Spider):
    name = "site"

    def parse(self, response):
        pass


def test_a_plain_get_is_its_url_callback_and_meta():
    spider = Site()
    text, dropped = request_to_json(Request("http://a.test/x", callback=spider.parse,
                                            meta={"depth": 2}), spider)
    assert json.loads(text) == {"url": "http://a.test/x", "callback": "parse", "meta": {"depth": 2}}
    assert dropped == []
    again = request_from_json(text, spider)
    assert (again.url, again.callback, again.meta) == ("http://a.test/x", spider.parse, {"depth": 2})


def test_everything_else_round_trips_and_unserialisable_meta_is_dropped():
    request = Request("http://a.test/form", method="POST", body=b"a=1\xff", headers={"X-A": "b"},
                      priority=-3, dont_filter=True, meta={"ok": [1, "two"], "bad": object()},
                      cb_kwargs={"page": 4})
    text, dropped = request_to_json(request, None)
    assert dropped == ["bad"]
    again = request_from_json(text, None)
    assert again.method == "POST" and again.body == b"a=1\xff"
    assert again.headers.getlist("X-A") == [b"b"]
    assert (again.priority, again.dont_filter, again.meta, again.cb_kwargs) == (
        -3, True, {"ok": [1, "two"]}, {"page": 4})
