"""Tests of the test web's server (tests/testweb.py): the request log and its timing measures,
keep-alive, several loopback addresses, the demo web and the command line."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from testweb import Site, demo_web
from testweb_fetch import OPENER, fetch

HERE = Path(__file__).resolve().parent


# ----------------------------------------------------------------------------- log/timing


def test_latency_and_log(web_factory) -> None:
    web = web_factory([Site("slow.test", pages=3, latency=0.15)])
    before = time.monotonic()
    status, _, body = fetch(web, web.page_url("slow.test", 1))
    elapsed = time.monotonic() - before
    assert status == 200
    assert elapsed >= 0.15
    (record,) = web.hits("slow.test")
    assert before <= record.start <= record.end <= time.monotonic()
    assert record.end - record.start >= 0.15
    assert (record.host, record.path, record.method, record.status) == (
        "slow.test",
        "/p/1.html",
        "GET",
        200,
    )
    assert record.bytes_sent == len(body)
    assert record.client_port > 0
    assert record.headers["Host"] == f"slow.test:{web.port}"
    fetch(web, web.url("slow.test", "/p/2.html?utm_source=x"))
    assert web.hits(path="/p/2.html")[0].query == "utm_source=x"
    assert web.max_in_flight("slow.test") == 1
    assert web.min_gap("slow.test") >= 0
    assert web.min_start_gap("slow.test") >= 0.15


def test_concurrency_measures(web_factory) -> None:
    web = web_factory([Site("slow.test", pages=5, latency=0.3)])
    threads = [
        threading.Thread(target=fetch, args=(web, web.page_url("slow.test", i))) for i in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert len(web.hits("slow.test")) == 4
    assert web.max_in_flight("slow.test") >= 2
    assert web.min_gap("slow.test") < 0
    assert web.max_in_flight("other.test") == 0


def test_keep_alive_and_stop(web_factory) -> None:
    web = web_factory([Site("a.test", pages=3)])
    conn = http.client.HTTPConnection("127.0.0.1", web.port, timeout=5)
    try:
        for i in (1, 2):
            conn.request("GET", f"/p/{i}.html", headers={"Host": "a.test"})
            response = conn.getresponse()
            assert response.status == 200
            response.read()
        for _ in range(40):
            conn.request("HEAD", "/", headers={"Host": "a.test"})
            conn.getresponse().read()
        ports = {r.client_port for r in web.hits("a.test")}
        assert len(ports) == 1
        assert web.max_in_flight("a.test") == 1  # sequential requests never overlap
        assert web.min_gap("a.test") >= 0
        assert [r.method for r in web.log] == ["GET", "GET"] + ["HEAD"] * 40
        web.stop()
        with pytest.raises((OSError, http.client.HTTPException)):
            conn.request("GET", "/", headers={"Host": "a.test"})
            conn.getresponse().read()
    finally:
        conn.close()


def test_second_loopback_address(web_factory) -> None:
    try:
        web = web_factory([Site("a.test", pages=2), Site("b.test", pages=2, address="127.0.0.2")])
    except OSError as error:  # pragma: no cover - platform without 127.0.0.0/8 routing
        pytest.skip(f"cannot bind 127.0.0.2: {error}")
    assert web.addresses == ["127.0.0.1", "127.0.0.2"]
    assert fetch(web, web.url("b.test"))[0] == 200
    assert web.hits("b.test")[0].server_address == "127.0.0.2"
    env = web.subprocess_env({"PYTHONPATH": "/x", "http_proxy": "http://proxy:1"})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(HERE), "/x"]
    assert "http_proxy" not in env
    assert json.loads(env["TESTWEB_ADDRESSES"])["b.test"] == "127.0.0.2"


# ----------------------------------------------------------------------------- demo / CLI


def test_demo_web() -> None:
    with demo_web(0) as web:
        assert [s.host for s in web.sites] == ["127.0.0.1", "b.test", "c.test"]
        truth = web.reachable([web.url("127.0.0.1")], {"127.0.0.1"})
        assert len(truth) == 100
        assert fetch(web, web.url("127.0.0.1", "/p/99.html"))[0] == 200
        assert len(web.reachable([web.url("127.0.0.1")])) == 200


def test_cli_serves_and_exits_on_sigterm() -> None:
    process = subprocess.Popen(
        [sys.executable, str(HERE / "testweb.py"), "--port", "0", "--hosts", "2", "--pages", "10"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(2)]
        seed = lines[1].split("seed: ", 1)[1].strip()
        assert seed.startswith("http://127.0.0.1:")
        with OPENER.open(seed, timeout=10) as response:
            assert response.status == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=5)
