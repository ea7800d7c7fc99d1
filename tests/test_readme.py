"""The README's demo does what it says, and its sample outputs are the program's."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

from crawler.store.files import LocalStore, iter_records

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env() -> dict[str, str]:
    """This virtualenv's ``python`` and ``scrapy`` first on PATH, this project's settings."""
    return {**os.environ, "PATH": f"{BIN}:{os.environ.get('PATH', '')}", "PYTHONPATH": str(REPO),
            "SCRAPY_SETTINGS_MODULE": "crawler.settings"}


def block_after(marker: str, fence: str = "```sh") -> str:
    """The first fenced block after ``marker`` in the README."""
    rest = README.split(marker, 1)[1]
    return re.search(re.escape(fence) + r"\n(.+?)\n\s*```", rest, re.S).group(1)


def test_the_demo_crawls_the_pages_refuses_hidden_and_stops_its_server(tmp_path):
    install, *script = block_after("## Set up").splitlines()
    assert install == "pip install -e ." and script[0].startswith("python tests/testweb.py --port 8080 &")
    port = free_port()
    shell = "\n".join(script).replace("8080", str(port))
    shell = shell.replace("tests/testweb.py", str(REPO / "tests/testweb.py"))
    process = subprocess.Popen(["bash", "-c", shell], cwd=tmp_path, env=env(), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        log, _ = process.communicate(timeout=240)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 0, log[-3000:]
    assert "testweb: stopped" in log
    with socket.socket() as s:  # nobody listens there any more
        assert s.connect_ex(("127.0.0.1", port)) != 0
    records = list(iter_records(LocalStore(tmp_path / "crawl-data")))
    claimed = re.search(r"crawls its (\d+) pages into\s+`crawl-data/`", README)
    assert claimed and len(records) == int(claimed.group(1))
    set_up = README.split("## Set up")[1][:2000]
    for stat in re.findall(r"`('(?:store/pages|robotstxt/forbidden)': \d+)`", set_up):
        assert stat in log, stat
    assert not any("/hidden/" in r["url"] for r in records)
    assert {r["url"].split("/")[2] for r in records} == {f"127.0.0.1:{port}"}
    sample = json.loads(block_after("every file is a valid gzip stream", "```json"))
    record = next(r for r in records if r["url"].endswith("/p/1.html"))
    assert set(record) == set(sample)
    for name, value in sample.items():
        assert value is None or record[name] is None or type(value) is type(record[name]), name


def test_the_bad_seeds_sample_is_what_scrapy_crawl_prints(tmp_path):
    sample = block_after("- **Bad seeds**", "  ```").splitlines()
    seeds = re.findall(r"^\s+'([^']+)':", "\n".join(sample), re.M)
    done = subprocess.run([str(BIN / "scrapy"), "crawl", "web", "-a", "seeds=" + ",".join(seeds)], cwd=REPO,
                          env=env(), capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2
    printed = done.stderr.splitlines()
    first = printed.index(sample[0].strip())
    assert [line.rstrip() for line in printed[first:first + len(sample)]] == [
        line.rstrip()[2:] if line.startswith("  ") else line for line in sample]


def test_the_plan_sample_is_what_scrapy_plan_prints():
    sample = block_after("## Sizing a crawl", "```").splitlines()
    assert sample[0] == "$ scrapy plan"
    done = subprocess.run([str(BIN / "scrapy"), "plan"], cwd=REPO, env=env(), capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.rstrip("\n").splitlines() == sample[1:]


def _format_of(path: str, start: str) -> re.Pattern[str]:
    """The log line a ``logger.info("<start>...", ...)`` call in ``path`` writes, as a pattern."""
    source = (REPO / path).read_text(encoding="utf-8")
    text = re.search(r'"(' + re.escape(start) + r'[^"]*)"', source).group(1)
    return re.compile("INFO: " + re.escape(text).replace("%s", ".+?") + "$")


def test_the_log_lines_shown_are_the_programs():
    guard = next(line for line in README.splitlines() if line.startswith("INFO: Address guard refused"))
    assert _format_of("crawler/middlewares/address_guard.py", "Address guard refused").match(guard)
    bound = next(line for line in README.splitlines() if line.startswith("INFO: Crawl bound:"))
    assert _format_of("crawler/extensions/bound.py", "Crawl bound:").match(bound)


def test_the_feed_schema_lists_the_fields_of_the_documented_item():
    schema = json.loads((REPO / "docs" / "page-item.schema.json").read_text(encoding="utf-8"))
    items = (REPO / "docs" / "items.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `(\w+)` \|", items, re.M))
    assert documented == set(schema["properties"])
