"""A directory of static files served by Debian's nginx on a free loopback port.

The real-site benchmarks crawl a documentation package installed from Debian (for
example ``apt-get install python3-doc nginx-light``), served the way a real site is.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

#: Debian documentation packages with a static HTML site, and where it is installed.
DOC_SITES = {
    "python3-doc": "/usr/share/doc/python3-doc/html",
    "postgresql-doc": "/usr/share/doc/postgresql-doc-15/html",
}

_CONFIG = """\
worker_processes 1;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log;
events {{ worker_connections 512; }}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log off;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    sendfile on;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        index index.html;
    }}
}}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def site_root(name: str) -> Path:
    """The directory of a known Debian doc package (or a directory given as is)."""
    root = Path(DOC_SITES.get(name, name)).resolve()
    if not (root / "index.html").is_file():
        package = name if name in DOC_SITES else "the package that holds it"
        raise SystemExit(f"{root}/index.html not found: apt-get install {package}")
    return root


class NginxSite:
    """``with NginxSite(root) as site:`` serves ``root`` at ``site.url`` until the block ends."""

    def __init__(self, root: Path) -> None:
        if shutil.which("nginx") is None:
            raise SystemExit("nginx not found: apt-get install nginx-light")
        self.root = root
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self._tmp = tempfile.TemporaryDirectory(prefix="nginx-site-")
        self._proc: subprocess.Popen | None = None

    def __enter__(self) -> NginxSite:
        tmp = Path(self._tmp.name)
        conf = tmp / "nginx.conf"
        conf.write_text(_CONFIG.format(tmp=tmp, port=self.port, root=self.root), encoding="utf-8")
        self._proc = subprocess.Popen(
            ["nginx", "-p", str(tmp), "-e", str(tmp / "error.log"), "-c", str(conf)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
        )
        for _ in range(100):  # up to 5 s
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.1).close()
                return self
            except OSError:
                if self._proc.poll() is not None:
                    break
                time.sleep(0.05)
        log = (tmp / "error.log").read_text(errors="replace") if (tmp / "error.log").exists() else ""
        self.__exit__()
        raise RuntimeError(f"nginx did not start on port {self.port}:\n{log}")

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._tmp.cleanup()
