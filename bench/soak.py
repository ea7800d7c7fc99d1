"""Days, not minutes: a continuous crawl under a fault schedule, judged from outside.

Several Redis workers (or, with ``--embedded``, one process with its own database) crawl
``bench/soak_web.py``'s web continuously (``CRAWL_CONTINUOUS``, revisit intervals of
seconds): ``--hosts`` hosts of ``--pages`` pages, a third of them changing every
``--period`` seconds, every page answering conditional requests, beside the hosts of
``tests/hostileweb.py`` (bombs, endless bodies, stalls; ``--no-hostile`` leaves them
out), names served by a real dnsmasq. Faults fall on a timeline (``--faults``, minutes;
the default schedule is spread over ``--minutes``):

- ``kill``: kill -9 a worker and start it again 5 s later;
- ``freeze``: SIGSTOP Redis for 15 s, then SIGCONT;
- ``restart``: restart Redis (AOF on: nothing lost);
- ``disk``: fill the store's disk (a tmpfs, root only) for 60 s, then free it;
- ``dns``: stop dnsmasq for 60 s;
- ``leave``: kill -9 a worker for good.

Every few seconds it samples each worker's RSS, threads and descriptors, Redis
``used_memory`` and keys per family (or the embedded database's size), the server-side
fetch count and the log lines. At the end it prints every figure against its target
(``soak_report.py``) and draws memory, keys and fetch rate over time with the faults
marked (``--plot``). ``python bench/soak.py`` runs 30 minutes; ``--minutes 3`` is the
short version.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "tests"), str(REPO / "bench")]

from dns_server import DnsServer  # noqa: E402
from hostileweb import HostileWeb  # noqa: E402
from redis_server import RedisServer  # noqa: E402
from soak_report import Outcome, plot, report  # noqa: E402
from soak_watch import Watcher, family_bytes  # noqa: E402
from soak_web import SoakWeb  # noqa: E402

from crawler.store.files import LocalStore, iter_records  # noqa: E402

#: Each fault's length in seconds (0: a moment).
FAULT_LENGTH = {"kill": 5.0, "freeze": 15.0, "restart": 0.0, "disk": 60.0, "dns": 60.0, "leave": 0.0}
#: The default schedule, in minutes of a 30-minute soak (scaled to ``--minutes``).
DEFAULT_FAULTS = "kill@5,freeze@9,restart@13,disk@17,dns@21,leave@25"
GAP = 0.3  # POLITENESS_MIN_DELAY: no two fetches to a host closer than this


@dataclass
class Fault:
    name: str
    at: float  # seconds from the start
    length: float
    done: bool = False
    skipped: str = ""

    @property
    def end(self) -> float:
        return self.at + self.length


def parse_faults(text: str, minutes: float, scale: float) -> list[Fault]:
    faults = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, at = part.partition("@")
        if name not in FAULT_LENGTH:
            raise SystemExit(f"unknown fault {name!r}: one of {', '.join(FAULT_LENGTH)}")
        when = float(at) * 60 * scale
        if not 0 < when < minutes * 60:
            raise SystemExit(f"fault {part!r} falls outside the {minutes:g}-minute soak")
        faults.append(Fault(name, when, FAULT_LENGTH[name]))
    return sorted(faults, key=lambda f: f.at)


@contextlib.contextmanager
def small_disk(path: Path, size: str) -> Iterator[bool]:
    """A tmpfs at ``path`` (root only); yields whether it is mounted (else a plain folder)."""
    path.mkdir(parents=True, exist_ok=True)
    mounted = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True,
        check=False).returncode == 0
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(path)], check=False)


class Soak:
    """The servers, the workers and the fault schedule of one soak."""

    def __init__(self, args: argparse.Namespace, run_dir: Path) -> None:
        self.args, self.run_dir = args, run_dir
        self.began = time.time()
        self.length = args.minutes * 60
        self.web = SoakWeb(args.hosts, args.pages, args.period)
        self.dns = DnsServer(run_dir, ttl=5)  # answers cached 5 s: an outage is felt
        self.redis = None if args.embedded else RedisServer(run_dir, appendonly=True)
        self.hostile = HostileWeb() if args.hostile else None
        self.store = run_dir / "store"
        self.workers: dict[str, subprocess.Popen] = {}
        self.restarted: set[str] = set()
        self.exits: dict[str, tuple[float, int]] = {}  # name -> (seconds after the end, code)
        self.left: set[str] = set()  # killed for good
        self._restart_victim = ""
        self.filling = False
        self.filler = self.store / "filler"

    # ---------------------------------------------------------------- workers
    def settings(self, name: str) -> dict[str, object]:
        remaining = max(5, round(self.length - (time.time() - self.began)))
        settings: dict[str, object] = {
            "CRAWL_ID": "soak", "CRAWL_CONTINUOUS": True, "CLOSESPIDER_TIMEOUT": remaining,
            "REVISIT_INTERVAL": 30, "REVISIT_MIN_INTERVAL": 10, "REVISIT_MAX_INTERVAL": 60,
            "REVISIT_HOT_SHARE": 0.8, "POLITENESS_MIN_DELAY": GAP, "POLITENESS_DELAY_FACTOR": 0,
            "ROBOTSTXT_OBEY": False, "TRAP_SOFT_404_PROBE": False, "LOG_LEVEL": "INFO",
            "TWISTED_DNS_RESOLVER": "crawler.net.resolver.GuardedResolver",
            "DNS_NAMESERVERS": self.dns.nameserver, "DNS_MIN_TTL": 5, "DNS_NEGATIVE_TTL": 5,
            "NETWORK_ALLOW": "127.0.0.0/8", "STORE_URI": self.store, "STORE_FULL_PROBE_INTERVAL": 2,
            "FRONTIER_DIR": self.run_dir / f"worker-{name}" / "state",
        }
        if self.redis is not None:
            settings["REDIS_URL"] = self.redis.url
        settings.update(dict(item.split("=", 1) for item in self.args.set))
        return settings

    def start_worker(self, name: str) -> None:
        home = self.run_dir / f"worker-{name}"
        home.mkdir(exist_ok=True)
        seeds = self.run_dir / "seeds.txt"
        command = [sys.executable, "-m", "scrapy", "crawl", "web", "-a", f"seeds={seeds}"]
        for key, value in self.settings(name).items():
            command += ["-s", f"{key}={value}"]
        env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
        env.update(SCRAPY_SETTINGS_MODULE="crawler.settings",
                   PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]))
        log = (home / "log").open("a")
        self.workers[name] = subprocess.Popen(command, cwd=home, env=env, stdout=log,
                                              stderr=subprocess.STDOUT)

    def logs(self) -> dict[str, Path]:
        return {name: self.run_dir / f"worker-{name}" / "log" for name in self.names()}

    def names(self) -> list[str]:
        return [str(n) for n in range(1 if self.args.embedded else self.args.workers)]

    # ----------------------------------------------------------------- faults
    def victim(self) -> str | None:
        alive = [n for n, p in self.workers.items() if p.poll() is None]
        return alive[-1] if alive else None

    def begin(self, fault: Fault) -> None:
        name = fault.name
        if name in ("freeze", "restart") and self.redis is None:
            fault.skipped = "no Redis in an embedded soak"
        elif name == "disk" and not self.disk_mounted:
            fault.skipped = "the store is not on a tmpfs (needs root)"
        elif name in ("kill", "leave"):
            victim = self.victim()
            if victim is None or (name == "leave" and len(self.workers) < 2):
                fault.skipped = "no worker to kill" if victim is None else "one worker only"
                return
            self.workers[victim].kill()
            self.workers[victim].wait()
            fault.skipped = f"worker {victim}"  # which one
            if name == "kill":
                self._restart_victim = victim
            else:
                self.left.add(victim)
        elif name == "freeze":
            os.kill(self.redis.process.pid, signal.SIGSTOP)
        elif name == "restart":
            self.redis.restart()
        elif name == "disk":
            self.filling = True
            self.fill()
        elif name == "dns":
            self.dns.stop()

    def fill(self) -> None:
        """Grow the filler by what the store's disk has free: the crawl's own files shrink
        (a record cut back, a file rotated), so the fault tops it up all along."""
        free = os.statvfs(self.store)
        with self.filler.open("ab") as filler, contextlib.suppress(OSError):
            os.posix_fallocate(filler.fileno(), filler.tell(), max(1, free.f_bavail * free.f_frsize))

    def end(self, fault: Fault) -> None:
        if fault.skipped and not fault.skipped.startswith("worker"):
            return
        if fault.name == "kill":
            self.restarted.add(self._restart_victim)
            self.start_worker(self._restart_victim)
        elif fault.name == "freeze":
            os.kill(self.redis.process.pid, signal.SIGCONT)
        elif fault.name == "disk":
            self.filling = False
            self.filler.unlink(missing_ok=True)
        elif fault.name == "dns":
            self.dns.start()

    # -------------------------------------------------------------------- run
    def run(self, faults: list[Fault]) -> Outcome:
        with small_disk(self.store, self.args.disk) as mounted, contextlib.ExitStack() as stack:
            self.disk_mounted = mounted
            self.web.start()
            seeds = [self.web.url(h) for h in self.web.hosts]
            names = {host: ["127.0.0.1"] for host in self.web.hosts}
            if self.hostile is not None:
                stack.enter_context(self.hostile)
                seeds += [self.hostile.url(name) for name in self.hostile.hosts]
                names.update({f"{name}.test": ["127.0.0.1"] for name in self.hostile.hosts})
            self.dns.start()
            self.dns.set_records(names)
            if self.redis is not None:
                self.redis.start()
            (self.run_dir / "seeds.txt").write_text("".join(url + "\n" for url in seeds))
            self.began = time.time()
            for name in self.names():
                self.start_worker(name)
            redis_url = self.redis.url if self.redis else None
            watcher = Watcher(self.began, self.workers, redis_url, self.web, self.logs(),
                              self.run_dir / "worker-0" / "state", every=self.args.sample).start()
            try:
                self._timeline(faults)
                self._wait_for_exits()
            finally:
                watcher.stop()
                for process in self.workers.values():
                    if process.poll() is None:
                        process.kill()
                        process.wait()
                letters = self.dead_letters()
                stored = {record.get("url") for record in iter_records(LocalStore(self.store))}
                sizes = family_bytes(self.redis.url) if self.redis is not None else None
                if self.redis is not None:
                    self.redis.stop()
                self.dns.stop()
                self.web.stop()
        return Outcome(self.web, watcher.samples, faults, self.exits, self.restarted | self.left, self.left,
                       self.names(), letters, stored, sizes, self.length, GAP, self.args.embedded)

    def _timeline(self, faults: list[Fault]) -> None:
        pending = [(f.at, "begin", f) for f in faults] + [(f.end, "end", f) for f in faults]
        pending.sort(key=lambda item: item[0])
        while time.time() - self.began < self.length:
            now = time.time() - self.began
            while pending and pending[0][0] <= now:
                _, step, fault = pending.pop(0)
                (self.begin if step == "begin" else self.end)(fault)
                print(f"[{now:7.1f} s] {step} {fault.name} {fault.skipped}".rstrip(), flush=True)
            self._note_exits()
            if self.filling:
                self.fill()
            time.sleep(0.2)

    def _note_exits(self) -> None:
        """When each worker ended by itself, in seconds after the soak's end (negative: before)."""
        for name, process in self.workers.items():
            ended = name not in self.exits and name not in self.left and process.poll() is not None
            if ended and process.returncode != -signal.SIGKILL:  # not one the schedule killed
                self.exits[name] = (time.time() - self.began - self.length, process.returncode)

    def _wait_for_exits(self) -> None:
        """Every worker should end by itself (CLOSESPIDER_TIMEOUT): wait up to 120 s."""
        deadline = time.time() + 120
        while time.time() < deadline and any(p.poll() is None for p in self.workers.values()):
            self._note_exits()
            time.sleep(0.2)
        self._note_exits()

    def dead_letters(self) -> list[dict]:
        command = [sys.executable, "-m", "scrapy", "deadletters", "soak"]
        if self.redis is not None:
            command += ["-s", f"REDIS_URL={self.redis.url}"]
        else:
            command += ["-s", f"FRONTIER_DIR={self.run_dir / 'worker-0' / 'state'}"]
        env = {**os.environ, "SCRAPY_SETTINGS_MODULE": "crawler.settings", "PYTHONPATH": str(REPO)}
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
        return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--embedded", action="store_true", help="one process, no Redis")
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--pages", type=int, default=30)
    parser.add_argument("--period", type=float, default=20.0,
                        help="seconds between a changing page's versions")
    parser.add_argument("--faults", default=None, help=f"name@minute,... (default {DEFAULT_FAULTS}, scaled)")
    parser.add_argument("--disk", default="1g", help="size of the store's tmpfs")
    parser.add_argument("--no-hostile", dest="hostile", action="store_false",
                        help="leave out tests/hostileweb.py's hosts (bombs, endless bodies, stalls)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a crawl setting for every worker (for example REVISIT_JITTER=0)")
    parser.add_argument("--sample", type=float, default=5.0, help="seconds between samples")
    parser.add_argument("--plot", type=Path, default=None, help="write the plots to this PNG")
    parser.add_argument("--keep", type=Path, default=None, help="run in this folder and keep it")
    parser.add_argument("--save", type=Path, default=None, help="save what was measured (pickle) here")
    parser.add_argument("--replot", type=Path, default=None, help="report and plot a saved soak, no crawl")
    args = parser.parse_args(argv)
    # The hostile web's idle keep-alive connections time out in its server: not the soak's news.
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    if args.replot is not None:
        with args.replot.open("rb") as saved:
            return finish(pickle.load(saved), args.plot)
    scale = args.minutes / 30 if args.faults is None else 1.0
    faults = parse_faults(args.faults if args.faults is not None else DEFAULT_FAULTS, args.minutes, scale)
    with contextlib.ExitStack() as stack:
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            run_dir = args.keep
        else:
            run_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="soak-")))
        outcome = Soak(args, run_dir).run(faults)
        if args.save is not None:
            with args.save.open("wb") as saved:
                pickle.dump(outcome, saved)
        return finish(outcome, args.plot)


def finish(outcome: Outcome, plot_path: Path | None) -> int:
    lines, met = report(outcome)
    print("\n".join(lines))
    if plot_path is not None:
        plot(outcome, plot_path)
        print(f"\nplots: {plot_path}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
