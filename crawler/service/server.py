"""The HTTP front of the crawl service: JSON API, dashboard files and ``/metrics``.

Python's ``ThreadingHTTPServer``: the service process runs no crawl (each crawl is a child
process or a scrapyd job), so it needs no reactor, and a thread per request keeps a slow
client or store read from holding up the others. Errors are JSON ``{"error": "..."}``
with a message that names the bad part, never a traceback; a method a path does not
take (``DELETE /crawls``) is a 405 with an ``Allow`` header.
"""

from __future__ import annotations

import hmac
import json
import logging
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from crawler.service.metrics import metrics_text
from crawler.service.service import NotFound
from crawler.service.spec import BadRequest

if TYPE_CHECKING:
    from crawler.service.service import CrawlService

logger = logging.getLogger(__name__)

_CRAWL = re.compile(r"^/crawls/([0-9a-z-]{1,64})(/stop|/activity)?$")
# The dashboard's files, by the only names served: no path from a request reaches the disk.
_STATIC = {"/": ("index.html", "text/html; charset=utf-8"),
           "/dashboard.js": ("dashboard.js", "text/javascript; charset=utf-8"),
           "/dashboard.css": ("dashboard.css", "text/css; charset=utf-8")}
_CONTENT_TYPES = {"html": "text/html; charset=utf-8", "text": "text/plain; charset=utf-8"}
_READ = ("GET", "HEAD")


def allowed_methods(path: str) -> tuple[str, ...] | None:
    """The methods ``path`` answers; None: no such endpoint."""
    match = _CRAWL.match(path)
    if path == "/crawls":
        return (*_READ, "POST")
    if match:
        return ("POST",) if match.group(2) == "/stop" else _READ
    if path in ("/pages", "/metrics") or path in _STATIC:
        return _READ
    return None


class _Handler(BaseHTTPRequestHandler):
    server: ServiceServer
    protocol_version = "HTTP/1.1"
    _body_read = False  # the request's body was read: the connection can serve the next one

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s %s", self.address_string(), format % args)

    def __getattr__(self, name: str) -> Any:
        """Every method goes through ``_handle`` (``do_DELETE``, ``do_PUT``...), so that one
        no path takes is a JSON 405, not ``http.server``'s HTML 501."""
        if name.startswith("do_"):
            return self._handle
        raise AttributeError(name)

    def _send(self, status: int, body: bytes, content_type: str,
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        if not self._body_read and (self.headers.get("Content-Length", "0") != "0"
                                    or self.headers.get("Transfer-Encoding")):
            self.send_header("Connection", "close")  # the unread body would be taken for the next request
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, value: object, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(value, ensure_ascii=False).encode("utf-8") + b"\n",
                   "application/json; charset=utf-8", headers)

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        self._json(status, {"error": message}, headers)

    def _authorized(self) -> bool:
        token = self.server.token
        if not token:
            return True
        given = self.headers.get("Authorization", "")
        return hmac.compare_digest(given.encode("utf-8", "replace"), f"Bearer {token}".encode())

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding"):
            raise BadRequest("send the body with a Content-Length, not chunked")
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            raise BadRequest("a JSON body with a Content-Length is required") from None
        if length < 0 or length > self.server.max_body:
            self.close_connection = True
            if 0 < length <= 8 * self.server.max_body:  # read, so the client hears why, not a broken pipe
                for start in range(0, length, 65536):
                    self.rfile.read(min(65536, length - start))
            raise BadRequest(f"the body is {length} bytes; the limit is {self.server.max_body}")
        self._body_read = True
        return self.rfile.read(length)

    def _handle(self) -> None:
        parts = urlsplit(self.path)
        path = parts.path
        allowed = allowed_methods(path)
        self._body_read = False
        try:
            if path in _STATIC and self.command in _READ:  # the dashboard's shell holds no data
                name, content_type = _STATIC[path]
                self._send(200, resources.files("crawler.service").joinpath("dashboard", name).read_bytes(),
                           content_type)
            elif not self._authorized():
                self._error(401, "a valid 'Authorization: Bearer <SERVE_TOKEN>' header is required")
            elif allowed is None:
                self._error(404, f"no endpoint {path}")
            elif self.command not in allowed:
                self._error(405, f"{self.command} is not allowed on {path}; it takes {', '.join(allowed)}",
                            {"Allow": ", ".join(allowed)})
            else:
                self._route(path, parse_qs(parts.query, keep_blank_values=True))
        except BadRequest as error:
            self._error(400, str(error))
        except NotFound as error:
            self._error(404, str(error))
        except Exception as error:  # one request's failure is reported, not the service's end
            logger.exception("%s %s failed", self.command, self.path)
            self._error(500, f"{type(error).__name__}: {error}")

    def _route(self, path: str, query: dict[str, list[str]]) -> None:
        """Answer ``path``, a method it takes."""
        service = self.server.service
        post = self.command == "POST"
        match = _CRAWL.match(path)
        if path == "/crawls" and post:
            try:
                crawl = service.start_crawl(self._body())
            except (OSError, RuntimeError, ValueError) as error:
                if isinstance(error, BadRequest):
                    raise
                self._error(502, f"the crawl could not start: {error}")
                return
            self._json(201, {"crawl_id": crawl.crawl_id, "state": crawl.state})
        elif path == "/crawls":
            self._json(200, {"crawls": [service.describe(c) for c in service.registry.all()]})
        elif match:
            crawl_id, action = match.groups()
            if action == "/stop":
                self._json(200, service.describe(service.stop_crawl(crawl_id)))
            elif action == "/activity":
                self._json(200, service.activity(crawl_id))
            else:
                self._json(200, service.describe(service.crawl(crawl_id)))
        elif path == "/pages":
            self._page(query)
        else:  # /metrics
            self._send(200, metrics_text(service.metrics_rows), "text/plain; version=0.0.4; charset=utf-8")

    def _page(self, query: dict[str, list[str]]) -> None:
        urls = query.get("url", [])
        if len(urls) != 1 or not urls[0]:
            raise BadRequest("give one url: /pages?url=U")
        content = query.get("content", [None])[0]
        if content not in (None, "html", "text"):
            raise BadRequest(f"content={content!r}: use content=html or content=text")
        try:
            record, body = self.server.service.page(urls[0], content)
        except ValueError as error:
            raise BadRequest(str(error)) from None
        if content is None:
            self._json(200, record)
        else:
            data = body if isinstance(body, bytes) else (body or "").encode("utf-8")
            self._send(200, data, _CONTENT_TYPES[content])


class ServiceServer(ThreadingHTTPServer):
    """Serves ``service`` on ``address``; with ``token``, every API request must carry it."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], service: CrawlService, token: str, max_body: int) -> None:
        self.service = service
        self.token = token
        self.max_body = max_body
        super().__init__(address, _Handler)
