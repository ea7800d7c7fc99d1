"""This repository's Scrapy project settings (``scrapy.cfg`` points here).

The crawler itself is switched on by its add-on, which applies every default of
``crawler/defaults.py``; only what this project adds to that is set here. No component
imports this module.
"""

BOT_NAME = "politecrawler"
SPIDER_MODULES = ["crawler.spiders"]
NEWSPIDER_MODULE = "crawler.spiders"
# `scrapy crawl` that reports bad seeds plainly, and the crawler's own commands.
COMMANDS_MODULE = "crawler.commands"

ADDONS = {"crawler.addon.PoliteCrawler": 0}

# Identify the crawler; operators should add their contact URL or e-mail, e.g.
# "politecrawler/0.1 (+https://example.org/crawler.html)". Its first word is the
# product token robots.txt groups are matched against.
USER_AGENT = "politecrawler/0.1"
# A broad crawl keeps no session with the sites it visits.
COOKIES_ENABLED = False

LOG_LEVEL = "INFO"
FEED_EXPORT_ENCODING = "utf-8"
