"""Requests a spider yields that the frontier cannot store are fetched from memory, named
once at DEBUG and counted; the crawl goes on."""

from __future__ import annotations

import subprocess

from crawling import crawl_command
from testweb import Site, TestWeb, page_path


def test_unstorable_requests_are_fetched_from_memory_named_once_and_counted(tmp_path):
    with TestWeb([Site("bad.test", pages=4)]) as web:
        command, env = crawl_command(web, tmp_path, "seed=" + web.url("bad.test"), ROBOTSTXT_OBEY=False,
                                     SPIDER_MODULES="bad_spiders", LOG_LEVEL="DEBUG")
        command[command.index("web")] = "badrequests"
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=120, check=False)
        paths = [r.path for r in web.hits("bad.test")]
    fetched = set(paths)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-3000:]
    assert "Traceback" not in log
    lambda_url = web.url("bad.test", page_path(1))
    assert log.count(f"Request for {lambda_url} is kept in memory, not in the frontier") == 1
    meta_url = web.url("bad.test", page_path(2))
    assert log.count(f"Request for {meta_url} is kept in memory, not in the frontier") == 1
    assert "meta or cb_kwargs 'when' cannot be stored as JSON" in log
    # Each once: yielded again by /p/2.html, they are not fetched twice.
    assert "'frontier/not_durable': 2" in log
    assert {page_path(1), page_path(2), page_path(3)} <= fetched
    assert paths.count(page_path(1)) == 1 and paths.count(page_path(2)) == 1
