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

# The add-on's USER_AGENT names the crawler and its version: set CRAWLER_CONTACT (a URL or
# an e-mail) so sites can reach you; it warns at start while that is unset.

# A broad crawl keeps no session with the sites it visits.
COOKIES_ENABLED = False

LOG_LEVEL = "INFO"
FEED_EXPORT_ENCODING = "utf-8"
