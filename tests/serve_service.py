"""A real ``scrapy serve`` on a free loopback port, started and stopped by the tests."""
# It listens on port 0 and logs the port it got: no window for another process to take it.

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_SERVING = re.compile(r"Serving crawls on http://127\.0\.0\.1:(\d+)/")
# No proxy: every request of these tests goes to 127.0.0.1.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Service:
    """``scrapy serve`` with ``DATA_DIR=data_dir``, its ``-s`` settings ``settings`` and
    environment ``env``; ``url`` is its API. ``restart()`` keeps the port and data.
    Requests carry the service's token (read from ``DATA_DIR/serve/token`` unless
    ``SERVE_TOKEN`` is given) and, when they have a body, a JSON content type. The test
    web's hosts (``TESTWEB_ADDRESSES`` in ``env``) are in ``NETWORK_ALLOW``: the service's
    seed check lets them through, as the crawls' guard does."""

    def __init__(self, data_dir: Path, env: dict[str, str], **settings: object) -> None:
        self.data_dir = data_dir
        # The crawler's commands come with its project settings (COMMANDS_MODULE); the
        # service runs outside any project directory.
        self.env = {"SCRAPY_SETTINGS_MODULE": "crawler.settings", **env}
        self.port = 0  # the one the service gets at its first start, kept by restart()
        self.command = [sys.executable, "-m", "scrapy", "serve",
                        "-s", f"DATA_DIR={data_dir}", "-s", "SERVE_POLL_INTERVAL=0.2",
                        # As the crawl harness: no soft-404 probe, so fetched counts are the pages.
                        "-s", "TRAP_SOFT_404_PROBE=False"]
        hosts = list(json.loads(env.get("TESTWEB_ADDRESSES", "{}")))
        if hosts and "NETWORK_ALLOW" not in settings:
            settings = {**settings, "NETWORK_ALLOW": ",".join(hosts)}
        for name, value in settings.items():
            self.command += ["-s", f"{name}={value}"]
        self.given_token = settings.get("SERVE_TOKEN")
        self.output = data_dir / "service.out"
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30) -> Service:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        logged = self.output.stat().st_size if self.output.exists() else 0
        with self.output.open("ab") as out:
            self.process = subprocess.Popen([*self.command, "--port", str(self.port)], cwd=self.data_dir,
                                            env=self.env, stdout=out, stderr=subprocess.STDOUT)
        for _ in range(int(timeout / 0.1)):
            serving = _SERVING.search(self.log()[logged:])
            if serving:
                self.port = int(serving.group(1))
                self.request("GET", "/openapi.json", token=False)  # answered (401): it is up
                return self
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"scrapy serve did not start: {self.log()[-3000:]}")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is not None:
            self.process.send_signal(sig)
            self.process.wait(timeout=20)
            self.process = None

    def stop_crawls(self) -> None:
        """Kill the crawl processes the service left running (they outlive it by design)."""
        registry = self.data_dir / "serve" / "registry.sqlite"
        if not registry.is_file():
            return
        db = sqlite3.connect(registry)
        try:
            rows = db.execute("SELECT crawl_id, pid FROM crawls WHERE pid IS NOT NULL").fetchall()
        finally:
            db.close()
        for crawl_id, pid in rows:
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if f"CRAWL_ID={crawl_id}".encode() in cmdline.split(b"\0"):
                os.kill(pid, signal.SIGKILL)

    def restart(self) -> None:
        self.stop(signal.SIGKILL)
        self.start()

    def registry_pid(self, crawl_id: str) -> int:
        """The process id the service recorded for a crawl (local back end)."""
        db = sqlite3.connect(self.data_dir / "serve" / "registry.sqlite")
        try:
            return db.execute("SELECT pid FROM crawls WHERE crawl_id = ?", (crawl_id,)).fetchone()[0]
        finally:
            db.close()

    def log(self) -> str:
        return self.output.read_text(encoding="utf-8", errors="replace")

    @property
    def token(self) -> str:
        if self.given_token is not None:
            return str(self.given_token)
        return (self.data_dir / "serve" / "token").read_text().strip()

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None, token: bool = True) -> tuple[int, bytes, str]:
        """(status, body, content type) of one request; with the token unless ``token`` is
        False or ``headers`` hold an Authorization."""
        headers = dict(headers or {})
        if token and self.token and "Authorization" not in headers:
            headers["Authorization"] = f"Bearer {self.token}"
        if method == "POST":
            headers.setdefault("Content-Type", "application/json")
        request = urllib.request.Request(self.url + path, data=body, method=method, headers=headers)
        try:
            with _OPENER.open(request, timeout=30) as response:
                return response.status, response.read(), response.headers.get("Content-Type", "")
        except urllib.error.HTTPError as error:
            return error.code, error.read(), error.headers.get("Content-Type", "")

    def json(self, method: str, path: str, value: object = None, **kwargs: object) -> tuple[int, dict]:
        body = (b"{}" if method == "POST" else None) if value is None else json.dumps(value).encode()
        status, data, _ = self.request(method, path, body, **kwargs)
        return status, json.loads(data)

    def wait_for(self, crawl_id: str, states: tuple[str, ...], timeout: float = 120,
                 fetched: int = 0) -> dict:
        """The crawl once it is in one of ``states`` (and has fetched at least ``fetched``)."""
        for _ in range(int(timeout / 0.2)):
            status, crawl = self.json("GET", f"/crawls/{crawl_id}")
            assert status == 200, crawl
            if crawl["state"] in states and crawl["fetched"] >= fetched:
                return crawl
            time.sleep(0.2)
        raise AssertionError(f"crawl {crawl_id} not {states} after {timeout} s: {crawl}\n"
                             + self.log()[-2000:])
