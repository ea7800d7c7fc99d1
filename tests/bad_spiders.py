"""A spider for tests that yields requests the frontier cannot store: a callback that is
not a method of the spider, and meta that JSON cannot hold."""

import datetime

import scrapy


class BadRequestsSpider(scrapy.Spider):
    name = "badrequests"

    def __init__(self, seed: str = "", **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [seed]

    def parse(self, response):
        yield {"url": response.url}
        yield scrapy.Request(response.urljoin("/p/1.html"), callback=lambda r: None)
        yield scrapy.Request(response.urljoin("/p/2.html"), meta={"when": datetime.datetime.now()})
        yield scrapy.Request(response.urljoin("/p/3.html"), callback=self.parse_leaf)

    def parse_leaf(self, response):
        yield {"url": response.url}
