"""Every command reads the crawl it names with the settings it is given (-s, S3 included),
``scrapy crawls`` lists the crawls, and a refusal is one clear line."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
from crawling import REPO, crawl_command
from redis_server import RedisServer
from test_s3 import CREDENTIALS, make_bucket
from testweb import Site, TestWeb

from crawler.context.crawl_id import derive_crawl_id
from crawler.frontier.api import Entry
from crawler.frontier.backends.embedded.frontier import EmbeddedFrontier
from crawler.frontier.backends.redis.opening import open_redis_frontier


def _env() -> dict[str, str]:
    """This project's settings, and no AWS_* variable: what a command reads comes from -s."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["SCRAPY_SETTINGS_MODULE"] = "crawler.settings"
    env["PYTHONPATH"] = ":".join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def scrapy(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "scrapy", *args], cwd=cwd, env=env or _env(),
                          capture_output=True, text=True, timeout=120, check=False)


def _crawl(web: TestWeb, tmp_path: Path, *args: str, **settings: object) -> subprocess.CompletedProcess[str]:
    command, env = crawl_command(web, tmp_path, *args, **settings)
    env = {k: v for k, v in env.items() if not k.startswith("AWS_")}
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
                          check=False)


def test_scrapy_page_reads_an_s3_store_with_the_settings_it_is_given(tmp_path, moto):
    make_bucket(moto, "tools")
    s3 = {"STORE_URI": "s3://tools/c1", "AWS_ENDPOINT_URL": moto, **CREDENTIALS}
    with TestWeb([Site("s3.test", pages=3)]) as web:
        done = _crawl(web, tmp_path, "seeds=" + web.url("s3.test"), STORE_SPOOL_DIR=tmp_path / "spool", **s3)
        url = web.url("s3.test")
    assert done.returncode == 0, done.stderr[-3000:]
    settings = [arg for name, value in s3.items() for arg in ("-s", f"{name}={value}")]
    record = scrapy(tmp_path, "page", url, *settings)
    assert record.returncode == 0, record.stderr[-3000:]
    assert f'"url": "{url}"' in record.stdout
    text = scrapy(tmp_path, "page", "--text", url, *settings)
    assert text.returncode == 0 and text.stdout.strip(), text.stderr[-3000:]


def test_scrapy_crawls_lists_each_crawl_with_its_state(tmp_path):
    where = ["-s", f"FRONTIER_DIR={tmp_path / 'state'}"]
    assert "no crawls in" in scrapy(tmp_path, "crawls", *where).stderr
    with TestWeb([Site("one.test", pages=4)]) as web:
        done = _crawl(web, tmp_path, "seeds=" + web.url("one.test"))
    assert done.returncode == 0, done.stderr[-3000:]
    states = list((tmp_path / "state").glob("*/frontier.sqlite"))
    assert len(states) == 1
    crawl_id = states[0].parent.name
    listed = scrapy(tmp_path, "crawls", *where)
    assert listed.returncode == 0, listed.stderr
    header, row = listed.stdout.splitlines()
    assert header.split()[:4] == ["CRAWL", "STATE", "PAGES", "QUEUED"]
    assert row.split()[:4] == [crawl_id, "finished", "4", "0"]
    frontier = EmbeddedFrontier(states[0])  # as a running crawl holds it
    try:
        running = scrapy(tmp_path, "crawls", *where).stdout
        assert "running" in running and f"(process {os.getpid()})" in running
    finally:
        frontier.close()
    none = scrapy(tmp_path, "deadletters", crawl_id, *where)
    assert none.returncode == 0 and f"crawl {crawl_id} has no dead letters" in none.stderr


@pytest.mark.parametrize("under_scrapyd", [False, True])
def test_a_crawl_in_use_is_one_usage_error_naming_it_and_its_process(tmp_path, under_scrapyd):
    crawl_id = "busy-crawl"
    state = tmp_path / "crawl-state" / crawl_id / "frontier.sqlite"
    frontier = EmbeddedFrontier(state)
    env = _env()
    log = tmp_path / "job.log"
    extra = ["-s", f"LOG_FILE={log}", "-a", "_job=job-1"] if under_scrapyd else []  # as scrapyd 1.6
    try:
        done = scrapy(tmp_path, "crawl", "web", "-a", "seeds=http://127.0.0.1:9/",
                      "-s", f"CRAWL_ID={crawl_id}", "-s", f"DATA_DIR={tmp_path}", *extra, env=env)
    finally:
        frontier.close()
    assert done.returncode == 2, done.stderr[-3000:]
    said = f"crawl {crawl_id} is running in process {os.getpid()} ("
    errors = [line for line in done.stderr.splitlines() if ": error: " in line]  # scrapy: or __main__.py:
    assert len(errors) == 1 and said in errors[0] and "CRAWL_ID" in errors[0], done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "Engine slot" not in done.stderr
    if under_scrapyd:
        logged = [line for line in log.read_text().splitlines() if " ERROR: " in line]
        assert len(logged) == 1 and said in logged[0]


