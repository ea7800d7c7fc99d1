"""A small site served gzip-encoded by nginx, crawled once for the archive tests: pages, a
redirect, a missing page, a byte-identical copy, a non-ASCII header, and revisits answered
304."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from nginx_server import Nginx

from crawler.store.files import LocalStore, iter_records

REPO = Path(__file__).resolve().parent.parent


def _page(title: str, body: str, links: str = "") -> bytes:
    words = " ".join(f"{title.lower()}-{i}" for i in range(150))
    return (f"<!doctype html><html><head><meta charset=utf-8><title>{title}</title></head><body>"
            f"<h1>{title}</h1><p>{body}</p><p>{words}</p>{links}</body></html>").encode()


PAGES = {
    "index.html": _page("Home", "The archive test site.",
                        '<a href="/a.html">a</a> <a href="/b.html">b</a> <a href="/copy.html">copy</a> '
                        '<a href="/old.html">old</a> <a href="/odd.html">odd</a> '
                        '<a href="/daily.html">daily</a> <a href="/paper.pdf">paper</a> '
                        '<a href="/hidden.html">hidden</a> <a href="/gone.html">gone</a>'),
    "a.html": _page("Alpha", "A page about the first letter."),
    "b.html": _page("Beta", "A page about the second letter."),
    "odd.html": _page("Odd", "A page whose Link header holds a byte that is not ASCII."),
    "daily.html": _page("Daily", "A page served whole at every visit: no validators, no 304."),
}
PAGES["hidden.html"] = _page("Hidden", "Fetched, archived, not stored as a page.").replace(
    b"<meta charset=utf-8>", b'<meta charset=utf-8><meta name="robots" content="noindex">')
PAGES["copy.html"] = PAGES["b.html"]  # byte for byte: an identical-payload revisit
ROBOTS = b"User-agent: *\nDisallow: /private/\n"
PDF = b"%PDF-1.4\n" + bytes(range(256)) * 400  # not HTML: stopped once its headers arrive
# A redirect, a Link header with a byte that is not ASCII (nginx sends it as written), and a
# page that answers its revisits 200 with the same bytes (an identical-payload revisit).
LOCATIONS = (b"        location = / { index index.html; }\n"
             b"        location = /daily.html { etag off; if_modified_since off; }\n"
             b"        location = /old.html { return 301 /a.html; }\n"
             b"        location = /odd.html { add_header Link \"</u/\xff>; rel=canonical\"; }\n")
CRAWL_SETTINGS = {
    "CRAWL_ID": "archive-test",
    "CRAWLER_CONTACT": "mailto:archive@example.org",
    "CRAWL_CONTINUOUS": True,
    "REVISIT_INTERVAL": 1.5,
    "REVISIT_MIN_INTERVAL": 1,
    "REVISIT_MAX_INTERVAL": 3,
    "CLOSESPIDER_TIMEOUT": 7,
    "POLITENESS_MIN_DELAY": 0,
    "POLITENESS_DELAY_FACTOR": 0,
    "TRAP_SOFT_404_PROBE": False,
    "STORE_ROLL_SECONDS": 3,  # several files, each with its index
    "LOG_LEVEL": "INFO",
}


# nginx's combined log line: the request line, its status, ..., the User-Agent.
ACCESS = re.compile(r'"GET (\S+) HTTP/1\.1" (\d{3}) \d+ "[^"]*" "([^"]*)"$')


@dataclass
class ArchiveCrawl:
    site: Nginx
    tmp: Path
    log: str
    fetches: list[tuple[str, str]]  # (path, status) of each request the crawler made, from nginx's log

    @property
    def store(self) -> LocalStore:
        return LocalStore(self.tmp / "store")

    @property
    def records(self) -> list[dict]:
        return list(iter_records(self.store))

    def warc_files(self) -> list[Path]:
        return sorted((self.tmp / "store" / "warc").glob("*.warc.gz"))


def scrapy_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env["SCRAPY_SETTINGS_MODULE"] = "crawler.settings"
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return env


def run_crawl(seed: str, tmp: Path, **settings: object) -> str:
    """Crawl from ``seed`` to the end, storing under ``tmp``; the log."""
    options = {**CRAWL_SETTINGS, "STORE_URI": tmp / "store", "FRONTIER_DIR": tmp / "state", **settings}
    command = [sys.executable, "-m", "scrapy", "crawl", "web", "-a", f"seeds={seed}"]
    for name, value in options.items():
        command += ["-s", f"{name}={value}"]
    done = subprocess.run(command, cwd=tmp, env=scrapy_env(), capture_output=True, text=True,
                          timeout=90, check=False)
    log = done.stdout + done.stderr
    if done.returncode != 0:
        raise AssertionError(log[-3000:])
    return log


def crawl_site(tmp: Path) -> ArchiveCrawl:
    """Serve the site (left running: the caller stops ``site``) and crawl it to its end."""
    root = tmp / "site"
    root.mkdir()
    for name, body in PAGES.items():
        (root / name).write_bytes(body)
    (root / "robots.txt").write_bytes(ROBOTS)
    (root / "paper.pdf").write_bytes(PDF)
    site = Nginx(root, tmp / "nginx", LOCATIONS).start()
    try:
        log = run_crawl(site.url, tmp)
        lines = (tmp / "nginx" / "access.log").read_text().splitlines()
        fetches = [(m[1], m[2]) for m in map(ACCESS.search, lines) if m and m[3].startswith("politecrawler")]
        return ArchiveCrawl(site, tmp, log, fetches)
    except BaseException:
        site.stop()
        raise
