"""`scrapy serve` over real HTTP: crawls started, followed, stopped and looked into through
the API, on the embedded frontier and on Redis, against a loopback test web."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from prometheus_client.parser import text_string_to_metric_families
from redis_server import RedisServer
from scrapy.settings import Settings
from serve_service import Service
from testweb import Site, TestWeb

from crawler.commands.serve import forwarded_settings
from crawler.store.files import LocalStore, iter_records
from crawler.store.warc import read_page

SITES = [Site("a.test", pages=20, fanout=3), Site("stop.test", pages=40),
         Site("alive.test", pages=12), Site("dead.test", pages=40), Site("r.test", pages=15),
         Site("resume.test", pages=30)]
FAST = {"POLITENESS_MIN_DELAY": 0, "POLITENESS_DELAY_FACTOR": 0}
SLOW = {"POLITENESS_MIN_DELAY": 0.5, "POLITENESS_DELAY_FACTOR": 0}
BOUNDS = ("storage", "cpu", "network", "politeness", "idle")


@pytest.fixture(scope="module")
def web():
    with TestWeb(SITES) as web:
        yield web


# Outside this directory, the crawler's commands come with its settings module.
CRAWLER_SETTINGS = {**os.environ, "SCRAPY_SETTINGS_MODULE": "crawler.settings"}


def service_env(web: TestWeb) -> dict[str, str]:
    env = web.subprocess_env()
    env["SCRAPY_SETTINGS_MODULE"] = "crawler.settings"  # installing the package adds no command
    return env


@pytest.fixture(scope="module", params=["embedded", "redis"])
def service(request, web, tmp_path_factory):
    """One service per backend for the module; its crawls resolve .test names to loopback."""
    # Given to the crawls too: one verdict of what bounds them a second.
    settings = {"TWISTED_DNS_RESOLVER": "testweb.LoopbackResolver", "LOGSTATS_INTERVAL": 1}
    redis = None
    if request.param == "redis":
        redis = RedisServer(tmp_path_factory.mktemp("redis")).start()
        settings |= {"REDIS_URL": redis.url, "SCHEDULER_IDLE_BEFORE_CLOSE": 1}
    running = Service(tmp_path_factory.mktemp(f"serve-{request.param}"), service_env(web), **settings).start()
    running.backend = request.param
    yield running
    running.stop()
    running.stop_crawls()
    if redis is not None:
        redis.stop()


def stored_pages(data_dir: Path, host: str) -> Counter:
    store = LocalStore(data_dir / "crawl-data")
    return Counter(r["url"] for r in iter_records(store) if urlsplit(r["url"]).hostname == host)


@pytest.fixture(scope="module")
def finished(service, web):
    """A crawl of a.test through the API, run to its end: (crawl id, its last answer)."""
    host = "a.test" if service.backend == "embedded" else "r.test"
    status, created = service.json("POST", "/crawls", {"seeds": [web.url(host)], "settings": FAST})
    assert status == 201, created
    return created["crawl_id"], service.wait_for(created["crawl_id"], ("finished", "failed", "stopped"))


def test_a_crawl_through_the_api_ends_finished_with_the_counts_the_store_holds(service, web, finished):
    crawl_id, crawl = finished
    assert crawl["state"] == "finished", crawl
    host = urlsplit(crawl["seeds"][0]).hostname
    stored = stored_pages(service.data_dir, host)
    assert set(stored) == web.reachable(crawl["seeds"]) and max(stored.values()) == 1
    assert crawl["stored"] == crawl["fetched"] == len(stored)
    assert (crawl["queued"], crawl["failed"], crawl["dead_letters"], crawl["leased"]) == (0, 0, 0, 0)
    assert crawl["started_at"] <= crawl["finished_at"]
    status, listed = service.json("GET", "/crawls")
    assert status == 200 and crawl_id in [c["crawl_id"] for c in listed["crawls"]]
    status, activity = service.json("GET", f"/crawls/{crawl_id}/activity")  # the console's view
    assert status == 200, activity
    assert activity["stats"]["status_codes"]["200"] >= crawl["stored"] and activity["stats"]["bytes"] > 0
    assert activity["bound"] is None and activity["dead_letters"] == []  # ended; none given up
    assert any("Spider closed (finished)" in line for line in activity["log"])


def test_pages_are_found_through_the_index_with_the_url_normalised(service, web, finished):
    _, crawl = finished
    seed = crawl["seeds"][0]
    host = urlsplit(seed).hostname
    page = web.url(host, "/p/4.html")
    typed = page.replace(f"http://{host}", f"HTTP://{host.upper()}") + "?utm_source=x#top"
    status, record = service.json("GET", "/pages?url=" + quote(typed, safe=""))
    assert status == 200, record
    assert record["url"] == page and record["status"] == 200 and len(record["content_sha256"]) == 64
    assert record["warc"]["file"].startswith("warc/") and record["text"]["length"] > 0
    html, text = read_page(LocalStore(record["store"]), record)
    path = "/pages?url=" + quote(page, safe="")
    assert service.request("GET", path + "&content=html")[:2] == (200, html)
    status, body, content_type = service.request("GET", path + "&content=text")
    assert (status, body.decode(), content_type) == (200, text, "text/plain; charset=utf-8")
    status, missing = service.json("GET", "/pages?url=" + quote(web.url("a.test", "/nowhere"), safe=""))
    assert status == 404 and "not stored" in missing["error"]


def test_metrics_give_each_crawl_its_frontier_counts(service, finished):
    crawl_id, crawl = finished
    status, body, content_type = service.request("GET", "/metrics")
    assert status == 200 and content_type.startswith("text/plain")
    text = body.decode()
    label = f'{{crawl_id="{crawl_id}"}}'
    assert f"crawler_stored_total{label} {float(crawl['stored'])}" in text
    assert f"crawler_fetched_total{label} {float(crawl['fetched'])}" in text
    assert f"crawler_queued{label} 0.0" in text
    assert f'crawler_crawl_state{{crawl_id="{crawl_id}",state="finished"}} 1.0' in text
    buckets = re.search(rf'crawler_fetch_seconds_count{{crawl_id="{crawl_id}"}} (\S+)', text)
    assert buckets and float(buckets.group(1)) == crawl["fetched"] + crawl["failed"]


BAD_BODIES = [
    (b"{nope", "not JSON"),
    (b"[1, 2]", "JSON object"),
    (b"{}", '"seeds" is required'),
    (b'{"seeds": "http://a.test/"}', '"seeds" is required'),
    (b'{"seeds": ["ftp://a.test/"]}', "'ftp://a.test/': scheme 'ftp' is not http or https"),
    (b'{"seeds": ["a.test"]}', "did you mean http://a.test ?"),
    (b'{"seeds": ["seeds.txt"]}', "'seeds.txt': a file name"),
    (b'{"seeds": ["http://a.test/"], "scope": "everywhere"}', "scope must be one of"),
    (b'{"seeds": ["http://a.test/"], "max_pages": "ten"}', '"max_pages" must be a whole number'),
    (b'{"seeds": ["http://a.test/"], "max_pages": -1}', "max_pages must be a whole number >= 0"),
    (b'{"seeds": ["http://a.test/"], "setings": {}}', "unknown field(s) 'setings'"),
    (b'{"seeds": ["http://a.test/"], "settings": {"ITEM_PIPELINES": {}}}', "not allowed: ITEM_PIPELINES"),
    (b'{"seeds": ["http://a.test/"], "settings": {"STORE_URI": "/etc"}}', "not allowed: STORE_URI"),
    (b'{"seeds": ["http://a.test/"], "settings": {"DEPTH_LIMIT": "deep"}}', "DEPTH_LIMIT = 'deep': must be"),
    (b'{"seeds": ["http://a.test/"], "settings": {"SITEMAP_FOLLOW": 1}}', "SITEMAP_FOLLOW = 1: must be true"),
    (b'{"seeds": ["http://a.test/"], "settings": {"FRONTIER_RETRY_DELAYS": []}}', "FRONTIER_RETRY_DELAYS"),
    (b'{"seeds": ["http://a.test/"], "settings": []}', '"settings" must be an object'),
]


@pytest.mark.parametrize(("body", "message"), BAD_BODIES)
def test_a_bad_crawl_request_gets_400_naming_what_is_wrong(service, body, message):
    status, data, content_type = service.request("POST", "/crawls", body)
    assert status == 400 and content_type.startswith("application/json")
    error = json.loads(data)["error"]
    assert message in error and "Traceback" not in error


def test_other_bad_requests_get_clear_errors(service):
    status, answer = service.json("POST", "/crawls", {"seeds": ["http://a.test/" + "x" * 2_000_000]})
    assert status == 400 and "the limit is" in answer["error"]
    # The id is quoted whole: the message lost its closing quote ("no crawl '2099...).
    assert service.json("GET", "/crawls/20990101-000000-abcdef") == (
        404, {"error": "no crawl '20990101-000000-abcdef'"})
    assert service.json("GET", "/crawls/..%2f..%2fetc")[0] == 404
    assert service.json("GET", "/nothing")[0] == 404
    assert service.json("GET", "/pages") == (400, {"error": "query.url: Field required"})
    assert service.json("GET", "/pages?url=http://a.test/&url=http://b.test/")[1]["error"] == (
        "give one url: /pages?url=U")
    status, answer = service.json("GET", "/pages?url=http://a.test/&content=pdf")
    assert status == 400 and "query.content: Input should be 'html' or 'text'" in answer["error"]
    assert "not an http(s) URL" in service.json("GET", "/pages?url=ftp://a.test/")[1]["error"]
    assert service.json("GET", "/crawls/20990101-000000-abcdef/stop")[0] == 405
    assert service.json("POST", "/crawls", {"seeds": [[[[]]]] * 2})[0] == 400


def bound_of(service: Service, crawl_id: str, timeout: float = 20) -> dict:
    """The crawl's first bound verdict, as the dashboard gets it."""
    for _ in range(int(timeout / 0.2)):
        status, activity = service.json("GET", f"/crawls/{crawl_id}/activity")
        assert status == 200, activity
        if activity["bound"]:
            return activity["bound"]
        time.sleep(0.2)
    raise AssertionError(f"no bound verdict for {crawl_id} in {timeout} s")