def test_a_scrapyd_job_without_data_dir_says_where_its_data_goes(tmp_path):
    with TestWeb([Site("job.test", pages=1)]) as web:
        command, env = crawl_command(web, tmp_path, "seeds=" + web.url("job.test"))
        command = [*command, "-s", "FRONTIER_DIR=crawl-state"]
        done = subprocess.run(command, cwd=tmp_path, env={**env, "SCRAPY_JOB": "job-1"}, capture_output=True,
                              text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    warned = [line for line in done.stderr.splitlines() if "WARNING" in line and "DATA_DIR is not" in line]
    assert len(warned) == 1 and f"FRONTIER_DIR {tmp_path / 'crawl-state'}" in warned[0]


def test_after_ctrl_c_the_log_says_the_same_command_resumes_and_the_rerun_says_it_resumes(tmp_path):
    with TestWeb([Site("slow.test", pages=40, latency=0.3)]) as web:
        command, env = crawl_command(web, tmp_path, "seeds=" + web.url("slow.test"), ROBOTSTXT_OBEY=False)
        process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)
        try:
            deadline = time.monotonic() + 60
            while len(web.hits("slow.test")) < 3 and time.monotonic() < deadline:
                time.sleep(0.1)
            process.send_signal(signal.SIGINT)
            log, _ = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
        again = subprocess.run([*command, "-s", "CLOSESPIDER_PAGECOUNT=1"], cwd=tmp_path, env=env,
                               capture_output=True, text=True, timeout=120, check=False)
    assert re.search(r"Crawl web-\w+ stopped, \d+ URLs left: the same command resumes it", log), log[-3000:]
    assert re.search(r"Resuming the crawl web-\w+: \d+ URLs done, \d+ queued to fetch", again.stderr), \
        again.stderr[-3000:]


def test_scrapy_crawls_lists_the_crawls_in_redis(tmp_path):
    server = RedisServer(tmp_path).start()
    try:
        client = redis.Redis.from_url(server.url)
        frontier = open_redis_frontier([client], "shared")
        frontier.add([Entry(1, "a.test", 0, '{"url": "http://a.test/"}'),
                      Entry(2, "a.test", 0, '{"url": "http://a.test/b"}')])
        frontier.count("stored", 3)
        listed = scrapy(tmp_path, "crawls", "-s", f"REDIS_URL={server.url}")
        client.close()
    finally:
        server.stop()
    assert listed.returncode == 0, listed.stderr[-3000:]
    rows = [line.split() for line in listed.stdout.splitlines()]
    assert rows[1][:4] == ["shared", "stopped", "3", "2"], listed.stdout


def test_a_project_spiders_crawl_in_use_is_refused_the_same_way(tmp_path):
    (tmp_path / "plain.py").write_text("import scrapy\n\n\nclass Plain(scrapy.Spider):\n    name = 'plain'\n"
                                       "    start_urls = ['http://127.0.0.1:9/']\n")
    (tmp_path / "project.py").write_text("SPIDER_MODULES = ['plain']\nCOMMANDS_MODULE = 'crawler.commands'\n"
                                         "ADDONS = {'crawler.addon.PoliteCrawler': 0}\n")
    env = {**_env(), "SCRAPY_SETTINGS_MODULE": "project", "PYTHONPATH": f"{tmp_path}:{REPO}"}
    crawl_id = derive_crawl_id("plain", ["http://127.0.0.1:9/"])
    frontier = EmbeddedFrontier(tmp_path / "crawl-state" / crawl_id / "frontier.sqlite")
    try:
        done = scrapy(tmp_path, "crawl", "plain", "-s", f"DATA_DIR={tmp_path}", env=env)
    finally:
        frontier.close()
    assert done.returncode == 2, done.stderr[-3000:]
    assert f"crawl {crawl_id} is running in process {os.getpid()}" in done.stderr


SCRIPT = """
import sys
from scrapy.crawler import CrawlerProcess
from crawler.spiders.web import WebSpider

process = CrawlerProcess({"ADDONS": {"crawler.addon.PoliteCrawler": 0}, "CRAWL_ID": sys.argv[1],
                          "DATA_DIR": sys.argv[2], "LOG_LEVEL": "INFO"})
crawler = process.create_crawler(WebSpider)
process.crawl(crawler, seeds="http://127.0.0.1:9/")
process.start()
print("finish_reason", crawler.stats.get_value("finish_reason"))
"""


def test_a_crawl_in_use_started_from_a_script_ends_with_one_error_line(tmp_path):
    crawl_id = "busy-script"
    frontier = EmbeddedFrontier(tmp_path / "crawl-state" / crawl_id / "frontier.sqlite")
    try:
        done = subprocess.run([sys.executable, "-c", SCRIPT, crawl_id, str(tmp_path)], cwd=tmp_path,
                              env=_env(), capture_output=True, text=True, timeout=120)
    finally:
        frontier.close()
    assert done.returncode == 0, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if " ERROR: " in line]
    assert len(errors) == 1 and f"Crawl {crawl_id} is running in process {os.getpid()}" in errors[0], \
        done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert "finish_reason crawl_state_in_use" in done.stdout
