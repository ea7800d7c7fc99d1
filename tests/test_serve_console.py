"""The operator's console in a real browser: Playwright drives Debian's chromium through
a crawl started from the form, watched, stopped, its dead letter requeued, and resumed.
The screenshot in docs/ is made here, during the crawl."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import pytest
from serve_service import Service
from testweb import Site, TestWeb, page_path

pytestmark = pytest.mark.browser
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--no-proxy-server",
        "--disable-dev-shm-usage"]
SCREENSHOT = Path(__file__).resolve().parent.parent / "docs" / "serve-console.png"
DEAD = page_path(4)


@pytest.fixture(scope="module")
def browser():
    playwright = pytest.importorskip("playwright.sync_api")
    if not shutil.which(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    with playwright.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, timeout=60_000)
        yield launched
        launched.close()


def counted(page, name: str) -> int:
    return int(page.locator(f'#counts [data-count="{name}"] b').inner_text())


def wait_until(condition, timeout: float, what: str) -> None:
    for _ in range(int(timeout / 0.25)):
        if condition():
            return
        time.sleep(0.25)
    raise AssertionError(f"not {what} after {timeout} s")


def test_a_crawl_is_started_watched_stopped_requeued_and_resumed_from_the_console(browser, tmp_path):
    site = Site("console.test", pages=60, fanout=3, statuses={DEAD: 500}, binary_links=True)
    with TestWeb([site, Site("other.test", pages=3)]) as web:
        env = web.subprocess_env()
        env.pop("SCRAPY_SETTINGS_MODULE", None)
        service = Service(tmp_path / "serve", env, TWISTED_DNS_RESOLVER="testweb.LoopbackResolver").start()
        context = browser.new_context(viewport={"width": 1400, "height": 1300})
        try:
            page = context.new_page()
            page.goto(f"{service.url}/#token={service.token}")
            page.get_by_label("Seeds").fill(web.url("console.test") + "\n")
            page.get_by_label("Min delay (s)").fill("0.25")
            page.get_by_label("More settings (JSON object)").fill(
                json.dumps({"FRONTIER_RETRY_DELAYS": [0.2, 0.2], "POLITENESS_DELAY_FACTOR": 0}))
            started = time.monotonic()
            page.get_by_role("button", name="Start").click()
            title = page.locator("#crawl-id")
            title.filter(has_text="(running)").wait_for(timeout=20_000)
            crawl_id = title.inner_text().split()[0]
            # The URL keeps no token: it went from the fragment to this tab's storage.
            assert "token" not in page.url

            wait_until(lambda: counted(page, "fetched") >= 3, 30, "fetching")
            first = counted(page, "fetched")
            page.locator("#bound").filter(has_text="bound by").wait_for(timeout=15_000)
            bound_after = time.monotonic() - started
            wait_until(lambda: counted(page, "fetched") > first, 20, "counting up")
            assert page.locator("#statuses tbody td", has_text=re.compile(r"^200$")).count() == 1
            assert "pages/s" in page.locator("#chart").text_content()
            assert "time since the first sample (s)" in page.locator("#chart").text_content()
            assert page.locator("#chart polyline").count() == 1
            assert page.locator("#hosts tbody td", has_text="console.test").count() == 1
            page.locator("#log").filter(has_text="Spider opened").wait_for(timeout=10_000)
            dead_url = web.url("console.test", DEAD)
            letters = page.locator("#dead-letters tbody tr", has_text=dead_url)
            letters.wait_for(timeout=30_000)
            assert "500" in letters.inner_text() and "3" in letters.locator("td").nth(2).inner_text()
            wait_until(lambda: counted(page, "retries") >= 2, 10, "counting the dead page's retries")
            dropped = page.locator("#refusals tbody")
            for shown in ("dropped: not html", "dropped type: application/pdf", "dropped type: image/png"):
                dropped.filter(has_text=shown).wait_for(timeout=10_000)
            page.wait_for_timeout(2500)  # two more samples on the chart
            page.screenshot(path=str(SCREENSHOT), full_page=True)
            print(f"bound verdict shown {bound_after:.1f} s after Start")
            assert bound_after < 10

            page.get_by_role("button", name="Stop").click()
            title.filter(has_text="(stopped)").wait_for(timeout=60_000)
            stopped_at = counted(page, "fetched")
            assert 0 < stopped_at < 61
            hits_before = len(web.hits("console.test", DEAD))
            letters.get_by_role("button", name="Requeue").click()
            letters.wait_for(state="detached", timeout=10_000)
            assert page.locator("#action-error").inner_text() == ""

            page.get_by_role("button", name="Resume").click()
            title.filter(has_text="(running)").wait_for(timeout=20_000)
            wait_until(lambda: counted(page, "fetched") > stopped_at, 30, "fetching again after the resume")
            wait_until(lambda: len(web.hits("console.test", DEAD)) > hits_before, 30,
                       "fetching the requeued dead letter")
            status, crawl = service.json("GET", f"/crawls/{crawl_id}")
            assert status == 200 and crawl["fetched"] > stopped_at
        finally:
            context.close()
            service.stop()
            service.stop_crawls()
