"""The hostile web: peak memory and a calm host's crawl time beside bombs, against stock Scrapy.

Serves ``tests/hostileweb.py`` (robots.txt, page and sitemap bombs that each decode to
1 GiB, endless bodies, 2,000 headers, redirect loops, a UTF-16 robots.txt, a stalled
host) and a calm test host of 40 pages, then runs, each in its own process:

* ours, the calm host alone: the baseline of its crawl time;
* ours, the calm host beside every hostile host;
* ours, the calm host beside a stalled host, ``max_pages`` set so that the crawl closes
  while the stalled host's download is in flight;
* stock Scrapy (a ``CrawlSpider`` with ``ROBOTSTXT_OBEY``) on the same seeds, the peer.

It prints each run's peak RSS (the child's own ``ru_maxrss``), the calm host's crawl time
(first request to last response, from the test web's log) and its ratio to the time
alone, the seconds from "Closing spider" to the exit, and the tracebacks and ERROR lines
of its log. Targets: peak RSS at most 600 MB; the calm host within 2x its time alone;
the exit within 10 s of closing; no traceback.

    python bench/hostile.py
    python bench/hostile.py --bomb-mib 5120 --no-stock   # bombs of 5 GiB
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "tests"), str(REPO)]

import hostileweb  # noqa: E402
from common import fmt_table, machine  # noqa: E402
from crawl_runs import base_env, run_measured, settings_args  # noqa: E402
from hostileweb import HostileWeb  # noqa: E402
from testweb import Site, TestWeb  # noqa: E402

HOSTILE = ("br-bomb", "gzgz-bomb", "deflate-bomb", "page-bomb", "no-length", "big-headers", "loops",
           "utf16")
DELAY = 0.05  # POLITENESS_MIN_DELAY of both runs of ours, as in the README's demo
CALM_PAGES = 40
STOCK_SPIDER = '''\
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class StockSpider(CrawlSpider):
    name = "stock"
    start_urls = {seeds!r}
    rules = [Rule(LinkExtractor(), follow=True)]
'''


# Log lines stamped to the millisecond: the exit is timed from the "Closing spider" line.
LOG_FORMAT = "%(asctime)s.%(msecs)03d [%(name)s] %(levelname)s: %(message)s"


def exit_seconds(log: str, exited: float) -> float | None:
    """Seconds from the log's "Closing spider" line to ``exited`` (the process's exit, as
    ``time.time()``), if the line is there."""
    line = next((line for line in log.splitlines() if "Closing spider" in line), None)
    if line is None:
        return None
    return exited - datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S.%f").timestamp()


def crawl(side: str, seeds: list[str], web: TestWeb, workdir: Path, timeout: float,
          **settings: object) -> dict[str, object]:
    """One crawl in a subprocess: its peak RSS, the calm host's span, its log's faults."""
    rundir = workdir / side
    rundir.mkdir()
    env = web.subprocess_env(base_env())
    env["PYTHONPATH"] = f"{REPO / 'tests'}:{REPO}"
    common: dict[str, object] = {"TWISTED_DNS_RESOLVER": "testweb.LoopbackResolver", "LOG_LEVEL": "INFO",
                                 "LOG_FORMAT": LOG_FORMAT}
    if side.startswith("ours"):
        env["SCRAPY_SETTINGS_MODULE"] = "crawler.settings"
        common.update(STORE_URI=rundir / "store", FRONTIER_DIR=rundir / "state", TRAP_SOFT_404_PROBE=False,
                      POLITENESS_MIN_DELAY=0, POLITENESS_DELAY_FACTOR=0)
        command = [sys.executable, "-m", "scrapy", "crawl", "web", "-a", "seeds=" + ",".join(seeds)]
    else:
        spider = rundir / "stock_spider.py"
        spider.write_text(STOCK_SPIDER.format(seeds=seeds), encoding="utf-8")
        # The test resolver is the address guard's: off, as stock Scrapy has none.
        common.update(ROBOTSTXT_OBEY=True, DOWNLOAD_DELAY=0, NETWORK_GUARD=False)
        command = [sys.executable, "-m", "scrapy", "runspider", str(spider)]
    common.update(settings)
    web.reset()
    log_path = rundir / "crawl.log"
    usage, wall, code = run_measured(command + settings_args({k: str(v) for k, v in common.items()}), env,
                                     rundir, log_path, timeout)
    exited = time.time()
    log = log_path.read_text(encoding="utf-8", errors="replace")
    calm = [r for r in web.hits() if r.host == "calm.test"]
    span = max(r.end for r in calm) - min(r.start for r in calm) if calm else float("nan")
    return {"side": side, "exit": code, "wall": wall, "rss_mb": usage.ru_maxrss / 1024,
            "calm_pages": len({r.path for r in calm}), "calm_s": span,
            "closing_s": exit_seconds(log, exited), "tracebacks": log.count("Traceback"),
            "errors": sum(" ERROR: " in line for line in log.splitlines())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=600, help="seconds a crawl may take")
    parser.add_argument("--no-stock", action="store_true", help="skip the stock Scrapy run")
    parser.add_argument("--bomb-mib", type=int, default=hostileweb.BOMB_MIB,
                        help="MiB each bomb decodes to (stock Scrapy holds it whole: 5120 wants --no-stock)")
    args = parser.parse_args(argv)
    hostileweb.BOMB_MIB = args.bomb_mib
    print(machine())
    with HostileWeb() as hostile, TestWeb([Site("calm.test", pages=CALM_PAGES)]) as web, \
            tempfile.TemporaryDirectory() as tmp:
        calm_seed = f"http://calm.test:{web.port}/"
        hostile_seeds = [hostile.url(host) for host in HOSTILE]
        runs = [crawl("ours, calm host alone", [calm_seed], web, Path(tmp), args.timeout,
                      POLITENESS_MIN_DELAY=DELAY)]
        runs.append(crawl("ours, beside the hostile web", [*hostile_seeds, calm_seed], web, Path(tmp),
                          args.timeout, SITEMAP_FOLLOW=True, POLITENESS_MIN_DELAY=DELAY))
        # Closing at max_pages while the stalled host's download is in flight.
        runs.append(crawl("ours, beside a stalled host", [hostile.url("stall"), calm_seed], web, Path(tmp),
                          args.timeout, CRAWL_MAX_PAGES=CALM_PAGES // 2, POLITENESS_MIN_DELAY=DELAY))
        if not args.no_stock:
            runs.append(crawl("stock Scrapy, beside the hostile web", [*hostile_seeds, calm_seed], web,
                              Path(tmp), args.timeout))
    alone = runs[0]["calm_s"]
    rows = [[r["side"], str(r["exit"]), f"{r['rss_mb']:.0f}", f"{r['calm_pages']}", f"{r['calm_s']:.1f}",
             f"{r['calm_s'] / alone:.2f}x" if str(r["side"]).startswith("ours") else "-",
             "-" if r["closing_s"] is None else f"{r['closing_s']:.1f}",
             f"{r['wall']:.1f}", str(r["tracebacks"]), str(r["errors"])] for r in runs]
    print(fmt_table(["run", "exit", "peak RSS MB", "calm pages", "calm host s", "vs alone",
                     "close->exit s", "wall s", "tracebacks", "ERROR lines"], rows))
    ours, stalled = runs[1], runs[2]
    print(f"\n- peak RSS beside the bombs: {ours['rss_mb']:.0f} MB (target <= 600)")
    print(f"- calm host beside them: {ours['calm_s'] / alone:.2f}x its time alone (target <= 2x)")
    print(f"- exit after closing beside a stalled host: {stalled['closing_s']:.1f} s (target <= 10)")
    print(f"- tracebacks: {ours['tracebacks'] + stalled['tracebacks']} (target 0)")
    if len(runs) > 3:
        print(f"- stock Scrapy on the same web: peak RSS {runs[3]['rss_mb']:.0f} MB "
              f"({runs[3]['rss_mb'] / ours['rss_mb']:.1f}x ours), {runs[3]['tracebacks']} tracebacks")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
