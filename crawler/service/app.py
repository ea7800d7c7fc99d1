"""The service's HTTP API on FastAPI: routes (their models, in
:mod:`crawler.service.models`, make the OpenAPI document at ``/openapi.json``), the
security checks in front of every route, and errors as JSON ``{"error": "..."}`` naming
the bad part, never a traceback.

The request bodies are read here under ``SERVE_MAX_BODY_BYTES`` and checked by
:mod:`crawler.service.spec`, whose messages name the bad seed or setting.
"""

from __future__ import annotations

import hmac
import json
import logging
from contextlib import asynccontextmanager
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal

import anyio.to_thread
from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.routing import Match

from crawler.service.metrics import metrics_registry, metrics_text
from crawler.service.models import (
    Activity,
    CrawlList,
    CrawlRequest,
    CrawlView,
    Created,
    EmptyBody,
    Error,
    Requeued,
    RequeueRequest,
    request_body,
)
from crawler.service.service import Conflict, NotFound, TooManyCrawls
from crawler.service.spec import BadRequest

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from starlette.types import ASGIApp, Receive, Scope, Send

    from crawler.service.security import Gate
    from crawler.service.service import CrawlService

logger = logging.getLogger(__name__)

# The console's files, by the only names served: no path from a request reaches the disk.
STATIC = {"/": ("index.html", "text/html; charset=utf-8"),
          "/dashboard.js": ("dashboard.js", "text/javascript; charset=utf-8"),
          "/dashboard.css": ("dashboard.css", "text/css; charset=utf-8")}
_CONTENT_TYPES = {"html": "text/html; charset=utf-8", "text": "text/plain; charset=utf-8"}
# The console's files: its own scripts and the API only, in no other site's frame (clickjacking).
_STATIC_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
                   "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer",
                   "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
                                              "form-action 'self'"}


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status, headers=headers)


_ERRORS: dict[int | str, dict[str, Any]] = {code: {"model": Error} for code in (400, 401, 403, 404, 415)}


class Gatekeeper:
    """In front of every route: the ``Host`` must name the service (DNS rebinding), and
    the token must be given (but for the console's static shell). Each ``POST`` route
    adds :func:`json_from_own_origin`."""

    def __init__(self, app: ASGIApp, gate: Gate, token: str) -> None:
        self.app = app
        self.gate = gate
        self.token = f"Bearer {token}".encode() if token else b""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self.refusal(scope)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def refusal(self, scope: Scope) -> Response | None:
        headers = Headers(scope=scope)
        if not self.gate.host_allowed(headers.get("host")):
            return _error(400, f"Host {headers.get('host')!r} does not name this service: use its address, "
                               "localhost, or a name in SERVE_ALLOWED_HOSTS")
        if self.token and not (scope["method"] in ("GET", "HEAD") and scope["path"] in STATIC):
            given = headers.get("authorization", "").encode("utf-8", "replace")
            if not hmac.compare_digest(given, self.token):
                return _error(401, "a valid 'Authorization: Bearer <token>' header is required (the token "
                                   "is in DATA_DIR/serve/token, or SERVE_TOKEN)",
                              {"WWW-Authenticate": "Bearer"})
        return None


class Refused(Exception):
    """A request refused before its route runs: ``status`` and the message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def json_from_own_origin(gate: Gate) -> Callable[[Request], None]:
    """What a state-changing request must be: ``application/json`` (a cross-site form or
    "simple" request cannot send it without a preflight, which gets no CORS answer) from
    no ``Origin`` or the service's own."""

    def check(request: Request) -> None:
        origin = request.headers.get("origin")
        if not gate.origin_allowed(origin):
            raise Refused(403, f"Origin {origin!r} is not this service: cross-site requests cannot "
                               "change crawls")
        if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            raise Refused(415, "Content-Type must be application/json")

    return check


