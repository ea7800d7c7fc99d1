"""Where the service's crawls run: local child processes, or jobs of a scrapyd.

Both start ``scrapy crawl web`` with the crawl's id, the service's ``DATA_DIR`` and the
request's settings, stop it as Ctrl-C does (a clean close, resumable), and say how it
ended from its log: Scrapy's ``Spider closed (<reason>)`` line.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

from scrapy.utils.project import inside_project

from crawler.service.registry import Crawl
from crawler.service.spec import BadRequest

_CLOSED = re.compile(r"Spider closed \((\w+)\)")
# No proxy: the service talks to its scrapyd directly.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
LOG_TAIL_BYTES = 4000


def crawl_arguments(crawl: Crawl, seeds: str, data_dir: Path,
                    forwarded: dict[str, str]) -> list[tuple[str, str]]:
    """The spider arguments (``a``) and settings (``s``) of a crawl, as (kind, text)."""
    spec = crawl.spec
    pairs = [("a", f"seeds={seeds}"), ("a", f"scope={spec['scope']}"),
             ("a", f"max_pages={spec['max_pages']}")]
    # INFO at least: the service reads the crawl's end ("Spider closed (reason)") from its log.
    settings = {**forwarded, **spec["settings"], "CRAWL_ID": crawl.crawl_id, "DATA_DIR": str(data_dir),
                "LOG_LEVEL": "INFO"}
    return pairs + [("s", f"{name}={value}") for name, value in settings.items()]


def verdict(log: str, stop_requested: bool, exit_status: int | None = None) -> tuple[str, str | None]:
    """(state, error) of a crawl that ended with ``log``: finished when Scrapy closed the
    spider for a reason other than a shutdown, stopped when asked to (and it closed, or
    was stopped while starting, before its spider opened: exit 0, or the SIGINT itself),
    else failed with the log's tail."""
    closed = _CLOSED.findall(log)
    if closed and closed[-1] != "shutdown":
        return "finished", None
    if stop_requested and (closed or exit_status in (0, -signal.SIGINT)):
        return "stopped", None
    return "failed", log[-LOG_TAIL_BYTES:] or "no log"


