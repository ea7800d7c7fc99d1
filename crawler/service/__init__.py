"""The crawl service behind ``scrapy serve``: a registry of crawls, the back ends that run
them (child processes or scrapyd), their counts from the frontier, the HTTP API, the
dashboard and the Prometheus metrics."""
