"""A multi-host test web on loopback, for the tests and benchmarks of this project.

One stdlib HTTP/1.1 server (keep-alive, one daemon thread per connection) bound to
loopback addresses only answers many virtual hosts by the ``Host`` header. Test host
names end in ``.test`` (RFC 2606). ``127.0.0.1:<port>`` and ``localhost:<port>`` get
the first site (the default vhost); an unknown host gets a 404.

Everything a site serves is a deterministic function of its :class:`Site` parameters
(seeded ``random.Random`` only), so :meth:`TestWeb.reachable` can compute the ground
truth of a crawl from the same link model that renders the pages.

Crawls in a subprocess reach the ``.test`` names through :class:`LoopbackResolver`
(``TWISTED_DNS_RESOLVER = "testweb.LoopbackResolver"`` with ``tests/`` on
``PYTHONPATH``; :meth:`TestWeb.subprocess_env` builds such an environment). The site
of the default vhost needs no resolver: ``http://127.0.0.1:<port>/``.

Run ``python tests/testweb.py --port 8080`` to serve the demo web in the foreground.

The parts, each a module beside this one: ``testweb_sites`` (:class:`Site`, its URLs),
``testweb_pages`` (answer bytes), ``testweb_robots``, ``testweb_model`` (what each URL
answers, the ground truth), ``testweb_server`` (HTTP, :class:`RequestRecord`) and
``testweb_loopback`` (:class:`LoopbackResolver`). This module serves them and keeps
the request log; every name the tests and benches use is importable from here.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from testweb_loopback import (
    ADDRESSES_ENV,
    LoopbackResolver,
    is_loopback,
    loopback_address,
    parse_addresses,
)
from testweb_model import WebModel
from testweb_server import RequestRecord, Server
from testweb_sites import DEFAULT_DROP_PARAMS, RESET, Site, canonical, page_path, relative_href

__all__ = [
    "DEFAULT_DROP_PARAMS",
    "RESET",
    "LoopbackResolver",
    "RequestRecord",
    "Site",
    "TestWeb",
    "canonical",
    "demo_web",
    "is_loopback",
    "loopback_address",
    "page_path",
    "parse_addresses",
    "relative_href",
]


TESTS_DIR = Path(__file__).resolve().parent


class TestWeb(WebModel):
    """The multi-host test web: sites, the server, the request log and the ground truth.

    Use as a context manager (``with TestWeb([...]) as web:``) or ``start()``/``stop()``.
    ``log`` holds a :class:`RequestRecord` per answered request, ordered by ``end``.
    One listening socket per distinct ``Site.address`` (127.0.0.1 always), all on the
    same port; with ``port=0`` a port free on every address is picked (20 tries), with
    a fixed port ``start()`` raises ``OSError`` if any address cannot bind it. Any
    address answers any host; ``RequestRecord.server_address`` tells which one was used.
    """

    __test__ = False  # not a pytest test class

    def __init__(self, sites: list[Site], port: int = 0) -> None:
        super().__init__(sites, port)
        self._requested_port = port
        self.log: list[RequestRecord] = []
        self._log_lock = threading.Lock()
        self._responses_writing = 0
        self._settled = threading.Condition()
        self._servers: list[Server] = []
        self._threads: list[threading.Thread] = []

    # ------------------------------------------------------------ lifecycle

    @property
    def addresses(self) -> list[str]:
        """Loopback addresses the web listens on (127.0.0.1 first)."""
        extra = sorted({s.address for s in self.sites} - {"127.0.0.1"})
        return ["127.0.0.1", *extra]

    def start(self) -> TestWeb:
        """Bind every address on one port and serve in daemon threads."""
        if self._servers:
            return self
        attempts = 1 if self._requested_port else 20
        for attempt in range(attempts):
            servers: list[Server] = []
            try:
                port = self._requested_port
                for address in self.addresses:
                    servers.append(Server((address, port), self))
                    port = servers[0].server_address[1]
            except OSError:
                for server in servers:
                    server.server_close()
                if attempt == attempts - 1:
                    raise
                continue
            break
        self._servers = servers
        self.port = servers[0].server_address[1]
        for server in servers:
            thread = threading.Thread(
                target=server.serve_forever,
                kwargs={"poll_interval": 0.1},
                name=f"testweb-{server.server_address[0]}:{self.port}",
                daemon=True,
            )
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        """Stop listening and close open keep-alive connections."""
        for server in self._servers:
            server.shutdown()
            server.server_close()
            server.close_connections()
        for thread in self._threads:
            thread.join(timeout=5)
        self._servers, self._threads = [], []

    def __enter__(self) -> TestWeb:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def reset(self) -> None:
        """Clear the request log and restart every status sequence."""
        with self._log_lock:
            self.log.clear()
        with self._sequence_lock:
            self._sequence_pos.clear()

    # ------------------------------------------------------------ crawl subprocesses

    def subprocess_env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """Environment for a crawl subprocess using ``testweb.LoopbackResolver``.

        Copies ``base`` (default ``os.environ``), prepends ``tests/`` to ``PYTHONPATH``,
        sets ``TESTWEB_ADDRESSES`` to every site's address and removes proxy variables
        (Scrapy's HttpProxyMiddleware would send ``.test`` requests to a proxy).
        """
        env = dict(os.environ if base is None else base)
        for name in list(env):
            if name.lower() in ("http_proxy", "https_proxy", "all_proxy"):
                del env[name]
        paths = [str(TESTS_DIR), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
        env["PYTHONPATH"] = os.pathsep.join(paths)
        env[ADDRESSES_ENV] = json.dumps({s.host: s.address for s in self.sites})
        return env

    # ------------------------------------------------------------ log

    def _record(self, record: RequestRecord) -> None:
        with self._log_lock:
            bisect.insort(self.log, record, key=lambda r: r.end)

    def _writing(self, delta: int) -> None:
        with self._settled:
            self._responses_writing += delta
            if not self._responses_writing:
                self._settled.notify_all()

    def settle(self, timeout: float = 2.0) -> bool:
        """Wait until every response being written is in the log; False on timeout.

        A client can read a whole response a moment before the server thread appends
        its record; :meth:`hits` and the timing helpers settle first, code reading
        :attr:`log` directly should call this.
        """
        with self._settled:
            return self._settled.wait_for(lambda: not self._responses_writing, timeout)

    def hits(self, host: str | None = None, path: str | None = None) -> list[RequestRecord]:
        """Log records (ordered by ``end``) matching ``host`` and ``path`` (no query)."""
        self.settle()
        with self._log_lock:
            records = list(self.log)
        return [
            r
            for r in records
            if (host is None or r.host == host.lower()) and (path is None or r.path == path)
        ]

    def max_in_flight(self, host: str) -> int:
        """Most requests to ``host`` that overlapped in time, from the log."""
        events = []
        for r in self.hits(host):
            events.append((r.start, 1))
            events.append((r.end, -1))
        events.sort(key=lambda e: (e[0], e[1]))  # an end before a start at the same instant
        current = best = 0
        for _, delta in events:
            current += delta
            best = max(best, current)
        return best

    def min_gap(self, host: str) -> float:
        """Smallest time from the end of the requests so far to the next request's start.

        Negative when requests overlap; ``math.inf`` with fewer than two requests.
        """
        records = sorted(self.hits(host), key=lambda r: r.start)
        best, last_end = math.inf, None
        for r in records:
            if last_end is not None:
                best = min(best, r.start - last_end)
            last_end = r.end if last_end is None else max(last_end, r.end)
        return best

    def min_start_gap(self, host: str) -> float:
        """Smallest time between two consecutive request starts to ``host``."""
        starts = sorted(r.start for r in self.hits(host))
        return min((b - a for a, b in itertools.pairwise(starts)), default=math.inf)

# --------------------------------------------------------------------------- demo / CLI


def _demo_hosts(count: int) -> list[str]:
    letters = "bcdefghijklmnopqrstuvwxyz"
    return [letters[k] + ".test" if k < len(letters) else f"h{k}.test" for k in range(count)]


def demo_web(port: int = 0, hosts: int = 3, pages: int = 100) -> TestWeb:
    """The README demo: ``127.0.0.1`` (default vhost, ``pages`` pages) linking to
    ``hosts - 1`` ``.test`` sites of ``pages // 2`` pages that link back. Not started."""
    others = _demo_hosts(max(0, hosts - 1))
    main = Site(
        "127.0.0.1",
        pages=pages,
        extra_links=3,
        nav_links=8,
        cross_links=others,
        unlinked_pages=2,
        broken_links=2,
        binary_links=True,
        robots_txt="User-agent: *\nDisallow: /hidden/\n",
        # Linked from /, so a crawl shows one robots.txt refusal (robotstxt/forbidden); 403 if fetched.
        statuses={"/hidden/": 403},
    )
    sites = [main] + [
        Site(
            host,
            pages=max(1, pages // 2),
            extra_links=2,
            nav_links=5,
            seed=k,
            cross_links=["127.0.0.1"],
            robots_txt="User-agent: *\nAllow: /\n",
        )
        for k, host in enumerate(others, start=1)
    ]
    return TestWeb(sites, port=port)


def main(argv: list[str] | None = None) -> int:
    """Serve the demo web in the foreground until Ctrl-C or SIGTERM."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8080, help="port (0: pick a free one)")
    parser.add_argument("--hosts", type=int, default=3, help="number of sites")
    parser.add_argument("--pages", type=int, default=100, help="pages of the first site")
    args = parser.parse_args(argv)

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    for signum in (signal.SIGINT, signal.SIGTERM):  # SIGINT too: background jobs ignore it
        signal.signal(signum, interrupt)
    web = demo_web(args.port, max(1, args.hosts), max(1, args.pages))
    try:
        web.start()
        print(f"testweb: {len(web.sites)} sites on 127.0.0.1:{web.port}", flush=True)
        print(f"seed: {web.url('127.0.0.1')}", flush=True)
        for site in web.sites[1:]:
            print(f"seed (needs testweb.LoopbackResolver): {web.url(site.host)}", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        web.stop()
        print("testweb: stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
