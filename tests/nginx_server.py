"""A directory of static files served gzip-encoded by Debian's nginx on a free loopback port."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from redis_server import free_port

_CONFIG = """\
{user}worker_processes 1;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log;
events {{ worker_connections 64; }}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log {tmp}/access.log;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    gzip on;
    gzip_min_length 0;
    gzip_types text/plain;
    server {{
        listen 127.0.0.1:{port};
        root {root};
{locations}
    }}
}}
"""


class Nginx:
    """nginx serving ``root`` with gzip on; ``locations`` are extra server-block lines
    (bytes: a header value may hold any byte). Stopped on ``stop`` or on exit of ``with``."""

    def __init__(self, root: Path, tmp: Path, locations: bytes = b"") -> None:
        self.root, self.tmp, self.locations = root, tmp, locations
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self) -> Nginx:
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        if not Path(nginx).exists():
            pytest.fail("nginx is not installed (.ci/run installs nginx-light)")
        self.tmp.mkdir(parents=True, exist_ok=True)
        user = "user root;\n" if os.geteuid() == 0 else ""  # workers read the test's files
        head, _, tail = _CONFIG.format(user=user, tmp=self.tmp, port=self.port, root=self.root,
                                       locations="@@").encode().partition(b"@@")
        (self.tmp / "nginx.conf").write_bytes(head + self.locations + tail)
        self.process = subprocess.Popen([nginx, "-c", str(self.tmp / "nginx.conf"), "-p", str(self.tmp)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"nginx did not start: {(self.tmp / 'error.log').read_text()}")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None

    def __enter__(self) -> Nginx:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
