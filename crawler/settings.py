"""Every setting of the crawler with its default, in one place.

This module is the Scrapy project settings module of this package (``scrapy.cfg``
points here), and every component of ours falls back to these values when a project
of its own does not set them (``settings.get(NAME, defaults.NAME)``). Each knob is
documented in ``docs/settings.md``.
"""

BOT_NAME = "politecrawler"
SPIDER_MODULES = ["crawler.spiders"]
NEWSPIDER_MODULE = "crawler.spiders"
# `scrapy crawl` that reports bad seeds plainly, before any fetch.
COMMANDS_MODULE = "crawler.commands"

# Identify the crawler; operators should add their contact URL or e-mail, e.g.
# "politecrawler/0.1 (+https://example.org/crawler.html)". Its first word is the
# product token robots.txt groups are matched against.
USER_AGENT = "politecrawler/0.1"

# --- Safety: no control ports -------------------------------------------------
# RemoteControl (Scrapy 2.19) opens an HTTP port that runs code sent to it.
REMOTE_CONTROL_ENABLED = False
TELNETCONSOLE_ENABLED = False

# --- Politeness: the frontier owns it, so Scrapy's own delays are off ------------
SCHEDULER = "crawler.frontier.scheduler.FrontierScheduler"
ROBOTSTXT_OBEY = True
CONCURRENT_REQUESTS = 16
# The frontier never lets two fetches to one host overlap; a per-domain limit below
# CONCURRENT_REQUESTS would only queue requests inside the downloader.
CONCURRENT_REQUESTS_PER_DOMAIN = 16
DOWNLOAD_DELAY = 0
COOKIES_ENABLED = False

# --- URL policy ----------------------------------------------------------------
# Query parameters dropped by normalisation (full match of the name, any case).
# A policy that grows from observed traps: dropping a parameter that changes the
# page loses content.
URL_DROP_PARAMS = r"^(utm_[a-z]+|fbclid|gclid|sessionid|phpsessid|jsessionid)$"
# Request fingerprints: 8-byte BLAKE2b of the normalised URL (GET without body).
REQUEST_FINGERPRINTER_CLASS = "crawler.urls.fingerprinter.UrlFingerprinter"

# --- Trap rules, first layer ----------------------------------------------------
DEPTH_LIMIT = 20
URLLENGTH_LIMIT = 2048
# Drop a URL whose path repeats a run of segments this many times in a row.
TRAP_SEGMENT_REPEATS = 3

# --- Link following --------------------------------------------------------------
# "host" (the seeds' hosts, www. or not), "domain" (their registered domains) or "all".
CRAWL_SCOPE = "host"
# Stop after this many pages are stored (0: no cap).
CRAWL_MAX_PAGES = 0
# Raw links remembered per worker to skip links already handled without parsing
# them; two generations of this size are kept, so memory stays bounded.
LINK_CACHE_SIZE = 500_000

# --- Fetching ------------------------------------------------------------------
# Content types kept; others are stopped once their headers arrive.
HTML_CONTENT_TYPES = ["text/html", "application/xhtml+xml"]
DOWNLOAD_MAXSIZE = 10 * 1024 * 1024
DOWNLOAD_WARNSIZE = 0

# --- Content seen ------------------------------------------------------------------
# Near copies: simhash (64-bit, word 3-grams) within this many bits of an earlier page.
SIMHASH_MAX_DISTANCE = 3
# Texts shorter than this are compared exactly only: a few words say too little.
SIMHASH_MIN_WORDS = 20

# --- Page store --------------------------------------------------------------------
STORE_URI = "crawl-data"
# Roll a segment file when it reaches this size (bytes, compressed).
STORE_ROLL_BYTES = 100 * 1024 * 1024
# ...or when it is this old (seconds; 0: no limit), so an S3 store gets data regularly.
STORE_ROLL_SECONDS = 300.0
# s3:// stores: files are written here first and leave once uploaded.
STORE_SPOOL_DIR = "crawl-spool"
# An upload that fails is retried this many times, first after this delay, doubling.
STORE_UPLOAD_RETRIES = 8
STORE_UPLOAD_RETRY_DELAY = 1.0

