"""Traps that end themselves, measured: fetches per trap host and the precision and
recall of each mechanism (learned parameters, soft-404 probe, demotion, copies flagged)
on a loopback test web (``tests/trapweb.py``) with its ground truth.

    python bench/traps.py                 # this checkout
    python bench/traps.py --repo ../main  # another checkout's crawler, same web
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "tests"))

from trapweb import TrapWeb, precision_web, trap_web  # noqa: E402

from crawler.store.files import LocalStore, iter_records  # noqa: E402

IRRELEVANT = {("sid.test", "sid"), ("shop.test", "ref")}
DUPLICATE_HOSTS = {"blog.test"}
_LEARNED = re.compile(r"Host (\S+): parameter '([^']+)' learned")
_DEMOTED = re.compile(r"Host (\S+) demoted")


def crawl(web: TrapWeb, repo: Path, workdir: Path, **settings: object) -> tuple[str, list[dict]]:
    """Crawl every host of ``web`` from its home page with ``repo``'s crawler; (log, records)."""
    workdir.mkdir(parents=True, exist_ok=True)
    seeds = ",".join(web.url(site.host) for site in web.sites)
    base = {"STORE_URI": workdir / "store", "FRONTIER_DIR": workdir / "state", "POLITENESS_MIN_DELAY": 0,
            "POLITENESS_DELAY_FACTOR": 0, "TWISTED_DNS_RESOLVER": "testweb.LoopbackResolver",
            "LOG_LEVEL": "INFO", "CLOSESPIDER_TIMEOUT": 300, **settings}
    command = [sys.executable, "-m", "scrapy", "crawl", "web", "-a", f"seeds={seeds}"]
    command += [arg for name, value in base.items() for arg in ("-s", f"{name}={value}")]
    env = web.subprocess_env()
    env["SCRAPY_SETTINGS_MODULE"] = "crawler.settings"
    env["PYTHONPATH"] = f"{repo}:{env['PYTHONPATH']}"
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    log = done.stdout + done.stderr
    if done.returncode:
        raise RuntimeError(f"crawl failed ({done.returncode}):\n{log[-3000:]}")
    return log, list(iter_records(LocalStore(workdir / "store")))


def fetches(web: TrapWeb) -> Counter[str]:
    """Requests answered per host, robots.txt aside."""
    return Counter(r.host for r in web.log if r.path != "/robots.txt")


def trap_table(web: TrapWeb, records: list[dict]) -> list[str]:
    hits = fetches(web)
    per_path = Counter(r.path for r in web.hits("sid.test") if r.path != "/robots.txt")
    soft_pages = sum(1 for r in records if web.truth(r["url"])[0] == "soft_404" and not r.get("duplicate_of"))
    rows = ["| trap host | fetches | pages stored | note |", "|---|---|---|---|"]
    for host, note in (("sid.test", f"most fetches of one path: {max(per_path.values(), default=0)}"),
                       ("soft.test", f"soft-404 bodies stored as pages: {soft_pages}"),
                       ("cal.test", ""), ("loop.test", "")):
        stored = sum(1 for r in records
                     if r["url"].split("/")[2].startswith(host) and not r.get("duplicate_of"))
        rows.append(f"| {host} | {hits[host]} | {stored} | {note} |")
    return rows


def _ratio(hit: int, total: int) -> str:
    return f"{hit / total:.2f} ({hit}/{total})" if total else "n/a (0/0)"


def precision_table(web: TrapWeb, log: str, records: list[dict]) -> list[str]:
    rows = ["| mechanism | precision | recall |", "|---|---|---|"]
    learned = {(h.split(":")[0], p) for h, p in _LEARNED.findall(log)}
    rows.append(f"| learned irrelevant parameters | {_ratio(len(learned & IRRELEVANT), len(learned))} "
                f"| {_ratio(len(learned & IRRELEVANT), len(IRRELEVANT))} |")
    truth = [(r, web.truth(r.get("fetched_url") or r["url"])) for r in records]
    flagged = [kind == "soft_404" for r, (kind, _) in truth if r.get("soft_404")]
    soft = sum(1 for _, (kind, _) in truth if kind == "soft_404")
    rows.append(f"| soft-404 probe (pages) | {_ratio(sum(flagged), len(flagged))} "
                f"| {_ratio(sum(flagged), soft)} |")
    demoted = {h.split(":")[0] for h in _DEMOTED.findall(log)}
    rows.append(f"| duplicate-rate demotion (hosts) | {_ratio(len(demoted & DUPLICATE_HOSTS), len(demoted))} "
                f"| {_ratio(len(demoted & DUPLICATE_HOSTS), len(DUPLICATE_HOSTS))} |")
    seen: set[str] = set()
    copies = flagged_copies = right = 0
    for record, (kind, key) in sorted(truth, key=lambda t: t[0]["fetched_at"]):
        if kind != "page":
            continue
        is_copy = key in seen
        seen.add(key)
        copies += is_copy
        if record.get("duplicate_of"):
            flagged_copies += 1
            right += is_copy
    rows.append(f"| copies flagged duplicate_of | {_ratio(right, flagged_copies)} "
                f"| {_ratio(right, copies)} |")
    stored = {key for r, (kind, key) in truth if kind == "page" and not r.get("duplicate_of")}
    lost = sorted(web.real_pages() - stored)
    rows.append(f"\nReal pages: {len(web.real_pages())}, stored: {len(stored & web.real_pages())}, "
                f"lost: {len(lost)} {lost[:10]}")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=HERE, help="checkout whose crawler runs")
    parser.add_argument("--window", type=int, default=10, help="TRAP_DUPLICATE_WINDOW (small web)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        with trap_web() as web:
            log, records = crawl(web, args.repo.resolve(), Path(tmp) / "traps")
            print(f"Trap hosts ({args.repo.resolve().name}):\n")
            print("\n".join(trap_table(web, records)))
        with precision_web() as web:
            log, records = crawl(web, args.repo.resolve(), Path(tmp) / "precision",
                                 TRAP_DUPLICATE_WINDOW=args.window)
            print(f"\nPrecision web, TRAP_DUPLICATE_WINDOW={args.window}:\n")
            print("\n".join(precision_table(web, log, records)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