class LocalBackend:
    """Each crawl is a child process (``python -m scrapy crawl web ...``) in its own session,
    so it outlives a restart of the service; its output goes to ``logs/<crawl id>.log``."""

    name = "local"

    def __init__(self, service_dir: Path, data_dir: Path, forwarded: dict[str, str]) -> None:
        self.service_dir = service_dir
        self.data_dir = data_dir
        self.forwarded = forwarded
        self.env = dict(os.environ)
        if not inside_project():  # the service started outside a project: the crawler's own settings
            self.env["SCRAPY_SETTINGS_MODULE"] = "crawler.settings"
        self._children: dict[str, subprocess.Popen] = {}

    def check(self, spec: dict) -> None:
        """Any crawl request the checks of :mod:`crawler.service.spec` pass can run here."""

    def log_path(self, crawl_id: str) -> Path:
        return self.service_dir / "logs" / f"{crawl_id}.log"

    def start(self, crawl: Crawl) -> dict:
        """Start the crawl; the registry values to record (pid, running)."""
        seeds = self.service_dir / "seeds" / f"{crawl.crawl_id}.txt"  # a URL may hold a comma
        seeds.parent.mkdir(parents=True, exist_ok=True)
        seeds.write_text("\n".join(crawl.spec["seeds"]) + "\n", encoding="utf-8")
        command = [sys.executable, "-m", "scrapy", "crawl", "web"]
        for kind, text in crawl_arguments(crawl, str(seeds), self.data_dir, self.forwarded):
            command += [f"-{kind}", text]
        log = self.log_path(crawl.crawl_id)
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                     env=self.env, start_new_session=True)
        self._children[crawl.crawl_id] = child
        return {"pid": child.pid, "state": "running"}

    def _alive(self, crawl: Crawl) -> bool:
        child = self._children.get(crawl.crawl_id)
        if child is not None:
            return child.poll() is None
        return crawl.pid is not None and self.runs(crawl.crawl_id, crawl.pid)

    @staticmethod
    def runs(crawl_id: str, pid: int) -> bool:
        """Whether process ``pid`` is a run of crawl ``crawl_id`` (its command line sets
        ``CRAWL_ID``): one started by an earlier run of the service, or outside it."""
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False
        return f"CRAWL_ID={crawl_id}".encode() in cmdline.split(b"\0")

    def stop(self, crawl: Crawl) -> None:
        if crawl.pid and self._alive(crawl):
            os.kill(crawl.pid, signal.SIGINT)  # Scrapy's clean shutdown, as Ctrl-C

    def poll(self, crawl: Crawl) -> dict | None:
        """The registry values once the crawl has ended, else None."""
        if self._alive(crawl):
            return None
        child = self._children.pop(crawl.crawl_id, None)
        exit_status = None if child is None else child.returncode
        state, error = verdict(self.log(crawl), crawl.stop_requested, exit_status)
        return {"state": state, "error": error, "exit_status": exit_status}

    def log(self, crawl: Crawl) -> str:
        try:
            with self.log_path(crawl.crawl_id).open("rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 65536))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""


class ScrapydBackend:
    """Each crawl is a job of the scrapyd at ``url`` (``schedule.json``, with the crawl id
    as its job id), its state read from ``listjobs.json``, stopped by ``cancel.json``."""

    name = "scrapyd"

    def __init__(self, url: str, project: str, data_dir: Path, forwarded: dict[str, str]) -> None:
        self.url = url.rstrip("/") + "/"
        self.project = project
        self.data_dir = data_dir
        self.forwarded = forwarded

    def _call(self, endpoint: str, fields: list[tuple[str, str]] | None = None) -> dict:
        if fields is None:
            request = self.url + endpoint + "?" + urllib.parse.urlencode({"project": self.project})
            data = None
        else:
            request, data = self.url + endpoint, urllib.parse.urlencode(fields).encode()
        with _OPENER.open(request, data=data, timeout=30) as response:
            answer = json.load(response)
        if answer.get("status") != "ok":
            raise RuntimeError(f"scrapyd {endpoint}: {answer.get('message', answer)}")
        return answer

    def check(self, spec: dict) -> None:
        """``BadRequest`` for a crawl scrapyd cannot be given."""
        if any("," in seed for seed in spec["seeds"]):
            raise BadRequest("scrapyd takes seeds as one comma-separated field: a seed with a comma "
                             "cannot go through it")

    def start(self, crawl: Crawl) -> dict:
        """Schedule the job; it stays queued until scrapyd runs it."""
        fields = [("project", self.project), ("spider", "web"), ("jobid", crawl.crawl_id)]
        seeds = ",".join(crawl.spec["seeds"])
        for kind, text in crawl_arguments(crawl, seeds, self.data_dir, self.forwarded):
            name, _, value = text.partition("=")
            fields.append(("setting", text) if kind == "s" else (name, value))
        return {"job": self._call("schedule.json", fields)["jobid"]}

    def stop(self, crawl: Crawl) -> None:
        self._call("cancel.json", [("project", self.project), ("job", crawl.job or crawl.crawl_id),
                                   ("signal", "INT")])

    def poll(self, crawl: Crawl) -> dict | None:
        jobs = self._call("listjobs.json")
        job = crawl.job or crawl.crawl_id
        if any(entry["id"] == job for entry in jobs["running"]):
            return {"state": "running"} if crawl.state == "queued" else None
        if any(entry["id"] == job for entry in jobs["pending"]):
            return None
        if not any(entry["id"] == job for entry in jobs["finished"]):
            return {"state": "failed", "error": "scrapyd no longer knows the job"}
        state, error = verdict(self.log(crawl), crawl.stop_requested)
        return {"state": state, "error": error}

    def log(self, crawl: Crawl) -> str:
        """The end of the job's log, as scrapyd serves it (``logs/<project>/web/<job>.log``)."""
        path = f"logs/{self.project}/web/{crawl.job or crawl.crawl_id}.log"
        try:
            with _OPENER.open(self.url + path, timeout=30) as response:
                return response.read().decode("utf-8", "replace")[-65536:]
        except OSError:
            return ""
