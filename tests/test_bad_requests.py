"""Requests a spider yields that the frontier cannot store are named once, counted and
skipped; the crawl goes on."""

from __future__ import annotations

import subprocess

from crawling import crawl_command
from testweb import Site, TestWeb, page_path


def test_unstorable_requests_are_warned_once_and_counted(tmp_path):
    with TestWeb([Site("bad.test", pages=4)]) as web:
        command, env = crawl_command(web, tmp_path, "seed=" + web.url("bad.test"), ROBOTSTXT_OBEY=False,
                                     SPIDER_MODULES="bad_spiders")
        command[command.index("web")] = "badrequests"
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=120, check=False)
        fetched = {r.path for r in web.hits("bad.test")}
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-3000:]
    assert "Traceback" not in log
    lambda_url = web.url("bad.test", page_path(1))
    assert log.count(f"Request for {lambda_url} not queued: its callback") == 1
    assert "'frontier/rejected/callback': 2" in log  # yielded by / and by /p/2.html
    assert page_path(1) not in fetched and page_path(3) in fetched  # the others go on
    meta_url = web.url("bad.test", page_path(2))
    assert log.count(f"Request for {meta_url}: meta['when'] cannot be stored as JSON") == 1
    assert page_path(2) in fetched and "'frontier/meta_dropped': 2" in log
