"""Say a thing once per host: a hostile host repeats itself, the log should not."""

from __future__ import annotations

from collections import OrderedDict


class OncePerHost:
    """Remembers the last ``size`` hosts it was asked about: ``first(host)`` is True the
    first time (and again for a host forgotten since), so a log line is said once a host
    without memory growing with the hosts of a long crawl."""

    def __init__(self, size: int = 10_000) -> None:
        self.size = size
        self._hosts: OrderedDict[str, None] = OrderedDict()

    def first(self, host: str) -> bool:
        if host in self._hosts:
            self._hosts.move_to_end(host)
            return False
        self._hosts[host] = None
        if len(self._hosts) > self.size:
            self._hosts.popitem(last=False)
        return True
