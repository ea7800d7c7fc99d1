"""Sizing a crawl from its target: the arithmetic behind ``scrapy plan``."""