async def readrequest_body(request: Request, limit: int) -> bytes:
    """The request's body, refused (``BadRequest``) past ``limit`` bytes. A body up to 8
    times the limit is read to its end first, so that its client hears why, not a broken
    pipe; the read timeout bounds the time that takes."""
    body, received = bytearray(), 0
    async for chunk in request.stream():
        received += len(chunk)
        if received <= limit:
            body += chunk
        elif received > 8 * limit:
            break
    if received > limit:
        declared = request.headers.get("content-length", "")
        size = f"{declared} bytes" if declared.isdigit() else f"over {limit} bytes"
        raise BadRequest(f"the body is {size}; the limit is {limit}")
    return bytes(body)


def create_app(service: CrawlService, gate: Gate, token: str, max_body: int, threads: int) -> FastAPI:
    """The API of ``service``, answered by at most ``threads`` threads at once."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        anyio.to_thread.current_default_thread_limiter().total_tokens = threads
        yield

    app = FastAPI(title="politecrawler crawl service", version="1", lifespan=lifespan, docs_url=None,
                  redoc_url=None, responses=_ERRORS,
                  description="Start, follow, stop and resume crawls; read stored pages; Prometheus metrics. "
                              "Every request needs 'Authorization: Bearer <token>'.")
    registry = metrics_registry(service.metrics_rows)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException) -> JSONResponse:
        if error.status_code == 404:
            return _error(404, f"no endpoint {request.url.path}")
        if error.status_code == 405:
            allowed = allowed_methods(app, request.scope)
            return _error(405, f"{request.method} is not allowed on {request.url.path}; it takes "
                               f"{', '.join(allowed)}", {"Allow": ", ".join(allowed)})
        return _error(error.status_code, str(error.detail))

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, error: RequestValidationError) -> JSONResponse:
        first = error.errors()[0]
        return _error(400, f"{'.'.join(map(str, first['loc']))}: {first['msg']}")

    for kind, status in ((BadRequest, 400), (NotFound, 404), (Conflict, 409), (TooManyCrawls, 429)):
        app.add_exception_handler(kind, _handler(status))

    @app.exception_handler(Refused)
    async def refused(_: Request, error: Refused) -> JSONResponse:
        return _error(error.status, str(error))

    checked = [Depends(json_from_own_origin(gate))]
    refusals: dict[int | str, dict[str, Any]] = {409: {"model": Error}, 429: {"model": Error}}
    empty = request_body(EmptyBody, required=False)

    @app.post("/crawls", status_code=201, response_model=Created, openapi_extra=request_body(CrawlRequest),
              dependencies=checked, responses=refusals)
    async def start_crawl(request: Request) -> dict:
        """Start a crawl, or queue it while ``SERVE_MAX_CRAWLS`` run (429 past ``SERVE_MAX_QUEUED``)."""
        crawl = await run_in_threadpool(service.start_crawl, await readrequest_body(request, max_body))
        return {"crawl_id": crawl.crawl_id, "state": crawl.state}

    @app.get("/crawls", response_model=CrawlList)
    def list_crawls() -> dict:
        """Every crawl, newest first."""
        return {"crawls": [service.describe(c) for c in service.registry.all()]}

    @app.get("/crawls/{crawl_id}", response_model=CrawlView)
    def get_crawl(crawl_id: str) -> dict:
        """A crawl's state and frontier counts."""
        return service.describe(service.crawl(crawl_id))

    @app.post("/crawls/{crawl_id}/stop", response_model=CrawlView, openapi_extra=empty, dependencies=checked,
              responses=refusals)
    async def stop_crawl(crawl_id: str, request: Request) -> dict:
        """Ask a crawl to close as Ctrl-C does (resumable); a queued one never starts."""
        _check_empty(await readrequest_body(request, max_body))
        return await run_in_threadpool(lambda: service.describe(service.stop_crawl(crawl_id)))

    @app.post("/crawls/{crawl_id}/resume", response_model=CrawlView, openapi_extra=empty,
              dependencies=checked, responses=refusals)
    async def resume_crawl(crawl_id: str, request: Request) -> dict:
        """Run an ended crawl again where its frontier left off."""
        _check_empty(await readrequest_body(request, max_body))
        return await run_in_threadpool(lambda: service.describe(service.resume_crawl(crawl_id)))

    @app.get("/crawls/{crawl_id}/activity", response_model=Activity)
    def activity(crawl_id: str) -> dict:
        """The console's view: rate samples, stats, bound verdict, hosts, dead letters, log tail."""
        return service.activity(crawl_id)

    @app.post("/crawls/{crawl_id}/dead_letters/requeue", response_model=Requeued,
              openapi_extra=request_body(RequeueRequest), dependencies=checked, responses=refusals)
    async def requeue(crawl_id: str, request: Request) -> dict:
        """Queue dead letters again (an embedded crawl must be stopped first)."""
        urls = _requeue_urls(await readrequest_body(request, max_body))
        return {"requeued": await run_in_threadpool(service.requeue, crawl_id, urls)}

    @app.get("/pages", responses={200: {"content": {"application/json": {}, "text/html": {},
                                                    "text/plain": {}}}})
    def page(request: Request, url: str = Query(min_length=1),
             content: Literal["html", "text"] | None = None) -> Response:
        """A stored page's record (``content=html`` or ``text``: its HTML or main text)."""
        urls = request.query_params.getlist("url")
        if len(urls) != 1:
            raise BadRequest("give one url: /pages?url=U")
        try:
            record, body = service.page(urls[0], content)
        except ValueError as error:
            raise BadRequest(str(error)) from None
        if content is None:
            return JSONResponse(record)
        data = body if isinstance(body, bytes) else (body or "").encode("utf-8")
        # A crawled page's HTML runs nothing in the service's origin: sandboxed, not sniffed.
        return Response(data, media_type=_CONTENT_TYPES[content],
                        headers={"Content-Security-Policy": "sandbox", "X-Content-Type-Options": "nosniff"})

    @app.get("/metrics", response_class=Response, responses={200: {"content": {"text/plain": {}}}})
    def metrics() -> Response:
        """Prometheus text: per-crawl counts and stats, and the service process's own."""
        return Response(metrics_text(registry), media_type="text/plain; version=0.0.4; charset=utf-8")

    for path, (name, media) in STATIC.items():
        app.add_api_route(path, _static(name, media), methods=["GET"], include_in_schema=False)
    app.add_middleware(Gatekeeper, gate=gate, token=token)
    return app


