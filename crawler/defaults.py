"""Every setting of the crawler with its default: plain constants, importing nothing.

Each component reads ``settings.get(NAME, defaults.NAME)``, so it works alone in any
Scrapy project. The add-on (``crawler.addon.PoliteCrawler``) applies all of them at
add-on priority, so ``scrapy settings --get NAME`` shows them and a value the project
sets still wins. ``docs/settings.md`` describes each one; a test checks it lists them all.
"""

# --- Scrapy's own settings, set differently by the add-on ------------------------
# Polite by default: robots.txt first (our RFC 9309 middleware replaces Scrapy's).
ROBOTSTXT_OBEY = True
# The frontier spaces fetches itself; Scrapy's slot delay would block other hosts.
DOWNLOAD_DELAY = 0
# Links of pages at this depth are not followed (Scrapy: 0, no limit).
DEPTH_LIMIT = 20
# URLs longer than this are dropped (Scrapy: 2083).
URLLENGTH_LIMIT = 2048
# Bodies larger than this are not downloaded (Scrapy: 1 GiB).
DOWNLOAD_MAXSIZE = 10 * 1024 * 1024
# Downloads still in flight this long after the crawl decided to close are cancelled (their
# URLs fetched again on resume): Scrapy would wait up to DOWNLOAD_TIMEOUT for each.
DOWNLOAD_CLOSE_GRACE = 5.0
# A response whose header section is larger is refused, its body unread (0: no limit).
DOWNLOAD_MAXHEADERSIZE = 64 * 1024
# No warning per large page: the cap above already bounds them.
DOWNLOAD_WARNSIZE = 0
# A download that takes longer fails (Scrapy: 180 s). Nutch and StormCrawler use 10 s; 30 s
# lets a slow server send a page of DOWNLOAD_MAXSIZE at ~350 KB/s, and frees a stalled slot soon.
DOWNLOAD_TIMEOUT = 30
# Scrapy's immediate retry is off: the frontier's retry chain (FRONTIER_RETRY_DELAYS) retries.
RETRY_ENABLED = False
# RemoteControl (Scrapy 2.19) opens an HTTP port that runs code sent to it.
REMOTE_CONTROL_ENABLED = False
# The telnet console is another control port: off.
TELNETCONSOLE_ENABLED = False
# Scrapy re-parses a callback's source for each response (its cache misses bound methods): ~1 ms a page.
WARN_ON_GENERATOR_RETURN_VALUE = False
# Scrapy starts this many tasks for each response's output (Scrapy: 100, ~0.4 ms a page); a
# page yields one item, and requests pass through at once.
CONCURRENT_ITEMS = 8
# Host names whose DNS answers are kept (Scrapy: 10,000), by GuardedResolver.
DNSCACHE_SIZE = 100_000
# A DNS lookup (A and AAAA together) that takes longer fails (Scrapy: 60 s).
DNS_TIMEOUT = 10.0

# --- Network edge: the address guard and the resolver ----------------------------
# Refuse connections to loopback, private, link-local, metadata... addresses (the seeds' hosts excepted).
NETWORK_GUARD = True
# Networks (CIDR) and host names the guard allows besides the seeds' hosts.
NETWORK_ALLOW: list[str] = []
# A DNS answer is kept for its TTL, but at least this long (seconds)...
DNS_MIN_TTL = 60.0
# ...and at most this long.
DNS_MAX_TTL = 3600.0
# A failed lookup (NXDOMAIN, no address, timeout) is kept this long before it is asked again.
DNS_NEGATIVE_TTL = 60.0
# Nameservers to ask ("ip" or "ip:port"), e.g. a local caching resolver; empty: the system's.
DNS_NAMESERVERS: list[str] = []

# --- URL policy ----------------------------------------------------------------
# Query parameter names dropped by normalisation (full match, any case).
URL_DROP_PARAMS = r"^(utm_[a-z]+|fbclid|gclid|sessionid|phpsessid|jsessionid)$"

# --- Trap rules, first layer ----------------------------------------------------
# Drop a URL whose path repeats a run of segments this many times in a row (0: off).
TRAP_SEGMENT_REPEATS = 3

