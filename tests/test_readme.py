"""The README's demo command does what the README says it does."""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
from pathlib import Path

from crawler.store.files import LocalStore, iter_records

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def demo_command() -> list[str]:
    """The parts of the first command under "## Set up", split on ``&&``."""
    setup = (REPO / "README.md").read_text().split("## Set up", 1)[1]
    command = re.search(r"```sh\n(.+?)\n```", setup, re.S).group(1)
    return [part.strip() for part in command.split("&&")]


def test_the_demo_command_crawls_the_pages_the_readme_says(tmp_path):
    install, serve, wait, crawl = demo_command()
    assert install == "pip install -e ." and wait.startswith("sleep")
    port = free_port()
    serve_args = shlex.split(serve.strip("()& ").replace("8080", str(port)))
    assert serve_args[:2] == ["python", "tests/testweb.py"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "SCRAPY_SETTINGS_MODULE": "crawler.settings"}
    server = subprocess.Popen([sys.executable, str(REPO / serve_args[1]), *serve_args[2:]],
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert server.stdout is not None and server.stdout.readline().startswith("testweb:")
        crawl_args = shlex.split(crawl.replace("8080", str(port)))
        assert crawl_args[:3] == ["scrapy", "crawl", "web"]
        done = subprocess.run([sys.executable, "-m", *crawl_args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=180, check=False)
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert done.returncode == 0, done.stderr[-3000:]
    records = list(iter_records(LocalStore(tmp_path / "crawl-data")))
    claimed = re.search(r"crawls its (\d+) pages into `crawl-data/`", (REPO / "README.md").read_text())
    assert claimed and len(records) == int(claimed.group(1))
    assert not any("/hidden/" in r["url"] for r in records)
    assert {r["url"].split("/")[2] for r in records} == {f"127.0.0.1:{port}"}