def _handler(status: int):
    async def handle(_: Request, error: Exception) -> JSONResponse:
        return _error(status, str(error))
    return handle


def _static(name: str, media: str):
    def serve() -> Response:
        data = resources.files("crawler.service").joinpath("dashboard", name).read_bytes()
        return Response(data, media_type=media, headers=_STATIC_HEADERS)
    return serve


def _check_empty(body: bytes) -> None:
    """A body that says nothing: none, or ``{}``."""
    if body.strip() and body.strip() != b"{}":
        try:
            data = json.loads(body)
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise BadRequest("the body is not JSON") from None
        if data != {}:
            raise BadRequest("this request takes no parameters: send {} or nothing")


def _requeue_urls(body: bytes) -> list[str] | None:
    if not body.strip():
        return None
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise BadRequest("the body is not JSON") from None
    if not isinstance(data, dict) or set(data) - {"urls"}:
        raise BadRequest('the body must be {"urls": [...]} (or empty: all)')
    urls = data.get("urls")
    if urls is not None and not (isinstance(urls, list) and all(isinstance(u, str) for u in urls)):
        raise BadRequest('"urls" must be a list of URL strings')
    return urls


def allowed_methods(app: FastAPI, scope: Scope) -> list[str]:
    """The methods the routes matching ``scope``'s path take."""
    methods: set[str] = set()
    for route in app.router.routes:
        if route.matches(scope)[0] != Match.NONE:  # PARTIAL: the path matches, not the method
            methods |= set(getattr(route, "methods", ()) or ())
    return sorted(methods)