# --- Trap rules that learn (per host, kept with the frontier's state) -------------
# A parameter whose values gave one text on this many values is learned irrelevant (0: off).
TRAP_PARAM_EVIDENCE = 3
# Fetch one nonsense path per host; pages like its 2xx answer are soft 404s, not pages.
TRAP_SOFT_404_PROBE = True
# Over a host's last this many pages (0: off)...
TRAP_DUPLICATE_WINDOW = 50
# ...a share of duplicates above this demotes it: lowest priority, a budget of what it has fetched...
TRAP_DUPLICATE_RATE = 0.5
# ...plus this many pages.
TRAP_DEMOTED_MARGIN = 10
# What other workers learned is read again this often (seconds).
TRAP_STATE_REFRESH = 10.0

# --- Link following --------------------------------------------------------------
# "host" (the seeds' hosts, www. or not), "domain" (their registered domains) or "all".
CRAWL_SCOPE = "host"
# Stop after this many pages are stored (0: no cap).
CRAWL_MAX_PAGES = 0
# Raw links remembered per worker (two generations of this size), to skip links seen.
LINK_CACHE_SIZE = 500_000

# --- Fetching ------------------------------------------------------------------
# Content types kept; other downloads are stopped once their headers arrive.
HTML_CONTENT_TYPES = ["text/html", "application/xhtml+xml"]

# --- Content seen ------------------------------------------------------------------
# Near copies: simhash (64-bit, word 3-grams) within this many bits of an earlier page.
SIMHASH_MAX_DISTANCE = 3
# Texts shorter than this many words are compared exactly only.
SIMHASH_MIN_WORDS = 20

# --- Freshness: revisit intervals, seconds ---------------------------------------
# A page is first revisited after this long; halved when it changed, doubled when not,
# so that each page's interval follows how often it changes...
REVISIT_INTERVAL = 7 * 86400.0
# ...but never sooner than this...
REVISIT_MIN_INTERVAL = 86400.0
# ...nor later than this.
REVISIT_MAX_INTERVAL = 30 * 86400.0
# Pages at the minimum interval take at most this share of the fetches (their visits are
# stretched past it): Cho and Garcia-Molina show the pages that change fastest are the
# worst use of fetches, and a crawl must keep most of its rate for discovery.
REVISIT_HOT_SHARE = 0.2
# From a page's second revisit on, its interval is the gap worth most given how often its
# visits found it changed (crawler/freshness/change_rate.py) rather than halved or
# doubled: this many gaps between visits come first...
REVISIT_EVIDENCE = 2
# ...and a fetch that finds no change counts this many times dearer than one that does.
# 0 is Cho and Garcia-Molina's freshness optimum, which wastes about as many fetches as
# a fixed interval. At 10, on the simulated web of bench/freshness.py, a crawl that keeps
# going is fresher than a fixed interval on the same budget with under half its wasted
# fetches (180 days); over its first 60 days, while it learns the rates, it is 0.005 less
# fresh at 51% (docs/freshness.md).
REVISIT_WASTE_COST = 10.0
# Each revisit's wait is moved by up to this fraction of itself, earlier or later by a
# share fixed per URL (a hash): pages first crawled together drift apart instead of
# falling due in waves. At 0.1 bench/freshness.py keeps its figures (docs/freshness.md).
REVISIT_JITTER = 0.1
# Keep going when nothing is queued: sleep until the next revisit falls due (ends on
# CLOSESPIDER_TIMEOUT, Ctrl-C or a stop from outside). Off: one pass, as `scrapy crawl`.
CRAWL_CONTINUOUS = False

# --- What bounds the crawl (crawl/bound, once per LOGSTATS_INTERVAL) ---------------------
# The reactor running this many seconds late on a periodic call means the CPU bounds the crawl.
BOUND_LAG = 0.05
# The crawl writes its stats and bound measures to DATA_DIR/crawl-stats/<crawl id>/ this often (s; 0: off).
CRAWL_STATS_INTERVAL = 2.0

# --- Where data goes ------------------------------------------------------------
# Absolute directory that relative FRONTIER_DIR, STORE_URI, STORE_SPOOL_DIR, STORE_INDEX_DIR
# are under ("": the working dir).
DATA_DIR = ""

