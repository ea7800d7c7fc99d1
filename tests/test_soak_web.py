"""The soak's web judges politeness from its own clock: a gap runs from the moment an
answer was handed to the socket to the next request's start, whatever the server's
threads do after the write."""

from __future__ import annotations

import http.client
import socketserver
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from soak_report import politeness
from soak_web import SoakWeb


def test_a_thread_slow_after_its_write_makes_no_short_gap(monkeypatch):
    write = socketserver._SocketWriter.write

    def write_then_stall(self, data):  # the GIL taken back late, as on a loaded machine
        written = write(self, data)
        time.sleep(0.2)
        return written

    monkeypatch.setattr(socketserver._SocketWriter, "write", write_then_stall)
    web = SoakWeb(hosts=1, pages=3, period=3600.0).start()
    try:
        connection = http.client.HTTPConnection("127.0.0.1", web.port, timeout=10)
        statuses, etag = [], None
        for path, conditional in (("/p/1", False), ("/p/1", True), ("/p/2", False)):
            headers = {"Host": "h0.example"}
            if conditional:
                headers["If-None-Match"] = etag
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            response.read()
            statuses.append(response.status)
            etag = response.getheader("ETag")
            time.sleep(0.3)  # the policy's gap, from the answer's arrival
        connection.close()
    finally:
        web.stop()
    assert statuses == [200, 304, 200]
    overlaps, short, shortest = politeness(web.snapshot(), 0.3)
    assert (overlaps, short) == (0, 0), shortest
