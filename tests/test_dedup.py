"""Same page, other address: exact and near duplicates, and links of duplicates not followed."""

from __future__ import annotations

import random

from scrapy.utils.test import get_crawler
from testweb import Site, TestWeb

from crawler.items import Page
from crawler.middlewares.content_seen import ContentSeenMiddleware
from crawler.store.warc import IDENTICAL_PROFILE, read_record

VOCABULARY = [
    "crawler", "index", "page", "archive", "server", "request", "river", "mountain", "library",
    "history", "science", "music", "travel", "weather", "harbour", "station", "village", "engine",
    "signal", "window", "forest", "bridge", "letter", "number", "summer", "winter", "island", "paper",
    "report", "stone", "silver", "quiet", "rapid", "simple", "gentle", "ancient", "modern", "local",
    "global", "public", "private", "common", "careful", "bright", "narrow",
]


def article(seed: int, words: int = 600) -> str:
    """A deterministic page of prose: sentences of 8-15 words from a small vocabulary."""
    rng = random.Random(seed)
    sentences, count = [], 0
    while count < words:
        n = rng.randint(8, 15)
        sentences.append(" ".join(rng.choice(VOCABULARY) for _ in range(n)).capitalize() + ".")
        count += n
    return " ".join(sentences)


def html(body_text: str, links: str = "") -> bytes:
    return (f"<!doctype html><html><head><title>t</title></head><body><main><p>{body_text}</p>"
            f"</main>{links}</body></html>").encode()


def middleware() -> ContentSeenMiddleware:
    crawler = get_crawler()
    crawler.stats.open_spider()
    return ContentSeenMiddleware(crawler.stats, max_distance=3, min_words=20)


def page(url: str, text: str) -> Page:
    return Page(url=url, status=200, fetched_at=0.0, depth=0, html=b"", text=text)