def test_stop_ends_a_crawl_cleanly_with_its_state_kept(service, web):
    if service.backend != "embedded":
        pytest.skip("one stop is enough: the backend only holds the counts")
    status, created = service.json("POST", "/crawls", {"seeds": [web.url("stop.test")], "settings": SLOW})
    assert status == 201, created
    service.wait_for(created["crawl_id"], ("running",), fetched=2)
    assert bound_of(service, created["crawl_id"])["bound"] in BOUNDS
    metrics = service.request("GET", "/metrics")[1].decode()
    shown = re.findall(rf'crawler_bound{{bound="(\w+)",crawl_id="{created["crawl_id"]}"}} 1.0', metrics)
    assert len(shown) == 1 and shown[0] in BOUNDS, metrics
    status, stopping = service.json("POST", f"/crawls/{created['crawl_id']}/stop")
    assert status == 200, stopping
    crawl = service.wait_for(created["crawl_id"], ("stopped", "finished", "failed"))
    assert crawl["state"] == "stopped", crawl
    assert crawl["queued"] > 0 and crawl["stored"] == len(stored_pages(service.data_dir, "stop.test")) < 40


def test_a_restarted_service_still_knows_its_crawls(web, tmp_path):
    service = Service(tmp_path / "serve", service_env(web),
                      TWISTED_DNS_RESOLVER="testweb.LoopbackResolver").start()
    try:
        ids = {}
        for host in ("alive.test", "dead.test"):
            status, created = service.json("POST", "/crawls", {"seeds": [web.url(host)], "settings": SLOW})
            assert status == 201, created
            ids[host] = created["crawl_id"]
        dead = service.wait_for(ids["dead.test"], ("running",), fetched=1)
        service.stop(signal.SIGKILL)  # the service dies; its crawls go on...
        os.kill(service.registry_pid(dead["crawl_id"]), signal.SIGKILL)  # ...but one of them dies too
        service.start()
        crawl = service.wait_for(ids["dead.test"], ("failed",), timeout=30)
        assert "[scrapy." in crawl["error"] and crawl["finished_at"]  # the tail of its log
        crawl = service.wait_for(ids["alive.test"], ("finished", "failed"), timeout=60)
        assert crawl["state"] == "finished"
        assert crawl["stored"] == 12 == len(stored_pages(service.data_dir, "alive.test"))
    finally:
        service.stop()
        service.stop_crawls()


