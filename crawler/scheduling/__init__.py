"""The Scrapy side of the frontier: the scheduler, its typed client and its helpers."""