# --- Page store --------------------------------------------------------------------
# A local directory (path or file:// URI) or s3://bucket/prefix.
STORE_URI = "crawl-data"
# Roll a segment file when it reaches this size (bytes, compressed).
STORE_ROLL_BYTES = 100 * 1024 * 1024
# ...or when it is this old (seconds; 0: no limit), so an S3 store gets data regularly.
STORE_ROLL_SECONDS = 300.0
# gzip level of WARC and metadata records, ISA-L's 0-3 (2: ~6x smaller, 0.1 ms a 50 KB page).
STORE_GZIP_LEVEL = 2
# Local stores: fsync the open files this often (seconds) and only then ack the pages written
# since (0: fsync each page as it is written). One fsync per file a second, acks <= 1 s late.
STORE_FSYNC_INTERVAL = 1.0
# The page index (URL fingerprint -> its record) for `GET /pages`, local for disk and S3 stores alike.
STORE_INDEX_DIR = "crawl-index"
# s3:// stores: files are written here first and leave once uploaded.
STORE_SPOOL_DIR = "crawl-spool"
# A store with no room (a full disk, a quota) pauses the crawl: probed this often (seconds)...
STORE_FULL_PROBE_INTERVAL = 5.0
# ...and the crawl closes, to be resumed, when it is still full after this long.
STORE_FULL_TIMEOUT = 3600.0
# The store also pauses the crawl while its filesystem has less than this free (bytes; 0: off):
# room for the crawl's state, page index and stats, which share its disk by default.
STORE_MIN_FREE = 64 * 1024 * 1024
# S3 requests that fail are retried this many times by botocore (standard mode, up to 20 s apart).
STORE_UPLOAD_RETRIES = 8

# --- robots.txt (RFC 9309), on with ROBOTSTXT_OBEY ------------------------------
# Product token matched against robots.txt groups; empty: taken from USER_AGENT.
ROBOTSTXT_USER_AGENT = ""
# RFC 9309 2.4: a cached robots.txt is not used for more than 24 hours.
ROBOTSTXT_CACHE_TTL = 86400.0
# An unreachable robots.txt disallows the host; fetched again after this, doubling.
ROBOTSTXT_RETRY_DELAY = 60.0
# Requests wait for this many failed robots.txt fetches in a row (the first included), then are dropped.
ROBOTSTXT_RETRY_TIMES = 4
# Hosts whose parsed robots.txt rules are kept in memory (least recently used dropped first).
ROBOTSTXT_CACHE_SIZE = 10_000
# Honour Crawl-delay as a floor on a host's gap, up to this many seconds.
ROBOTSTXT_CRAWL_DELAY = True
ROBOTSTXT_CRAWL_DELAY_MAX = 60.0
# The web spider honours <meta name="robots"> and X-Robots-Tag: noindex (not stored), nofollow.
ROBOTS_META_OBEY = True
# Follow the Sitemap: lines of robots.txt (indexes and gzip too).
SITEMAP_FOLLOW = False
# A sitemap that decodes to more is not read (sitemaps.org: at most 50 MB uncompressed).
SITEMAP_MAXSIZE = 50 * 1024 * 1024

# --- Frontier: politeness policy ------------------------------------------------
# Gap after a fetch = max(min(MAX, max(MIN, FACTOR x fetch time)), Crawl-delay, backoff).
POLITENESS_MIN_DELAY = 1.0
POLITENESS_DELAY_FACTOR = 10.0
# Cap of the adaptive part, as Heritrix's default 30 s.
POLITENESS_MAX_DELAY = 30.0
# Cap of the 429/503 backoff, Retry-After included.
POLITENESS_BACKOFF_MAX = 3600.0
# Hosts that resolve to one IP address share one politeness key.
POLITENESS_PER_IP = False
# Fetches per host in a crawl (0: no limit).
HOST_PAGE_BUDGET = 0
# Front queues: request depth (shifted by priority) picks one of these levels.
FRONTIER_PRIORITY_LEVELS = 4

