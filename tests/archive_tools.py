"""The archive tools the WARC tests run (pywb, wacz), from the venv .ci/run makes for them
(pywb pins redis<3, which the crawler's own venv cannot hold), and Debian's chromium,
driven by Playwright, that shows their replays."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from redis_server import end_process, free_port

from crawler.extract.html import normalize_whitespace

REPO = Path(__file__).resolve().parent.parent
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--no-proxy-server", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


def tool(name: str) -> str:
    """The path of an archive tool; a skip where none is installed, a failure under .ci/run."""
    directory = Path(os.environ.get("ARCHIVE_TOOLS_BIN", REPO / ".venv-archive" / "bin"))
    path = directory / name
    if path.exists():
        return str(path)
    message = f"{name} not found in {directory} (.ci/run installs pywb and wacz in .venv-archive)"
    if os.environ.get("ARCHIVE_TOOLS_REQUIRED"):
        pytest.fail(message)
    pytest.skip(message)


def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        if os.environ.get("ARCHIVE_TOOLS_REQUIRED"):
            pytest.fail("Debian's chromium is not installed")
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    return path


class Browser:
    """Headless Debian chromium driven by Playwright; each page in a context of its own."""

    def __enter__(self) -> Browser:
        path = chromium()
        sync_api = pytest.importorskip("playwright.sync_api")
        self._playwright = sync_api.sync_playwright().start()
        try:
            self._browser = self._playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS,
                                                              timeout=60_000)
        except BaseException:
            self._playwright.stop()
            raise
        return self

    def visible_text(self, url: str) -> str:
        """The text chromium renders for ``url`` (its ``innerText``: no scripts, no styles),
        less pywb's banner (frameless replay), whitespace normalised."""
        page = self._browser.new_page()
        try:
            page.goto(url, wait_until="load", timeout=60_000)
            text = page.evaluate(_VISIBLE_TEXT)
        finally:
            page.context.close()
        return normalize_whitespace(text)

    def __exit__(self, *exc: object) -> None:
        self._browser.close()
        self._playwright.stop()


_VISIBLE_TEXT = """() => {
    for (const element of document.querySelectorAll('[id^="_wb"]')) element.remove();
    return document.body ? document.body.innerText : document.documentElement.innerText;
}"""


class Wayback:
    """pywb's ``wayback`` over a collection of the given WARC files, on a free loopback port:
    indexed by pywb (``wb-manager add``) or, given ``index``, with that CDXJ index (ours)."""

    def __init__(self, directory: Path, warcs: list[Path], index: list[str] | None = None) -> None:
        self.directory = directory
        self.warcs = warcs
        self.index = index
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> Wayback:
        self.directory.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
        manager = tool("wb-manager")
        subprocess.run([manager, "init", "crawl"], cwd=self.directory, env=env, check=True,
                       capture_output=True, timeout=120)
        # Frameless: the browser shows the page itself, not pywb's frame around it.
        (self.directory / "config.yaml").write_text("framed_replay: false\n")
        collection = self.directory / "collections" / "crawl"
        if self.index is None:
            subprocess.run([manager, "add", "crawl", *map(str, self.warcs)], cwd=self.directory, env=env,
                           check=True, capture_output=True, timeout=120)
        else:
            for warc in self.warcs:
                shutil.copy(warc, collection / "archive" / warc.name)
            lines = "".join(line + "\n" for line in sorted(self.index))
            (collection / "indexes" / "index.cdxj").write_text(lines)
        log = (self.directory / "wayback.log").open("w")
        self.process = subprocess.Popen([tool("wayback"), "-p", str(self.port), "-b", "127.0.0.1"],
                                        cwd=self.directory, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/", timeout=2).close()
                return self
            except OSError:
                if self.process.poll() is not None:
                    break
                time.sleep(0.2)
        self.__exit__()
        raise RuntimeError("wayback did not start: " + (self.directory / "wayback.log").read_text()[-2000:])

    def replay_url(self, timestamp: str, url: str) -> str:
        """The replay of ``url`` as of ``timestamp``."""
        return f"http://127.0.0.1:{self.port}/crawl/{timestamp}/{url}"

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            end_process(self.process)
            self.process = None