def near_copies(text: str) -> dict[str, str]:
    words = text.split()
    rng = random.Random(7)
    edited = list(words)
    for i in rng.sample(range(len(words)), len(words) // 100):  # 1% of the words
        edited[i] = rng.choice(VOCABULARY)
    ad = "Special offer buy now limited time only great deals on winter tyres and summer holidays today"
    return {
        "timestamp": "Last updated 2026-12-02 11:52:07 UTC. " + text,
        "ad block": " ".join(words[:300]) + " " + ad + " " + " ".join(words[300:]),
        "1% edit": " ".join(edited),
    }


def test_exact_copies_are_always_duplicates():
    m = middleware()
    original = article(1)
    assert not m.check(page("http://a.test/original", original))
    mirror = page("http://mirror.test/original", "  " + original.replace(" ", "\n "))
    assert m.check(mirror) and mirror.duplicate_of == "http://a.test/original"
    assert m.stats.get_value("dedup/exact") == 1
    assert m.duplicate_rate("mirror.test") == 1.0 and m.duplicate_rate("a.test") == 0.0


def test_near_copies_are_caught_and_unrelated_pages_are_not():
    # 40 pages of 1,500 words, each with its copies; simhash of word 3-grams at distance 3.
    caught: dict[str, int] = {}
    m = middleware()
    for seed in range(40):
        original = f"http://a.test/{seed}"
        assert not m.check(page(original, article(seed, 1500))), "unrelated pages collided"
        for name, text in near_copies(article(seed, 1500)).items():
            copy = page(f"http://b.test/{seed}/{name}", text)
            if m.check(copy):  # of the original, or of a copy of it not caught before
                assert copy.duplicate_of == original or copy.duplicate_of.startswith(f"http://b.test/{seed}/")
                caught[name] = caught.get(name, 0) + 1
    assert caught["timestamp"] >= 36  # a changed date line: ~95% (measured 37/40)
    assert caught["ad block"] >= 30  # 20 words in 1,500: ~85% (measured 34/40)
    # 1% of the words edited changes ~3% of the 3-grams: at distance 3 only ~35% are
    # caught (measured 10/40); see docs/dedup.md. Not asserted beyond "some".
    assert caught["1% edit"] >= 1


def test_pages_without_text_or_refetched_are_not_duplicates():
    m = middleware()
    assert not m.check(page("http://a.test/app", ""))
    assert not m.check(page("http://a.test/app2", ""))
    assert not m.check(page("http://a.test/x", article(3)))
    assert not m.check(page("http://a.test/x", article(3)))  # the same URL again: a revisit


def test_short_texts_are_compared_exactly_only():
    m = middleware()
    assert not m.check(page("http://a.test/1", "Page one of the archive"))
    assert not m.check(page("http://a.test/2", "Page two of the archive"))
    assert m.check(page("http://a.test/3", "Page one of the archive"))


def test_a_mirror_is_caught_and_links_of_duplicates_are_not_followed(crawl, tmp_path):
    sites = [Site("a.test", pages=30, fanout=3), Site("m.test", mirror_of="a.test", pages=30, fanout=3)]
    with TestWeb(sites) as web:
        result = crawl(web, tmp_path, f"seeds={web.url('a.test')},{web.url('m.test')}")
        hits = web.hits()
    assert result.returncode == 0, result.log[-3000:]
    records = result.records
    full = [r for r in records if r["duplicate_of"] is None]
    duplicates = [r for r in records if r["duplicate_of"] is not None]
    assert len({r["content_sha256"] for r in full}) == len(full) == 30  # each text stored once
    by_url = {r["url"]: r for r in full}
    for dup in duplicates:  # caught 100%, each pointing at a stored page with its text
        assert by_url[dup["duplicate_of"]]["content_sha256"] == dup["content_sha256"]
        assert dup["text"] is None
        revisit = read_record(result.store, dup["warc"])
        assert revisit.rec_type == "revisit"
        assert revisit.rec_headers.get_header("WARC-Refers-To-Target-URI") == dup["duplicate_of"]
        # A mirror's page is byte for byte its original: WARC 1.1's profile, with the date and
        # record id of the response it repeats, whose payload digest it shares.
        assert revisit.rec_headers.get_header("WARC-Profile") == IDENTICAL_PROFILE
        original = read_record(result.store, by_url[dup["duplicate_of"]]["warc"])
        assert revisit.rec_headers.get_header("WARC-Refers-To") == original.rec_headers.get_header(
            "WARC-Record-ID")
        assert revisit.rec_headers.get_header("WARC-Refers-To-Date") == original.rec_headers.get_header(
            "WARC-Date")
        assert revisit.rec_headers.get_header("WARC-Payload-Digest") == original.rec_headers.get_header(
            "WARC-Payload-Digest")
    # A duplicate's links are not followed: the 60 pages are not all fetched.
    assert len([r for r in hits if r.path != "/robots.txt"]) < 60
    assert result.stats["dedup/exact"] >= 1


def test_near_copies_over_http_are_caught_and_their_links_not_followed(crawl, tmp_path):
    original = article(11, 1500)
    copies = {name: text for name, text in near_copies(original).items() if name != "1% edit"}
    secret = '<a href="/only-from-copy.html"></a>'
    shared = '<a href="/shared.html"></a>'  # linked from the copies first, then from a real page
    files = {"/original.html": ("text/html", html(original)),
             "/other.html": ("text/html", html(article(12), shared)),
             "/only-from-copy.html": ("text/html", html(article(13))),
             "/shared.html": ("text/html", html(article(14)))}
    for i, text in enumerate(copies.values()):
        files[f"/copy{i}.html"] = ("text/html", html(text, secret + shared))
    with TestWeb([Site("n.test", pages=1, files=files)]) as web:
        seeds = [web.url("n.test", p) for p in ("/original.html", "/copy0.html", "/copy1.html",
                                                 "/other.html")]
        result = crawl(web, tmp_path, "seeds=" + ",".join(seeds), CONCURRENT_REQUESTS=1, ROBOTSTXT_OBEY=False)
        secret_hits = web.hits("n.test", "/only-from-copy.html")
        shared_hits = web.hits("n.test", "/shared.html")
    assert result.returncode == 0, result.log[-3000:]
    duplicate_of = {r["url"].rsplit("/", 1)[1]: r["duplicate_of"] for r in result.records}
    assert duplicate_of["original.html"] is None and duplicate_of["other.html"] is None
    for i in range(2):
        assert duplicate_of[f"copy{i}.html"] == seeds[0]
    assert secret_hits == []
    assert len(shared_hits) == 1  # a duplicate's links are not "seen": a real page still leads there
    assert all(len(r["simhash"]) == 16 for r in result.records)
