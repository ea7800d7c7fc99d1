"""Failures go through the frontier's retry chain, then become dead letters; a crawl with
a page that always fails still ends by itself."""

from __future__ import annotations

import itertools
import json
import socket
import subprocess
import sys
import threading
import time

from crawling import crawl_command
from redis_server import RedisServer
from testweb import Site, TestWeb, page_path

DELAYS = (1.0, 2.0, 4.0)
FAST = {"FRONTIER_RETRY_DELAYS": ",".join(str(d) for d in DELAYS), "ROBOTSTXT_OBEY": False}


def fetch_gaps(web, host, path):
    hits = sorted(web.hits(host, path), key=lambda r: r.start)
    return [b.start - a.end for a, b in itertools.pairwise(hits)]


def deadletters(web, tmp_path, *args):
    _, env = crawl_command(web, tmp_path)
    return subprocess.run([sys.executable, "-m", "scrapy", "deadletters", *args, "-s",
                           f"FRONTIER_DIR={tmp_path / 'state'}"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60, check=False)


def test_flaky_pages_are_retried_after_each_delay_and_a_dead_page_is_a_dead_letter(crawl, tmp_path):
    # 502 twice, then the page; a connection reset twice (Twisted itself retries a request
    # whose kept-alive connection drops at once, so the chain may see one drop or two).
    flaky, dropped, dead = page_path(1), page_path(2), page_path(5)
    site = Site("flaky.test", pages=6, status_sequences={flaky: [502, 502], dropped: [0, 0]},
                statuses={dead: 500})
    with TestWeb([site]) as web:
        result = crawl(web, tmp_path, "seeds=" + web.url("flaky.test"), CRAWL_ID="flaky", **FAST)
        gaps = {p: fetch_gaps(web, "flaky.test", p) for p in (flaky, dropped, dead)}
        letters = deadletters(web, tmp_path, "flaky")
        stored = {r["url"] for r in result.records}
    assert result.returncode == 0, result.log[-3000:]
    assert len(gaps[flaky]) == 2  # fetched 3 times, each retry after its delay, and stored
    assert all(g >= d - 0.01 for g, d in zip(gaps[flaky], DELAYS, strict=False))
    assert web.url("flaky.test", flaky) in stored
    assert web.url("flaky.test", dropped) in stored and max(gaps[dropped]) >= DELAYS[0] - 0.01
    assert result.stats["retry/failures/DownloadFailedError"] >= 1
    assert len(gaps[dead]) == 3  # fetched 4 times
    assert all(g >= d - 0.01 for g, d in zip(gaps[dead], DELAYS, strict=True))
    assert result.stats["retry/failures/500"] == 4 and result.stats["retry/failures/502"] == 2
    assert result.stats["frontier/dead_letters"] == 1
    assert "Giving up " + web.url("flaky.test", dead) + " after 4 attempts" in result.log
    assert letters.returncode == 0, letters.stderr
    [letter] = [json.loads(line) for line in letters.stdout.splitlines()]
    assert letter["url"] == web.url("flaky.test", dead) and letter["attempts"] == 4
    assert "500" in letter["error"]


def test_a_poison_page_ends_as_a_dead_letter_and_can_be_requeued(crawl, tmp_path):
    with TestWeb([Site("poison.test", pages=5)]) as web:
        options = {**FAST, "CRAWL_ID": "poison",
                   "ITEM_PIPELINES": json.dumps({"failing_pipeline.FailOnePage": 500})}
        result = crawl(web, tmp_path, "seeds=" + web.url("poison.test"), **options)
        poison = web.url("poison.test", page_path(3))
        fetched = len(web.hits("poison.test", page_path(3)))
        listed = deadletters(web, tmp_path, "poison")
        requeued = deadletters(web, tmp_path, "--requeue", "poison")
        again = crawl(web, tmp_path, "seeds=" + web.url("poison.test"), **options)
        refetched = len(web.hits("poison.test", page_path(3))) - fetched
    assert result.returncode == 0, result.log[-3000:]
    assert fetched == 4 and poison not in {r["url"] for r in result.records}
    assert len(result.records) == 4  # the others are stored
    assert [json.loads(line)["url"] for line in listed.stdout.splitlines()] == [poison]
    assert "No space left on device" in listed.stdout
    assert requeued.stdout.strip().endswith("1 dead letters queued again")
    assert again.returncode == 0 and refetched == 4  # a fresh chain, failing again


class LoopbackSocketServer:
    """A raw server on a free loopback port: each connection it accepts (at most ``limit``)
    goes to ``serve``; ``close`` closes the port and the connections ``serve`` kept."""

    limit = 100

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        for _ in range(self.limit):  # bounded
            try:
                connection, _ = self.sock.accept()
            except OSError:
                return
            self.serve(connection)

    def serve(self, connection: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.sock.close()
        for connection in self.held:
            connection.close()


class SilentServer(LoopbackSocketServer):
    """Accepts connections and never answers."""

    def serve(self, connection: socket.socket) -> None:
        self.held.append(connection)


def test_hosts_that_refuse_stall_or_do_not_exist_are_held_whole_then_dead_lettered(crawl, tmp_path):
    with socket.socket() as probe:  # a port nobody listens on: refused
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    silent = SilentServer()
    try:
        with TestWeb([Site("fine.test", pages=3)]) as web:
            seeds = [web.url("fine.test")]
            for base in (f"http://127.0.0.1:{closed}/", f"http://localhost:{silent.port}/", "http://gone.test/"):
                seeds += [base, base + "second"]
            (tmp_path / "seeds.txt").write_text("\n".join(seeds) + "\n")
            started = time.monotonic()
            result = crawl(web, tmp_path, f"seeds={tmp_path / 'seeds.txt'}", CRAWL_ID="down",
                           FRONTIER_RETRY_DELAYS="2,4", DOWNLOAD_TIMEOUT=1, ROBOTSTXT_OBEY=False,
                           NETWORK_ALLOW="127.0.0.0/8")
            took = time.monotonic() - started
            letters = [json.loads(line) for line in deadletters(web, tmp_path, "down").stdout.splitlines()]
    finally:
        silent.close()
    assert result.returncode == 0, result.log[-3000:]
    assert took < 2 * (2 + 4) + 3 * 1 + 15  # the chain, the timeouts and the crawl's start and end
    assert len(result.records) == 3  # the healthy host is all stored
    assert sorted(letter["url"] for letter in letters) == sorted(seeds[1:])
    assert "given up after its last try" in result.log
    assert result.stats["frontier/hosts_held"] >= 6  # each of 3 hosts held for each of 2 delays


def test_a_host_whose_robots_txt_never_answers_ends_as_dead_letters(crawl, tmp_path):
    """robots.txt unreachable through ROBOTSTXT_RETRY_TIMES attempts: the host's URLs are
    dead letters with the reason, not dropped; a healthy host beside it is all stored."""
    down = Site("down.test", pages=1, statuses={"/robots.txt": 503})
    with TestWeb([Site("fine.test", pages=3), down]) as web:
        seeds = [web.url("fine.test"), web.url("down.test"), web.url("down.test", "/second")]
        (tmp_path / "seeds.txt").write_text("\n".join(seeds) + "\n")
        result = crawl(web, tmp_path, f"seeds={tmp_path / 'seeds.txt'}", CRAWL_ID="robots",
                       ROBOTSTXT_OBEY=True, ROBOTSTXT_RETRY_TIMES=2, ROBOTSTXT_RETRY_DELAY=0.2)
        robots_fetches = len(web.hits("down.test", "/robots.txt"))
        letters = [json.loads(line) for line in deadletters(web, tmp_path, "robots").stdout.splitlines()]
    assert result.returncode == 0, result.log[-3000:]
    assert len(result.records) == 3
    assert robots_fetches == 2  # exactly ROBOTSTXT_RETRY_TIMES attempts
    assert sorted(letter["url"] for letter in letters) == sorted(seeds[1:])
    assert all(letter["error"].startswith("RobotsUnreachable") for letter in letters)
    assert result.stats["frontier/dead_letters"] == 2
    assert "Host down.test given up after its last try" in result.log


def test_workers_of_a_redis_crawl_share_one_hold_per_host(tmp_path):
    """Two workers, one host that never answers: the run of unanswered fetches is the
    crawl's, so the host gets one probe per delay of the chain, not one per worker."""
    (tmp_path / "redis").mkdir()
    server = RedisServer(tmp_path / "redis").start()
    silent = SilentServer()
    try:
        with TestWeb([Site("fine.test", pages=3)]) as web:
            seeds = [web.url("fine.test")] + [f"http://localhost:{silent.port}/{i}" for i in range(4)]
            options = {"REDIS_URL": server.url, "CRAWL_ID": "held", "FRONTIER_RETRY_DELAYS": "2,4",
                       "DOWNLOAD_TIMEOUT": 1, "ROBOTSTXT_OBEY": False, "NETWORK_ALLOW": "127.0.0.0/8",
                       "STORE_URI": tmp_path / "store"}
            workers = []
            for name in ("a", "b"):
                home = tmp_path / name
                home.mkdir()
                command, env = crawl_command(web, home, "seeds=" + ",".join(seeds), **options)
                workers.append(subprocess.Popen(command, cwd=home, env=env, stdout=subprocess.DEVNULL,
                                                stderr=(home / "log").open("w")))
            codes = [worker.wait(timeout=60) for worker in workers]
            letters = subprocess.run([sys.executable, "-m", "scrapy", "deadletters", "held", "-s",
                                      f"REDIS_URL={server.url}"], cwd=tmp_path / "a", env=env,
                                     capture_output=True, text=True, timeout=60, check=False)
    finally:
        silent.close()
        server.stop()
    assert codes == [0, 0], [(tmp_path / n / "log").read_text()[-2000:] for n in "ab"]
    assert len(silent.held) == 3  # the first fetch and one probe after each of the 2 delays
    urls = sorted(json.loads(line)["url"] for line in letters.stdout.splitlines())
    assert urls == sorted(seeds[1:]), letters.stderr


class NotHttpServer(LoopbackSocketServer):
    """Answers every connection with a status line that is not HTTP."""

    limit = 20
    answered = 0

    def serve(self, connection: socket.socket) -> None:
        with connection:
            connection.recv(65536)
            connection.sendall(b"ICY 200 OK\r\nContent-Length: 0\r\n\r\n")
            self.answered += 1


def test_a_response_that_is_not_http_is_skipped_once_not_retried_as_a_host_down(crawl, tmp_path):
    # A 200 KB header line made Twisted's parser close the connection: the fetch failed as
    # ConnectionDone, like a server that hung up, was retried and ended a dead letter.
    huge = page_path(1)
    site = Site("huge.test", pages=4, statuses={huge: (200, {"X-Huge": "a" * 200_000})})
    not_http = NotHttpServer()
    try:
        with TestWeb([site]) as web:
            other = f"http://127.0.0.1:{not_http.port}/"
            (tmp_path / "seeds.txt").write_text(f"{web.url('huge.test')}\n{other}\n")
            result = crawl(web, tmp_path, f"seeds={tmp_path / 'seeds.txt'}", CRAWL_ID="bad",
                           NETWORK_ALLOW="127.0.0.0/8", **FAST)
            fetches = len(web.hits("huge.test", huge))
            letters = deadletters(web, tmp_path, "bad").stdout
    finally:
        not_http.close()
    assert result.returncode == 0, result.log[-3000:]
    assert fetches == 1 and not_http.answered == 1
    assert result.log.count(f"Skipped {web.url('huge.test', huge)}: its response is not HTTP "
                            "(HeaderLineTooLong: a header line longer than 16384 bytes)") == 1
    assert result.log.count(f"Skipped {other}: its response is not HTTP (BadResponseVersion") == 1
    assert result.stats["download/bad_response/HeaderLineTooLong"] == 1
    assert result.stats["download/bad_response/BadResponseVersion"] == 1
    assert "frontier/retries" not in result.stats and "frontier/dead_letters" not in result.stats
    assert letters == "" and "Traceback" not in result.log
    assert {r["url"] for r in result.records} == {web.url("huge.test", page_path(i)) for i in (0, 2, 3)}
