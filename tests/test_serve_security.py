"""`scrapy serve` as an attacker meets it: cross-site and DNS-rebinding requests, private
seeds, floods of crawls, stalled clients and nested JSON, all against a real service."""

from __future__ import annotations

import json
import os
import socket
import stat
import time
import urllib.request
from pathlib import Path

import pytest
from serve_service import Service
from testweb import Site, TestWeb

SLOW = {"POLITENESS_MIN_DELAY": 1, "POLITENESS_DELAY_FACTOR": 0}
HOSTS = [f"h{i}.test" for i in range(6)]


def plain_env() -> dict[str, str]:
    """No test web: the service's own NETWORK_ALLOW is empty, as an operator's is."""
    return {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    running = Service(tmp_path_factory.mktemp("serve-security"), plain_env()).start()
    yield running
    running.stop()
    running.stop_crawls()


def crawl_count(service: Service) -> int:
    status, listed = service.json("GET", "/crawls")
    assert status == 200, listed
    return len(listed["crawls"])


def test_a_token_is_made_at_the_first_start_kept_private_and_required(service):
    token = service.data_dir / "serve" / "token"
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    assert f"/#token={service.token}" in service.log()
    assert service.json("GET", "/crawls", token=False)[0] == 401
    assert service.json("GET", "/metrics", headers={"Authorization": "Bearer " + "x" * 43})[0] == 401
    assert service.request("GET", "/", token=False)[0] == 200  # the console's shell holds no data
    service.restart()  # the same token again, not printed again
    assert service.json("GET", "/crawls")[0] == 200
    assert service.log().count("/#token=") == 1


@pytest.mark.parametrize("headers", [
    # What a page on another site can send without a preflight: a "simple" request.
    {"Content-Type": "text/plain", "Origin": "http://evil.example"},
    {"Content-Type": "application/x-www-form-urlencoded", "Origin": "http://evil.example"},
    {"Content-Type": "multipart/form-data; boundary=x"},
    {"Content-Type": "text/plain"},
    {},
    # Even with the token and JSON: another origin changes nothing.
    {"Content-Type": "application/json", "Origin": "http://evil.example"},
    {"Content-Type": "application/json", "Origin": "null"},
    {"Content-Type": "application/json", "Origin": "http://127.0.0.1.evil.example"},
])
def test_cross_site_requests_start_no_crawl(service, headers):
    before = crawl_count(service)
    body = json.dumps({"seeds": ["http://10.9.9.9/"]}).encode()  # refused anyway: nothing leaves
    request_headers = {"Content-Type": "", **headers}
    status, data, _ = service.request("POST", "/crawls", body, headers=request_headers)
    assert status in (403, 415), data
    assert "error" in json.loads(data)
    assert crawl_count(service) == before


@pytest.mark.parametrize("host", ["evil.example", "evil.example:%d", "127.0.0.1.nip.io:%d", "10.0.0.1:%d",
                                  "127.0.0.1:1"])
def test_a_rebinding_page_cannot_read_the_api(service, host):
    host = host % service.port if "%d" in host else host
    for path in ("/crawls", "/pages?url=http://a.test/", "/metrics", "/openapi.json"):
        status, data, _ = service.request("GET", path, headers={"Host": host})
        assert status == 400 and "does not name this service" in json.loads(data)["error"], (path, data)


def test_the_services_own_names_are_accepted(service):
    for host in (f"127.0.0.1:{service.port}", f"localhost:{service.port}", "localhost"):
        assert service.request("GET", "/crawls", headers={"Host": host})[0] == 200
    own = {"Origin": f"http://localhost:{service.port}"}
    status, answer = service.json("POST", "/crawls", {"seeds": ["http://10.1.2.3/"]}, headers=own)
    assert status == 400 and "address guard" in answer["error"]  # past the Origin check, to the seed's


@pytest.mark.parametrize(("seed", "reason"), [
    ("http://127.0.0.1:6080/crawls", "loopback"),
    ("http://localhost/", "loopback"),
    ("http://0x7f000001/", "loopback"),
    ("http://2130706433/", "loopback"),
    ("http://[::1]/", "loopback"),
    ("http://[::ffff:10.0.0.1]/", "private"),
    ("http://10.0.0.1/", "private"),
    ("http://192.168.1.1/admin", "private"),
    ("http://172.16.0.5/", "private"),
    ("http://169.254.169.254/latest/meta-data/", "metadata"),
    ("http://169.254.1.1/", "link_local"),
    ("http://[fe80::1]/", "link_local"),
    ("http://0.0.0.0/", "unspecified"),
    ("http://100.64.0.1/", "shared"),
])
def test_a_private_seed_is_refused_naming_the_guard(service, seed, reason):
    before = crawl_count(service)
    status, answer = service.json("POST", "/crawls", {"seeds": [seed]})
    assert status == 400, answer
    assert "address guard" in answer["error"] and f"({reason})" in answer["error"]
    assert crawl_count(service) == before


def test_nested_or_oversized_json_is_a_400(service):
    for body in (b"[" * 100_000 + b"]" * 100_000, b'{"seeds": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
                 b'{"settings": ' + b'{"a": ' * 50_000 + b"1" + b"}" * 50_001):
        status, data, _ = service.request("POST", "/crawls", body)
        assert status == 400, data[:300]
    status, data, _ = service.request("POST", "/crawls", b" " * (2 * 1024 * 1024))
    assert status == 400 and b"the limit is" in data


def threads_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError("no Threads line")


def test_300_stalled_clients_cost_no_threads_and_are_cut_off(tmp_path):
    service = Service(tmp_path / "serve", plain_env(), SERVE_READ_TIMEOUT=3).start()
    stalled: list[socket.socket] = []
    try:
        for i in range(300):  # half a request each: the headers never end
            sock = socket.create_connection(("127.0.0.1", service.port), timeout=10)
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n" if i % 2 else
                         b"POST /crawls HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 100\r\n\r\n{")
            stalled.append(sock)
        started = time.monotonic()
        status, body, _ = service.request("GET", "/metrics")
        answered = time.monotonic() - started
        threads = threads_of(service.process.pid)
        print(f"/metrics with 300 stalled clients: {answered:.3f} s, {threads} threads")
        assert status == 200 and b"process_resident_memory_bytes" in body
        assert answered < 2 and threads <= 80
        deadline = time.monotonic() + 15  # SERVE_READ_TIMEOUT: each is closed by the service
        for sock in stalled:
            sock.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                rest = sock.recv(65536)
            except TimeoutError:
                pytest.fail("a stalled client was kept past the read timeout")
            except ConnectionResetError:
                rest = b""
            assert rest == b"" or rest.startswith(b"HTTP/1.1 4"), rest[:100]
    finally:
        for sock in stalled:
            sock.close()
        service.stop()


