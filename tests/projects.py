"""A fresh Scrapy project of someone else's (``scrapy startproject``) to plug the crawler into."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from crawling import REPO

ADDON_LINE = 'ADDONS = {"crawler.addon.PoliteCrawler": 0}'


def start_project(tmp_path: Path, spider_source: str, *settings_lines: str) -> Path:
    """``scrapy startproject shop`` with ``settings_lines`` appended and one spider of its own."""
    subprocess.run([sys.executable, "-m", "scrapy", "startproject", "shop", str(tmp_path / "shop")],
                   check=True, capture_output=True, cwd=tmp_path)
    root = tmp_path / "shop"
    with (root / "shop" / "settings.py").open("a", encoding="utf-8") as settings:
        settings.write("\n" + "\n".join(settings_lines) + "\n")
    (root / "shop" / "spiders" / "own.py").write_text(spider_source, encoding="utf-8")
    return root


def scrapy(project: Path, *args: str, env: dict[str, str] | None = None,
           timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``scrapy ARGS`` in the project, with this repository importable."""
    environment = dict(os.environ if env is None else env)
    environment["PYTHONPATH"] = ":".join(filter(None, [environment.get("PYTHONPATH"), str(REPO)]))
    return subprocess.run([sys.executable, "-m", "scrapy", *args], cwd=project, capture_output=True,
                          text=True, timeout=timeout, env=environment, check=False)
# The crawler's commands (page, crawlstats, crawls, ..., and the checked crawl and settings).
COMMANDS_LINE = 'COMMANDS_MODULE = "crawler.commands"'