DOWNLOADER_MIDDLEWARES = {
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "crawler.middlewares.robots.RobotsMiddleware": 100,
    "crawler.middlewares.content.HtmlOnlyMiddleware": 650,
}
SPIDER_MIDDLEWARES = {
    "crawler.middlewares.content_seen.ContentSeenMiddleware": 950,
}
ITEM_PIPELINES = {
    "crawler.pipelines.fingerprint.ContentHashPipeline": 300,
    "crawler.pipelines.store.PageStorePipeline": 800,
}

LOG_LEVEL = "INFO"
FEED_EXPORT_ENCODING = "utf-8"

# --- robots.txt (RFC 9309), on with ROBOTSTXT_OBEY ------------------------------
# Product token matched against robots.txt groups; empty: taken from USER_AGENT.
ROBOTSTXT_USER_AGENT = ""
# RFC 9309 2.4: a cached robots.txt is not used for more than 24 hours.
ROBOTSTXT_CACHE_TTL = 86400.0
# An unreachable robots.txt (5xx, 429, no answer) disallows the host and is fetched
# again after this delay, doubling per consecutive failure (up to the TTL).
ROBOTSTXT_RETRY_DELAY = 60.0
# Requests wait for that many failed attempts in a row, then are dropped as forbidden.
ROBOTSTXT_RETRY_TIMES = 4
# Honour Crawl-delay as a floor on a host's gap, up to this many seconds.
ROBOTSTXT_CRAWL_DELAY = True
ROBOTSTXT_CRAWL_DELAY_MAX = 60.0
# Follow the Sitemap: lines of robots.txt (indexes and gzip too); each URL keeps its
# <lastmod> in the request meta and the page record.
SITEMAP_FOLLOW = False

# --- Frontier: politeness policy ------------------------------------------------
# Gap after a fetch = max(min(MAX, max(MIN, FACTOR x fetch time)), Crawl-delay, backoff).
POLITENESS_MIN_DELAY = 1.0
POLITENESS_DELAY_FACTOR = 10.0
# Cap of the adaptive part, as Heritrix's default 30 s: a slow host is still
# visited twice a minute. Crawl-delay and Retry-After may exceed it.
POLITENESS_MAX_DELAY = 30.0
# Cap of the 429/503 backoff, Retry-After included.
POLITENESS_BACKOFF_MAX = 3600.0
# Hosts that resolve to one IP address share one politeness key (one fetch at a
# time, one gap), as many virtual hosts share one server.
POLITENESS_PER_IP = False
# Fetches per host in a crawl (0: no limit).
HOST_PAGE_BUDGET = 0
# Front queues: request depth (shifted by priority) picks one of these levels.
FRONTIER_PRIORITY_LEVELS = 4

# --- Frontier: state ---------------------------------------------------------------
# The embedded frontier lives in FRONTIER_DIR/<CRAWL_ID>/frontier.sqlite; rerunning
# the same command resumes that crawl. CRAWL_ID defaults to the spider's name.
FRONTIER_DIR = "crawl-state"
CRAWL_ID = ""
# With a Redis URL (redis://host:port/db), the frontier is shared in Redis by every
# worker of the crawl (same CRAWL_ID) instead of embedded.
REDIS_URL = ""
# Redis crawls: seeds pushed into the JSON list crawl:{<CRAWL_ID>}:seeds are read this
# often (seconds), and an idle worker waits this long for more work before closing.
SEEDS_POLL_INTERVAL = 5.0
SCHEDULER_IDLE_BEFORE_CLOSE = 10.0
# URLs a Redis crawl expects to see: sizes the seen set's buckets (compact up to
# about twice this; beyond, it still works, at more bytes per URL).
SEEN_SET_EXPECTED_URLS = 10_000_000
# "exact" (~13 bytes a URL), or "bloom" for very large crawls (1.3 bytes a URL at 1%):
# a Bloom false positive drops a new URL unfetched, about SEEN_SET_ERROR_RATE of them.
SEEN_SET = "exact"
SEEN_SET_ERROR_RATE = 0.01
# A URL leased and neither acked nor retried within this time is queued again.
FRONTIER_LEASE_SECONDS = 600.0
# Frontier writes are committed this often: a kill -9 loses at most this much
# progress, and that progress is redone (pages fetched again), never skipped.
FRONTIER_COMMIT_INTERVAL = 0.5
# SQLite page cache (KiB): the frontier's memory beyond one record per host.
FRONTIER_CACHE_KIB = 65536