# --- Frontier: state ---------------------------------------------------------------
# The embedded frontier lives in FRONTIER_DIR/<crawl id>/frontier.sqlite.
FRONTIER_DIR = "crawl-state"
# Names the crawl's state; empty: derived from the spider, its seeds and scope.
CRAWL_ID = ""
# redis://host:port/db (a comma list shards the crawl): the frontier is shared there.
REDIS_URL = ""
# True: REDIS_URL names one node of a Redis Cluster; the crawl is spread over it.
REDIS_CLUSTER = False
# Redis Cluster crawls: hash tags the frontier is split over (fixed at the crawl's first
# start). 16 puts a part on every master of a cluster of up to 16 and costs 16 reads a claim round.
REDIS_SHARDS = 16
# Redis crawls: the list pushed seeds are read from; "" is crawl:{<crawl id>}:seeds.
# As scrapy-redis's setting: "%(name)s:start_urls" reads scrapy-redis's key.
REDIS_START_URLS_KEY = ""
# False: the last worker to close a finished Redis crawl deletes its keys (scrapy forget).
SCHEDULER_PERSIST = True
# Redis crawls: pushed seeds are read this often (seconds).
SEEDS_POLL_INTERVAL = 5.0
# An idle Redis worker waits this long (seconds) for more work before closing.
SCHEDULER_IDLE_BEFORE_CLOSE = 10.0
# URLs a Redis crawl expects: sizes the seen set's buckets.
SEEN_SET_EXPECTED_URLS = 10_000_000
# "exact" (~13 bytes a URL) or "bloom" (1.3 bytes a URL at 1%, drops that share of new URLs).
SEEN_SET = "exact"
SEEN_SET_ERROR_RATE = 0.01
# A URL leased and neither acked nor retried within this time is queued again.
FRONTIER_LEASE_SECONDS = 600.0
# A failed fetch (or page) is tried again after each of these delays (seconds), then is a dead letter.
FRONTIER_RETRY_DELAYS = [60, 600, 3600]
# Redis crawls: a worker whose heartbeat is older than this (seconds) is dead; its URLs go back.
FRONTIER_WORKER_TIMEOUT = 15.0
# Redis crawls: the frontier's calls run in a thread of their own; one that has waited this long
# (seconds) for Redis is an outage, logged once at WARNING (steps wait in order, downloads go on).
REDIS_STALL_SECONDS = 5.0
# Redis crawls: the frontier's client gives up a call after this long (seconds) without an answer
# (the call is then replayed: a script sent to a stalled Redis may run when it resumes, so this is
# long), and a connection after REDIS_CONNECT_TIMEOUT.
REDIS_SOCKET_TIMEOUT = 30.0
REDIS_CONNECT_TIMEOUT = 5.0
# Frontier writes are committed this often (seconds): a kill -9 redoes at most this much.
FRONTIER_COMMIT_INTERVAL = 0.5
# SQLite page cache (KiB): the embedded frontier's memory beyond one record per host.
FRONTIER_CACHE_KIB = 65536

# --- The crawl service: scrapy serve ----------------------------------------------
# Address and port the API and dashboard listen on (--bind, --port); off loopback, SERVE_TOKEN is required.
SERVE_BIND = "127.0.0.1"
SERVE_PORT = 6080
# Every API request needs "Authorization: Bearer <token>". None: one made at the first start and kept in
# DATA_DIR/serve/token (mode 0600); "" (on a loopback bind only): no token, with a warning.
SERVE_TOKEN = None
# Bodies of POST /crawls larger than this (bytes) are refused.
SERVE_MAX_BODY_BYTES = 1024 * 1024
# The service reads its crawls' state and counts this often (seconds): the dashboard's sampling rate.
SERVE_POLL_INTERVAL = 1.0
# Schedule crawls on this scrapyd (its schedule.json, listjobs.json) instead of child processes.
SERVE_SCRAPYD_URL = ""
# The scrapyd project the crawler is deployed as (scrapyd-deploy's, scrapy.cfg's [deploy] project).
SERVE_SCRAPYD_PROJECT = "crawler"
# Host names (besides the bind address and localhost) a request's Host and Origin may name the service by.
SERVE_ALLOWED_HOSTS: list[str] = []
# Crawls running at once (0: the machine's cores, at least 2); the rest wait, state "queued".
SERVE_MAX_CRAWLS = 0
# Crawls that may wait; past that POST /crawls is refused with 429.
SERVE_MAX_QUEUED = 20
# Seconds a request may take to arrive whole, and an idle keep-alive connection is kept.
SERVE_READ_TIMEOUT = 10.0
SERVE_IDLE_TIMEOUT = 5.0
# Threads answering the API's blocking calls at once; connections beyond them wait on the event loop.
SERVE_THREADS = 16
# Connections served at once; past that a request gets 503.
SERVE_MAX_CONNECTIONS = 1000

# --- Feeds, identity and the archive ---------------------------------------------
# A feed's page items (-o pages.jsonl) carry the page's HTML (base64) too (docs/items.md).
FEED_PAGE_HTML = False
# The operator's contact, a URL or an e-mail: put in the default USER_AGENT (a WARNING at start
# while empty) and in the operator field of each WARC file's warcinfo record.
CRAWLER_CONTACT = ""

# --- Text ---------------------------------------------------------------------------
# The text stored, hashed and deduplicated: "main" (the page's main content: article,
# documentation body, listing) or "visible" (all visible text but navigation, header,
# footer and sidebars).
TEXT_EXTRACTION = "main"