def test_binding_off_loopback_is_refused_without_a_token(tmp_path):
    done = subprocess.run([sys.executable, "-m", "scrapy", "serve", "--bind", "0.0.0.0", "--port", "1",
                           "-s", f"DATA_DIR={tmp_path}", "-s", "SERVE_TOKEN="], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False, env=CRAWLER_SETTINGS)
    assert done.returncode != 0
    assert "0.0.0.0 is not a loopback address: a token is required there" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_port_out_of_range_is_a_usage_error(tmp_path):
    # socket's bind raises OverflowError there, not OSError: it came out as a traceback.
    done = subprocess.run([sys.executable, "-m", "scrapy", "serve", "--port", "99999",
                           "-s", f"DATA_DIR={tmp_path}"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, check=False, env=CRAWLER_SETTINGS)
    assert done.returncode == 2
    assert "cannot listen on 127.0.0.1:99999: port must be 0-65535" in done.stderr
    assert "Traceback" not in done.stderr


def test_with_a_token_every_api_request_must_carry_it(web, tmp_path):
    service = Service(tmp_path / "serve", service_env(web), SERVE_TOKEN="s3cret").start()
    try:
        assert service.json("GET", "/crawls", token=False)[0] == 401
        assert service.json("GET", "/metrics", headers={"Authorization": "Bearer wrong"})[0] == 401
        assert service.json("POST", "/crawls", {"seeds": ["http://a.test/"]}, token=False)[0] == 401
        authorized = {"Authorization": "Bearer s3cret"}
        assert service.json("GET", "/crawls", headers=authorized) == (200, {"crawls": []})
        assert service.request("GET", "/", token=False)[0] == 200  # the console's shell: no data
    finally:
        service.stop()


def test_crawls_get_the_services_command_line_settings_but_not_its_token_or_logging():
    settings = Settings({"REDIS_URL": "redis://127.0.0.1:1/0"}, priority="project")
    settings.setdict({"TWISTED_DNS_RESOLVER": "testweb.LoopbackResolver", "SERVE_TOKEN": "s3cret",
                      "LOG_FILE": "serve.log", "DEPTH_LIMIT": 3}, priority="cmdline")
    assert forwarded_settings(settings) == {"TWISTED_DNS_RESOLVER": "testweb.LoopbackResolver",
                                            "DEPTH_LIMIT": "3"}


def answer(service: Service, method: str, path: str, body: bytes = b"") -> tuple[int, dict, dict]:
    """(status, headers, JSON body) of one request on a connection of its own."""
    connection = http.client.HTTPConnection("127.0.0.1", service.port, timeout=30)
    try:
        connection.request(method, path, body=body or None, headers={
            "Authorization": f"Bearer {service.token}", "Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), json.loads(response.read())
    finally:
        connection.close()


@pytest.mark.parametrize(("method", "path", "allow"), [
    # Every error is JSON; a 405 lists the methods of every route of that path.
    ("DELETE", "/crawls", "GET, POST"),
    ("PUT", "/crawls/20990101-000000-abcdef", "GET"),
    ("PATCH", "/crawls/20990101-000000-abcdef/stop", "POST"),
    ("DELETE", "/pages", "GET"),
    ("POST", "/metrics", "GET"),
    ("OPTIONS", "/", "GET"),
])
def test_a_method_a_path_does_not_take_is_a_json_405_naming_those_it_does(service, method, path, allow):
    status, headers, error = answer(service, method, path, b'{"crawl_id": "x"}')
    headers = {k.lower(): v for k, v in headers.items()}
    assert status == 405 and headers["allow"] == allow
    assert headers["content-type"].startswith("application/json")
    assert error == {"error": f"{method} is not allowed on {path}; it takes {allow}"}
    status, _, error = answer(service, "DELETE", "/nothing")
    assert (status, error) == (404, {"error": "no endpoint /nothing"})


def test_a_project_without_the_web_spider_is_told_at_start_not_per_crawl(tmp_path):
    # Its crawls run `scrapy crawl web` with the project's settings: each one failed.
    (tmp_path / "scrapy.cfg").write_text("[settings]\ndefault = mine\n")
    (tmp_path / "mine.py").write_text("SPIDER_MODULES = []\nADDONS = {'crawler.addon.PoliteCrawler': 0}\n"
                                      "COMMANDS_MODULE = 'crawler.commands'\n")
    env = {key: value for key, value in os.environ.items() if key != "SCRAPY_SETTINGS_MODULE"}
    done = subprocess.run([sys.executable, "-m", "scrapy", "serve", "--port", "0"], cwd=tmp_path,
                          env={**env, "PYTHONPATH": str(tmp_path)}, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "scrapy serve starts the 'web' spider" in done.stderr and "crawler.spiders" in done.stderr
    assert "Traceback" not in done.stderr


BOARD = Path(__file__).resolve().parent.parent / "docs" / "grafana-serve.json"
# Declared always, with a sample only once one is counted (a refusal, a dropped response),
# or while the crawl runs (its bound: test_stop_ends_a_crawl_cleanly... reads it then).
WHEN_COUNTED = {"crawler_guard_refused_total", "crawler_content_dropped_total",
                "crawler_content_dropped_types_total", "crawler_bound"}


def test_every_series_the_grafana_board_plots_exists(service, finished):
    crawl_id, _ = finished
    board = json.loads(BOARD.read_text(encoding="utf-8"))
    plotted = {name for panel in board["panels"] for target in panel["targets"]
               for name in re.findall(r"\b((?:crawler|process|python)_[a-z_]+)\b", target["expr"])}
    text = service.request("GET", "/metrics")[1].decode()
    families = list(text_string_to_metric_families(text))
    samples = {s.name for family in families for s in family.samples
               if s.name.startswith("process_") or s.labels.get("crawl_id") == crawl_id}
    declared = {family.name for family in families}
    assert len(plotted) >= 20
    for name in sorted(plotted):
        if name in WHEN_COUNTED:
            assert name.removesuffix("_total") in declared, name
        else:
            assert name in samples, f"{name} is plotted but /metrics has no such series"
    assert {"crawler_responses_total", "process_resident_memory_bytes",
            "crawler_response_bytes_total"} <= plotted
    statuses = [s for family in families for s in family.samples
                if s.name == "crawler_responses_total" and s.labels["crawl_id"] == crawl_id]
    assert statuses and all(s.value > 0 for s in statuses)
    assert "200" in {s.labels["status"] for s in statuses}


def test_a_crawl_resumed_outside_the_service_shows_its_own_numbers(service, web):
    # GET /crawls/{id} and /metrics showed the numbers from before the resume (3 stored
    # where scrapy crawlstats said 100): ended crawls' counts were cached.
    if service.backend != "embedded":
        pytest.skip("the documented resume command is the same on Redis")
    status, created = service.json("POST", "/crawls", {"seeds": [web.url("resume.test")], "settings": SLOW})
    assert status == 201, created
    crawl_id = created["crawl_id"]
    service.wait_for(crawl_id, ("running",), fetched=2)
    assert service.json("POST", f"/crawls/{crawl_id}/stop")[0] == 200
    before = service.wait_for(crawl_id, ("stopped",), timeout=60)
    assert before["stored"] < 30
    seeds = service.data_dir / "serve" / "seeds" / f"{crawl_id}.txt"
    log = (service.data_dir / f"resumed-{crawl_id}.log").open("wb")
    # The command docs/service.md gives, with the service's own -s settings.
    resumed = subprocess.Popen(
        [sys.executable, "-m", "scrapy", "crawl", "web", "-a", f"seeds={seeds}", "-s", f"CRAWL_ID={crawl_id}",
         "-s", f"DATA_DIR={service.data_dir}", "-s", "TWISTED_DNS_RESOLVER=testweb.LoopbackResolver",
         "-s", "TRAP_SOFT_404_PROBE=False", "-s", "POLITENESS_MIN_DELAY=0.3",
         "-s", "POLITENESS_DELAY_FACTOR=0"], cwd=service.data_dir, stdout=log, stderr=subprocess.STDOUT,
        env={**service.env, "SCRAPY_SETTINGS_MODULE": "crawler.settings"})  # outside a project
    try:
        running = service.wait_for(crawl_id, ("running",), timeout=60)  # followed as the service's own
        assert running["error"] is None
        assert resumed.wait(timeout=120) == 0
        crawl = service.wait_for(crawl_id, ("finished",), timeout=30)
    finally:
        if resumed.poll() is None:
            resumed.kill()
        log.close()
    counts = json.loads(subprocess.run(
        [sys.executable, "-m", "scrapy", "crawlstats", crawl_id, "-s", f"DATA_DIR={service.data_dir}"],
        cwd=service.data_dir, env={**service.env, "SCRAPY_SETTINGS_MODULE": "crawler.settings"},
        capture_output=True, text=True, timeout=60, check=True).stdout)
    assert crawl["stored"] == counts["stored"] == 30 > before["stored"]
    assert crawl["fetched"] == counts["fetched"]
    metrics = service.request("GET", "/metrics")[1].decode()
    assert f'crawler_stored_total{{crawl_id="{crawl_id}"}} 30.0' in metrics
    status, activity = service.json("GET", f"/crawls/{crawl_id}/activity")
    assert activity["stats"]["status_codes"]["200"] >= 30  # both runs' responses, summed
