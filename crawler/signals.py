"""Signals between the crawler's components (Scrapy signals: send with
``crawler.signals.send_catch_log``, connect with ``crawler.signals.connect``)."""

#: robots.txt asks for a Crawl-delay: ``host`` (name), ``delay`` (seconds, already capped).
#: The frontier takes it as a floor on the host's gap.
robots_crawl_delay = object()

#: A host may not be fetched before ``until`` (Unix time), e.g. its robots.txt is
#: unreachable. The frontier holds the host until then; a request it leased (it carries
#: ``LEASE_META``) is handed back to it instead of dropped.
host_unavailable = object()

#: robots.txt lists sitemaps: ``sitemaps`` (URLs, in file order), ``robots_url``.
#: Sent with ``SITEMAP_FOLLOW``; the ``web`` spider schedules the in-scope ones.
sitemaps_found = object()

#: The robots.txt of ``host`` was just fetched, in ``seconds``: that was a fetch from the
#: host. The frontier holds the host for the politeness gap after it; a request it leased
#: (``LEASE_META``) is handed back to wait it out instead of fetched at once.
robots_fetched = object()

#: Host ``host``'s pages are mostly duplicates: the frontier sends its queued URLs to the
#: lowest level and gives it a budget of its fetches so far plus ``margin``.
host_demoted = object()

#: The pages in ``name`` are safely stored: a store file uploaded (S3), or a batch of local
#: writes fsync'd (``fsync:<n>``). The URLs of the pages that waited for it are done.
store_safe = object()

#: A page a spider did not yield as an item was captured from its response: ``page``
#: (a :class:`~crawler.items.Page`), ``response``. The page components take it in the
#: order they were built (content seen, then the pipelines), as they would the item,
#: without it entering the project's own pipelines and feeds.
page_captured = object()

#: ``page`` (from ``response``) repeats the page at URL ``original``: ``kind`` is ``exact`` or
#: ``near`` (``ContentSeenMiddleware``), or ``soft_404`` (``TrapsMiddleware``). Sent as the
#: middleware passes the page on, so before the spider that yielded it goes on: the ``web``
#: spider then follows none of that response's links.
page_duplicate = object()

#: Every receiver of ``page_captured`` is done with ``page`` (``response``): for a captured
#: page what ``item_scraped`` is for an item. The frontier scheduler takes its outcome.
page_processed = object()

#: The crawl has decided to close (``reason``: ``max_pages``, ``closespider_*``, ``shutdown``
#: for a stop or SIGINT...), before Scrapy waits for the downloads in flight. Sent once, by
#: :class:`~crawler.extensions.closing.ClosingAnnouncer`.
crawl_closing = object()

#: The page store has no room (a full disk, a quota): the frontier claims no URL until
#: ``store_writable``. Sent once per episode by :class:`~crawler.pipelines.space.StoreSpaceWatch`.
store_full = object()

#: The page store can be written again after ``store_full``: the crawl goes on.
store_writable = object()

#: The embedded frontier's commit found no room: its steps since its last commit are undone
#: (it reloaded from its file, as a restart does). What remembers URLs as sent to it (the
#: ``web`` spider's links seen) forgets them, so that the pages fetched again find them again.
#: Sent by the frontier scheduler.
frontier_reloaded = object()

#: A fetch that is no page was captured as it went over the wire (robots.txt, a redirect,
#: an error page): ``exchange`` (a :class:`~crawler.store.wire.Exchange`). The page store
#: archives it as a request and a response record.
fetch_captured = object()
