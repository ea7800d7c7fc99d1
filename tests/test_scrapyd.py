"""scrapyd for real: deploy the egg with scrapyd-deploy, schedule `web`, find the pages under DATA_DIR."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter

import pytest
from scrapyd_server import REPO, Scrapyd, clean_env, deploy
from serve_service import Service
from testweb import Site, TestWeb

from crawler.frontier.backends.embedded.frontier import EmbeddedFrontier
from crawler.store.files import LocalStore, iter_records


@pytest.fixture
def scrapyd(tmp_path):
    server = Scrapyd(tmp_path / "scrapyd")
    try:
        yield server.start()
    finally:
        server.stop()


def wait_finished(scrapyd: Scrapyd, job: str, timeout: float = 90) -> dict:
    """The job's entry in ``listjobs.json`` once it is finished (polled every 0.5 s)."""
    for _ in range(int(timeout / 0.5)):
        jobs = scrapyd.get("listjobs.json", project="crawler")
        for entry in jobs["finished"]:
            if entry["id"] == job:
                return entry
        time.sleep(0.5)
    raise AssertionError(f"job {job} not finished after {timeout} s: {jobs}")


def test_scrapyd_runs_web_spider_and_stores_pages_under_data_dir(scrapyd, tmp_path):
    deployed = deploy(scrapyd, tmp_path)
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    assert '"status": "ok"' in deployed.stdout, deployed.stdout + deployed.stderr
    data_dir = tmp_path / "data"  # not there yet: the crawl makes it
    with TestWeb([Site("127.0.0.1", pages=20, broken_links=1)]) as web:
        seed = web.url("127.0.0.1")
        scheduled = scrapyd.post("schedule.json", [
            ("project", "crawler"), ("spider", "web"), ("seeds", seed),
            ("setting", f"DATA_DIR={data_dir}"),
            ("setting", "POLITENESS_MIN_DELAY=0"), ("setting", "POLITENESS_DELAY_FACTOR=0"),
        ])
        assert scheduled["status"] == "ok", scheduled
        finished = wait_finished(scrapyd, scheduled["jobid"])
        expected = web.reachable([seed])
    job_log = (scrapyd.var / "logs" / "crawler" / "web" / f"{scheduled['jobid']}.log").read_text()
    assert "Spider closed (finished)" in job_log, job_log[-3000:]
    assert " ERROR: " not in job_log, job_log[-3000:]
    assert finished["log_url"].endswith(f"{scheduled['jobid']}.log")

    stored = Counter(record["url"] for record in iter_records(LocalStore(data_dir / "crawl-data")))
    assert set(stored) == expected
    assert max(stored.values()) == 1
    assert len(list((data_dir / "crawl-state").glob("*/frontier.sqlite"))) == 1
    # scrapyd's working directory holds its configuration and nothing else.
    assert sorted(p.name for p in scrapyd.home.iterdir()) == ["scrapyd.conf"]
    # `scrapy page`, run anywhere with the same DATA_DIR, reads what the job stored.
    env = clean_env()
    env.update(PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env["PYTHONPATH"]])),
               SCRAPY_SETTINGS_MODULE="crawler.settings")
    page = subprocess.run([sys.executable, "-m", "scrapy", "page", seed, "-s", f"DATA_DIR={data_dir}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert page.returncode == 0, page.stderr
    assert json.loads(page.stdout)["url"] == seed


def test_scrapy_serve_runs_its_crawls_on_scrapyd(scrapyd, tmp_path):
    deployed = deploy(scrapyd, tmp_path)
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    data_dir = tmp_path / "serve"
    with TestWeb([Site("127.0.0.1", pages=15)]) as web:
        env = web.subprocess_env()
        env["SCRAPY_SETTINGS_MODULE"] = "crawler.settings"  # scrapy serve is this project's command
        service = Service(data_dir, env, SERVE_SCRAPYD_URL=scrapyd.url).start()
        created = {}
        try:
            status, created = service.json("POST", "/crawls", {
                "seeds": [web.url("127.0.0.1")],
                "settings": {"POLITENESS_MIN_DELAY": 0, "POLITENESS_DELAY_FACTOR": 0}})
            assert status == 201 and created["state"] in ("queued", "running"), created
            crawl = service.wait_for(created["crawl_id"], ("finished", "failed", "stopped"))
            expected = web.reachable([web.url("127.0.0.1")])
        finally:
            if "crawl_id" in created:  # a job that outlived a failure is not left to run on
                service.json("POST", f"/crawls/{created['crawl_id']}/stop")
            service.stop()
    assert crawl["state"] == "finished" and crawl["backend"] == "scrapyd", crawl
    jobs = scrapyd.get("listjobs.json", project="crawler")
    assert [job["id"] for job in jobs["finished"]] == [created["crawl_id"]]  # the crawl id is the job id
    stored = Counter(record["url"] for record in iter_records(LocalStore(data_dir / "crawl-data")))
    assert set(stored) == expected and crawl["stored"] == crawl["fetched"] == len(stored) == 15


def test_a_job_of_a_crawl_in_use_fails_with_one_error_and_one_without_data_dir_is_warned(scrapyd, tmp_path):
    deployed = deploy(scrapyd, tmp_path)
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    data_dir = tmp_path / "data"
    holder = EmbeddedFrontier(data_dir / "crawl-state" / "busy" / "frontier.sqlite")  # as a running crawl
    try:
        busy = scrapyd.post("schedule.json", [
            ("project", "crawler"), ("spider", "web"), ("seeds", "http://127.0.0.1:9/"),
            ("setting", f"DATA_DIR={data_dir}"), ("setting", "CRAWL_ID=busy")])
        wait_finished(scrapyd, busy["jobid"])
    finally:
        holder.close()
    busy_log = (scrapyd.var / "logs" / "crawler" / "web" / f"{busy['jobid']}.log").read_text()
    errors = [line for line in busy_log.splitlines() if " ERROR: " in line]
    assert len(errors) == 1 and f"crawl busy is running in process {os.getpid()}" in errors[0], busy_log
    assert "Traceback" not in busy_log
    with TestWeb([Site("127.0.0.1", pages=1)]) as web:
        plain = scrapyd.post("schedule.json", [
            ("project", "crawler"), ("spider", "web"), ("seeds", web.url("127.0.0.1")),
            ("setting", "POLITENESS_MIN_DELAY=0")])
        wait_finished(scrapyd, plain["jobid"])
    plain_log = (scrapyd.var / "logs" / "crawler" / "web" / f"{plain['jobid']}.log").read_text()
    warned = [line for line in plain_log.splitlines() if " WARNING: DATA_DIR is not set" in line]
    assert len(warned) == 1 and str(scrapyd.home / "crawl-state") in warned[0], plain_log[-3000:]
