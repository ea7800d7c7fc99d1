"""A real scrapyd on a free loopback port, in a directory of its own, for the tests."""

from __future__ import annotations

import configparser
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

from redis_server import end_process, free_port

REPO = Path(__file__).resolve().parent.parent
# No proxy: every request of these tests goes to 127.0.0.1.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def clean_env() -> dict[str, str]:
    """This environment without proxies, Scrapy project variables or the repository on
    ``PYTHONPATH``, so scrapyd's jobs run the deployed egg and its settings."""
    env = {k: v for k, v in os.environ.items()
           if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")
           and k not in ("SCRAPY_SETTINGS_MODULE", "SCRAPY_PROJECT")}
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
             if p and Path(p).resolve() != REPO]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


class Scrapyd:
    """``scrapyd`` run in ``home`` (which holds only its ``scrapyd.conf``), with its eggs,
    logs and dbs under ``var``; ``url`` is its HTTP API."""

    def __init__(self, directory: Path) -> None:
        self.home = directory / "home"
        self.var = directory / "var"
        self.home.mkdir(parents=True)
        self.var.mkdir(parents=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.output = self.var / "scrapyd.out"
        (self.home / "scrapyd.conf").write_text(
            "[scrapyd]\n"
            "bind_address = 127.0.0.1\n"
            f"http_port = {self.port}\n"
            "poll_interval = 0.5\n"
            "max_proc = 1\n"
            # No item feed (scrapyd's default): pages go to the store, and a Page's HTML is
            # bytes, which scrapyd's JSON lines feed cannot write.
            "items_dir =\n"
            + "".join(f"{name}_dir = {self.var / name}\n" for name in ("eggs", "logs", "dbs")),
            encoding="utf-8")
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 20) -> Scrapyd:
        executable = shutil.which("scrapyd", path=str(Path(sys.executable).parent)) or "scrapyd"
        with self.output.open("wb") as out:
            self.process = subprocess.Popen(
                [executable, "--pidfile", str(self.var / "twistd.pid")], cwd=self.home,
                env=clean_env(), stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self.get("daemonstatus.json")["status"] == "ok":
                    return self
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"scrapyd did not start: {self.log()[-3000:]}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None:
            end_process(self.process)
            self.process = None

    def log(self) -> str:
        return self.output.read_text(encoding="utf-8", errors="replace")

    def get(self, endpoint: str, **params: str) -> dict:
        query = "?" + urllib.parse.urlencode(params) if params else ""
        with _OPENER.open(self.url + endpoint + query, timeout=10) as response:
            return json.load(response)

    def post(self, endpoint: str, fields: list[tuple[str, str]]) -> dict:
        data = urllib.parse.urlencode(fields).encode()
        with _OPENER.open(self.url + endpoint, data=data, timeout=30) as response:
            return json.load(response)


def deploy(scrapyd: Scrapyd, directory: Path) -> subprocess.CompletedProcess:
    """``scrapyd-deploy`` in a copy of the project whose ``[deploy]`` url is this scrapyd."""
    project = directory / "project"
    shutil.copytree(REPO / "crawler", project / "crawler", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("setup.py", "README.md"):
        shutil.copy(REPO / name, project / name)
    config = configparser.ConfigParser()
    config.read(REPO / "scrapy.cfg", encoding="utf-8")
    config["deploy"]["url"] = scrapyd.url
    with (project / "scrapy.cfg").open("w", encoding="utf-8") as f:
        config.write(f)
    executable = shutil.which("scrapyd-deploy", path=str(Path(sys.executable).parent)) or "scrapyd-deploy"
    return subprocess.run([executable], cwd=project, env=clean_env(), capture_output=True, text=True,
                          timeout=120, check=False)