def test_an_empty_token_on_loopback_is_allowed_with_a_warning(tmp_path):
    service = Service(tmp_path / "serve", plain_env(), SERVE_TOKEN="").start()
    try:
        assert service.json("GET", "/crawls", token=False) == (200, {"crawls": []})
        assert "WARNING: SERVE_TOKEN is empty" in service.log()
        # Without a token the other checks still hold.
        status, _, _ = service.request("POST", "/crawls", b'{"seeds": ["http://10.0.0.1/"]}', token=False,
                                       headers={"Content-Type": "text/plain", "Origin": "http://evil.example"})
        assert status in (403, 415)
    finally:
        service.stop()


@pytest.fixture(scope="module")
def web():
    with TestWeb([Site(host, pages=40) for host in HOSTS]) as web:
        yield web


def crawl_processes(service: Service) -> int:
    """Crawl processes of this service alive now (the registry's pids, checked in /proc)."""
    _, listed = service.json("GET", "/crawls")
    alive = 0
    for crawl in listed["crawls"]:
        try:
            pid = service.registry_pid(crawl["crawl_id"])
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes() if pid else b""
        except OSError:
            continue
        alive += f"CRAWL_ID={crawl['crawl_id']}".encode() in cmdline.split(b"\0")
    return alive


def test_at_most_max_crawls_run_the_rest_queue_then_429(web, tmp_path):
    env = web.subprocess_env()
    env.pop("SCRAPY_SETTINGS_MODULE", None)
    service = Service(tmp_path / "serve", env, TWISTED_DNS_RESOLVER="testweb.LoopbackResolver",
                      SERVE_MAX_CRAWLS=2, SERVE_MAX_QUEUED=2).start()
    try:
        answers = [service.json("POST", "/crawls", {"seeds": [web.url(host)], "settings": SLOW})
                   for host in HOSTS]
        assert [status for status, _ in answers] == [201, 201, 201, 201, 429, 429], answers
        assert [a["state"] for _, a in answers[:4]] == ["running", "running", "queued", "queued"]
        assert "SERVE_MAX_CRAWLS" in answers[4][1]["error"]
        most = 0
        for _ in range(20):
            most = max(most, crawl_processes(service))
            time.sleep(0.1)
        assert most <= 2
        first, third = answers[0][1]["crawl_id"], answers[2][1]["crawl_id"]
        assert service.json("POST", f"/crawls/{first}/stop")[0] == 200
        service.wait_for(first, ("stopped",), timeout=60)
        assert service.wait_for(third, ("running",), timeout=30)["started_at"]
        assert crawl_processes(service) <= 2
    finally:
        service.stop()
        service.stop_crawls()


def test_the_console_cannot_be_framed_and_runs_only_its_own_scripts(service):
    for path in ("/", "/dashboard.js", "/dashboard.css"):
        request = urllib.request.Request(service.url + path)
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=30) as answer:
            headers = answer.headers
        assert headers["X-Frame-Options"] == "DENY" and headers["X-Content-Type-Options"] == "nosniff"
        assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
        assert "default-src 'self'" in headers["Content-Security-Policy"]
